/**
 * End to end against the real server process (`bun run src/main.ts`) on a free port of
 * 127.0.0.1: a real file of this machine of at least 100 MiB, encrypted as docs/protocol.md#ciphertext
 * describes (XChaCha20-Poly1305 frames, `packages/client/src/frame.ts`), uploaded through a session in
 * 8 MiB chunks, shuffled, 4 in parallel, finalized, then downloaded whole and by ranges; and
 * the same upload interrupted by SIGKILL of the server after half the chunks, resumed from
 * `status` on a restarted server over the same data directory.
 *
 * File contents are streamed from disk (`Bun.file(path).slice(a, b)`); no step holds the
 * 100 MiB in memory. The servers store blobs on the test storage (`ESYNC_TEST_STORAGE`: local
 * disk, or a bucket of the real S3 test server).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decryptStream, encryptFileStream, frameNonce } from "@esync/client/frame.ts";
import { createBlake3 } from "@esync/protocol/blake3.ts";
import { ciphertextSizeFor } from "@esync/protocol/framing.ts";
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { loadConfig } from "../../src/config/config.ts";
import { createBlobStore } from "../../src/storage/index.ts";
import type { Json } from "../http/helpers.ts";
import { makeManifest, newUser, type TestUser } from "../support/fixtures.ts";
import { SETUP_TIMEOUT_MS, storageEnv, type TestStorageEnv, testStorage } from "../support/s3-server.ts";
import { type ServerProcess, startServer } from "../support/server.ts";

const MiB = 1024 * 1024;
const CHUNK = 8 * MiB;
const CONCURRENCY = 4;
const FOLDER = "37a8eec1ce19687d";

/** A real file of at least 100 MiB on this machine: the Bun binary running the tests, or a fallback. */
function pickSourceFile(): string {
  const candidates = [
    process.execPath,
    "/usr/lib/node_modules/bun/bin/bun.exe",
    "/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1",
    "/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1",
  ];
  for (const p of candidates) {
    try {
      if (statSync(p).size >= 100 * MiB) return p;
    } catch {
      // not on this machine
    }
  }
  throw new Error(`no file of at least 100 MiB found among ${candidates.join(", ")}`);
}

const work = mkdtempSync(join(tmpdir(), "esync-e2e-work-"));
const ctPath = join(work, "ciphertext.bin");
const key = crypto.getRandomValues(new Uint8Array(32));
let sourcePath = "";
let plainSize = 0;
let ctSize = 0;
let ctHash = "";
let plainSha256 = "";
const servers: ServerProcess[] = [];
/** The test storage, the same for every server of this file. */
let storage: TestStorageEnv = { env: {}, remove: async () => {} };

beforeAll(async () => {
  storage = await storageEnv("e2e-large");
  sourcePath = pickSourceFile();
  const enc = encryptFileStream(key, sourcePath);
  plainSize = enc.plaintextSize;
  const fh = await open(ctPath, "w");
  const blake = createBlake3();
  try {
    for await (const piece of enc.stream) {
      blake.update(piece);
      await fh.write(piece);
    }
  } finally {
    await fh.close();
  }
  ctHash = blake.digestHex();
  ctSize = statSync(ctPath).size;
  const sha = new Bun.CryptoHasher("sha256");
  for await (const piece of Bun.file(sourcePath).stream()) sha.update(piece);
  plainSha256 = sha.digest("hex");
}, SETUP_TIMEOUT_MS);

afterAll(async () => {
  for (const s of servers) {
    if (s.proc.exitCode === null) await s.kill();
    rmSync(s.dataDir, { recursive: true, force: true });
  }
  rmSync(work, { recursive: true, force: true });
  await storage.remove();
}, 60_000);

async function start(opts: Parameters<typeof startServer>[0] = {}): Promise<ServerProcess> {
  const s = await startServer({ ...opts, env: { ...storage.env, ...opts.env } });
  servers.push(s);
  return s;
}

/** JSON request to `server`; returns status and parsed body. */
async function call(
  server: ServerProcess,
  user: TestUser,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Json }> {
  const headers: Record<string, string> = { authorization: user.auth };
  if (body !== undefined) headers["content-type"] = "application/json";
  else if (method === "POST") headers["content-length"] = "0";
  const r = await fetch(`${server.url}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: r.status, body: await r.json() };
}

/** Chunk `i` of the ciphertext file, read from disk when sent. */
function chunkBody(i: number): Blob {
  return Bun.file(ctPath).slice(i * CHUNK, Math.min(ctSize, (i + 1) * CHUNK));
}

function shuffled(n: number): number[] {
  const a = [...Array(n).keys()];
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

/**
 * PUTs chunks `indices` with `CONCURRENCY` requests in flight. `onAck` sees each index the
 * server acknowledged with 200 (and how many so far); it may return true to stop starting new
 * requests. Failed
 * requests (e.g. the server was killed) are collected, not thrown.
 */
async function putChunks(
  server: ServerProcess,
  user: TestUser,
  sid: string,
  indices: number[],
  onAck: (index: number, ackedCount: number) => boolean = () => false,
): Promise<{ acked: number[]; failed: number[] }> {
  const queue = [...indices];
  const acked: number[] = [];
  const failed: number[] = [];
  let stop = false;
  const worker = async () => {
    for (;;) {
      if (stop) return;
      const i = queue.shift();
      if (i === undefined) return;
      try {
        const r = await fetch(`${server.url}/upload/session/${sid}/chunk/${i}`, {
          method: "PUT",
          headers: { authorization: user.auth, "content-type": "application/octet-stream" },
          body: chunkBody(i),
        });
        const body = (await r.json()) as { Success?: { chunk_index: number } };
        if (r.status !== 200 || body.Success?.chunk_index !== i)
          throw new Error(`chunk ${i}: ${r.status} ${JSON.stringify(body)}`);
        acked.push(i);
        if (onAck(i, acked.length)) stop = true;
      } catch (e) {
        if (!stop) throw e;
        failed.push(i);
      }
    }
  };
  await Promise.all([...Array(CONCURRENCY)].map(worker));
  return { acked, failed };
}

/** BLAKE3 and length of a response body, streamed. */
async function hashBody(r: Response): Promise<{ hash: string; length: number }> {
  const h = createBlake3();
  let length = 0;
  for await (const piece of r.body!) {
    h.update(piece);
    length += piece.byteLength;
  }
  return { hash: h.digestHex(), length };
}

async function openSession(server: ServerProcess, user: TestUser, path: string) {
  const manifest = makeManifest({
    owner: user.address,
    ciphertext: new Uint8Array(0),
    ciphertextHash: ctHash,
    sizeBytes: plainSize,
    path,
  });
  const chunkCount = Math.ceil(ctSize / CHUNK);
  const r = await call(server, user, "POST", "/upload/session", {
    manifest,
    chunk_count: chunkCount,
    chunk_size: CHUNK,
    ciphertext_size: ctSize,
  });
  expect(r.status).toBe(200);
  return { sid: r.body.Success.session_id as string, manifest, chunkCount };
}

function downloadPath(user: TestUser, manifest: Record<string, unknown>): string {
  return `/download/${user.address}/${FOLDER}/${Buffer.from(manifest.path_hash as number[]).toString("hex")}`;
}

/** Checks whole-file download (hash and decryption back to the source file) and ranges. */
async function verifyDownload(
  server: ServerProcess,
  user: TestUser,
  manifest: Record<string, unknown>,
  revisionSeq = 1,
) {
  const url = `${server.url}${downloadPath(user, manifest)}`;
  const whole = await fetch(url, { headers: { authorization: user.auth } });
  expect(whole.status).toBe(200);
  // docs/protocol.md#sync-endpoints wants Content-Length: on disk the file is one object sent as a
  // file body with its length; from S3 without the redirect Bun.serve (1.4.5) can only stream it
  // chunked (docs/design.md#downloads-and-content-length): the body must still be whole and exact.
  const length = whole.headers.get("content-length");
  if (testStorage === "disk") expect(length).toBe(String(ctSize));
  else if (length === null) expect(whole.headers.get("transfer-encoding")).toBe("chunked");
  else expect(length).toBe(String(ctSize));
  expect(whole.headers.get("accept-ranges")).toBe("bytes");
  expect(whole.headers.get("x-size-bytes")).toBe(String(plainSize));
  expect(whole.headers.get("x-revision-seq")).toBe(String(revisionSeq));
  expect(whole.headers.get("x-revision-id")).toMatch(/^[0-9a-f]{64}$/);
  expect(await hashBody(whole)).toEqual({ hash: ctHash, length: ctSize });

  const again = await fetch(url, { headers: { authorization: user.auth } });
  const sha = new Bun.CryptoHasher("sha256");
  for await (const piece of decryptStream(key, again.body!, { expectedPlaintextSize: plainSize }))
    sha.update(piece);
  expect(sha.digest("hex")).toBe(plainSha256);

  const ranges: [string, number, number][] = [
    ["bytes=0-99", 0, 100],
    [`bytes=${CHUNK - 10}-${CHUNK + 9}`, CHUNK - 10, CHUNK + 10],
    [`bytes=${3 * CHUNK - 1}-${5 * CHUNK}`, 3 * CHUNK - 1, 5 * CHUNK + 1],
    [`bytes=${ctSize - 5 * MiB}-`, ctSize - 5 * MiB, ctSize],
    ["bytes=-1000", ctSize - 1000, ctSize],
    [`bytes=${ctSize - 10}-${ctSize + 1000}`, ctSize - 10, ctSize],
  ];
  for (const [header, start, end] of ranges) {
    const r = await fetch(url, { headers: { authorization: user.auth, range: header } });
    expect(r.status).toBe(206);
    expect(r.headers.get("content-range")).toBe(`bytes ${start}-${end - 1}/${ctSize}`);
    // On disk, and up to 1 MiB on any store, the length is sent; see verifyDownload.
    const rangeLength = r.headers.get("content-length");
    if (rangeLength === null) expect(testStorage === "s3" && end - start > 1024 * 1024).toBe(true);
    else expect(rangeLength).toBe(String(end - start));
    const got = Buffer.from(await r.arrayBuffer());
    const want = Buffer.from(await Bun.file(ctPath).slice(start, end).arrayBuffer());
    expect(got.equals(want)).toBe(true);
  }
  const bad = await fetch(url, { headers: { authorization: user.auth, range: `bytes=${ctSize}-` } });
  expect(bad.status).toBe(416);
  expect(bad.headers.get("content-range")).toBe(`bytes */${ctSize}`);
  await bad.arrayBuffer();
}

describe("a 100+ MiB encrypted file through the real server", () => {
  test("the source is a real file of at least 100 MiB and its ciphertext has docs/protocol.md#ciphertext size and framing", async () => {
    expect(plainSize).toBeGreaterThanOrEqual(100 * MiB);
    expect(ctSize).toBe(ciphertextSizeFor(plainSize));
    expect(ctSize).toBe(28 + 20 * Math.ceil(plainSize / (256 * 1024)) + plainSize);
    // Independent of frame.ts's decryptor: frame 0 opens with the documented nonce derivation.
    const head = new Uint8Array(
      await Bun.file(ctPath)
        .slice(0, 28 + 4 + 256 * 1024 + 16)
        .arrayBuffer(),
    );
    const view = new DataView(head.buffer);
    expect(view.getUint32(24, true)).toBe(Math.ceil(plainSize / (256 * 1024)));
    expect(view.getUint32(28, true)).toBe(256 * 1024 + 16);
    const plain0 = xchacha20poly1305(key, frameNonce(head.subarray(0, 24), 0)).decrypt(head.subarray(32));
    const src0 = new Uint8Array(
      await Bun.file(sourcePath)
        .slice(0, 256 * 1024)
        .arrayBuffer(),
    );
    expect(Buffer.from(plain0).equals(Buffer.from(src0))).toBe(true);
  });

  test("uploads in shuffled 8 MiB chunks, 4 in parallel, finalizes (200) and downloads byte-identical whole and by ranges", async () => {
    const server = await start();
    const user = newUser();
    const { sid, manifest, chunkCount } = await openSession(server, user, "bin/large.bin");
    expect(chunkCount).toBeGreaterThanOrEqual(13);
    const { acked } = await putChunks(server, user, sid, shuffled(chunkCount));
    expect(acked.sort((a, b) => a - b)).toEqual([...Array(chunkCount).keys()]);

    const st = await call(server, user, "GET", `/upload/session/${sid}/status`);
    expect(st.body.Success).toMatchObject({
      state: "receiving",
      total_chunks: chunkCount,
      ciphertext_hash: ctHash,
    });
    expect(st.body.Success.chunks_received).toEqual([...Array(chunkCount).keys()]);

    const fin = await call(server, user, "POST", `/upload/session/${sid}/finalize`);
    expect(fin.status).toBe(200);
    const result = fin.body.Success;
    const state = await call(server, user, "GET", `/get_state/${user.address}/${FOLDER}`);
    expect(state.body.Success.files).toHaveLength(1);
    expect(state.body.Success.files[0]).toMatchObject({
      size_bytes: plainSize,
      revision_id: result.revision_id,
      store_hash: ctHash,
      created_at: result.created_at,
      updated_at: result.updated_at,
    });
    expect((await call(server, user, "GET", `/upload/session/${sid}/status`)).body.Success.state).toBe(
      "finalized",
    );

    await verifyDownload(server, user, manifest);
    expect(await server.stop()).toBe(0);
  });

  test("resumes from status after the server is SIGKILLed mid-upload and restarted on the same data dir", async () => {
    const first = await start();
    const user = newUser();
    const { sid, manifest, chunkCount } = await openSession(first, user, "bin/resumed.bin");
    const half = Math.ceil(chunkCount / 2);
    let killed: Promise<number> | null = null;
    const { acked } = await putChunks(first, user, sid, shuffled(chunkCount), (_i, count) => {
      if (count >= half && !killed) killed = first.kill();
      return killed !== null;
    });
    // Every chunk acknowledged with 200 before the crash must survive it.
    expect(acked.length).toBeGreaterThanOrEqual(half);
    expect(acked.length).toBeLessThan(chunkCount);
    expect(await killed!).not.toBe(0);

    const second = await start({ dataDir: first.dataDir, port: first.port });
    const st = await call(second, user, "GET", `/upload/session/${sid}/status`);
    expect(st.status).toBe(200);
    expect(st.body.Success).toMatchObject({
      session_id: sid,
      state: "receiving",
      total_chunks: chunkCount,
      ciphertext_hash: ctHash,
    });
    const received: number[] = st.body.Success.chunks_received;
    for (const i of acked) expect(received).toContain(i);
    const missing = [...Array(chunkCount).keys()].filter((i) => !received.includes(i));
    expect(missing.length).toBeGreaterThan(0);
    const resumed = await putChunks(second, user, sid, missing);
    expect(resumed.acked.sort((a, b) => a - b)).toEqual(missing);

    const fin = await call(second, user, "POST", `/upload/session/${sid}/finalize`);
    expect(fin.status).toBe(200);
    await verifyDownload(second, user, manifest);

    // The file's bytes are in the blob store in its layout (docs/design.md#storage-layout): on
    // disk its chunk objects (until the sweeper deletes them) beside the assembled object; on S3,
    // where a session of 8 MiB chunks is one multipart upload, one-object blobs only, no chunk
    // object ever written.
    const store = createBlobStore(loadConfig({ ...storage.env, ESYNC_DATA_DIR: first.dataDir }));
    try {
      const keys = await store.list("");
      if (store.kind === "s3") {
        expect(keys.length).toBeGreaterThanOrEqual(1);
        for (const k of keys) expect(k).toMatch(/^b\/[0-9a-f]{2}\/o[0-9a-f]{32}$/);
      } else expect(keys.length).toBeGreaterThanOrEqual(chunkCount);
    } finally {
      await store.close();
    }
    expect(await second.stop()).toBe(0);
  });
});
