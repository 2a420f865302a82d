/**
 * fsck (`runFsck`, src/ops/fsck.ts) on the test storage (disk, or S3 with ESYNC_TEST_STORAGE=s3),
 * on SQLite and on PostgreSQL (a migrated database of test/support/pg-server.ts): each problem
 * kind is found in a dry run, left alone by it, repaired by `repair` where it can be, and what a
 * healthy service holds (files, live sessions, write intents, deletions waiting out the grace
 * period) is never reported.
 */
import { afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { pgDb } from "../../src/db/postgres/store.ts";
import { sqliteDb } from "../../src/db/sqlite/store.ts";
import { runFsck } from "../../src/ops/fsck.ts";
import { LeaseHolders } from "../../src/sessions/lease-holder.ts";
import type { BlobStore } from "../../src/storage/blob-store.ts";
import { blobPrefix, blobTarget, chunkKey, isOneObjectBlob } from "../../src/storage/layout.ts";
import {
  authAt,
  blobFiles,
  expectSuccess,
  FOLDER,
  fileIdOf,
  openSession,
  putChunks,
  rowsOf,
  UPLOAD_RESULT_KEYS,
  uploadSingle,
  uploadViaSession,
} from "../http/helpers.ts";
import { bodyOf } from "../storage/conformance.ts";
import { makeTestApp, type TestApp } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext } from "../support/fixtures.ts";
import { PG_SETUP_TIMEOUT_MS, type PgLease, pgMigratedDatabase, pgTestServer } from "../support/pg-server.ts";

let t: TestApp;
let lease: PgLease | null = null;

const fsck = (repair = false) =>
  runFsck({ store: t.store, blobs: t.blobs, clock: t.clock }, { repair, sessionTtlSeconds: 600 });

/** Runs statement `q` (`?` placeholders) on the app's database, whichever the dialect (damage done by hand). */
async function sql(q: string, ...args: (string | number)[]): Promise<void> {
  const sqlite = sqliteDb(t.store);
  if (sqlite) {
    sqlite.$client.query(q).run(...args);
    return;
  }
  const pg = pgDb(t.store);
  if (!pg) throw new Error(`unknown dialect ${t.store.dialect}`);
  let n = 0;
  await pg.$client.unsafe(
    q.replace(/\?/g, () => `$${++n}`),
    args,
  );
}

/** Two files (one single-shot, one through a 3-chunk session) of one user. */
async function populate() {
  const u = newUser();
  const single = randomCiphertext(700);
  const m = makeManifest({ owner: u.address, ciphertext: single, path: "a.bin" });
  expectSuccess(await uploadSingle(t, authAt(t, u), m, single), UPLOAD_RESULT_KEYS);
  const big = randomCiphertext(2500);
  const { session } = await uploadViaSession(t, u, big, { path: "b.bin", chunkSize: 1000 });
  return { u, m, session };
}

/** `t.blobs` with `before` awaited ahead of every `size` call (fsck sizes objects between its snapshot and its repairs). */
function sizingHook(before: (key: string) => Promise<void>): BlobStore {
  return new Proxy(t.blobs, {
    get(target, name, receiver) {
      if (name !== "size") return Reflect.get(target, name, receiver);
      return async (key: string) => {
        await before(key);
        return target.size(key);
      };
    },
  });
}

async function putRaw(key: string, bytes: Uint8Array): Promise<void> {
  await t.blobs.put(key, bodyOf(bytes), bytes.byteLength);
}

for (const dialect of ["sqlite", "postgres"] as const)
  describe(`runFsck on ${dialect}`, () => {
    if (dialect === "postgres") beforeAll(() => pgTestServer(), PG_SETUP_TIMEOUT_MS);
    beforeEach(async () => {
      lease = dialect === "postgres" ? await pgMigratedDatabase("fsck") : null;
      t = makeTestApp(lease ? { ESYNC_DATABASE_URL: lease.url } : { ESYNC_DB_PATH: ":memory:" });
    });
    afterEach(async () => {
      await t.close();
      await lease?.release();
    });

    test("finds no problem in a healthy store: files, a live session with chunks, an open write intent", async () => {
      const { u } = await populate();
      const ct = randomCiphertext(2000);
      const s = await openSession(t, u, ct, { path: "c.bin", chunkSize: 1000 });
      await putChunks(t, s, ct, [1]);
      await t.services.deletions.reserve("b/ee/eeee0000000000000000000000000000/", t.clock.now());
      await putRaw("b/ee/eeee0000000000000000000000000000/0.aa", new Uint8Array(5));
      expect(await fsck()).toEqual({ ok: true, problems: [], repaired: 0 });
    });

    test("does not report a replaced or deleted file's objects while they wait out the grace period", async () => {
      const { u, m } = await populate();
      const r = await t.fetch(`/delete/${u.address}/${FOLDER}/${fileIdOf(m)}`, {
        method: "DELETE",
        headers: { authorization: authAt(t, u) },
      });
      expect(r.status).toBe(200);
      await t.sweeper.runOnce();
      // Both files' objects (the chunks the session file was assembled from were swept).
      expect((await blobFiles(t)).length).toBe(2);
      expect(await fsck()).toEqual({ ok: true, problems: [], repaired: 0 });
    });

    test("reports an orphan_object (dry run keeps it) and deletes it with repair", async () => {
      await populate();
      const key = "b/ab/abababababababababababababababab/0.123456";
      await putRaw(key, new Uint8Array(10));
      const dry = await fsck();
      expect(dry.ok).toBe(false);
      expect(dry.repaired).toBe(0);
      expect(dry.problems).toEqual([
        expect.objectContaining({ kind: "orphan_object", key, repaired: false }),
      ]);
      expect(await t.blobs.size(key)).toBe(10);
      const fixed = await fsck(true);
      expect(fixed).toMatchObject({ ok: true, repaired: 1 });
      expect(await t.blobs.size(key)).toBeNull();
      expect(await fsck()).toEqual({ ok: true, problems: [], repaired: 0 });
    });

    test("reports an object left in a finished session's blob, once its chunks were swept, as an orphan", async () => {
      const { session } = await populate();
      const blobId = (await rowsOf(t, "upload_sessions")).find((r) => r.session_id === session.sessionId)
        ?.blob_id as string;
      await t.sweeper.runOnce();
      await sql("DELETE FROM upload_sessions WHERE session_id = ?", session.sessionId);
      const stray = `${blobPrefix(blobId)}1.ffffffffffff`;
      await putRaw(stray, new Uint8Array(1000));
      const r = await fsck();
      expect(r.problems.map((p) => [p.kind, p.key])).toEqual([["orphan_object", stray]]);
    });

    test("reports missing_object and wrong_size for a file's objects, one-object and chunked, which repair cannot fix", async () => {
      const { u } = await populate();
      const ct = randomCiphertext(700);
      await uploadViaSession(t, u, ct, { path: "c.bin", chunkSize: 1000 });
      const rows = await rowsOf(t, "files");
      const assembled = rows.find((r) => r.chunk_count === 3)!;
      const chunked = rows.find((r) => r.chunk_count === 1 && !isOneObjectBlob(r.blob_id as string))!;
      const gens = JSON.parse(chunked.chunk_gens as string) as string[];
      const missing = chunkKey(chunked.blob_id as string, 0, gens[0] as string);
      const short = chunkKey(assembled.blob_id as string, 0, "");
      await t.blobs.delete([missing]);
      await putRaw(short, new Uint8Array(2499)); // the whole file holds 2500 bytes
      for (const repair of [false, true]) {
        const r = await fsck(repair);
        expect(r.ok).toBe(false);
        expect(r.repaired).toBe(0);
        expect(r.problems.map((p) => [p.kind, p.key, p.repaired]).sort()).toEqual([
          ["missing_object", missing, false],
          ["wrong_size", short, false],
        ]);
        expect(r.problems.find((p) => p.kind === "wrong_size")?.detail).toContain("2499 bytes");
      }
    });

    test("reports counter_mismatch for a negative and a wrong (on SQLite: non-integer) count, and recomputes them with repair", async () => {
      const { u } = await populate();
      const other = newUser();
      const ct = randomCiphertext(300);
      await uploadSingle(t, authAt(t, other), makeManifest({ owner: other.address, ciphertext: ct }), ct);
      const expected = (await rowsOf(t, "folders")).map((f) => ({ ...f }));
      await sql("UPDATE folders SET total_bytes = -1024 WHERE owner = ?", u.address);
      // PostgreSQL counters are bigint: a non-integer cannot be stored there, a wrong count can.
      await sql(
        "UPDATE folders SET file_count = ? WHERE owner = ?",
        dialect === "sqlite" ? 1.5 : 7,
        other.address,
      );
      const dry = await fsck();
      expect(dry.problems.map((p) => [p.kind, p.owner]).sort()).toEqual(
        [
          ["counter_mismatch", u.address],
          ["counter_mismatch", other.address],
        ].sort(),
      );
      expect((await fsck(true)).repaired).toBe(2);
      expect((await rowsOf(t, "folders")).map((f) => ({ ...f, updated_at: 0 }))).toEqual(
        expected.map((f) => ({ ...f, updated_at: 0 })),
      );
      expect(await fsck()).toEqual({ ok: true, problems: [], repaired: 0 });
    });

    test("reports counter_mismatch for files whose folder row is missing, and recreates it", async () => {
      const { u } = await populate();
      await sql("DELETE FROM folders WHERE owner = ?", u.address);
      expect((await fsck()).problems).toEqual([
        expect.objectContaining({ kind: "counter_mismatch", owner: u.address, folder_hash: FOLDER }),
      ]);
      await fsck(true);
      expect(await rowsOf(t, "folders")).toEqual([
        expect.objectContaining({ file_count: 2, total_bytes: expect.any(Number) }),
      ]);
      expect(await fsck()).toEqual({ ok: true, problems: [], repaired: 0 });
    });

    test("reports a stuck_session (finalizing past its lease) and returns it to receiving with repair", async () => {
      const u = newUser();
      const ct = randomCiphertext(2000);
      const s = await openSession(t, u, ct, { chunkSize: 1000 });
      await putChunks(t, s, ct, [0]);
      await sql(
        "UPDATE upload_sessions SET state = 'finalizing', finalizing_until = ? WHERE session_id = ?",
        t.clock.now() + 60,
        s.sessionId,
      );
      expect(await fsck()).toEqual({ ok: true, problems: [], repaired: 0 }); // a live finalize holds its lease
      t.clock.advance(60);
      const dry = await fsck();
      expect(dry.problems).toEqual([
        expect.objectContaining({ kind: "stuck_session", session_id: s.sessionId, repaired: false }),
      ]);
      expect((await fsck(true)).repaired).toBe(1);
      expect((await rowsOf(t, "upload_sessions"))[0]).toMatchObject({
        state: "receiving",
        finalizing_until: null,
        expires_at: t.clock.now() + 600,
      });
      expect(await rowsOf(t, "session_chunks")).toHaveLength(1);
    });
    test("with pages of 2 rows it finds exactly what one page finds: orphans, a missing object, a wrong size over page boundaries", async () => {
      const users = [newUser(), newUser(), newUser()];
      for (const [i, u] of users.entries()) {
        for (let j = 0; j < 3; j++) {
          const ct = randomCiphertext(300 + j);
          const m = makeManifest({ owner: u.address, ciphertext: ct, path: `p${i}/${j}.bin` });
          expectSuccess(await uploadSingle(t, authAt(t, u), m, ct), UPLOAD_RESULT_KEYS);
        }
        const ct = randomCiphertext(2000);
        await putChunks(t, await openSession(t, u, ct, { path: `s${i}.bin`, chunkSize: 1000 }), ct, [0]);
      }
      for (let i = 0; i < 3; i++) {
        await t.services.deletions.reserve(`b/e${i}/e${i}${"0".repeat(30)}/`, t.clock.now());
        await putRaw(`b/e${i}/e${i}${"0".repeat(30)}/0.aa`, new Uint8Array(3));
      }
      const stray = Array.from({ length: 5 }, (_, i) => `b/a${i}/a${i}${"b".repeat(30)}/0.ff`);
      for (const key of stray) await putRaw(key, new Uint8Array(4));
      const rows = (await rowsOf(t, "files")) as { blob_id: string; chunk_gens: string }[];
      const keyOf = (r: { blob_id: string; chunk_gens: string }) =>
        chunkKey(r.blob_id, 0, (JSON.parse(r.chunk_gens) as string[])[0] as string);
      await t.blobs.delete([keyOf(rows[1]!)]);
      await putRaw(keyOf(rows[7]!), new Uint8Array(1));
      const found = (r: Awaited<ReturnType<typeof fsck>>) => r.problems.map((p) => [p.kind, p.key]).sort();
      const expected = [
        ...stray.map((k) => ["orphan_object", k]),
        ["missing_object", keyOf(rows[1]!)],
        ["wrong_size", keyOf(rows[7]!)],
      ].sort();
      const paged = await runFsck({ store: t.store, blobs: t.blobs, clock: t.clock }, { pageSize: 2 });
      expect(found(paged)).toEqual(expected);
      expect(found(await fsck())).toEqual(expected);
    });

    test("reports a stuck_session whose lease holder is a dead process of this machine, within its lease, and returns it to receiving with repair", async () => {
      const u = newUser();
      const ct = randomCiphertext(2000);
      const s = await openSession(t, u, ct, { chunkSize: 1000 });
      await putChunks(t, s, ct, [0]);
      const self = new LeaseHolders({ localDatabase: false }).self!;
      const child = Bun.spawn(["sleep", "60"]);
      const start = readFileSync(`/proc/${child.pid}/stat`, "utf8").split(") ")[1]!.split(" ")[19];
      const holder = self.replace(/:\d+:\d+$/, `:${child.pid}:${start}`);
      const now = t.clock.now();
      await t.store.repos.sessions.beginFinalizing(s.sessionId, now + 60, now + 600, holder);
      expect(await fsck()).toEqual({ ok: true, problems: [], repaired: 0 }); // its holder is alive
      child.kill("SIGKILL");
      await child.exited;
      expect((await fsck()).problems).toEqual([
        expect.objectContaining({ kind: "stuck_session", session_id: s.sessionId, repaired: false }),
      ]);
      expect((await fsck(true)).repaired).toBe(1);
      expect((await rowsOf(t, "upload_sessions"))[0]).toMatchObject({
        state: "receiving",
        finalizing_until: null,
        finalizing_holder: null,
      });
      expect(await fsck()).toEqual({ ok: true, problems: [], repaired: 0 });
    });

    test("repair keeps an orphan that a write intent comes to cover between the snapshot and the delete", async () => {
      await populate();
      const prefix = "b/ab/abababababababababababababababab/";
      const key = `${prefix}0.123456`;
      await putRaw(key, new Uint8Array(10));
      let reserved = false;
      const blobs = sizingHook(async (k) => {
        if (k !== key || reserved) return;
        reserved = true;
        await t.services.deletions.reserve(prefix, t.clock.now());
      });
      const r = await runFsck({ store: t.store, blobs, clock: t.clock }, { repair: true });
      expect(reserved).toBe(true);
      expect(r).toEqual({ ok: true, problems: [], repaired: 0 });
      expect(await t.blobs.size(key)).toBe(10);
    });

    test("repair leaves a stuck session alone when a finalize renews its lease after the snapshot", async () => {
      await populate();
      const u = newUser();
      const ct = randomCiphertext(2000);
      const s = await openSession(t, u, ct, { chunkSize: 1000 });
      await putChunks(t, s, ct, [0]);
      await sql(
        "UPDATE upload_sessions SET state = 'finalizing', finalizing_until = ? WHERE session_id = ?",
        t.clock.now(),
        s.sessionId,
      );
      let renewed = false;
      const blobs = sizingHook(async () => {
        if (renewed) return;
        renewed = true;
        await sql(
          "UPDATE upload_sessions SET finalizing_until = ? WHERE session_id = ?",
          t.clock.now() + 60,
          s.sessionId,
        );
      });
      const r = await runFsck({ store: t.store, blobs, clock: t.clock }, { repair: true });
      expect(r.problems).toEqual([
        expect.objectContaining({ kind: "stuck_session", session_id: s.sessionId, repaired: false }),
      ]);
      expect((await rowsOf(t, "upload_sessions")).find((x) => x.session_id === s.sessionId)).toMatchObject({
        state: "finalizing",
        finalizing_until: t.clock.now() + 60,
      });
    });

    test("a counter repair waits for a file delete that changed the counters and keeps its change", async () => {
      const { u } = await populate();
      await sql("UPDATE folders SET total_bytes = -1024 WHERE owner = ?", u.address);
      const [gone, kept] = (await rowsOf(t, "files")) as {
        path_hash: Uint8Array;
        size_bytes: number;
        blob_id: string;
      }[];
      let commit!: () => void;
      const go = new Promise<void>((resolve) => {
        commit = resolve;
      });
      let changed!: () => void;
      const inside = new Promise<void>((resolve) => {
        changed = resolve;
      });
      // A live delete held open after its counter change, without the owner lock (the recount
      // must keep a concurrent change whether or not the writer holds it).
      const deleting = t.store.transaction(async (tx) => {
        await tx.files.remove(u.address, FOLDER, gone!.path_hash);
        await tx.folders.applyFileChange(u.address, FOLDER, -1, -gone!.size_bytes, t.clock.now());
        await tx.deletionQueue.enqueue([blobTarget(gone!.blob_id)], t.clock.now() + 3600);
        changed();
        await go;
      });
      await inside;
      let finished = false;
      const repairing = fsck(true).then((r) => {
        finished = true;
        return r;
      });
      await Bun.sleep(300);
      expect(finished).toBe(false);
      commit();
      await deleting;
      const r = await repairing;
      expect(r.problems.map((p) => [p.kind, p.owner, p.repaired])).toEqual([
        ["counter_mismatch", u.address, true],
      ]);
      expect((await rowsOf(t, "folders"))[0]).toMatchObject({ file_count: 1, total_bytes: kept!.size_bytes });
      expect(await fsck()).toEqual({ ok: true, problems: [], repaired: 0 });
    });
  });
