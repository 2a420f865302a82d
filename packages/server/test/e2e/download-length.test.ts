/**
 * `/download` framing on the real server process (Bun.serve), on the store of this pass (disk, or
 * RGW in the S3 pass): docs/protocol.md#sync-endpoints wants an exact `Content-Length`. On disk
 * every file and range lies in one object and goes out as a file body (sendfile) with its length
 * at any size; on S3 a body of at most 1 MiB is sent from memory with its length, and a larger one
 * answers 302 to a presigned GET of the file's one object (`ESYNC_S3_DOWNLOAD_REDIRECT_SECONDS`,
 * on in this pass), which S3 answers with its length (docs/design.md#downloads-and-content-length).
 * Responses are read on raw sockets to see the framing as sent.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, rmSync, statSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import { makeManifest, newUser, pathHashOf, randomCiphertext } from "../support/fixtures.ts";
import { SETUP_TIMEOUT_MS, storageEnv, type TestStorageEnv, testStorage } from "../support/s3-server.ts";
import { type ServerProcess, startServer } from "../support/server.ts";

const user = newUser();
let server: ServerProcess;
let storage: TestStorageEnv = { env: {}, remove: async () => {} };
const FOLDER = "37a8eec1ce19687d";

beforeAll(async () => {
  storage = await storageEnv("e2e-download");
  server = await startServer({
    env: {
      ...storage.env,
      ...(testStorage === "s3" ? { ESYNC_S3_DOWNLOAD_REDIRECT_SECONDS: "60" } : {}),
    },
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

interface Raw {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * One GET on a raw socket (Connection: close): status, lower-cased headers, raw body bytes. A
 * `path` starting with `/` goes to the server under test with the user's credentials; a full URL
 * (a presigned Location) goes to its host with none.
 */
function rawGet(path: string, extra = ""): Promise<Raw> {
  const url = path.startsWith("/") ? null : new URL(path);
  const port = url ? Number(url.port) : server.port;
  const target = url ? `${url.pathname}${url.search}` : path;
  const host = url ? url.host : "127.0.0.1";
  const auth = url ? "" : `Authorization: ${user.auth}\r\n`;
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    const socket = net.connect(port, url?.hostname ?? "127.0.0.1", () => {
      socket.write(`GET ${target} HTTP/1.1\r\nHost: ${host}\r\n${auth}${extra}Connection: close\r\n\r\n`);
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
 * The answer that carries the bytes of a download: the server's own, or, when it redirects (S3),
 * the object store's answer to the Location, asked for the bytes the 302's `Content-Range` names
 * (as the client library does), checked against the download's headers on the 302.
 */
async function bytesAnswer(path: string, range?: string): Promise<Raw> {
  const r = await rawGet(path, range ? `Range: ${range}\r\n` : "");
  if (r.status !== 302) return r;
  expect(testStorage).toBe("s3");
  const named = r.headers["content-range"]?.match(/^bytes (\d+)-(\d+)\/\d+$/);
  const object = await rawGet(r.headers.location!, named ? `Range: bytes=${named[1]}-${named[2]}\r\n` : "");
  expect(object.status).toBe(named ? 206 : 200);
  if (named) expect(object.headers["content-range"]).toBe(r.headers["content-range"]);
  return object;
}

const KiB = 1024;
const MiB = 1024 * 1024;

describe(`/download sends an exact Content-Length (${testStorage})`, () => {
  // [name, size, chunk size of the upload session]
  const files: [string, number, number][] = [
    ["1 KiB", KiB, KiB],
    ["5 MiB", 5 * MiB, 4 * MiB],
    ["20 MiB", 20 * MiB + 3, 5 * MiB],
  ];
  for (const [name, size, chunkSize] of files) {
    const chunks = Math.ceil(size / chunkSize);
    test(`a ${name} file (${chunks} chunk${chunks > 1 ? "s" : ""}) is 200 with its exact Content-Length, whole, and 206 with the range's for ranges, never chunked`, async () => {
      const ct = randomCiphertext(size);
      const path = await upload(ct, chunkSize, `len/${name}.bin`);
      const whole = await bytesAnswer(path);
      expect(whole.status).toBe(200);
      expect(whole.headers["content-length"]).toBe(String(size));
      expect(whole.headers["transfer-encoding"]).toBeUndefined();
      expect(whole.body.equals(ct)).toBe(true);
      // Across a chunk boundary (within the file when it has one chunk), a suffix and an open end.
      const mid = Math.min(chunkSize, size - 1);
      const ranges: [string, number, number][] = [
        [
          `bytes=${mid - Math.floor(mid / 2)}-${Math.min(size - 1, mid + Math.floor(mid / 2))}`,
          mid - Math.floor(mid / 2),
          Math.min(size - 1, mid + Math.floor(mid / 2)),
        ],
        [`bytes=-${Math.floor(size / 3)}`, size - Math.floor(size / 3), size - 1],
        [`bytes=${Math.floor(size / 4)}-`, Math.floor(size / 4), size - 1],
      ];
      for (const [header, first, last] of ranges) {
        const r = await bytesAnswer(path, header);
        expect(r.status).toBe(206);
        expect(r.headers["content-range"]).toBe(`bytes ${first}-${last}/${size}`);
        expect(r.headers["content-length"]).toBe(String(last + 1 - first));
        expect(r.headers["transfer-encoding"]).toBeUndefined();
        expect(r.body.equals(ct.subarray(first, last + 1))).toBe(true);
      }
    }, 120_000);
  }

  test("a download names no object (Content-Disposition: attachment) and carries the revision headers", async () => {
    const ct = randomCiphertext(2 * MiB);
    const path = await upload(ct, MiB, "dl/named.bin");
    const r = await rawGet(path);
    expect(r.headers["content-disposition"]).toBe("attachment");
    expect(r.headers["x-revision-id"]).toMatch(/^[0-9a-f]{64}$/);
    expect(r.headers["accept-ranges"]).toBe("bytes");
  });

  test("a range of at most 1 MiB across chunks is sent with Content-Length by the server itself on every store", async () => {
    const ct = randomCiphertext(3 * MiB);
    const path = await upload(ct, MiB, "dl/small-range.bin");
    const r = await rawGet(path, "Range: bytes=1048000-1049999\r\n");
    expect(r.status).toBe(206);
    expect(r.headers["content-length"]).toBe("2000");
    expect(r.body.equals(ct.subarray(1048000, 1050000))).toBe(true);
  });

  test.if(testStorage === "disk")(
    "a 5 MiB file whose stored object vanished is 500 storage_inconsistency, not a 200 with a short body",
    async () => {
      const ct = randomCiphertext(5 * MiB + 1);
      const path = await upload(ct, 4 * MiB, "dl/vanished.bin");
      const stored = (function find(dir: string): string | null {
        for (const e of readdirSync(dir, { withFileTypes: true })) {
          const p = join(dir, e.name);
          if (e.isDirectory()) {
            const hit = find(p);
            if (hit) return hit;
          } else if (e.isFile() && statSync(p).size === ct.length) return p;
        }
        return null;
      })(server.dataDir);
      expect(stored).not.toBeNull();
      rmSync(stored!);
      const r = await rawGet(path);
      expect(r.status).toBe(500);
      expect(JSON.parse(r.body.toString()).Error.error).toBe("storage_inconsistency");
    },
  );
});
