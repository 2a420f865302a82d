/**
 * `POST /upload/session/{id}/finalize` (docs/protocol.md#upload-sessions, #manifest, #open-rules): the UploadResult,
 * missing chunks and hash mismatch leaving the session `receiving` with its chunks, revisions
 * (Conflict envelope, stale_sequence, created_at kept), repeated and concurrent finalize.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import { makeTestApp, type TestApp } from "../support/app.ts";
import { newUser, randomCiphertext, type TestUser } from "../support/fixtures.ts";
import {
  authAt,
  blobFiles,
  chunkOf,
  download,
  expectConflict,
  expectError,
  expectSuccess,
  FOLDER,
  fileIdOf,
  finalize,
  type Json,
  type OpenSession,
  openSession,
  putChunk,
  putChunks,
  rowsOf,
  STATUS_KEYS,
  stateOf,
  status,
  UPLOAD_RESULT_KEYS,
  uploadViaSession,
} from "./helpers.ts";

let t: TestApp;
beforeEach(() => {
  t = makeTestApp();
});
afterEach(() => t.close());

async function statusOf(s: OpenSession): Promise<Json> {
  return expectSuccess(await status(t, s.auth, s.sessionId), STATUS_KEYS);
}

async function bytesOf(u: TestUser, manifest: Record<string, unknown>): Promise<Buffer> {
  const r = await download(t, authAt(t, u), u.address, FOLDER, fileIdOf(manifest));
  expect(r.status).toBe(200);
  return Buffer.from(await r.arrayBuffer());
}

/** Rows that a rejected finalize must not change: files and folders. */
async function fileRows() {
  return { files: await rowsOf(t, "files"), folders: await rowsOf(t, "folders") };
}

describe("successful finalize", () => {
  test("returns 200 with exactly the UploadResult fields, and get_state shows the same revision and times", async () => {
    const u = newUser();
    const ct = randomCiphertext(5000);
    const s = await openSession(t, u, ct, { chunkSize: 2048, sizeBytes: 4952 });
    await putChunks(t, s, ct);
    const r = expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
    expect(typeof r.upload_id).toBe("string");
    expect(r.upload_id.length).toBeGreaterThan(0);
    expect(r.timestamp).toBe(t.clock.now());
    expect(r.created_at).toBe(t.clock.now());
    expect(r.updated_at).toBe(t.clock.now());
    expect(r.revision_id).toHaveLength(32);
    expect(
      r.revision_id.every((b: unknown) => Number.isInteger(b) && (b as number) >= 0 && (b as number) <= 255),
    ).toBe(true);

    const state = await stateOf(t, u);
    expect(state.files).toHaveLength(1);
    const e = state.files[0];
    expect(e).toMatchObject({
      path_hash: s.manifest.path_hash,
      salted_hash: s.manifest.salted_hash,
      size_bytes: 4952,
      revision_seq: 1,
      revision_id: r.revision_id,
      encrypted_path: s.manifest.encrypted_path,
      file_name: "file.bin",
      relative_path: "docs/file.bin",
      store_hash: blake3Hex(ct),
      created_at: r.created_at,
      updated_at: r.updated_at,
    });
    expect((await bytesOf(u, s.manifest)).equals(ct)).toBe(true);
  });

  test("stores a multi-chunk file as one object of its whole ciphertext; the chunk objects are gone after a sweep", async () => {
    const u = newUser();
    const ct = randomCiphertext(5000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    await putChunks(t, s, ct);
    expect(await blobFiles(t)).toHaveLength(5);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
    await t.sweeper.runOnce();
    const [row] = (await rowsOf(t, "files")) as {
      blob_id: string;
      chunk_count: number;
      chunk_gens: string;
    }[];
    expect(row).toMatchObject({ chunk_count: 5, chunk_gens: '[""]' });
    expect(row?.blob_id).toMatch(/^o[0-9a-f]{32}$/);
    const stored = await blobFiles(t);
    expect(stored).toHaveLength(1);
    expect(stored[0]?.endsWith(`b/${row?.blob_id.slice(1, 3)}/${row?.blob_id}`)).toBe(true);
    expect((await bytesOf(u, s.manifest)).equals(ct)).toBe(true);
  });

  test("keeps a single-chunk file's chunk object as the stored file: nothing is copied", async () => {
    const u = newUser();
    const ct = randomCiphertext(900);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    await putChunks(t, s, ct);
    const before = await blobFiles(t);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
    await t.sweeper.runOnce();
    expect(await blobFiles(t)).toEqual(before);
  });

  test("accepts a last chunk of a single byte", async () => {
    const u = newUser();
    const ct = randomCiphertext(2001);
    const { session } = await uploadViaSession(t, u, ct, { chunkSize: 1000 });
    expect(session.chunkCount).toBe(3);
    expect((await bytesOf(u, session.manifest)).equals(ct)).toBe(true);
  });
});

describe("finalize failures that leave the session receiving with its chunks", () => {
  test("returns 400 invalid_manifest for missing chunks; the session stays receiving and a later finalize succeeds", async () => {
    const u = newUser();
    const ct = randomCiphertext(4000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    await putChunks(t, s, ct, [0, 3]);
    const blobs = await blobFiles(t);
    const r = await finalize(t, s.auth, s.sessionId);
    expectError(r, 400, "invalid_manifest");
    expect(r.body.Error.message).toContain("1, 2");
    expect(await statusOf(s)).toMatchObject({ state: "receiving", chunks_received: [0, 3] });
    expect(await blobFiles(t)).toEqual(blobs);
    expect(await rowsOf(t, "files")).toEqual([]);
    await putChunks(t, s, ct, [2, 1]);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
    expect((await bytesOf(u, s.manifest)).equals(ct)).toBe(true);
  });

  test("returns 400 invalid_manifest when no chunk was uploaded at all", async () => {
    const u = newUser();
    const s = await openSession(t, u, randomCiphertext(100), { chunkSize: 100 });
    expectError(await finalize(t, s.auth, s.sessionId), 400, "invalid_manifest");
    expect((await statusOf(s)).state).toBe("receiving");
  });

  test("returns 400 invalid_manifest for a hash mismatch; chunks stay intact and finalize succeeds after a fix", async () => {
    const u = newUser();
    const ct = randomCiphertext(3000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    const tampered = Buffer.from(ct);
    tampered[1500] = (tampered[1500]! + 1) % 256;
    await putChunks(t, s, tampered);
    const blobs = await blobFiles(t);
    const r = await finalize(t, s.auth, s.sessionId);
    expectError(r, 400, "invalid_manifest");
    expect(r.body.Error.message).toContain(blake3Hex(ct));
    expect(await statusOf(s)).toMatchObject({ state: "receiving", chunks_received: [0, 1, 2] });
    expect(await blobFiles(t)).toEqual(blobs);
    expect(await rowsOf(t, "files")).toEqual([]);
    await putChunks(t, s, ct, [1]);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
    expect((await bytesOf(u, s.manifest)).equals(ct)).toBe(true);
  });

  test("returns 500 storage_inconsistency when a recorded chunk object vanished; re-upload and finalize succeed", async () => {
    const u = newUser();
    const ct = randomCiphertext(2000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    await putChunks(t, s, ct);
    const gen = (await rowsOf(t, "session_chunks")).find((c) => c.chunk_index === 1)!.gen;
    const victim = (await blobFiles(t)).find((p) => p.endsWith(`/1.${gen}`));
    expect(victim).toBeDefined();
    await t.blobs.delete([victim!]);
    expectError(await finalize(t, s.auth, s.sessionId), 500, "storage_inconsistency");
    expect((await statusOf(s)).state).toBe("receiving");
    await putChunks(t, s, ct, [1]);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
  });
});

describe("revisions on finalize", () => {
  test("a revision with the current base_revision_id and a greater revision_seq is 200, keeps created_at and moves updated_at", async () => {
    const u = newUser();
    const v1 = randomCiphertext(3000);
    const { result: r1, session: s1 } = await uploadViaSession(t, u, v1, { chunkSize: 1000 });
    t.clock.advance(100);
    const v2 = randomCiphertext(1500);
    const { result: r2 } = await uploadViaSession(t, u, v2, {
      chunkSize: 1000,
      revisionSeq: 2,
      baseRevisionId: r1.revision_id,
    });
    expect(r2.created_at).toBe(r1.created_at);
    expect(r2.updated_at).toBe(r1.updated_at + 100);
    expect(r2.timestamp).toBe(t.clock.now());
    expect(r2.revision_id).not.toEqual(r1.revision_id);
    const [e] = (await stateOf(t, u)).files;
    expect(e).toMatchObject({
      revision_seq: 2,
      revision_id: r2.revision_id,
      created_at: r2.created_at,
      updated_at: r2.updated_at,
    });
    expect((await bytesOf(u, s1.manifest)).equals(v2)).toBe(true);
    const h = await download(t, authAt(t, u), u.address, FOLDER, fileIdOf(s1.manifest));
    expect(h.headers.get("x-revision-seq")).toBe("2");
    expect(h.headers.get("x-revision-id")).toBe(Buffer.from(r2.revision_id).toString("hex"));
    await h.arrayBuffer();
  });

  test("a replaced revision's blob is queued and removed by the sweeper", async () => {
    const u = newUser();
    const v1 = randomCiphertext(3000);
    const { result: r1 } = await uploadViaSession(t, u, v1, { chunkSize: 1000 });
    const v2 = randomCiphertext(500);
    await uploadViaSession(t, u, v2, { chunkSize: 1000, revisionSeq: 5, baseRevisionId: r1.revision_id });
    // v1's one object and the three chunk objects it was assembled from, v2's single chunk.
    expect(await blobFiles(t)).toHaveLength(5);
    await t.sweeper.runOnce();
    // v1's chunk objects are gone; its object stays within ESYNC_BLOB_GRACE_SECONDS: still readable.
    expect(await blobFiles(t)).toHaveLength(2);
    t.clock.advance(t.config.blobGraceSeconds);
    await t.sweeper.runOnce();
    expect(await blobFiles(t)).toHaveLength(1);
  });

  test("returns 409 with the Conflict envelope for a stale base_revision_id; the session stays receiving and nothing changes", async () => {
    const u = newUser();
    const { result: r1 } = await uploadViaSession(t, u, randomCiphertext(100));
    const ct = randomCiphertext(100);
    const s = await openSession(t, u, ct, { revisionSeq: 2, baseRevisionId: new Array(32).fill(7) });
    await putChunks(t, s, ct);
    const before = await fileRows();
    const c = expectConflict(await finalize(t, s.auth, s.sessionId));
    expect(c.current_revision_id).toEqual(r1.revision_id);
    expect(c.current_revision_seq).toBe(1);
    expect(await fileRows()).toEqual(before);
    expect(await statusOf(s)).toMatchObject({ state: "receiving", chunks_received: [0] });
  });

  test("returns 409 Conflict for a new file (base_revision_id null) where a file already exists", async () => {
    const u = newUser();
    const { result: r1 } = await uploadViaSession(t, u, randomCiphertext(100));
    const ct = randomCiphertext(100);
    const s = await openSession(t, u, ct);
    await putChunks(t, s, ct);
    const c = expectConflict(await finalize(t, s.auth, s.sessionId));
    expect([c.current_revision_id, c.current_revision_seq]).toEqual([r1.revision_id, 1]);
  });

  test("returns 409 Conflict with current_revision_id null and seq 0 for a base_revision_id where no file exists", async () => {
    const u = newUser();
    const ct = randomCiphertext(100);
    const s = await openSession(t, u, ct, { revisionSeq: 2, baseRevisionId: new Array(32).fill(1) });
    await putChunks(t, s, ct);
    const c = expectConflict(await finalize(t, s.auth, s.sessionId));
    expect([c.current_revision_id, c.current_revision_seq]).toEqual([null, 0]);
    expect(await rowsOf(t, "files")).toEqual([]);
  });

  for (const seq of [1, 0]) {
    test(`returns 400 stale_sequence for revision_seq ${seq} not greater than the current 1; the session stays receiving`, async () => {
      const u = newUser();
      const { result: r1 } = await uploadViaSession(t, u, randomCiphertext(100));
      const ct = randomCiphertext(100);
      const s = await openSession(t, u, ct, { revisionSeq: seq, baseRevisionId: r1.revision_id });
      await putChunks(t, s, ct);
      const before = await fileRows();
      expectError(await finalize(t, s.auth, s.sessionId), 400, "stale_sequence");
      expect(await fileRows()).toEqual(before);
      expect((await statusOf(s)).state).toBe("receiving");
    });
  }

  test("of two sessions for the same new path, the second to finalize gets 409 Conflict naming the first's revision", async () => {
    const u = newUser();
    const a = randomCiphertext(200);
    const b = randomCiphertext(300);
    const sa = await openSession(t, u, a);
    const sb = await openSession(t, u, b);
    await putChunks(t, sa, a);
    await putChunks(t, sb, b);
    const ra = expectSuccess(await finalize(t, sa.auth, sa.sessionId), UPLOAD_RESULT_KEYS);
    const c = expectConflict(await finalize(t, sb.auth, sb.sessionId));
    expect(c.current_revision_id).toEqual(ra.revision_id);
    expect((await statusOf(sb)).state).toBe("receiving");
    expect((await bytesOf(u, sa.manifest)).equals(a)).toBe(true);
  });
});

describe("repeated and concurrent finalize", () => {
  test("returns 409 conflict for a second finalize and status shows finalized", async () => {
    const u = newUser();
    const ct = randomCiphertext(100);
    const s = await openSession(t, u, ct);
    await putChunks(t, s, ct);
    const r = expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
    // docs/protocol.md#manifest: a 409 from finalize uses the Conflict envelope, naming the committed revision.
    const c = expectConflict(await finalize(t, s.auth, s.sessionId));
    expect(c.current_revision_id).toEqual(r.revision_id);
    expect(c.current_revision_seq).toBe(1);
    expect((await statusOf(s)).state).toBe("finalized");
    const [e] = (await stateOf(t, u)).files;
    expect(e.revision_id).toEqual(r.revision_id);
  });

  test("commits exactly once when five finalize calls race; the others get 409", async () => {
    const u = newUser();
    const ct = randomCiphertext(256 * 1024);
    const s = await openSession(t, u, ct, { chunkSize: 16 * 1024 });
    await putChunks(t, s, ct);
    const rs = await Promise.all([...Array(5)].map(() => finalize(t, s.auth, s.sessionId)));
    const ok = rs.filter((r) => r.status === 200);
    expect(ok).toHaveLength(1);
    for (const r of rs.filter((x) => x.status !== 200)) expectConflict(r);
    const state = await stateOf(t, u);
    expect(state.files).toHaveLength(1);
    expect(state.files[0].revision_id).toEqual(ok[0]!.body.Success.revision_id);
    expect((await rowsOf(t, "folders"))[0]).toMatchObject({ file_count: 1 });
    expect((await statusOf(s)).state).toBe("finalized");
  });

  test("a chunk PUT racing a finalize either lands before it or is rejected with 409; the file matches the hash", async () => {
    const u = newUser();
    const ct = randomCiphertext(64 * 1024);
    const s = await openSession(t, u, ct, { chunkSize: 8 * 1024 });
    await putChunks(t, s, ct);
    const [f, p] = await Promise.all([
      finalize(t, s.auth, s.sessionId),
      putChunk(t, s.auth, s.sessionId, 3, chunkOf(ct, 8 * 1024, 3)),
    ]);
    expect(f.status).toBe(200);
    expect([200, 409]).toContain(p.status);
    expect((await bytesOf(u, s.manifest)).equals(ct)).toBe(true);
  });
});

describe("finalize errors", () => {
  test("returns 404 not_found for an unknown session", async () => {
    const u = newUser();
    expectError(await finalize(t, authAt(t, u), "unknown-session-id"), 404, "not_found");
  });

  test("returns 403 forbidden for another user's session, which the owner can still finalize", async () => {
    const a = newUser();
    const b = newUser();
    const ct = randomCiphertext(100);
    const s = await openSession(t, a, ct);
    await putChunks(t, s, ct);
    expectError(await finalize(t, authAt(t, b), s.sessionId), 403, "forbidden");
    expect(await rowsOf(t, "files")).toEqual([]);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
  });
});
