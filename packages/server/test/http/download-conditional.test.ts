/**
 * Downloads across revisions (issue 10 defect 6): a replaced or deleted file's objects stay
 * readable for ESYNC_BLOB_GRACE_SECONDS so a download in flight finishes; `/download` carries a
 * strong ETag (the revision id) and honours If-Range (a stale validator gets the whole current
 * file with 200, never a splice of two revisions), If-None-Match (304) and If-Match (412).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { toHex } from "@esync/protocol/ids.ts";
import { loadConfig } from "../../src/config/config.ts";
import { makeTestApp, type TestApp } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext, type TestUser } from "../support/fixtures.ts";
import {
  authAt,
  download,
  expectError,
  expectSuccess,
  FOLDER,
  fileIdOf,
  UPLOAD_RESULT_KEYS,
  uploadSingle,
  uploadViaSession,
} from "./helpers.ts";

let t: TestApp;
beforeEach(() => {
  t = makeTestApp();
});
afterEach(() => t.close());

const SIZE = 8000;

/** A file of SIZE bytes in 8 chunks, then its replacement; returns both ciphertexts and ETags. */
async function twoRevisions(u: TestUser) {
  const v1 = randomCiphertext(SIZE);
  const { result: r1, session } = await uploadViaSession(t, u, v1, { path: "r.bin", chunkSize: 1000 });
  const fileId = fileIdOf(session.manifest);
  const etag1 = `"${toHex(Uint8Array.from(r1.revision_id))}"`;
  const replace = async () => {
    const v2 = randomCiphertext(SIZE);
    const { result: r2 } = await uploadViaSession(t, u, v2, {
      path: "r.bin",
      chunkSize: 1000,
      revisionSeq: 2,
      baseRevisionId: r1.revision_id,
    });
    return { v2, etag2: `"${toHex(Uint8Array.from(r2.revision_id))}"` };
  };
  return { v1, fileId, etag1, replace };
}

function get(u: TestUser, fileId: string, headers: Record<string, string> = {}, method = "GET") {
  return t.fetch(`/download/${u.address}/${FOLDER}/${fileId}`, {
    method,
    headers: { authorization: authAt(t, u), ...headers },
  });
}

async function readAll(stream: ReadableStream<Uint8Array>, reader = stream.getReader()): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
  }
  return Buffer.concat(parts);
}

describe("grace period of replaced objects", () => {
  test("a download started before a replace and a sweep still completes with the old revision's bytes", async () => {
    const u = newUser();
    const { v1, fileId, replace } = await twoRevisions(u);
    const r = await get(u, fileId);
    expect(r.status).toBe(200);
    const reader = r.body!.getReader();
    const first = await reader.read();
    await replace();
    await t.sweeper.runOnce();
    const rest = await readAll(r.body!, reader);
    expect(Buffer.concat([first.value!, rest]).equals(v1)).toBe(true);
  });

  test("a download started before a delete and a sweep still completes; after the grace period the objects are gone", async () => {
    const u = newUser();
    const { v1, fileId } = await twoRevisions(u);
    const r = await get(u, fileId);
    const reader = r.body!.getReader();
    const first = await reader.read();
    const del = await t.fetch(`/delete/${u.address}/${FOLDER}/${fileId}`, {
      method: "DELETE",
      headers: { authorization: authAt(t, u) },
    });
    expect(del.status).toBe(200);
    await t.sweeper.runOnce();
    expect(Buffer.concat([first.value!, await readAll(r.body!, reader)]).equals(v1)).toBe(true);
    t.clock.advance(t.config.blobGraceSeconds);
    await t.sweeper.runOnce();
    expect(await t.blobs.list("b/")).toEqual([]);
  });

  test("ESYNC_BLOB_GRACE_SECONDS defaults to 3600 and refuses a negative or non-integer value", () => {
    expect(loadConfig({}).blobGraceSeconds).toBe(3600);
    for (const bad of ["-1", "1.5", "soon"])
      expect(() => loadConfig({ ESYNC_BLOB_GRACE_SECONDS: bad })).toThrow(/ESYNC_BLOB_GRACE_SECONDS/);
  });

  test("ESYNC_BLOB_GRACE_SECONDS sets the delay (0 = deleted at the next sweep)", async () => {
    await t.close();
    t = makeTestApp({ ESYNC_BLOB_GRACE_SECONDS: "0" });
    expect(t.config.blobGraceSeconds).toBe(0);
    const u = newUser();
    const { fileId } = await twoRevisions(u);
    await t.fetch(`/delete/${u.address}/${FOLDER}/${fileId}`, {
      method: "DELETE",
      headers: { authorization: authAt(t, u) },
    });
    await t.sweeper.runOnce();
    expect(await t.blobs.list("b/")).toEqual([]);
  });
});

describe("ETag and conditional downloads", () => {
  test("200 and 206 carry the strong ETag of the revision (its id, quoted lowercase hex)", async () => {
    const u = newUser();
    const { fileId, etag1 } = await twoRevisions(u);
    expect((await get(u, fileId)).headers.get("etag")).toBe(etag1);
    const part = await get(u, fileId, { range: "bytes=10-19" });
    expect(part.status).toBe(206);
    expect(part.headers.get("etag")).toBe(etag1);
    expect(etag1).toMatch(/^"[0-9a-f]{64}"$/);
  });

  test("If-Range with the current ETag resumes: 206 with the range", async () => {
    const u = newUser();
    const { v1, fileId, etag1 } = await twoRevisions(u);
    const r = await get(u, fileId, { range: "bytes=4000-", "if-range": etag1 });
    expect(r.status).toBe(206);
    expect(r.headers.get("content-range")).toBe(`bytes 4000-${SIZE - 1}/${SIZE}`);
    expect(Buffer.from(await r.arrayBuffer()).equals(v1.subarray(4000))).toBe(true);
  });

  test("If-Range with a stale ETag (file replaced) gives 200 with the whole current file, never a splice", async () => {
    const u = newUser();
    const { fileId, etag1, replace } = await twoRevisions(u);
    const { v2, etag2 } = await replace();
    const r = await get(u, fileId, { range: "bytes=4000-", "if-range": etag1 });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-range")).toBeNull();
    expect(r.headers.get("etag")).toBe(etag2);
    expect(r.headers.get("content-length")).toBe(String(SIZE));
    expect(Buffer.from(await r.arrayBuffer()).equals(v2)).toBe(true);
  });

  test("If-Range with a weak tag or a date never matches: 200 with the whole file", async () => {
    const u = newUser();
    const { v1, fileId, etag1 } = await twoRevisions(u);
    for (const ifRange of [`W/${etag1}`, "Tue, 24 Nov 2026 03:00:00 GMT"]) {
      const r = await get(u, fileId, { range: "bytes=0-9", "if-range": ifRange });
      expect(r.status).toBe(200);
      expect(Buffer.from(await r.arrayBuffer()).equals(v1)).toBe(true);
    }
  });

  test("If-None-Match with the current ETag (or *, or weak) gives 304 with the ETag and no body", async () => {
    const u = newUser();
    const { fileId, etag1 } = await twoRevisions(u);
    for (const inm of [etag1, `"00", ${etag1}`, "*", `W/${etag1}`]) {
      const r = await get(u, fileId, { "if-none-match": inm });
      expect(r.status).toBe(304);
      expect(r.headers.get("etag")).toBe(etag1);
      expect((await r.arrayBuffer()).byteLength).toBe(0);
    }
  });

  test("If-None-Match with a stale ETag gives 200 with the current file", async () => {
    const u = newUser();
    const { fileId, etag1, replace } = await twoRevisions(u);
    const { v2 } = await replace();
    const r = await get(u, fileId, { "if-none-match": etag1 });
    expect(r.status).toBe(200);
    expect(Buffer.from(await r.arrayBuffer()).equals(v2)).toBe(true);
  });

  test("If-Match with a stale ETag gives 412 precondition_failed naming the current ETag; with the current one, 200", async () => {
    const u = newUser();
    const { fileId, etag1, replace } = await twoRevisions(u);
    const { etag2 } = await replace();
    const r = await get(u, fileId, { "if-match": etag1 });
    expect(r.status).toBe(412);
    expect(r.headers.get("etag")).toBe(etag2);
    const body = (await r.json()) as { Error: { error: string } };
    expect(body.Error.error).toBe("precondition_failed");
    expect((await get(u, fileId, { "if-match": etag2 })).status).toBe(200);
    expect((await get(u, fileId, { "if-match": "*" })).status).toBe(200);
    expect((await get(u, fileId, { "if-match": `W/${etag2}` })).status).toBe(412);
  });

  test("returns 404 not_found, not 412, for If-Match on a file that does not exist", async () => {
    const u = newUser();
    const ct = randomCiphertext(100);
    const m = makeManifest({ owner: u.address, ciphertext: ct });
    expectSuccess(await uploadSingle(t, authAt(t, u), m, ct), UPLOAD_RESULT_KEYS);
    const r = await download(t, authAt(t, u), u.address, FOLDER, "ab".repeat(32));
    expect(r.status).toBe(404);
    const j = await t.json(`/download/${u.address}/${FOLDER}/${"ab".repeat(32)}`, {
      headers: { authorization: authAt(t, u), "if-match": "*" },
    });
    expectError(j, 404, "not_found");
  });

  test("HEAD sends the GET headers (Content-Length of the file or range, ETag, Accept-Ranges) and no body", async () => {
    const u = newUser();
    const { fileId, etag1 } = await twoRevisions(u);
    const whole = await get(u, fileId, {}, "HEAD");
    expect(whole.status).toBe(200);
    expect(whole.headers.get("content-length")).toBe(String(SIZE));
    expect(whole.headers.get("etag")).toBe(etag1);
    expect(whole.headers.get("accept-ranges")).toBe("bytes");
    expect((await whole.arrayBuffer()).byteLength).toBe(0);
    const part = await get(u, fileId, { range: "bytes=100-199" }, "HEAD");
    expect(part.status).toBe(206);
    expect(part.headers.get("content-length")).toBe("100");
    expect(part.headers.get("content-range")).toBe(`bytes 100-199/${SIZE}`);
  });

  test("HEAD answers errors with their GET status: 401 without a token, 404 for a missing file, 412 for a stale If-Match", async () => {
    const u = newUser();
    const { fileId, replace, etag1 } = await twoRevisions(u);
    await replace();
    const head = (path: string, headers: Record<string, string>) =>
      t.fetch(path, { method: "HEAD", headers });
    expect((await head(`/download/${u.address}/${FOLDER}/${fileId}`, {})).status).toBe(401);
    expect((await get(u, "cd".repeat(32), {}, "HEAD")).status).toBe(404);
    expect((await get(u, fileId, { "if-match": etag1 }, "HEAD")).status).toBe(412);
    expect((await get(u, fileId, { "if-none-match": "*" }, "HEAD")).status).toBe(304);
  });
});
