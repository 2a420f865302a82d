/**
 * Write paths that change an owner's files take the owner's lock on PostgreSQL
 * (`SessionsRepository.lockOwner`), so that a racing commit cannot slip between what they read
 * and what they write. Each test pauses a replace of one file inside its transaction (after its
 * row and counters are written, before it commits: `FilesService.commit`'s `also` step), sends
 * the racing request, waits until PostgreSQL shows it waiting on a lock, then lets the replace
 * commit. Without the owner lock the racing request reads the old row and then writes over the
 * new one: a delete subtracts the old size from the folder counters and leaves the new blob
 * unqueued; a relative-path registration overwrites the path the commit set.
 */
import { afterEach, expect, test } from "bun:test";
import { randomHex } from "@esync/protocol/ids.ts";
import { parseManifest } from "@esync/protocol/manifest.ts";
import { SQL } from "bun";
import type { UploadResult } from "../../src/files/files.service.ts";
import { blobPrefix } from "../../src/storage/layout.ts";
import {
  authAt,
  expectSuccess,
  FOLDER,
  fileIdOf,
  rowsOf,
  sessionCall,
  stateOf,
  uploadSingle,
} from "../http/helpers.ts";
import { makeTestApp, type TestApp } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext, type TestUser } from "../support/fixtures.ts";
import { PG_SETUP_TIMEOUT_MS, type PgLease, pgMigratedDatabase } from "../support/pg-server.ts";

let t: TestApp | null = null;
let lease: PgLease | null = null;
let probe: SQL | null = null;

afterEach(async () => {
  await t?.close();
  await probe?.close();
  await lease?.release();
  t = null;
  probe = null;
  lease = null;
});

async function app(): Promise<TestApp> {
  lease = await pgMigratedDatabase("ownerlock");
  probe = new SQL(lease.url, { max: 1 });
  t = makeTestApp({ ESYNC_DATABASE_URL: lease.url });
  return t;
}

/** Resolves once another session of the test database waits on a lock (row or advisory). */
async function someoneWaits(): Promise<void> {
  for (const deadline = Date.now() + 20_000; ; ) {
    const [r] = (await probe!`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock'`) as { n: number }[];
    if ((r?.n ?? 0) > 0) return;
    if (Date.now() > deadline) throw new Error("the racing request never waited on a lock");
    await Bun.sleep(10);
  }
}

/**
 * Replaces `path` of `user` with a new revision of `sizeBytes` (a blob that is never read) and
 * pauses inside its transaction; `commit()` lets it commit.
 */
async function pausedReplace(
  a: TestApp,
  user: TestUser,
  path: string,
  base: number[],
  sizeBytes: number,
  relativePath: string | null,
): Promise<{ blobId: string; commit(): Promise<UploadResult> }> {
  const m = parseManifest(
    makeManifest({
      owner: user.address,
      ciphertext: randomCiphertext(sizeBytes + 48),
      path,
      relativePath,
      revisionSeq: 2,
      baseRevisionId: base,
    }),
  );
  const blobId = randomHex(16);
  let go = () => {};
  const gate = new Promise<void>((r) => {
    go = r;
  });
  let inside = () => {};
  const entered = new Promise<void>((r) => {
    inside = r;
  });
  const done = a.services.files.commit(
    m,
    {
      blobId,
      chunkSize: sizeBytes + 48,
      chunkCount: 1,
      size: sizeBytes + 48,
      gens: ["g0"],
      ciphertextHash: m.ciphertextHash,
      chunkHashes: null,
    },
    async () => {
      inside();
      await gate;
    },
  );
  await entered;
  return {
    blobId,
    commit: async () => {
      go();
      return done;
    },
  };
}

/** Uploads `path` (1,000 bytes of plaintext) and returns its revision id. */
async function upload(
  a: TestApp,
  user: TestUser,
  path: string,
  relativePath: string | null,
): Promise<number[]> {
  const ct = randomCiphertext(1048);
  const m = makeManifest({ owner: user.address, ciphertext: ct, path, relativePath });
  return expectSuccess(await uploadSingle(a, authAt(a, user), m, ct), [
    "upload_id",
    "timestamp",
    "revision_id",
    "created_at",
    "updated_at",
  ]).revision_id;
}

test(
  "a delete racing a replace of the same file waits for it and removes the new revision: counters exact, its blob queued (200)",
  async () => {
    const a = await app();
    const user = newUser();
    const base = await upload(a, user, "race/a.bin", "race/a.bin");
    const replace = await pausedReplace(a, user, "race/a.bin", base, 5000, "race/a.bin");
    const fileId = fileIdOf(
      makeManifest({ owner: user.address, ciphertext: new Uint8Array(0), path: "race/a.bin" }),
    );
    const deleting = sessionCall(a, authAt(a, user), "DELETE", `/delete/${user.address}/${FOLDER}/${fileId}`);
    await someoneWaits();
    await replace.commit();
    expectSuccess(await deleting, ["status", "file_id", "ss58_address", "folder_hash"]);
    expect((await stateOf(a, user)).files).toEqual([]);
    expect(await rowsOf(a, "folders")).toMatchObject([{ file_count: 0, total_bytes: 0 }]);
    expect((await rowsOf(a, "blob_deletions")).map((r) => r.target)).toContain(blobPrefix(replace.blobId));
  },
  PG_SETUP_TIMEOUT_MS,
);

test(
  "a batch delete racing a replace removes the new revision and keeps the counters exact (200)",
  async () => {
    const a = await app();
    const user = newUser();
    const base = await upload(a, user, "race/b.bin", "race/b.bin");
    const replace = await pausedReplace(a, user, "race/b.bin", base, 7000, "race/b.bin");
    const fileId = fileIdOf(
      makeManifest({ owner: user.address, ciphertext: new Uint8Array(0), path: "race/b.bin" }),
    );
    const deleting = a.json("/delete_files", {
      method: "POST",
      headers: { authorization: authAt(a, user), "content-type": "application/json" },
      body: JSON.stringify({ ss58_address: user.address, folder_hash: FOLDER, file_ids: [fileId] }),
    });
    await someoneWaits();
    await replace.commit();
    expect((await deleting).status).toBe(200);
    expect(await rowsOf(a, "folders")).toMatchObject([{ file_count: 0, total_bytes: 0 }]);
    expect((await rowsOf(a, "blob_deletions")).map((r) => r.target)).toContain(blobPrefix(replace.blobId));
  },
  PG_SETUP_TIMEOUT_MS,
);

test(
  "registering a relative path racing a commit that sets another one reports path_mismatch and never overwrites it",
  async () => {
    const a = await app();
    const user = newUser();
    // The register names the same path in NFD: the same hash, but another spelling than the commit sets.
    const path = "race/Caf\u00e9.bin";
    const base = await upload(a, user, path, null);
    const replace = await pausedReplace(a, user, path, base, 2000, path);
    const fileId = fileIdOf(makeManifest({ owner: user.address, ciphertext: new Uint8Array(0), path }));
    const registering = a.json(`/register_relative_paths/${user.address}/${FOLDER}`, {
      method: "POST",
      headers: { authorization: authAt(a, user), "content-type": "application/json" },
      body: JSON.stringify({ entries: [{ path_hash: fileId, relative_path: path.normalize("NFD") }] }),
    });
    await someoneWaits();
    await replace.commit();
    const r = await registering;
    expect(r.status).toBe(200);
    expect(JSON.stringify(r.body)).toContain("path_mismatch");
    const [file] = (await stateOf(a, user)).files;
    expect(file.relative_path).toBe(path);
  },
  PG_SETUP_TIMEOUT_MS,
);
