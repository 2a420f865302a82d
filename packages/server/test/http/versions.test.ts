/**
 * Version history and trash (docs/versions.md), on the test storage and database (SQLite + disk
 * by default; `ESYNC_TEST_DATABASE=postgres ESYNC_TEST_STORAGE=s3` for PostgreSQL + S3): replaced
 * and deleted revisions are kept for `ESYNC_VERSION_RETENTION_DAYS`, listed, restored without
 * re-upload, counted in the quota, expired through the deletion queue, seen by fsck, and
 * guarded by the drive roles.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { runFsck } from "../../src/ops/fsck.ts";
import { chunkKeysOf } from "../../src/ops/ops.repository.ts";
import { blobTarget } from "../../src/storage/layout.ts";
import { jsonInit, makeTestApp, type TestApp } from "../support/app.ts";
import { makeManifest, newUser, pathHashOf, randomCiphertext, type TestUser } from "../support/fixtures.ts";
import {
  authAt,
  blobFiles,
  download,
  FOLDER,
  type Json,
  type JsonAnswer,
  rowsOf,
  stateOf,
  uploadSingle,
} from "./helpers.ts";

const DAY = 86400;
let t: TestApp;
afterEach(() => t?.close());

/** A test app keeping versions for `days` (default 30), deletions due at once after expiry. */
function app(days = 30, env: Record<string, string> = {}): TestApp {
  t = makeTestApp({ ESYNC_VERSION_RETENTION_DAYS: String(days), ESYNC_BLOB_GRACE_SECONDS: "0", ...env });
  return t;
}

/** Uploads `ct` at `path` over `base` (null: a new file); returns the Success body. */
async function put(
  u: TestUser,
  path: string,
  ct: Uint8Array,
  base: number[] | null = null,
  seq = 1,
  size?: number,
): Promise<Json> {
  const m = makeManifest({
    owner: u.address,
    ciphertext: ct,
    path,
    baseRevisionId: base,
    revisionSeq: seq,
    ...(size === undefined ? {} : { sizeBytes: size }),
  });
  const r = await uploadSingle(t, authAt(t, u), m, ct);
  expect(r.status).toBe(200);
  return r.body.Success;
}

/** Asserts a flat 409 `conflict` that names revision `id` with sequence `seq` as current. */
function expectCurrent(r: JsonAnswer, id: number[], seq: number) {
  expect(r.status).toBe(409);
  expect(r.body).toEqual({
    error: "conflict",
    message: r.body.message,
    current_revision_id: id,
    current_revision_seq: seq,
  });
}

/** Asserts a bare 200 body with exactly `keys` and returns it. */
function ok(r: JsonAnswer, keys: string[]): Json {
  if (r.status !== 200) throw new Error(`expected 200, got ${r.status}: ${JSON.stringify(r.body)}`);
  expect(Object.keys(r.body).sort()).toEqual([...keys].sort());
  return r.body;
}

/** Asserts a flat v1 error `{error, message}` with `status` and `code`. */
function flatError(r: JsonAnswer, status: number, code: string) {
  expect({ status: r.status, code: r.body?.error }).toEqual({ status, code });
  expect(typeof r.body.message).toBe("string");
}

const fileId = (path: string) => Buffer.from(pathHashOf(path)).toString("hex");

function versionsOf(u: TestUser, path: string, as: TestUser = u): Promise<JsonAnswer> {
  return t.json(`/v1/versions/${u.address}/${FOLDER}/${fileId(path)}`, {
    headers: { authorization: authAt(t, as) },
  });
}

function trashOf(u: TestUser, query = "", as: TestUser = u): Promise<JsonAnswer> {
  return t.json(`/v1/trash/${u.address}/${FOLDER}${query}`, { headers: { authorization: authAt(t, as) } });
}

function restore(
  u: TestUser,
  path: string,
  versionId: number,
  base: number[] | null,
  as: TestUser = u,
): Promise<JsonAnswer> {
  return t.json(
    `/v1/versions/${u.address}/${FOLDER}/${fileId(path)}/restore`,
    jsonInit("POST", authAt(t, as), { version_id: versionId, base_revision_id: base }),
  );
}

function remove(u: TestUser, path: string): Promise<JsonAnswer> {
  return t.json(`/delete/${u.address}/${FOLDER}/${fileId(path)}`, {
    method: "DELETE",
    headers: { authorization: authAt(t, u) },
  });
}

async function bytesOf(u: TestUser, path: string): Promise<Uint8Array> {
  const r = await download(t, authAt(t, u), u.address, FOLDER, fileId(path));
  expect(r.status).toBe(200);
  return new Uint8Array(await r.arrayBuffer());
}

describe("GET /v1/capabilities", () => {
  test("advertises versions: true while versions are kept, false with ESYNC_VERSION_RETENTION_DAYS=0", async () => {
    app(30);
    expect((await t.json("/v1/capabilities")).body.versions).toBe(true);
    await t.close();
    app(0);
    expect((await t.json("/v1/capabilities")).body.versions).toBe(false);
  });
});

describe("kept versions", () => {
  test("a replaced revision is kept (reason replaced, expires after the retention) and its blob is not queued for deletion", async () => {
    app(7);
    const u = newUser();
    const first = await put(u, "a.txt", randomCiphertext(300));
    await put(u, "a.txt", randomCiphertext(400), first.revision_id, 2);
    const body = ok(await versionsOf(u, "a.txt"), ["folder_hash", "file_id", "current", "versions"]);
    expect(body.versions.length).toBe(1);
    const v = body.versions[0];
    expect(v.reason).toBe("replaced");
    expect(v.entry.revision_id).toEqual(first.revision_id);
    expect(v.entry.revision_seq).toBe(1);
    expect(v.expires_at - v.kept_at).toBe(7 * DAY);
    expect(body.current.revision_seq).toBe(2);
    expect(await rowsOf(t, "blob_deletions")).toEqual([]);
  });

  test("with ESYNC_VERSION_RETENTION_DAYS=0 a replaced revision is not kept and its blob is queued for deletion (the behaviour without versions)", async () => {
    app(0);
    const u = newUser();
    const first = await put(u, "a.txt", randomCiphertext(300));
    await put(u, "a.txt", randomCiphertext(400), first.revision_id, 2);
    expect(
      ok(await versionsOf(u, "a.txt"), ["folder_hash", "file_id", "current", "versions"]).versions,
    ).toEqual([]);
    expect((await rowsOf(t, "blob_deletions")).length).toBe(1);
  });

  test("restores a replaced version as a new revision with the old bytes, reusing its blob (no new object)", async () => {
    app();
    const u = newUser();
    const old = randomCiphertext(500);
    const first = await put(u, "a.txt", old);
    const second = await put(u, "a.txt", randomCiphertext(600), first.revision_id, 2);
    const objects = await blobFiles(t);
    const [v] = (await versionsOf(u, "a.txt")).body.versions;
    const r = ok(await restore(u, "a.txt", v.version_id, second.revision_id), [
      "version_id",
      "upload_id",
      "revision_id",
      "revision_seq",
      "size_bytes",
      "created_at",
      "updated_at",
    ]);
    expect(r.revision_seq).toBe(3);
    expect(r.revision_id).not.toEqual(first.revision_id);
    expect(Buffer.from(await bytesOf(u, "a.txt")).equals(Buffer.from(old))).toBe(true);
    expect(await blobFiles(t)).toEqual(objects);
    const after = (await versionsOf(u, "a.txt")).body;
    expect(after.current.revision_id).toEqual(r.revision_id);
    // The revision the restore replaced is kept too.
    expect(after.versions.map((x: Json) => x.entry.revision_seq)).toEqual([2, 1]);
  });

  test("a restore whose base_revision_id is not the current revision answers 409 with the Conflict envelope and changes nothing", async () => {
    app();
    const u = newUser();
    const first = await put(u, "a.txt", randomCiphertext(100));
    const second = await put(u, "a.txt", randomCiphertext(100), first.revision_id, 2);
    const [v] = (await versionsOf(u, "a.txt")).body.versions;
    expectCurrent(await restore(u, "a.txt", v.version_id, first.revision_id), second.revision_id, 2);
    expectCurrent(await restore(u, "a.txt", v.version_id, null), second.revision_id, 2);
    expect((await versionsOf(u, "a.txt")).body.current.revision_id).toEqual(second.revision_id);
  });

  test("restoring an unknown version, or another file's version, answers 404 not_found", async () => {
    app();
    const u = newUser();
    const a = await put(u, "a.txt", randomCiphertext(100));
    await put(u, "a.txt", randomCiphertext(100), a.revision_id, 2);
    const b = await put(u, "b.txt", randomCiphertext(100));
    const [v] = (await versionsOf(u, "a.txt")).body.versions;
    flatError(await restore(u, "a.txt", 999999, null), 404, "not_found");
    flatError(await restore(u, "b.txt", v.version_id, b.revision_id), 404, "not_found");
  });
});

describe("trash", () => {
  test("a deleted file is listed in the trash and restored with base_revision_id null, then leaves the trash", async () => {
    app();
    const u = newUser();
    const ct = randomCiphertext(700);
    const first = await put(u, "docs/gone.txt", ct);
    expect((await remove(u, "docs/gone.txt")).status).toBe(200);
    const trash = ok(await trashOf(u), ["folder_hash", "deleted", "next"]);
    expect(trash.deleted.length).toBe(1);
    expect(trash.deleted[0].reason).toBe("deleted");
    expect(trash.deleted[0].entry.relative_path).toBe("docs/gone.txt");
    expect(trash.next).toBeNull();
    const r = ok(await restore(u, "docs/gone.txt", trash.deleted[0].version_id, null), [
      "version_id",
      "upload_id",
      "revision_id",
      "revision_seq",
      "size_bytes",
      "created_at",
      "updated_at",
    ]);
    expect(r.revision_seq).toBe(2);
    expect(Buffer.from(await bytesOf(u, "docs/gone.txt")).equals(Buffer.from(ct))).toBe(true);
    expect((await stateOf(t, u)).files.length).toBe(1);
    expect((await trashOf(u)).body.deleted).toEqual([]);
    // Restoring the trash entry again while the file exists is a conflict.
    expectCurrent(await restore(u, "docs/gone.txt", trash.deleted[0].version_id, null), r.revision_id, 2);
    expect(first.revision_id).not.toEqual(r.revision_id);
  });

  test("pages with keyset pagination: before=next gives the following page, newest first, next null at the end", async () => {
    app();
    const u = newUser();
    for (const name of ["1", "2", "3"]) {
      await put(u, `${name}.txt`, randomCiphertext(50));
      await remove(u, `${name}.txt`);
    }
    const p1 = (await trashOf(u, "?limit=2")).body;
    expect(p1.deleted.map((x: Json) => x.entry.relative_path)).toEqual(["3.txt", "2.txt"]);
    expect(typeof p1.next).toBe("number");
    const p2 = (await trashOf(u, `?limit=2&before=${p1.next}`)).body;
    expect(p2.deleted.map((x: Json) => x.entry.relative_path)).toEqual(["1.txt"]);
    expect(p2.next).toBeNull();
  });
});

describe("quota", () => {
  test("kept versions count in the usage: replacing a 60-byte file with 50 bytes under a 100-byte allowance answers 402", async () => {
    app(30, { ESYNC_DEFAULT_QUOTA_BYTES: "100" });
    const u = newUser();
    const first = await put(u, "a.txt", randomCiphertext(108), null, 1, 60);
    const ct = randomCiphertext(98);
    const m = makeManifest({
      owner: u.address,
      ciphertext: ct,
      path: "a.txt",
      baseRevisionId: first.revision_id,
      revisionSeq: 2,
      sizeBytes: 50,
    });
    const r = await uploadSingle(t, authAt(t, u), m, ct);
    expect(r.status).toBe(402);
    expect(r.body.error).toBe("drive_quota_exceeded");
  });

  test("a deleted file's bytes stay counted until its version expires; a restore over the allowance answers 402", async () => {
    app(1, { ESYNC_DEFAULT_QUOTA_BYTES: "100" });
    const u = newUser();
    await put(u, "a.txt", randomCiphertext(108), null, 1, 60);
    await remove(u, "a.txt");
    const ct = randomCiphertext(98);
    const m = makeManifest({ owner: u.address, ciphertext: ct, path: "b.txt", sizeBytes: 50 });
    expect((await uploadSingle(t, authAt(t, u), m, ct)).status).toBe(402);
    await put(u, "c.txt", randomCiphertext(88), null, 1, 40);
    const [v] = (await trashOf(u)).body.deleted;
    const r = await restore(u, "a.txt", v.version_id, null);
    expect(r.status).toBe(402);
    expect(r.body.error).toBe("drive_quota_exceeded");
    t.clock.advance(DAY);
    await t.sweeper.runOnce();
    expect((await uploadSingle(t, authAt(t, u), m, ct)).status).toBe(200);
  });

  test("the quota route's used bytes include kept versions", async () => {
    app();
    const u = newUser();
    await put(u, "a.txt", randomCiphertext(148), null, 1, 100);
    await remove(u, "a.txt");
    expect((await t.services.quota.info(u.address)).usedBytes).toBe(100);
  });
});

describe("expiry", () => {
  test("an expired version is removed by the sweeper and its blob goes through the deletion queue", async () => {
    app(2, { ESYNC_BLOB_GRACE_SECONDS: "60" });
    const u = newUser();
    const first = await put(u, "a.txt", randomCiphertext(300));
    await put(u, "a.txt", randomCiphertext(300), first.revision_id, 2);
    const before = await blobFiles(t);
    t.clock.advance(2 * DAY - 1);
    expect((await t.sweeper.runOnce()).versions).toBe(0);
    t.clock.advance(1);
    expect((await t.sweeper.runOnce()).versions).toBe(1);
    expect((await versionsOf(u, "a.txt")).body.versions).toEqual([]);
    const queued = (await rowsOf(t, "blob_deletions")).map((r) => r.target);
    expect(queued.length).toBe(1);
    expect(await blobFiles(t)).toEqual(before);
    t.clock.advance(60);
    expect((await t.sweeper.runOnce()).deletions).toBe(1);
    expect((await blobFiles(t)).length).toBeLessThan(before.length);
    expect(Buffer.from(await bytesOf(u, "a.txt")).length).toBe(300);
  });

  test("an expired version whose blob a restored file still uses leaves that blob alone", async () => {
    app(1);
    const u = newUser();
    const old = randomCiphertext(400);
    const first = await put(u, "a.txt", old);
    const second = await put(u, "a.txt", randomCiphertext(400), first.revision_id, 2);
    const [v] = (await versionsOf(u, "a.txt")).body.versions;
    expect((await restore(u, "a.txt", v.version_id, second.revision_id)).status).toBe(200);
    t.clock.advance(DAY);
    expect((await t.sweeper.runOnce()).versions).toBe(2);
    expect(Buffer.from(await bytesOf(u, "a.txt")).equals(Buffer.from(old))).toBe(true);
    const rows = await rowsOf(t, "files");
    expect(rows.length).toBe(1);
    const live = rows[0] as { blob_id: string };
    expect((await rowsOf(t, "blob_deletions")).map((r) => r.target)).not.toContain(blobTarget(live.blob_id));
  });

  test("unregistering the folder removes its kept versions and queues their blobs", async () => {
    app();
    const u = newUser();
    await t.json(
      "/register_folder",
      jsonInit("POST", authAt(t, u), { ss58_address: u.address, folder_hash: FOLDER, label: "x" }),
    );
    const first = await put(u, "a.txt", randomCiphertext(100));
    await put(u, "a.txt", randomCiphertext(100), first.revision_id, 2);
    await put(u, "b.txt", randomCiphertext(100));
    await remove(u, "b.txt");
    const r = await t.json(
      "/unregister_folder",
      jsonInit("DELETE", authAt(t, u), { ss58_address: u.address, folder_hash: FOLDER }),
    );
    expect(r.status).toBe(200);
    expect(await rowsOf(t, "file_versions")).toEqual([]);
    expect((await rowsOf(t, "blob_deletions")).length).toBe(3);
    await t.sweeper.runOnce();
    expect(await blobFiles(t)).toEqual([]);
  });
});

describe("fsck", () => {
  test("a kept version's objects are neither orphans nor missing; a lost one is reported missing", async () => {
    app();
    const u = newUser();
    const first = await put(u, "a.txt", randomCiphertext(300));
    await put(u, "a.txt", randomCiphertext(300), first.revision_id, 2);
    await put(u, "b.txt", randomCiphertext(300));
    await remove(u, "b.txt");
    const fsck = () => runFsck({ store: t.store, blobs: t.blobs, clock: t.clock }, { repair: false });
    expect((await fsck()).problems).toEqual([]);
    const [kept] = (await rowsOf(t, "file_versions")) as {
      blob_id: string;
      chunk_count: number;
      chunk_gens: string;
    }[];
    if (!kept) throw new Error("no kept version");
    const keys = chunkKeysOf({
      blobId: kept.blob_id,
      chunkCount: kept.chunk_count,
      chunkGens: kept.chunk_gens,
    });
    await t.blobs.delete(keys);
    const report = await fsck();
    expect(report.problems.map((p) => p.kind)).toEqual(keys.map(() => "missing_object"));
    expect(report.problems[0]?.key).toBe(keys[0]);
  });
});

describe("drive roles", () => {
  async function member(u: TestUser, m: TestUser, role: string): Promise<void> {
    await t.store.repos.drives.insertMember({
      owner: u.address,
      folderHash: FOLDER,
      member: m.address,
      role,
      grantBlob: "grant",
      inviteId: null,
      createdAt: t.clock.now(),
    });
  }

  test("a reader lists versions and trash but gets 403 on restore; a writer restores; a stranger gets 403 everywhere", async () => {
    app();
    const u = newUser();
    const reader = newUser();
    const writer = newUser();
    const stranger = newUser();
    await member(u, reader, "reader");
    await member(u, writer, "writer");
    const first = await put(u, "a.txt", randomCiphertext(100));
    await put(u, "a.txt", randomCiphertext(100), first.revision_id, 2);
    await put(u, "b.txt", randomCiphertext(100));
    await remove(u, "b.txt");
    expect((await versionsOf(u, "a.txt", reader)).body.versions.length).toBe(1);
    const [trashed] = (await trashOf(u, "", reader)).body.deleted;
    flatError(await restore(u, "b.txt", trashed.version_id, null, reader), 403, "forbidden");
    flatError(await versionsOf(u, "a.txt", stranger), 403, "forbidden");
    flatError(await trashOf(u, "", stranger), 403, "forbidden");
    flatError(await restore(u, "b.txt", trashed.version_id, null, stranger), 403, "forbidden");
    const r = ok(await restore(u, "b.txt", trashed.version_id, null, writer), [
      "version_id",
      "upload_id",
      "revision_id",
      "revision_seq",
      "size_bytes",
      "created_at",
      "updated_at",
    ]);
    expect(r.revision_seq).toBe(2);
    const entry = (await stateOf(t, u)).files.find((f: Json) => f.relative_path === "b.txt");
    expect(entry.uploaded_by).toBe(writer.address);
  });

  test("a folder holder sees and restores only versions under its folder: others are absent from its lists and 403 on restore", async () => {
    app();
    const u = newUser();
    const holder = newUser();
    await t.store.repos.drives.insertGrant({
      owner: u.address,
      folderHash: FOLDER,
      member: holder.address,
      pathPrefix: "shared",
      role: "writer",
      grantBlob: "grant",
      inviteId: null,
      createdAt: t.clock.now(),
    });
    await put(u, "shared/in.txt", randomCiphertext(100));
    await put(u, "private/out.txt", randomCiphertext(100));
    await remove(u, "shared/in.txt");
    await remove(u, "private/out.txt");
    const trash = ok(await trashOf(u, "", holder), ["folder_hash", "deleted", "next"]);
    expect(trash.deleted.map((x: Json) => x.entry.relative_path)).toEqual(["shared/in.txt"]);
    expect((await versionsOf(u, "private/out.txt", holder)).body.versions).toEqual([]);
    const [hidden] = (await trashOf(u)).body.deleted.filter(
      (x: Json) => x.entry.relative_path === "private/out.txt",
    );
    flatError(await restore(u, "private/out.txt", hidden.version_id, null, holder), 403, "forbidden");
    expect((await restore(u, "shared/in.txt", trash.deleted[0].version_id, null, holder)).status).toBe(200);
  });
});
