/**
 * Upload sessions of large chunks on S3 (Ceph RGW, always: this file builds its apps on the test
 * RGW whatever `ESYNC_TEST_STORAGE` says; the metadata database follows `ESYNC_TEST_DATABASE`):
 * each chunk is a part of one multipart upload of the file's object, completed at finalize
 * (docs/design.md#storage-layout). No chunk object is ever created, the file is one object, and
 * every duty of the chunk-object path still holds: write intent first, whole-file BLAKE3 before
 * the commit, abort of an abandoned session's upload by the sweeper, fsck of uploads no session owns.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { S3Config } from "../../src/config/config.ts";
import { runFsck } from "../../src/ops/fsck.ts";
import {
  type BlobStore,
  isMultipart,
  type Multipart,
  type OpenUpload,
} from "../../src/storage/blob-store.ts";
import { chunkKey, multipartBlobId, multipartTarget } from "../../src/storage/layout.ts";
import { createS3BlobStore } from "../../src/storage/s3.ts";
import { makeTestApp, type TestApp, testDatabase } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext } from "../support/fixtures.ts";
import { pgMigratedDatabase } from "../support/pg-server.ts";
import { removeTestBucket, SETUP_TIMEOUT_MS, s3Env, s3TestConfig, skipS3 } from "../support/s3-server.ts";
import { tempDir } from "../support/tmp.ts";
import {
  abort,
  authAt,
  chunkOf,
  createSessionRaw,
  download,
  expectConflict,
  expectError,
  expectSuccess,
  FOLDER,
  fileIdOf,
  finalize,
  openSession,
  putChunk,
  rowsOf,
  STATUS_KEYS,
  status,
  UPLOAD_RESULT_KEYS,
} from "./helpers.ts";

const MiB = 1024 * 1024;
/** S3's smallest part: the smallest chunk that takes the multipart path. */
const CHUNK = 5 * MiB;

let cfg: S3Config;
const apps: TestApp[] = [];

/** A test app on the shared bucket, under a key prefix of its own. */
function app(env: Record<string, string> = {}): TestApp {
  const t = makeTestApp({ ...s3Env({ ...cfg, prefix: `mp-${randomBytes(5).toString("hex")}` }), ...env });
  apps.push(t);
  return t;
}

function multipartOf(t: TestApp): BlobStore & Multipart {
  if (!isMultipart(t.blobs)) throw new Error("the S3 store has no multipart ability");
  return t.blobs;
}

async function uploadsOf(t: TestApp): Promise<OpenUpload[]> {
  const out: OpenUpload[] = [];
  for await (const u of multipartOf(t).listMultipart("")) out.push(u);
  return out;
}

async function sessionRow(t: TestApp, sessionId: string): Promise<Record<string, unknown>> {
  const row = (await rowsOf(t, "upload_sessions")).find((r) => r.session_id === sessionId);
  if (!row) throw new Error(`no session row ${sessionId}`);
  return row;
}

/** Bytes of the file's download. */
async function downloaded(t: TestApp, auth: string, address: string, manifest: Record<string, unknown>) {
  const r = await download(t, auth, address, FOLDER, fileIdOf(manifest));
  expect(r.status).toBe(200);
  return new Uint8Array(await r.arrayBuffer());
}

if (skipS3) {
  test.skip("multipart upload sessions (skipped: ESYNC_TEST_SKIP_S3=1)", () => {});
} else {
  beforeAll(async () => {
    cfg = await s3TestConfig("session-multipart");
    const store = createS3BlobStore(cfg);
    await store.check();
    await store.close();
  }, SETUP_TIMEOUT_MS);
  afterEach(async () => {
    for (const t of apps.splice(0)) {
      for (const u of await uploadsOf(t)) await multipartOf(t).abortMultipart(u.key);
      await t.close();
    }
  }, 120_000);
  afterAll(async () => {
    if (cfg) await removeTestBucket(cfg);
  }, 120_000);

  describe("upload sessions of chunks of at least 5 MiB on S3", () => {
    test("chunks sent out of order become the parts of one multipart upload: no chunk object is ever created, finalize makes the file one object", async () => {
      const t = app();
      const user = newUser();
      const ct = randomCiphertext(2 * CHUNK + 1000);
      const s = await openSession(t, user, ct, { chunkSize: CHUNK });
      const row = await sessionRow(t, s.sessionId);
      expect(typeof row.upload_id).toBe("string");
      const key = chunkKey(multipartBlobId(row.blob_id as string), 0, "");
      expect((await uploadsOf(t)).map((u) => u.key)).toEqual([key]);
      for (const i of [2, 0, 1]) {
        expect(
          expectSuccess(await putChunk(t, s.auth, s.sessionId, i, chunkOf(ct, CHUNK, i)), ["chunk_index"]),
        ).toEqual({ chunk_index: i });
        expect(await t.blobs.list("")).toEqual([]);
      }
      expect(
        expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS).upload_id,
      ).toBeString();
      expect(await t.blobs.list("")).toEqual([key]);
      expect(await uploadsOf(t)).toEqual([]);
      const file = (await rowsOf(t, "files"))[0]!;
      expect(file.blob_id).toBe(multipartBlobId(row.blob_id as string));
      expect(await downloaded(t, s.auth, user.address, s.manifest)).toEqual(new Uint8Array(ct));
      // Nothing left to delete but the file's object: no chunk prefix, no intent.
      expect((await rowsOf(t, "blob_deletions")).map((r) => r.target)).toEqual([]);
    }, 120_000);

    test("a finalize on a node that holds no chunk in memory completes the upload and reads the object back to verify it", async () => {
      // No look-ahead: chunks 1 and 2 arrive ahead of chunk 0 and are not kept, and a part
      // cannot be read before completion, so finalize hashes them from the completed object.
      const t = app({ ESYNC_LOOKAHEAD_BYTES: "0" });
      const user = newUser();
      const ct = randomCiphertext(2 * CHUNK + 7);
      const s = await openSession(t, user, ct, { chunkSize: CHUNK });
      for (const i of [1, 2, 0])
        expectSuccess(await putChunk(t, s.auth, s.sessionId, i, chunkOf(ct, CHUNK, i)), ["chunk_index"]);
      expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
      expect(await downloaded(t, s.auth, user.address, s.manifest)).toEqual(new Uint8Array(ct));
      expect((await t.blobs.list("")).length).toBe(1);
    }, 120_000);

    test("parts sent to two nodes sharing the database and the bucket: the finalizing node completes the upload and verifies the object; a finalize while it holds the lease answers 409", async () => {
      const shared = tempDir("esync-mp-nodes-");
      const db = testDatabase === "postgres" ? await pgMigratedDatabase("mp-nodes") : null;
      try {
        const prefix = `mp-${randomBytes(5).toString("hex")}`;
        const env = {
          ...s3Env({ ...cfg, prefix }),
          ESYNC_DATA_DIR: shared,
          ...(db ? { ESYNC_DATABASE_URL: db.url } : { ESYNC_DB_PATH: join(shared, "esync.sqlite") }),
        };
        const a = makeTestApp(env);
        apps.push(a);
        const b = makeTestApp(env);
        apps.push(b);
        b.clock.advance(a.clock.now() - b.clock.now());
        const user = newUser();
        const ct = randomCiphertext(2 * CHUNK + 11);
        const s = await openSession(a, user, ct, { chunkSize: CHUNK });
        for (const [node, i] of [
          [a, 2],
          [b, 1],
          [a, 0],
        ] as const)
          expectSuccess(await putChunk(node, s.auth, s.sessionId, i, chunkOf(ct, CHUNK, i)), ["chunk_index"]);
        expect(await a.blobs.list("")).toEqual([]);
        // Node a holds the finalize lease (as a finalize running there would): b's finalize is refused.
        const sessions = a.store.repos.sessions;
        const until = a.clock.now() + 60;
        expect(await sessions.beginFinalizing(s.sessionId, until, until, null)).toBe(true);
        expectConflict(await finalize(b, s.auth, s.sessionId));
        expect(await sessions.endFinalizing(s.sessionId, until, "receiving", {})).toBe(true);
        expectSuccess(await finalize(b, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
        expect((await a.blobs.list("")).length).toBe(1);
        expect(await downloaded(a, s.auth, user.address, s.manifest)).toEqual(new Uint8Array(ct));
      } finally {
        for (const t of apps.splice(0)) await t.close();
        await db?.release();
      }
    }, 120_000);

    test("a re-sent chunk replaces its part: the file holds the last bytes sent for it", async () => {
      const t = app();
      const user = newUser();
      const ct = randomCiphertext(2 * CHUNK + 1);
      const s = await openSession(t, user, ct, { chunkSize: CHUNK });
      expectSuccess(await putChunk(t, s.auth, s.sessionId, 1, randomCiphertext(CHUNK)), ["chunk_index"]);
      for (const i of [0, 1, 2])
        expectSuccess(await putChunk(t, s.auth, s.sessionId, i, chunkOf(ct, CHUNK, i)), ["chunk_index"]);
      expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
      expect(await downloaded(t, s.auth, user.address, s.manifest)).toEqual(new Uint8Array(ct));
      expect((await t.blobs.list("")).length).toBe(1);
    }, 120_000);

    test("a chunk of the wrong length is refused with 400 while it streams and records nothing", async () => {
      const t = app();
      const user = newUser();
      const ct = randomCiphertext(2 * CHUNK + 1);
      const s = await openSession(t, user, ct, { chunkSize: CHUNK });
      expectError(
        await putChunk(t, s.auth, s.sessionId, 0, randomCiphertext(CHUNK + 10)),
        400,
        "invalid_manifest",
      );
      expect(expectSuccess(await status(t, s.auth, s.sessionId), STATUS_KEYS).chunks_received).toEqual([]);
    }, 120_000);

    test("finalize with a wrong whole-file hash answers 400 invalid_manifest, leaves no object, and the session takes its chunks again", async () => {
      const t = app();
      const user = newUser();
      const ct = randomCiphertext(2 * CHUNK + 3);
      const s = await openSession(t, user, ct, { chunkSize: CHUNK });
      const other = randomCiphertext(ct.length);
      for (const i of [0, 1, 2])
        expectSuccess(await putChunk(t, s.auth, s.sessionId, i, chunkOf(other, CHUNK, i)), ["chunk_index"]);
      expectError(await finalize(t, s.auth, s.sessionId), 400, "invalid_manifest");
      expect(await t.blobs.list("")).toEqual([]);
      expect(await uploadsOf(t)).toEqual([]);
      expect(await rowsOf(t, "files")).toEqual([]);
      // The completed upload is gone with its parts: the session asks for every chunk again, and
      // takes them as objects of their own.
      const st = expectSuccess(await status(t, s.auth, s.sessionId), STATUS_KEYS);
      expect(st.state).toBe("receiving");
      expect(st.chunks_received).toEqual([]);
      expect((await sessionRow(t, s.sessionId)).upload_id).toBeNull();
      for (const i of [0, 1, 2])
        expectSuccess(await putChunk(t, s.auth, s.sessionId, i, chunkOf(ct, CHUNK, i)), ["chunk_index"]);
      expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
      expect(await downloaded(t, s.auth, user.address, s.manifest)).toEqual(new Uint8Array(ct));
    }, 120_000);

    test("the multipart upload of an abandoned session is aborted by the sweeper; a deleted session's too", async () => {
      const t = app();
      const user = newUser();
      const ct = randomCiphertext(2 * CHUNK + 3);
      const a = await openSession(t, user, ct, { chunkSize: CHUNK });
      expectSuccess(await putChunk(t, a.auth, a.sessionId, 0, chunkOf(ct, CHUNK, 0)), ["chunk_index"]);
      const b = await openSession(t, user, ct, { chunkSize: CHUNK, path: "other.bin" });
      expectSuccess(await putChunk(t, b.auth, b.sessionId, 1, chunkOf(ct, CHUNK, 1)), ["chunk_index"]);
      expect((await uploadsOf(t)).length).toBe(2);
      expectSuccess(await abort(t, b.auth, b.sessionId), ["deleted"]);
      await t.sweeper.runOnce();
      expect((await uploadsOf(t)).length).toBe(1);
      t.clock.advance(t.config.sessionTtlSeconds + 1);
      await t.sweeper.runOnce();
      expect(await uploadsOf(t)).toEqual([]);
      expect(await rowsOf(t, "upload_sessions")).toEqual([]);
      expect(await rowsOf(t, "blob_deletions")).toEqual([]);
      expect(await t.blobs.list("")).toEqual([]);
    }, 120_000);

    test("a session refused at creation aborts the upload opened for it", async () => {
      const t = app({ ESYNC_MAX_SESSIONS_PER_USER: "1" });
      const user = newUser();
      const ct = randomCiphertext(CHUNK + 1);
      await openSession(t, user, ct, { chunkSize: CHUNK });
      const r = await createSessionRaw(t, authAt(t, user), {
        manifest: makeManifest({ owner: user.address, ciphertext: ct, path: "second.bin" }),
        chunk_count: 2,
        chunk_size: CHUNK,
        ciphertext_size: ct.length,
      });
      expectError(r, 429, "session_limit");
      await t.sweeper.runOnce();
      expect((await uploadsOf(t)).length).toBe(1);
      expect((await rowsOf(t, "blob_deletions")).map((x) => x.target)).toEqual([]);
    }, 120_000);

    test("fsck reports a multipart upload no session owns as orphan_upload and aborts it with repair; a session's upload is no problem", async () => {
      const t = app();
      const user = newUser();
      const ct = randomCiphertext(CHUNK + 1);
      await openSession(t, user, ct, { chunkSize: CHUNK });
      const stray = chunkKey(multipartBlobId("ab".repeat(16)), 0, "");
      const strayId = await multipartOf(t).createMultipart(stray);
      const fsck = (repair: boolean) =>
        runFsck({ store: t.store, blobs: t.blobs, clock: t.clock }, { repair });
      const found = await fsck(false);
      expect(found.problems).toEqual([
        {
          kind: "orphan_upload",
          detail: expect.stringContaining(strayId),
          key: stray,
          upload_id: strayId,
          repaired: false,
        },
      ]);
      expect((await fsck(true)).problems.map((p) => [p.kind, p.repaired])).toEqual([["orphan_upload", true]]);
      expect((await uploadsOf(t)).map((u) => u.key)).not.toContain(stray);
      expect((await uploadsOf(t)).length).toBe(1);
      expect((await fsck(false)).ok).toBe(true);
    }, 120_000);

    test("a write intent covers an upload being opened: fsck leaves it alone", async () => {
      const t = app();
      const key = chunkKey(multipartBlobId("cd".repeat(16)), 0, "");
      await t.store.repos.deletionQueue.reserve(multipartTarget(key), t.clock.now());
      await multipartOf(t).createMultipart(key);
      const report = await runFsck({ store: t.store, blobs: t.blobs, clock: t.clock }, { repair: true });
      expect(report.problems).toEqual([]);
      expect((await uploadsOf(t)).length).toBe(1);
    }, 120_000);

    test("a session of chunks under 5 MiB keeps chunk objects and the server-side copy at finalize", async () => {
      const t = app();
      const user = newUser();
      const ct = randomCiphertext(3 * MiB + 5);
      const s = await openSession(t, user, ct, { chunkSize: MiB });
      expect((await sessionRow(t, s.sessionId)).upload_id).toBeNull();
      for (const i of [0, 1, 2, 3])
        expectSuccess(await putChunk(t, s.auth, s.sessionId, i, chunkOf(ct, MiB, i)), ["chunk_index"]);
      expect((await t.blobs.list("")).length).toBe(4);
      expect(await uploadsOf(t)).toEqual([]);
      expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
      expect(await downloaded(t, s.auth, user.address, s.manifest)).toEqual(new Uint8Array(ct));
    }, 120_000);
  });
}
