/**
 * Storage allowances (docs/protocol.md#quota, issue 15): `POST /can_upload` (flat, advisory), the
 * report `GET /v1/quota/{ss58}`, and the
 * 402 `drive_quota_exceeded` of every write path (flat body), charged on the growth over the
 * replaced row, exact under concurrency, never half-written.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { ciphertextSizeFor } from "@esync/protocol/framing.ts";
import { pgDb } from "../../src/db/postgres/store.ts";
import { sqliteDb } from "../../src/db/sqlite/store.ts";
import { jsonInit, makeTestApp, type TestApp } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext, type TestUser } from "../support/fixtures.ts";
import {
  authAt,
  createSessionRaw,
  expectError,
  expectSuccess,
  FOLDER,
  finalize,
  type JsonAnswer,
  openSession,
  putChunks,
  rowsOf,
  snapshot,
  status,
  UPLOAD_RESULT_KEYS,
  uploadSingle,
} from "./helpers.ts";
import { mintSingle, shareBlob } from "./share-helpers.ts";

let t: TestApp;
let u: TestUser;
beforeEach(() => {
  t = makeTestApp({ ESYNC_DEFAULT_QUOTA_BYTES: "100" });
  u = newUser();
});
afterEach(() => t.close());

/** Asserts the flat 402 body of docs/protocol.md#quota exactly. */
function expectQuota402(r: JsonAnswer): void {
  expect(r.status).toBe(402);
  expect(Object.keys(r.body).sort()).toEqual(["error", "message"]);
  expect(r.body.error).toBe("drive_quota_exceeded");
  expect(r.body.message.length).toBeGreaterThan(0);
}

/** Uploads `path` with `size` plaintext bytes (ciphertext 48 bytes larger). */
function put(path: string, size: number, base: number[] | null = null, seq = 1) {
  const ct = randomCiphertext(size + 48);
  const m = makeManifest({
    owner: u.address,
    ciphertext: ct,
    path,
    sizeBytes: size,
    baseRevisionId: base,
    revisionSeq: seq,
  });
  return uploadSingle(t, authAt(t, u), m, ct);
}

const canUpload = (size: number, user: TestUser = u) =>
  t.json(
    "/can_upload",
    jsonInit("POST", authAt(t, user), { ss58_address: u.address, folder_hash: "", size_bytes: size }),
  );

describe("POST /can_upload", () => {
  test("answers 200 flat {result, error}: true within the allowance, false with drive_quota_exceeded over it", async () => {
    expect((await canUpload(100)).body).toEqual({ result: true, error: null });
    expect((await put("a", 60)).status).toBe(200);
    const yes = await canUpload(40);
    expect({ s: yes.status, b: yes.body }).toEqual({ s: 200, b: { result: true, error: null } });
    const no = await canUpload(41);
    expect({ s: no.status, b: no.body }).toEqual({
      s: 200,
      b: { result: false, error: "drive_quota_exceeded" },
    });
  });

  test("returns 400 invalid_manifest for a malformed body, 403 for another account, 401 without a token", async () => {
    expectError(
      await t.json(
        "/can_upload",
        jsonInit("POST", authAt(t, u), { ss58_address: u.address, folder_hash: "x", size_bytes: 1 }),
      ),
      400,
      "invalid_manifest",
    );
    expectError(await canUpload(1, newUser()), 403, "forbidden");
    expectError(
      await t.json(
        "/can_upload",
        jsonInit("POST", null, { ss58_address: u.address, folder_hash: "", size_bytes: 1 }),
      ),
      401,
      "unauthorized",
    );
  });

  test("an account without ESYNC_DEFAULT_QUOTA_BYTES is unlimited; an override wins over the default", async () => {
    const open = makeTestApp();
    try {
      const r = await open.json(
        "/can_upload",
        jsonInit("POST", authAt(open, u), {
          ss58_address: u.address,
          folder_hash: FOLDER,
          size_bytes: 2 ** 52,
        }),
      );
      expect(r.body).toEqual({ result: true, error: null });
      await open.services.quota.setOverride(u.address, 10);
      const r2 = await open.json(
        "/can_upload",
        jsonInit("POST", authAt(open, u), { ss58_address: u.address, folder_hash: FOLDER, size_bytes: 11 }),
      );
      expect(r2.body).toEqual({ result: false, error: "drive_quota_exceeded" });
    } finally {
      await open.close();
    }
  });
});

describe("GET /v1/quota/{ss58}", () => {
  const report = (user: TestUser = u, app: TestApp = t, auth: string | null = authAt(app, user)) =>
    app.json(`/v1/quota/${u.address}`, auth ? { headers: { authorization: auth } } : {});

  test("reports the allowance and what uses it: live files, kept versions and file shares add up to used_bytes (200)", async () => {
    await t.close();
    t = makeTestApp({ ESYNC_DEFAULT_QUOTA_BYTES: "100", ESYNC_VERSION_RETENTION_DAYS: "30" });
    const first = await put("a", 60);
    expect(first.status).toBe(200);
    expect((await put("a", 10, first.body.Success.revision_id, 2)).status).toBe(200);
    const { ciphertext, metadata } = shareBlob(5);
    expect((await mintSingle(t, authAt(t, u), metadata, ciphertext)).status).toBe(201);
    const r = await report();
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      ss58_address: u.address,
      used_bytes: 75,
      file_bytes: 10,
      file_count: 1,
      share_bytes: 5,
      version_bytes: 60,
      quota_bytes: 100,
      free_bytes: 25,
    });
    expect((await canUpload(25)).body.result).toBe(true);
    expect((await canUpload(26)).body.result).toBe(false);
  });

  test("an unlimited account reports quota_bytes and free_bytes null; an override replaces the default", async () => {
    const open = makeTestApp();
    try {
      expect((await report(u, open)).body).toMatchObject({
        used_bytes: 0,
        quota_bytes: null,
        free_bytes: null,
      });
      await open.services.quota.setOverride(u.address, 7);
      expect((await report(u, open)).body).toMatchObject({ quota_bytes: 7, free_bytes: 7 });
    } finally {
      await open.close();
    }
  });

  test("answers 403 forbidden (flat) for another account's token, 401 without a token", async () => {
    const other = await report(newUser());
    expect(other.status).toBe(403);
    expect(other.body.error).toBe("forbidden");
    const anonymous = await report(u, t, null);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error).toBe("unauthorized");
  });
});

describe("402 on the write paths", () => {
  test("POST /upload over the allowance answers 402 with the flat body and stores nothing", async () => {
    expect((await put("a", 60)).status).toBe(200);
    const before = await snapshot(t);
    expectQuota402(await put("b", 41));
    expect(await snapshot(t)).toEqual(before);
  });

  test("a replacement is charged only its growth over the replaced row (200), and a delete frees its bytes", async () => {
    const first = await put("a", 90);
    expect(first.status).toBe(200);
    const second = await put("a", 100, first.body.Success.revision_id, 2);
    expect(second.status).toBe(200);
    expectQuota402(await put("a", 101, second.body.Success.revision_id, 3));
    expect((await t.services.quota.info(u.address)).usedBytes).toBe(100);
    const id = Buffer.from((await rowsOf(t, "files"))[0]!.path_hash as Uint8Array).toString("hex");
    expect(
      (
        await t.json(`/delete/${u.address}/${FOLDER}/${id}`, {
          method: "DELETE",
          headers: { authorization: authAt(t, u) },
        })
      ).status,
    ).toBe(200);
    expect((await put("b", 100)).status).toBe(200);
  });

  test("POST /upload/session over the allowance answers 402 and opens no session", async () => {
    const ct = randomCiphertext(149);
    const manifest = makeManifest({ owner: u.address, ciphertext: ct, sizeBytes: 101 });
    const r = await createSessionRaw(t, authAt(t, u), {
      manifest,
      chunk_count: 1,
      chunk_size: 1024,
      ciphertext_size: 149,
    });
    expectQuota402(r);
    expect(await rowsOf(t, "upload_sessions")).toHaveLength(0);
  });

  test("finalize over the allowance answers 402, writes no file and leaves the session receiving", async () => {
    const ct = randomCiphertext(108);
    const s = await openSession(t, u, ct, { sizeBytes: 60 });
    await putChunks(t, s, ct);
    expect((await put("other", 50)).status).toBe(200);
    expectQuota402(await finalize(t, s.auth, s.sessionId));
    expect(await rowsOf(t, "files")).toHaveLength(1);
    expect(
      expectSuccess(await status(t, s.auth, s.sessionId), [
        "session_id",
        "state",
        "total_chunks",
        "chunks_received",
        "expires_at",
        "ciphertext_hash",
      ]).state,
    ).toBe("receiving");
  });

  test("two parallel uploads that each fit but not together: exactly one succeeds (200), the other 402", async () => {
    const [a, b] = await Promise.all([put("a", 60), put("b", 60)]);
    expect([a.status, b.status].sort()).toEqual([200, 402]);
    expectQuota402(a.status === 402 ? a : b);
    expect(await rowsOf(t, "files")).toHaveLength(1);
    expect((await t.services.quota.info(u.address)).usedBytes).toBe(60);
  });

  test("two parallel session finalizes that each fit but not together: exactly one succeeds", async () => {
    const cts = [randomCiphertext(108), randomCiphertext(108)];
    const sessions = [
      await openSession(t, u, cts[0]!, { sizeBytes: 60, path: "x" }),
      await openSession(t, u, cts[1]!, { sizeBytes: 60, path: "y" }),
    ];
    for (let i = 0; i < 2; i++) await putChunks(t, sessions[i]!, cts[i]!);
    const rs = await Promise.all(sessions.map((s) => finalize(t, s.auth, s.sessionId)));
    expect(rs.map((r) => r.status).sort()).toEqual([200, 402]);
    expect((await t.services.quota.info(u.address)).usedBytes).toBe(60);
  });
});

describe("the quota counts stored bytes: size_bytes is held to the ciphertext's framing", () => {
  const ALLOWANCE = 1_000_000;
  let q: TestApp;
  let owner: TestUser;
  beforeEach(() => {
    q = makeTestApp({ ESYNC_DEFAULT_QUOTA_BYTES: String(ALLOWANCE) });
    owner = newUser();
  });
  afterEach(() => q.close());

  /** Bytes of every object of the blob store. */
  async function storedBytes(): Promise<number> {
    let n = 0;
    for (const key of await q.blobs.list("")) n += (await q.blobs.size(key)) ?? 0;
    return n;
  }

  test("refuses 5 MiB uploads declaring size_bytes 0 with 400 invalid_manifest: 0 bytes stored beyond the allowance", async () => {
    const full = randomCiphertext(ciphertextSizeFor(ALLOWANCE));
    const m = makeManifest({ owner: owner.address, ciphertext: full, path: "full.bin" });
    expect(m.size_bytes).toBe(ALLOWANCE);
    expectSuccess(await uploadSingle(q, authAt(q, owner), m, full), UPLOAD_RESULT_KEYS);
    const stored = await storedBytes();
    expect(stored).toBe(ciphertextSizeFor(ALLOWANCE));
    for (let i = 0; i < 5; i++) {
      const ct = randomCiphertext(5 * 1024 * 1024);
      const liar = makeManifest({ owner: owner.address, ciphertext: ct, path: `free/${i}`, sizeBytes: 0 });
      for (const declare of [false, true]) {
        const r = await uploadSingle(q, authAt(q, owner), liar, ct, declare);
        expectError(r, 400, "invalid_manifest");
        expect(r.body.Error.message).toContain("size_bytes");
      }
    }
    expect(await storedBytes()).toBe(stored);
    expect((await q.services.quota.info(owner.address)).usedBytes).toBe(ALLOWANCE);
    expect(await rowsOf(q, "files")).toHaveLength(1);
  });

  test("refuses a held (small) upload whose size_bytes is below its ciphertext's plaintext (400 naming size_bytes)", async () => {
    const ct = randomCiphertext(900);
    const r = await uploadSingle(
      q,
      authAt(q, owner),
      makeManifest({ owner: owner.address, ciphertext: ct, sizeBytes: 851 }),
      ct,
      true,
    );
    expectError(r, 400, "invalid_manifest");
    expect(r.body.Error.message).toContain("size_bytes");
    expect(await storedBytes()).toBe(0);
  });

  test("refuses a session whose ciphertext_size is not what size_bytes encrypts to (400 naming ciphertext_size), opening nothing", async () => {
    const ct = randomCiphertext(5 * 1024 * 1024);
    const r = await createSessionRaw(q, authAt(q, owner), {
      manifest: makeManifest({ owner: owner.address, ciphertext: ct, sizeBytes: 0 }),
      chunk_count: 1,
      chunk_size: 8 * 1024 * 1024,
      ciphertext_size: ct.byteLength,
    });
    expectError(r, 400, "invalid_manifest");
    expect(r.body.Error.message).toContain("ciphertext_size");
    expect(await rowsOf(q, "upload_sessions")).toHaveLength(0);
  });

  test("refuses at finalize (400 naming ciphertext_size) a session whose stored manifest disagrees with its chunks, committing nothing", async () => {
    const ct = randomCiphertext(3000);
    const s = await openSession(q, owner, ct, { chunkSize: 1024 });
    await putChunks(q, s, ct);
    // A session opened before the rule held: its stored manifest declares 0 bytes.
    const [row] = await rowsOf(q, "upload_sessions");
    const manifest = JSON.parse(String(row!.manifest));
    manifest.size_bytes = 0;
    const sqlite = sqliteDb(q.store);
    if (sqlite)
      sqlite.$client
        .query("UPDATE upload_sessions SET manifest = ? WHERE session_id = ?")
        .run(JSON.stringify(manifest), s.sessionId);
    else
      await pgDb(q.store)!.$client.unsafe("UPDATE upload_sessions SET manifest = $1 WHERE session_id = $2", [
        JSON.stringify(manifest),
        s.sessionId,
      ]);
    const r = await finalize(q, s.auth, s.sessionId);
    expectError(r, 400, "invalid_manifest");
    expect(r.body.Error.message).toContain("ciphertext_size");
    expect(await rowsOf(q, "files")).toHaveLength(0);
  });
});
