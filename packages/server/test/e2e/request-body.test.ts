/**
 * Request bodies on the real server process (Bun.serve): a request answered without reading its
 * body does not hang the client's next request, and a body the client breaks off fails the chunk
 * PUT and records nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import { makeManifest, newUser, randomCiphertext } from "../support/fixtures.ts";
import { SETUP_TIMEOUT_MS, storageEnv, type TestStorageEnv } from "../support/s3-server.ts";
import { type ServerProcess, startServer } from "../support/server.ts";

const MiB = 1024 * 1024;
const user = newUser();
let server: ServerProcess;
let storage: TestStorageEnv = { env: {}, remove: async () => {} };

beforeAll(async () => {
  storage = await storageEnv("e2e-body");
  server = await startServer({ env: storage.env });
}, SETUP_TIMEOUT_MS);

afterAll(async () => {
  await server?.stop();
  if (server) rmSync(server.dataDir, { recursive: true, force: true });
  await storage.remove();
}, 60_000);

/** Opens a session of one chunk of `ciphertext`; returns its id. */
async function openSession(ciphertext: Uint8Array): Promise<string> {
  const r = await fetch(`${server.url}/upload/session`, {
    method: "POST",
    headers: { authorization: user.auth, "content-type": "application/json" },
    body: JSON.stringify({
      manifest: makeManifest({ owner: user.address, ciphertext, path: `body/${blake3Hex(ciphertext)}` }),
      chunk_count: 1,
      chunk_size: ciphertext.length,
      ciphertext_size: ciphertext.length,
    }),
  });
  expect(r.status).toBe(200);
  return ((await r.json()) as { Success: { session_id: string } }).Success.session_id;
}

/** One request on `agent`; resolves with the status, and whether it reused a kept-alive socket. */
function request(
  agent: http.Agent,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: Uint8Array,
): Promise<{ status: number; reused: boolean }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${server.url}${path}`, { method, agent, headers }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("request bodies on the real server", () => {
  test("a chunk PUT answered 401 without reading its 4 MiB body does not hang the next request on the same agent", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const body = randomCiphertext(4 * MiB);
      const sid = await openSession(body);
      const first = await request(
        agent,
        "PUT",
        `/upload/session/${sid}/chunk/0`,
        { authorization: "Bearer nope", "content-length": String(body.length) },
        body,
      );
      expect(first.status).toBe(401);
      const second = await request(
        agent,
        "PUT",
        `/upload/session/${sid}/chunk/0`,
        { authorization: user.auth, "content-length": String(body.length) },
        body,
      );
      // Closed by the server, the connection must not hang the next request.
      expect(second.status).toBe(200);
    } finally {
      agent.destroy();
    }
  });

  test("a chunk body the client breaks off midway records nothing; the chunk then uploads whole", async () => {
    const body = randomCiphertext(4 * MiB);
    const sid = await openSession(body);
    await new Promise<void>((resolve, reject) => {
      const socket = net.connect(server.port, "127.0.0.1", () => {
        socket.write(
          `PUT /upload/session/${sid}/chunk/0 HTTP/1.1\r\nhost: 127.0.0.1\r\n` +
            `authorization: ${user.auth}\r\ncontent-length: ${body.length}\r\n\r\n`,
        );
        socket.write(body.subarray(0, MiB), () => setTimeout(() => socket.destroy(), 100));
      });
      socket.on("error", reject);
      socket.on("close", () => resolve());
    });
    await Bun.sleep(200);
    const status = await fetch(`${server.url}/upload/session/${sid}/status`, {
      headers: { authorization: user.auth },
    });
    expect(
      ((await status.json()) as { Success: { chunks_received: number[] } }).Success.chunks_received,
    ).toEqual([]);
    const put = await fetch(`${server.url}/upload/session/${sid}/chunk/0`, {
      method: "PUT",
      headers: { authorization: user.auth, "content-type": "application/octet-stream" },
      body: new Uint8Array(body),
    });
    expect(put.status).toBe(200);
    const fin = await fetch(`${server.url}/upload/session/${sid}/finalize`, {
      method: "POST",
      headers: { authorization: user.auth, "content-length": "0" },
    });
    expect(fin.status).toBe(200);
  });
});
