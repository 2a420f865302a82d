/**
 * `OpsRepository.isReferenced` (src/ops/ops.repository.ts), the check fsck makes again just
 * before deleting an orphan, on SQLite and on PostgreSQL: an object is held by a file row that
 * lists it, by an upload session owning its blob, or by a deletion target that is the key or one
 * of its prefixes; any other object, a stray generation in a file's blob included, is not.
 */
import { afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { pgDb } from "../../src/db/postgres/store.ts";
import { sqliteDb } from "../../src/db/sqlite/store.ts";
import type { AccountedPage, FileLayout } from "../../src/ops/ops.repository.ts";
import { blobPrefix, blobTarget, chunkKey } from "../../src/storage/layout.ts";
import {
  authAt,
  expectSuccess,
  openSession,
  rowsOf,
  UPLOAD_RESULT_KEYS,
  uploadSingle,
  uploadViaSession,
} from "../http/helpers.ts";
import { makeTestApp, type TestApp } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext } from "../support/fixtures.ts";
import { PG_SETUP_TIMEOUT_MS, type PgLease, pgMigratedDatabase, pgTestServer } from "../support/pg-server.ts";

let t: TestApp;
let lease: PgLease | null = null;

/** Removes every upload session row (what the sweeper does to finished sessions in time). */
async function deleteSessionRows(): Promise<void> {
  const sqlite = sqliteDb(t.store);
  if (sqlite) sqlite.$client.query("DELETE FROM upload_sessions").run();
  else await pgDb(t.store)?.$client.unsafe("DELETE FROM upload_sessions");
}

for (const dialect of ["sqlite", "postgres"] as const)
  describe(`OpsRepository.isReferenced on ${dialect}`, () => {
    if (dialect === "postgres") beforeAll(() => pgTestServer(), PG_SETUP_TIMEOUT_MS);
    beforeEach(async () => {
      lease = dialect === "postgres" ? await pgMigratedDatabase("ops_repo") : null;
      t = makeTestApp(lease ? { ESYNC_DATABASE_URL: lease.url } : { ESYNC_DB_PATH: ":memory:" });
    });
    afterEach(async () => {
      await t.close();
      await lease?.release();
    });

    test("holds a file's chunk object but not another generation of it in the same blob", async () => {
      const u = newUser();
      const ct = randomCiphertext(700);
      await uploadViaSession(t, u, ct, { chunkSize: 1000 });
      await deleteSessionRows(); // a finished session's row would hold its whole blob
      const row = (await rowsOf(t, "files"))[0] as { blob_id: string; chunk_gens: string };
      const gen = (JSON.parse(row.chunk_gens) as string[])[0] as string;
      expect(await t.store.repos.ops.isReferenced(chunkKey(row.blob_id, 0, gen))).toBe(true);
      expect(await t.store.repos.ops.isReferenced(chunkKey(row.blob_id, 0, "ffffffffffff"))).toBe(false);
      expect(await t.store.repos.ops.isReferenced(chunkKey(row.blob_id, 1, gen))).toBe(false);
    });

    test("holds a single-shot upload's one object (b/xx/o<id>) but no other key named after its blob", async () => {
      const u = newUser();
      const ct = randomCiphertext(700);
      const m = makeManifest({ owner: u.address, ciphertext: ct });
      expectSuccess(await uploadSingle(t, authAt(t, u), m, ct), UPLOAD_RESULT_KEYS);
      const row = (await rowsOf(t, "files"))[0] as { blob_id: string };
      const key = blobTarget(row.blob_id);
      expect(key).toBe(`b/${row.blob_id.slice(1, 3)}/${row.blob_id}`);
      expect(await t.store.repos.ops.isReferenced(key)).toBe(true);
      expect(await t.store.repos.ops.isReferenced(`${key}.1`)).toBe(false);
      expect(await t.store.repos.ops.isReferenced(`${key}/0.aa`)).toBe(false);
      expect(await t.store.repos.ops.isReferenced(`b/${row.blob_id.slice(1, 3)}/o${"f".repeat(32)}`)).toBe(
        false,
      );
    });

    test("holds any object in an upload session's blob", async () => {
      const u = newUser();
      await openSession(t, u, randomCiphertext(2000), { chunkSize: 1000 });
      const blobId = (await rowsOf(t, "upload_sessions"))[0]?.blob_id as string;
      expect(await t.store.repos.ops.isReferenced(`${blobPrefix(blobId)}7.abcdef`)).toBe(true);
    });

    test("holds an object under a write intent's prefix or named by a queued deletion, and nothing else", async () => {
      const prefix = "b/ee/eeee0000000000000000000000000000/";
      const other = "b/dd/dddd0000000000000000000000000000/0.aa";
      expect(await t.store.repos.ops.isReferenced(`${prefix}0.aa`)).toBe(false);
      await t.services.deletions.reserve(prefix, t.clock.now());
      await t.store.repos.deletionQueue.enqueue([other], t.clock.now() + 60);
      expect(await t.store.repos.ops.isReferenced(`${prefix}0.aa`)).toBe(true);
      expect(await t.store.repos.ops.isReferenced(other)).toBe(true);
      expect(await t.store.repos.ops.isReferenced("b/dd/dddd0000000000000000000000000000/1.aa")).toBe(false);
      expect(await t.store.repos.ops.isReferenced("not/a/blob")).toBe(false);
    });

    test("snapshot hands every file, session and deletion target once, in pages of at most pageSize rows", async () => {
      const users = [newUser(), newUser()];
      for (const u of users)
        for (let i = 0; i < 5; i++) {
          const ct = randomCiphertext(200 + i);
          const m = makeManifest({ owner: u.address, ciphertext: ct, path: `f${i}.bin` });
          expectSuccess(await uploadSingle(t, authAt(t, u), m, ct), UPLOAD_RESULT_KEYS);
        }
      for (let i = 0; i < 3; i++)
        await openSession(t, users[0]!, randomCiphertext(2000), { path: `s${i}.bin` });
      await t.store.repos.deletionQueue.enqueue(["b/aa/x/", "b/bb/y/", "b/cc/z/", "b/dd/w/"], t.clock.now());
      const pages: AccountedPage[] = [];
      await t.store.repos.ops.snapshot(t.clock.now(), 3, (page) => void pages.push(page));
      const sizes = pages.map(
        (p) =>
          (p.kind === "files"
            ? p.rows
            : p.kind === "sessions"
              ? p.blobIds
              : p.kind === "shares"
                ? p.shareIds
                : p.targets
          ).length,
      );
      expect(Math.max(...sizes)).toBe(3);
      const fileBlobs = pages.flatMap((p) => (p.kind === "files" ? p.rows.map((r) => r.blobId) : []));
      expect(fileBlobs.sort()).toEqual(
        ((await rowsOf(t, "files")) as { blob_id: string }[]).map((r) => r.blob_id).sort(),
      );
      const sessionBlobs = pages.flatMap((p) => (p.kind === "sessions" ? p.blobIds : []));
      expect(sessionBlobs.sort()).toEqual(
        ((await rowsOf(t, "upload_sessions")) as { blob_id: string }[]).map((r) => r.blob_id).sort(),
      );
      const targets = pages.flatMap((p) => (p.kind === "deletions" ? p.targets : []));
      expect(targets.sort()).toEqual(
        ((await rowsOf(t, "blob_deletions")) as { target: string }[]).map((r) => r.target).sort(),
      );
    });

    test("fileLayouts walks every file once in key order, one keyset page at a time", async () => {
      const users = [newUser(), newUser(), newUser()];
      for (const u of users)
        for (let i = 0; i < 3; i++) {
          const ct = randomCiphertext(100 + i);
          const m = makeManifest({ owner: u.address, ciphertext: ct, path: `d/${i}.bin` });
          expectSuccess(await uploadSingle(t, authAt(t, u), m, ct), UPLOAD_RESULT_KEYS);
        }
      const walked: FileLayout[] = [];
      for (let after: FileLayout | null = null; ; ) {
        const page: FileLayout[] = await t.store.repos.ops.fileLayouts(after, 2);
        expect(page.length).toBeLessThanOrEqual(2);
        walked.push(...page);
        if (page.length < 2) break;
        after = page[page.length - 1]!;
      }
      const key = (r: FileLayout) => `${r.owner}/${r.folderHash}/${Buffer.from(r.pathHash).toString("hex")}`;
      expect(walked.map(key)).toEqual([...walked.map(key)].sort());
      expect(new Set(walked.map(key)).size).toBe(9);
    });
  });
