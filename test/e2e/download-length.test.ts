/**
 * `/download` framing on the real server process (Bun.serve), on the store of this pass (disk, or
 * RGW in the S3 pass): complement §5 wants `Content-Length`. Bun 1.4.5 keeps a length only on a
 * body in memory or one file-backed Blob (docs/repro/bun-content-length.ts); finalize stores a
 * multi-chunk file as one object, so on disk every full or ranged body, at any size, is one file
 * slice sent by sendfile with its length, and bodies of at most 1 MiB are buffered with it on every
 * store. What Bun cannot frame with a length (S3 objects over 1 MiB) must still arrive whole and
 * byte-exact. Responses are read on raw sockets to see the framing as sent.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import net from "node:net";
import { EsyncApi } from "../../src/client/api.ts";
import { plaintextSizeFor } from "../../src/manifest/framing.ts";
import { makeManifest, newUser, pathHashOf, randomCiphertext } from "../support/fixtures.ts";
import { SETUP_TIMEOUT_MS, storageEnv, type TestStorageEnv, testStorage } from "../support/s3-server.ts";
import { type ServerProcess, startServer } from "../support/server.ts";

const user = newUser();
let server: ServerProcess;
let storage: TestStorageEnv = { env: {}, remove: async () => {} };
const FOLDER = "37a8eec1ce19687d";

beforeAll(async () => {
  storage = await storageEnv("e2e-download");
  // On S3, a body over 1 MiB is answered 302 to the object it is in (presigned), which sends it
  // with its length.
  server = await startServer({
    env: { ...storage.env, ...(testStorage === "s3" ? { ESYNC_S3_DOWNLOAD_REDIRECT_SECONDS: "300" } : {}) },
  });
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
function rawGetAt(
  port: number,
  path: string,
  extra: string,
): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    const socket = net.connect(port, "127.0.0.1", () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${extra}Connection: close\r\n\r\n`);
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

/**
 * A `/download` GET as a client makes it, on raw sockets: a 302 (S3, bodies over 1 MiB) must carry
 * the download's headers, and its Location, asked for the range its Content-Range names, answers
 * the bytes; the answer returned is that one with the 302's headers under `redirect`.
 */
async function rawGet(
  path: string,
  extra = "",
): Promise<{
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  redirect?: Record<string, string>;
}> {
  const first = await rawGetAt(server.port, path, `Authorization: ${user.auth}\r\n${extra}`);
  if (first.status !== 302) return first;
  expect(testStorage).toBe("s3");
  expect(first.headers["x-revision-id"]).toMatch(/^[0-9a-f]{64}$/);
  expect(first.headers.etag).toBe(`"${first.headers["x-revision-id"]}"`);
  const location = new URL(first.headers.location!);
  const cr = /^bytes (\d+)-(\d+)\/\d+$/.exec(first.headers["content-range"] ?? "");
  const object = await rawGetAt(
    Number(location.port),
    `${location.pathname}${location.search}`,
    cr ? `Range: bytes=${cr[1]}-${cr[2]}\r\n` : "",
  );
  return { ...object, redirect: first.headers };
}

/** Asserts `r` carries exactly `expected` as its body, framed by an exact Content-Length. */
function expectLength(r: { headers: Record<string, string>; body: Buffer }, expected: Buffer): void {
  expect(r.headers["transfer-encoding"]).toBeUndefined();
  expect(r.headers["content-length"]).toBe(String(expected.length));
  expect(r.body.equals(expected)).toBe(true);
}

const MiB = 1024 * 1024;

describe(`/download framing (${testStorage})`, () => {
  test("a single-chunk file of 12 MiB is 200 with Content-Length, whole and byte-exact, and no object name", async () => {
    const ct = randomCiphertext(12 * MiB + 5);
    const path = await upload(ct, ct.length, "dl/single.bin");
    const r = await rawGet(path);
    expect(r.status).toBe(200);
    const h = r.redirect ?? r.headers;
    expect(h["content-disposition"]).toBe("attachment");
    expect(h["x-revision-id"]).toMatch(/^[0-9a-f]{64}$/);
    expect(h["accept-ranges"]).toBe("bytes");
    expect(h["x-size-bytes"]).toBe(String(plaintextSizeFor(ct.length)));
    expectLength(r, ct);
  });

  test("a ranged download of a single-chunk file is 206 with Content-Range and Content-Length", async () => {
    const ct = randomCiphertext(9 * MiB);
    const path = await upload(ct, ct.length, "dl/single-range.bin");
    const r = await rawGet(path, `Range: bytes=100-${8 * MiB}\r\n`);
    expect(r.status).toBe(206);
    expect(r.headers["content-range"]).toBe(`bytes 100-${8 * MiB}/${ct.length}`);
    if (r.redirect) expect(r.redirect["content-range"]).toBe(`bytes 100-${8 * MiB}/${ct.length}`);
    expectLength(r, ct.subarray(100, 8 * MiB + 1));
  });

  test("a 40 MiB file in 8 MiB chunks is 200 with Content-Length, and a range across every chunk is 206 with it", async () => {
    const ct = randomCiphertext(40 * MiB + 17);
    const path = await upload(ct, 8 * MiB, "dl/multi-large.bin");
    const whole = await rawGet(path);
    expect(whole.status).toBe(200);
    const [first, last] = [3, 40 * MiB + 2];
    const across = await rawGet(path, `Range: bytes=${first}-${last}\r\n`);
    expect(across.status).toBe(206);
    expect(across.headers["content-range"]).toBe(`bytes ${first}-${last}/${ct.length}`);
    expect(whole.redirect !== undefined).toBe(testStorage === "s3");
    expectLength(whole, ct);
    expectLength(across, ct.subarray(first, last + 1));
  });

  test("a multi-chunk file of 1 MiB chunks over 1 MiB is 200 with Content-Length, and a range across chunks is 206 with it", async () => {
    const ct = randomCiphertext(3 * MiB + 17);
    const path = await upload(ct, MiB, "dl/multi.bin");
    const whole = await rawGet(path);
    expect(whole.status).toBe(200);
    const across = await rawGet(path, "Range: bytes=1000000-2100000\r\n");
    expect(across.status).toBe(206);
    expect(across.headers["content-range"]).toBe(`bytes 1000000-2100000/${ct.length}`);
    expectLength(whole, ct);
    expectLength(across, ct.subarray(1000000, 2100001));
  });

  test("a range of at most 1 MiB across chunks is sent with Content-Length on every store", async () => {
    const ct = randomCiphertext(3 * MiB);
    const path = await upload(ct, MiB, "dl/small-range.bin");
    const r = await rawGet(path, "Range: bytes=1048000-1049999\r\n");
    expect(r.status).toBe(206);
    expectLength(r, ct.subarray(1048000, 1050000));
  });

  test("a small multi-chunk file on any store is sent with Content-Length", async () => {
    const ct = randomCiphertext(300 * 1024);
    const path = await upload(ct, 100 * 1024, "dl/small.bin");
    const r = await rawGet(path);
    expect(r.status).toBe(200);
    expectLength(r, ct);
  });

  test("the client library downloads a multi-chunk file whole and by range with its length (following the S3 redirect)", async () => {
    const ct = randomCiphertext(10 * MiB + 3);
    const path = await upload(ct, 4 * MiB, "dl/client.bin");
    const [, , ss58, folder, fileId] = path.split("/");
    const api = new EsyncApi({ baseUrl: server.url, token: user.auth.slice("Bearer ".length) });
    const whole = await api.download(ss58!, folder!, fileId!);
    expect(whole.status).toBe(200);
    expect(whole.contentLength).toBe(ct.length);
    expect(whole.revisionIdHex).toMatch(/^[0-9a-f]{64}$/);
    expect(Buffer.from(await new Response(whole.body).arrayBuffer()).equals(ct)).toBe(true);
    const part = await api.download(ss58!, folder!, fileId!, {
      range: { start: 3 * MiB, end: 9 * MiB },
      ifRange: whole.etag!,
    });
    expect(part.status).toBe(206);
    expect(part.contentLength).toBe(6 * MiB + 1);
    expect(part.contentRange).toEqual({ start: 3 * MiB, end: 9 * MiB, total: ct.length });
    expect(
      Buffer.from(await new Response(part.body).arrayBuffer()).equals(ct.subarray(3 * MiB, 9 * MiB + 1)),
    ).toBe(true);
  });
});
