/**
 * `/download` framing on the real server process (Bun.serve), on the store of this pass (disk, or
 * RGW in the S3 pass): docs/protocol.md#sync-endpoints wants `Content-Length`. Bun 1.4.5 keeps a length only on a
 * body in memory or one file-backed Blob (docs/repro/bun-content-length.ts), so on disk a body
 * within one chunk object of at most `fileBodyLimit(header timeout)` bytes (8.4 MB with the 60 s
 * this server runs with) is sent by sendfile with its length, and bodies of at most 1 MiB are
 * buffered with it everywhere. What Bun cannot frame with a length (larger bodies; more than
 * 1 MiB across chunks; S3 objects over 1 MiB) must still arrive whole and byte-exact. Responses
 * are read on raw sockets to see the framing as sent.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import net from "node:net";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import { fileBodyLimit } from "../../src/http/download-body.ts";
import { makeManifest, newUser, pathHashOf, randomCiphertext } from "../support/fixtures.ts";
import { SETUP_TIMEOUT_MS, storageEnv, type TestStorageEnv, testStorage } from "../support/s3-server.ts";
import { type ServerProcess, startServer } from "../support/server.ts";

const user = newUser();
let server: ServerProcess;
let storage: TestStorageEnv = { env: {}, remove: async () => {} };
const FOLDER = "37a8eec1ce19687d";

beforeAll(async () => {
  storage = await storageEnv("e2e-download");
  server = await startServer({ env: { ...storage.env, ESYNC_HEADER_TIMEOUT_SECONDS: "60" } });
}, SETUP_TIMEOUT_MS);

afterAll(async () => {
  await server?.stop();
  if (server) rmSync(server.dataDir, { recursive: true, force: true });
  await storage.remove();
}, 60_000);

/** Uploads `ct` through a session of `chunkSize` chunks; returns the download path. */
async function upload(ct: Buffer, chunkSize: number, path: string): Promise<string> {
  const headers = { authorization: user.auth, "content-type": "application/json" };
  const r = await fetch(`${server.url}/upload/session`, {
    method: "POST",
    headers,
    body: JSON.stringify({
      manifest: makeManifest({ owner: user.address, ciphertext: ct, path, folderHash: FOLDER }),
      chunk_count: Math.ceil(ct.length / chunkSize),
      chunk_size: chunkSize,
      ciphertext_size: ct.length,
    }),
  });
  expect(r.status).toBe(200);
  const sid = ((await r.json()) as { Success: { session_id: string } }).Success.session_id;
  for (let i = 0; i * chunkSize < ct.length; i++) {
    const put = await fetch(`${server.url}/upload/session/${sid}/chunk/${i}`, {
      method: "PUT",
      headers: { authorization: user.auth },
      body: new Uint8Array(ct.subarray(i * chunkSize, (i + 1) * chunkSize)),
    });
    expect(put.status).toBe(200);
  }
  const fin = await fetch(`${server.url}/upload/session/${sid}/finalize`, {
    method: "POST",
    headers: { authorization: user.auth },
  });
  expect(fin.status).toBe(200);
  return `/download/${user.address}/${FOLDER}/${Buffer.from(pathHashOf(path)).toString("hex")}`;
}

/** One GET on a raw socket (Connection: close): status, lower-cased headers, raw body bytes. */
function rawGet(
  path: string,
  extra = "",
): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    const socket = net.connect(server.port, "127.0.0.1", () => {
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${user.auth}\r\n${extra}Connection: close\r\n\r\n`,
      );
    });
    socket.on("data", (d: Buffer) => parts.push(d));
    socket.on("error", reject);
    socket.on("close", () => {
      const all = Buffer.concat(parts);
      const end = all.indexOf("\r\n\r\n");
      const [statusLine, ...lines] = all.subarray(0, end).toString("latin1").split("\r\n");
      const headers: Record<string, string> = {};
      for (const l of lines) {
        const i = l.indexOf(":");
        headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
      }
      resolve({ status: Number(statusLine!.split(" ")[1]), headers, body: all.subarray(end + 4) });
    });
  });
}

/** Decodes a chunked body. */
function unchunk(b: Buffer): Buffer {
  const out: Buffer[] = [];
  let i = 0;
  for (;;) {
    const eol = b.indexOf("\r\n", i);
    const n = Number.parseInt(b.subarray(i, eol).toString("latin1"), 16);
    if (n === 0) return Buffer.concat(out);
    out.push(b.subarray(eol + 2, eol + 2 + n));
    i = eol + 2 + n + 2;
  }
}

/** The body as sent: raw when framed by Content-Length, decoded when chunked. */
function payload(r: { headers: Record<string, string>; body: Buffer }): Buffer {
  return r.headers["transfer-encoding"] === "chunked" ? unchunk(r.body) : r.body;
}

describe(`/download framing (${testStorage})`, () => {
  test("a single-chunk file of 8 MiB is 200, whole and byte-exact, with Content-Length on disk and no object name", async () => {
    const ct = randomCiphertext(8 * 1024 * 1024 + 5);
    expect(ct.length).toBeLessThanOrEqual(fileBodyLimit(60));
    const path = await upload(ct, ct.length, "dl/single.bin");
    const r = await rawGet(path);
    expect(r.status).toBe(200);
    if (testStorage === "disk") {
      expect(r.headers["content-length"]).toBe(String(ct.length));
      expect(r.headers["transfer-encoding"]).toBeUndefined();
    }
    expect(r.headers["content-disposition"]).toBe("attachment");
    expect(blake3Hex(payload(r))).toBe(blake3Hex(ct));
    expect(r.headers["x-revision-id"]).toMatch(/^[0-9a-f]{64}$/);
    expect(r.headers["accept-ranges"]).toBe("bytes");
  });

  test("a single-chunk file over the file-body limit is streamed (chunked) and arrives whole and byte-exact", async () => {
    const ct = randomCiphertext(12 * 1024 * 1024);
    expect(ct.length).toBeGreaterThan(fileBodyLimit(60));
    const path = await upload(ct, ct.length, "dl/single-large.bin");
    const r = await rawGet(path);
    expect(r.status).toBe(200);
    expect(r.headers["transfer-encoding"]).toBe("chunked");
    expect(blake3Hex(payload(r))).toBe(blake3Hex(ct));
  });

  test("a 6 MiB range inside one chunk of a multi-chunk file is 206 with Content-Range, and Content-Length on disk", async () => {
    const MiB = 1024 * 1024;
    const ct = randomCiphertext(13 * MiB);
    const path = await upload(ct, 6 * MiB, "dl/multi-range.bin");
    const [first, last] = [6 * MiB + 10, 12 * MiB - 1];
    const r = await rawGet(path, `Range: bytes=${first}-${last}\r\n`);
    expect(r.status).toBe(206);
    expect(r.headers["content-range"]).toBe(`bytes ${first}-${last}/${ct.length}`);
    if (testStorage === "disk") {
      expect(r.headers["content-length"]).toBe(String(last + 1 - first));
      expect(r.headers["transfer-encoding"]).toBeUndefined();
    }
    expect(payload(r).equals(ct.subarray(first, last + 1))).toBe(true);
  });

  test("a range of at most 1 MiB across chunks is sent with Content-Length on every store", async () => {
    const ct = randomCiphertext(3 * 1024 * 1024);
    const path = await upload(ct, 1024 * 1024, "dl/small-range.bin");
    const r = await rawGet(path, "Range: bytes=1048000-1049999\r\n");
    expect(r.status).toBe(206);
    expect(r.headers["content-length"]).toBe("2000");
    expect(r.body.equals(ct.subarray(1048000, 1050000))).toBe(true);
  });

  test("a small file on any store is sent with Content-Length", async () => {
    const ct = randomCiphertext(300 * 1024);
    const path = await upload(ct, 100 * 1024, "dl/small.bin");
    const r = await rawGet(path);
    expect(r.status).toBe(200);
    expect(r.headers["content-length"]).toBe(String(ct.length));
    expect(r.body.equals(ct)).toBe(true);
  });

  test("a multi-chunk file over 1 MiB, and such a range across chunks, arrive whole and byte-exact: with Content-Length on disk (one object, under the file-body limit), chunked on S3", async () => {
    const ct = randomCiphertext(3 * 1024 * 1024 + 17);
    const path = await upload(ct, 1024 * 1024, "dl/multi.bin");
    const whole = await rawGet(path);
    expect(whole.status).toBe(200);
    if (testStorage === "s3") expect(whole.headers["transfer-encoding"]).toBe("chunked");
    else expect(whole.headers["content-length"]).toBe(String(ct.length));
    expect(payload(whole).equals(ct)).toBe(true);
    const across = await rawGet(path, "Range: bytes=1000000-2100000\r\n");
    expect(across.status).toBe(206);
    expect(across.headers["content-range"]).toBe(`bytes 1000000-2100000/${ct.length}`);
    expect(payload(across).equals(ct.subarray(1000000, 2100001))).toBe(true);
  });
});
