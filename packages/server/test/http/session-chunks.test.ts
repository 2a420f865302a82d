/**
 * Chunk upload, status, abort and expiry of upload sessions (docs/protocol.md#upload-sessions;
 * docs/protocol.md#open-rules): any order and in parallel, exact lengths with nothing kept on a bad one,
 * last write wins, expiry refreshed by chunk PUT and status, garbage collection by the sweeper.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { makeTestApp, type TestApp } from "../support/app.ts";
import { newUser, randomCiphertext } from "../support/fixtures.ts";
import {
  abort,
  authAt,
  blobFiles,
  chunkOf,
  download,
  expectError,
  expectSuccess,
  FOLDER,
  fileIdOf,
  finalize,
  openSession,
  putChunk,
  putChunks,
  rowsOf,
  STATUS_KEYS,
  snapshot,
  status,
  UPLOAD_RESULT_KEYS,
} from "./helpers.ts";

const TTL = 600;
let t: TestApp;
beforeEach(() => {
  t = makeTestApp({ ESYNC_SESSION_TTL_SECONDS: String(TTL) });
});
afterEach(() => t.close());

async function received(auth: string, sid: string): Promise<number[]> {
  return expectSuccess(await status(t, auth, sid), STATUS_KEYS).chunks_received;
}

async function downloaded(auth: string, address: string, manifest: Record<string, unknown>): Promise<Buffer> {
  const r = await download(t, auth, address, FOLDER, fileIdOf(manifest));
  expect(r.status).toBe(200);
  return Buffer.from(await r.arrayBuffer());
}

describe("PUT /upload/session/{id}/chunk/{index}", () => {
  test("stores a chunk (200 with exactly chunk_index) and status lists it", async () => {
    const u = newUser();
    const ct = randomCiphertext(2500);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    const r = await putChunk(t, s.auth, s.sessionId, 1, chunkOf(ct, 1000, 1));
    expect(expectSuccess(r, ["chunk_index"])).toEqual({ chunk_index: 1 });
    expect(await received(s.auth, s.sessionId)).toEqual([1]);
  });

  test("accepts chunks in reverse order and status lists them ascending", async () => {
    const u = newUser();
    const ct = randomCiphertext(5000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    await putChunks(t, s, ct, [4, 2, 0, 3, 1]);
    expect(await received(s.auth, s.sessionId)).toEqual([0, 1, 2, 3, 4]);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
    expect((await downloaded(s.auth, u.address, s.manifest)).equals(ct)).toBe(true);
  });

  test("accepts all chunks in parallel and the finalized file is byte-identical", async () => {
    const u = newUser();
    const ct = randomCiphertext(64 * 1024 + 17);
    const s = await openSession(t, u, ct, { chunkSize: 4096 });
    const rs = await Promise.all(
      [...Array(s.chunkCount).keys()].map((i) => putChunk(t, s.auth, s.sessionId, i, chunkOf(ct, 4096, i))),
    );
    expect(rs.map((r) => r.status)).toEqual(new Array(s.chunkCount).fill(200));
    expect(await received(s.auth, s.sessionId)).toEqual([...Array(s.chunkCount).keys()]);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
    expect((await downloaded(s.auth, u.address, s.manifest)).equals(ct)).toBe(true);
  });

  test("accepts a chunk body sent as a stream without Content-Length (200)", async () => {
    const u = newUser();
    const ct = randomCiphertext(3000);
    const s = await openSession(t, u, ct, { chunkSize: 3000 });
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(ct.subarray(0, 1000));
        c.enqueue(ct.subarray(1000, 2999));
        c.enqueue(ct.subarray(2999));
        c.close();
      },
    });
    expectSuccess(await putChunk(t, s.auth, s.sessionId, 0, body), ["chunk_index"]);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
  });

  test("re-upload of an index overwrites it: last write wins, verified by finalize and download", async () => {
    const u = newUser();
    const ct = randomCiphertext(3000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    await putChunks(t, s, ct);
    expectSuccess(await putChunk(t, s.auth, s.sessionId, 1, randomCiphertext(1000)), ["chunk_index"]);
    expectError(await finalize(t, s.auth, s.sessionId), 400, "invalid_manifest");
    expectSuccess(await putChunk(t, s.auth, s.sessionId, 1, chunkOf(ct, 1000, 1)), ["chunk_index"]);
    expect(await received(s.auth, s.sessionId)).toEqual([0, 1, 2]);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
    expect((await downloaded(s.auth, u.address, s.manifest)).equals(ct)).toBe(true);
  });

  test("re-upload queues the replaced chunk object, and after a sweep each index has one object", async () => {
    const u = newUser();
    const ct = randomCiphertext(2000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    await putChunks(t, s, ct);
    await putChunks(t, s, ct, [0, 0, 1]);
    expect(await blobFiles(t)).toHaveLength(5);
    await t.sweeper.runOnce();
    expect(await blobFiles(t)).toHaveLength(2);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
  });

  const badLengths: [string, (ct: Buffer) => Uint8Array, number][] = [
    ["a body one byte short", (ct) => ct.subarray(0, 999), 0],
    ["a body one byte long", (ct) => Buffer.concat([ct.subarray(0, 1000), Buffer.from([1])]), 0],
    ["an empty body", () => new Uint8Array(0), 0],
    [
      "a full chunk_size body for the shorter last index",
      (ct) => Buffer.concat([ct.subarray(2000), Buffer.alloc(500)]),
      2,
    ],
    ["a last-chunk-sized body for a middle index", (ct) => ct.subarray(0, 500), 1],
  ];
  for (const [what, body, index] of badLengths) {
    test(`returns 400 invalid_manifest naming the expected length for ${what}, keeping nothing`, async () => {
      const u = newUser();
      const ct = randomCiphertext(2500);
      const s = await openSession(t, u, ct, { chunkSize: 1000 });
      const before = await snapshot(t);
      const r = await putChunk(t, s.auth, s.sessionId, index, body(ct));
      expectError(r, 400, "invalid_manifest");
      expect(r.body.Error.message).toContain(index === 2 ? "500" : "1000");
      expect(await snapshot(t)).toEqual(before);
      expect(await received(s.auth, s.sessionId)).toEqual([]);
    });
  }

  test("a short chunk after a good one leaves the good one in place (400, chunk kept)", async () => {
    const u = newUser();
    const ct = randomCiphertext(2000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    await putChunks(t, s, ct, [0]);
    const before = await snapshot(t);
    expectError(await putChunk(t, s.auth, s.sessionId, 0, ct.subarray(0, 10)), 400, "invalid_manifest");
    expect(await snapshot(t)).toEqual(before);
    await putChunks(t, s, ct, [1]);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
    expect((await downloaded(s.auth, u.address, s.manifest)).equals(ct)).toBe(true);
  });

  test("returns 400 invalid_manifest for a streamed body longer than the chunk, keeping nothing", async () => {
    const u = newUser();
    const ct = randomCiphertext(2000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    const before = await snapshot(t);
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(ct.subarray(0, 800));
        c.enqueue(ct.subarray(800, 1600));
        c.close();
      },
    });
    expectError(await putChunk(t, s.auth, s.sessionId, 0, body), 400, "invalid_manifest");
    expect(await snapshot(t)).toEqual(before);
  });

  test("returns 400 invalid_manifest when Content-Length differs from the chunk's length, keeping nothing", async () => {
    const u = newUser();
    const ct = randomCiphertext(2000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    const before = await snapshot(t);
    const r = await putChunk(t, s.auth, s.sessionId, 0, ct.subarray(0, 1000), { "content-length": "999" });
    expectError(r, 400, "invalid_manifest");
    expect(r.body.Error.message).toContain("1000");
    expect(await snapshot(t)).toEqual(before);
  });

  test("returns 400 invalid_manifest when the body is shorter than its correct Content-Length, keeping nothing", async () => {
    const u = newUser();
    const ct = randomCiphertext(2000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    const before = await snapshot(t);
    const r = await putChunk(t, s.auth, s.sessionId, 0, ct.subarray(0, 999), { "content-length": "1000" });
    expectError(r, 400, "invalid_manifest");
    expect(await snapshot(t)).toEqual(before);
  });

  test("returns 400 invalid_manifest for a Content-Length over 16 MiB before reading the body", async () => {
    const u = newUser();
    const ct = randomCiphertext(2000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    const r = await putChunk(t, s.auth, s.sessionId, 0, ct.subarray(0, 1000), {
      "content-length": String(16 * 1024 * 1024 + 1),
    });
    expectError(r, 400, "invalid_manifest");
  });

  test("returns 400 invalid_manifest for a malformed Content-Length", async () => {
    const u = newUser();
    const ct = randomCiphertext(1000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    expectError(
      await putChunk(t, s.auth, s.sessionId, 0, ct, { "content-length": "1e3" }),
      400,
      "invalid_manifest",
    );
  });

  for (const index of ["3", "4", "4294967295"]) {
    test(`returns 400 invalid_manifest for chunk_index ${index} >= chunk_count 3, keeping nothing`, async () => {
      const u = newUser();
      const ct = randomCiphertext(2500);
      const s = await openSession(t, u, ct, { chunkSize: 1000 });
      const before = await snapshot(t);
      expectError(
        await putChunk(t, s.auth, s.sessionId, index, ct.subarray(0, 500)),
        400,
        "invalid_manifest",
      );
      expect(await snapshot(t)).toEqual(before);
    });
  }

  for (const index of ["-1", "01", "1.0", "x", "4294967296", "99999999999999999999", "0x1", "..%2F0"]) {
    test(`returns 400 invalid_manifest for a malformed chunk_index '${index}'`, async () => {
      const u = newUser();
      const ct = randomCiphertext(1000);
      const s = await openSession(t, u, ct, { chunkSize: 1000 });
      const before = await snapshot(t);
      expectError(await putChunk(t, s.auth, s.sessionId, index, ct), 400, "invalid_manifest");
      expect(await snapshot(t)).toEqual(before);
    });
  }

  test("returns 404 not_found for an unknown session id", async () => {
    const u = newUser();
    expectError(await putChunk(t, authAt(t, u), "no-such-session", 0, new Uint8Array(10)), 404, "not_found");
  });

  test("returns 403 forbidden for another user's session, keeping nothing", async () => {
    const a = newUser();
    const b = newUser();
    const ct = randomCiphertext(1000);
    const s = await openSession(t, a, ct, { chunkSize: 1000 });
    const before = await snapshot(t);
    expectError(await putChunk(t, authAt(t, b), s.sessionId, 0, ct), 403, "forbidden");
    expect(await snapshot(t)).toEqual(before);
  });

  test("returns 409 conflict for a chunk PUT on a finalized session and the file is unchanged", async () => {
    const u = newUser();
    const ct = randomCiphertext(2000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    await putChunks(t, s, ct);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
    expectError(await putChunk(t, s.auth, s.sessionId, 0, randomCiphertext(1000)), 409, "conflict");
    await t.sweeper.runOnce();
    expect((await downloaded(s.auth, u.address, s.manifest)).equals(ct)).toBe(true);
  });

  test("refreshes the expiry: a session kept busy with chunks outlives its first expires_at", async () => {
    const u = newUser();
    const ct = randomCiphertext(3000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    for (let i = 0; i < 3; i++) {
      t.clock.advance(TTL - 100);
      await putChunks(t, s, ct, [i]);
    }
    expect(t.clock.now()).toBeGreaterThan(s.expiresAt);
    const st = expectSuccess(await status(t, s.auth, s.sessionId), STATUS_KEYS);
    expect(st.expires_at).toBe(t.clock.now() + TTL);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
  });
});

describe("a chunk PUT's token is checked when the request starts", () => {
  test("accepts (200) a chunk whose token expires while its body streams, and refuses (401) the next request with it", async () => {
    const u = newUser();
    const ct = randomCiphertext(2000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    const shortLived = authAt(t, u, 60);
    const chunk = chunkOf(ct, 1000, 0);
    let piece = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (piece === 0) c.enqueue(chunk.subarray(0, 500));
        else {
          // The token expires mid-body: the request was authenticated when it started.
          t.clock.advance(120);
          c.enqueue(chunk.subarray(500));
          c.close();
        }
        piece++;
      },
    });
    const r = await putChunk(t, shortLived, s.sessionId, 0, body, { "content-length": "1000" });
    expectSuccess(r, ["chunk_index"]);
    expect(piece).toBe(2);
    expectError(await putChunk(t, shortLived, s.sessionId, 1, chunkOf(ct, 1000, 1)), 401, "unauthorized");
  });
});

describe("GET /upload/session/{id}/status", () => {
  test("refreshes the expiry of a receiving session (expires_at = now + TTL)", async () => {
    const u = newUser();
    const ct = randomCiphertext(1000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    for (let i = 0; i < 3; i++) {
      t.clock.advance(TTL - 1);
      const st = expectSuccess(await status(t, s.auth, s.sessionId), STATUS_KEYS);
      expect(st.expires_at).toBe(t.clock.now() + TTL);
    }
    await putChunks(t, s, ct);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
  });

  test("shows state finalized with every chunk after finalize", async () => {
    const u = newUser();
    const ct = randomCiphertext(2000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    await putChunks(t, s, ct);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
    const st = expectSuccess(await status(t, s.auth, s.sessionId), STATUS_KEYS);
    expect(st).toMatchObject({
      session_id: s.sessionId,
      state: "finalized",
      total_chunks: 2,
      chunks_received: [0, 1],
    });
  });

  test("returns 404 not_found for an unknown session id", async () => {
    const u = newUser();
    expectError(await status(t, authAt(t, u), "AAAAAAAAAAAAAAAAAAAAAAAA"), 404, "not_found");
  });

  test("returns 403 forbidden for another user's session and does not refresh its expiry", async () => {
    const a = newUser();
    const b = newUser();
    const ct = randomCiphertext(1000);
    const s = await openSession(t, a, ct, { chunkSize: 1000 });
    t.clock.advance(TTL - 10);
    const before = await snapshot(t);
    expectError(await status(t, authAt(t, b), s.sessionId), 403, "forbidden");
    expect(await snapshot(t)).toEqual(before);
    t.clock.advance(10);
    expectError(await status(t, s.auth, s.sessionId), 404, "not_found");
  });
});

describe("DELETE /upload/session/{id}", () => {
  test("deletes a receiving session (200 deleted: true); it is then 404 and its chunks are swept", async () => {
    const u = newUser();
    const ct = randomCiphertext(3000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    await putChunks(t, s, ct, [0, 2]);
    expect(await blobFiles(t)).toHaveLength(2);
    expect(expectSuccess(await abort(t, s.auth, s.sessionId), ["deleted"])).toEqual({ deleted: true });
    expectError(await status(t, s.auth, s.sessionId), 404, "not_found");
    expectError(await putChunk(t, s.auth, s.sessionId, 1, chunkOf(ct, 1000, 1)), 404, "not_found");
    expectError(await finalize(t, s.auth, s.sessionId), 404, "not_found");
    expect(await rowsOf(t, "session_chunks")).toEqual([]);
    await t.sweeper.runOnce();
    expect(await blobFiles(t)).toEqual([]);
    expect(await rowsOf(t, "blob_deletions")).toEqual([]);
  });

  test("returns 404 not_found for a second DELETE of the same session", async () => {
    const u = newUser();
    const s = await openSession(t, u, randomCiphertext(100), { chunkSize: 100 });
    expect((await abort(t, s.auth, s.sessionId)).status).toBe(200);
    expectError(await abort(t, s.auth, s.sessionId), 404, "not_found");
  });

  test("returns 404 not_found for a session that never existed", async () => {
    const u = newUser();
    expectError(await abort(t, authAt(t, u), "never-existed"), 404, "not_found");
  });

  test("returns 403 forbidden for another user's session and keeps the session and its chunks", async () => {
    const a = newUser();
    const b = newUser();
    const ct = randomCiphertext(1000);
    const s = await openSession(t, a, ct, { chunkSize: 1000 });
    await putChunks(t, s, ct);
    const before = await snapshot(t);
    expectError(await abort(t, authAt(t, b), s.sessionId), 403, "forbidden");
    expect(await snapshot(t)).toEqual(before);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
  });

  test("deleting a finalized session (200) keeps the file and its blob after a sweep", async () => {
    const u = newUser();
    const ct = randomCiphertext(2500);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    await putChunks(t, s, ct);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
    // Finalize stored the 3 chunks as one object and queued the chunks themselves for deletion.
    await t.sweeper.runOnce();
    const kept = await blobFiles(t);
    expect(kept).toHaveLength(1);
    expect((await abort(t, s.auth, s.sessionId)).status).toBe(200);
    await t.sweeper.runOnce();
    expect(await blobFiles(t)).toEqual(kept);
    expect((await downloaded(s.auth, u.address, s.manifest)).equals(ct)).toBe(true);
  });
});

describe("expiry", () => {
  test("returns 404 not_found on every session endpoint once the clock passes expires_at", async () => {
    const u = newUser();
    const ct = randomCiphertext(2000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    await putChunks(t, s, ct, [0]);
    t.clock.advance(TTL);
    expectError(await status(t, s.auth, s.sessionId), 404, "not_found");
    expectError(await putChunk(t, s.auth, s.sessionId, 1, chunkOf(ct, 1000, 1)), 404, "not_found");
    expectError(await finalize(t, s.auth, s.sessionId), 404, "not_found");
    expectError(await abort(t, s.auth, s.sessionId), 404, "not_found");
  });

  test("the sweeper collects an expired session's rows and chunk objects", async () => {
    const u = newUser();
    const ct = randomCiphertext(3000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    await putChunks(t, s, ct, [0, 1]);
    const live = await openSession(t, u, ct, { chunkSize: 1000, path: "other.bin" });
    t.clock.advance(TTL - 1);
    await putChunks(t, live, ct, [2]);
    t.clock.advance(1);
    await t.sweeper.runOnce();
    expect((await rowsOf(t, "upload_sessions")).map((r) => r.session_id)).toEqual([live.sessionId]);
    expect((await rowsOf(t, "session_chunks")).map((r) => r.session_id)).toEqual([live.sessionId]);
    expect(await rowsOf(t, "blob_deletions")).toEqual([]);
    expect(await blobFiles(t)).toHaveLength(1);
    expect(await received(live.auth, live.sessionId)).toEqual([2]);
  });

  test("a finalized session stays readable by status until it expires, then is 404; the file remains", async () => {
    const u = newUser();
    const ct = randomCiphertext(1000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    await putChunks(t, s, ct);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
    t.clock.advance(TTL - 1);
    expect(expectSuccess(await status(t, s.auth, s.sessionId), STATUS_KEYS).state).toBe("finalized");
    t.clock.advance(1);
    expectError(await status(t, s.auth, s.sessionId), 404, "not_found");
    await t.sweeper.runOnce();
    expect(await rowsOf(t, "upload_sessions")).toEqual([]);
    expect((await downloaded(s.auth, u.address, s.manifest)).equals(ct)).toBe(true);
  });

  test("a chunk arriving after expiry is 404 and leaves no object behind", async () => {
    const u = newUser();
    const ct = randomCiphertext(1000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    t.clock.advance(TTL + 5);
    expectError(await putChunk(t, s.auth, s.sessionId, 0, ct), 404, "not_found");
    await t.sweeper.runOnce();
    expect(await blobFiles(t)).toEqual([]);
    expect(await rowsOf(t, "upload_sessions")).toEqual([]);
  });
});
