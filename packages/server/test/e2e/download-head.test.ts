/**
 * HEAD /download on the real server process (issue 10 defect 7): the same
 * status and headers as GET (Content-Length of the file or the range, ETag, Accept-Ranges) and no
 * body; a stale If-Range on GET gets the whole current file.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import http from "node:http";
import { makeManifest, newUser, randomCiphertext } from "../support/fixtures.ts";
import { type ServerProcess, startServer } from "../support/server.ts";

const user = newUser();
const FOLDER = "37a8eec1ce19687d";

/** A raw request (fetch would hide a HEAD body and rewrite nothing, but node:http shows the wire). */
function raw(
  url: string,
  method: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      const parts: Buffer[] = [];
      res.on("data", (d: Buffer) => parts.push(d));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts) }),
      );
    });
    req.on("error", reject);
    req.end();
  });
}

describe("HEAD /download", () => {
  let server: ServerProcess;
  let fileUrl = "";
  const ct = randomCiphertext(300_000);
  beforeAll(async () => {
    server = await startServer();
    const manifest = makeManifest({ owner: user.address, ciphertext: ct, path: "head.bin" });
    const form = new FormData();
    form.append("manifest", JSON.stringify(manifest));
    form.append("ciphertext", new Blob([new Uint8Array(ct)]));
    const r = await fetch(`${server.url}/upload`, {
      method: "POST",
      headers: { authorization: user.auth },
      body: form,
    });
    expect(r.status).toBe(200);
    const fileId = Buffer.from(manifest.path_hash as number[]).toString("hex");
    fileUrl = `${server.url}/download/${user.address}/${FOLDER}/${fileId}`;
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    if (server) rmSync(server.dataDir, { recursive: true, force: true });
  });

  test("HEAD gives 200 with the file's Content-Length, its ETag and Accept-Ranges, and no body", async () => {
    const get = await raw(fileUrl, "GET", { authorization: user.auth });
    const head = await raw(fileUrl, "HEAD", { authorization: user.auth });
    expect(head.status).toBe(200);
    expect(head.headers["content-length"]).toBe(String(ct.length));
    expect(head.headers.etag).toMatch(/^"[0-9a-f]{64}"$/);
    expect(head.headers.etag).toBe(get.headers.etag);
    expect(head.headers["accept-ranges"]).toBe("bytes");
    expect(head.body.length).toBe(0);
    expect(get.body.equals(ct)).toBe(true);
  });

  test("HEAD with a Range gives 206 with the range's Content-Length and Content-Range", async () => {
    const head = await raw(fileUrl, "HEAD", { authorization: user.auth, range: "bytes=1000-1999" });
    expect(head.status).toBe(206);
    expect(head.headers["content-length"]).toBe("1000");
    expect(head.headers["content-range"]).toBe(`bytes 1000-1999/${ct.length}`);
    expect(head.body.length).toBe(0);
  });
});
