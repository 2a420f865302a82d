/**
 * `/get_state` paging, `/delete` and `/download` with Range (docs/protocol.md#open-rules, #sync-endpoints).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import type { FileRow } from "../../src/files/file-entry.ts";
import { makeTestApp, type TestApp } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext, type TestUser } from "../support/fixtures.ts";
import {
  authAt,
  blobFiles,
  download,
  ENTRY_KEYS,
  expectError,
  expectSuccess,
  FOLDER,
  FOLDER_B,
  fileIdOf,
  getState,
  type Json,
  rowsOf,
  sessionCall,
  snapshot,
  stateOf,
  UPLOAD_RESULT_KEYS,
  uploadSingle,
  uploadViaSession,
} from "./helpers.ts";

let t: TestApp;
beforeEach(() => {
  t = makeTestApp();
});
afterEach(() => t.close());

/** Inserts `n` file rows through the files repository (no blobs needed for listing), in one transaction. */
async function seedFiles(owner: string, folderHash: string, n: number): Promise<void> {
  const rows: FileRow[] = [];
  for (let i = 0; i < n; i++) {
    rows.push({
      owner,
      folderHash,
      pathHash: randomBytes(32),
      saltedHash: randomBytes(32),
      sizeBytes: i,
      revisionSeq: 1,
      revisionId: randomBytes(32),
      encryptedPath: Buffer.alloc(0),
      fileName: `f${i}.bin`,
      relativePath: `f${i}.bin`,
      searchName: `f${i}.bin`,
      ext: ".bin",
      storeHash: null,
      chunkHashes: null,
      createdAt: t.clock.now(),
      updatedAt: t.clock.now(),
      clientTimestamp: 0,
      source: null,
      attributes: null,
      uploadId: `u${i}`,
      ciphertextHash: "00".repeat(32),
      ciphertextSize: 48,
      blobId: randomBytes(16).toString("hex"),
      chunkSize: 48,
      chunkCount: 1,
      chunkGens: '["0"]',
      uploadedBy: null,
    });
  }
  await t.store.transaction(async (tx) => {
    for (const row of rows) await tx.files.upsert(row);
  });
}

async function uploadSmall(u: TestUser, path: string, folderHash = FOLDER): Promise<Record<string, unknown>> {
  const ct = randomCiphertext(100);
  const m = makeManifest({ owner: u.address, ciphertext: ct, path, folderHash });
  expectSuccess(await uploadSingle(t, authAt(t, u), m, ct), UPLOAD_RESULT_KEYS);
  return m;
}

describe("GET /get_state/{ss58}/{folder_hash}", () => {
  test("returns 200 with files: [] and exactly the state fields for a folder without files", async () => {
    const u = newUser();
    expect(await stateOf(t, u)).toEqual({
      ss58_address: u.address,
      folder_hash: FOLDER,
      files: [],
      total_count: 0,
      has_more: false,
      offset: 0,
      limit: 1000,
    });
  });

  test("lists each file with exactly the RemoteFileEntry fields and the manifest's values", async () => {
    const u = newUser();
    const ct = randomCiphertext(3000);
    const { result, session } = await uploadViaSession(t, u, ct, {
      chunkSize: 1000,
      path: "photos/ä/cat.png",
      sizeBytes: 2952,
    });
    const [e] = (await stateOf(t, u)).files;
    expect(Object.keys(e).sort()).toEqual([...ENTRY_KEYS, "uploaded_by"].sort());
    expect(e).toEqual({
      path_hash: session.manifest.path_hash,
      salted_hash: session.manifest.salted_hash,
      size_bytes: 2952,
      revision_seq: 1,
      revision_id: result.revision_id,
      encrypted_path: session.manifest.encrypted_path,
      file_name: "cat.png",
      relative_path: "photos/ä/cat.png",
      store_hash: blake3Hex(ct),
      arion_hash: blake3Hex(ct),
      chunk_hashes: e.chunk_hashes,
      created_at: result.created_at,
      updated_at: result.updated_at,
      uploaded_by: u.address,
    });
    // Storage metadata: null, or one BLAKE3 hex per chunk (docs/protocol.md#file-entries).
    if (e.chunk_hashes !== null) {
      expect(e.chunk_hashes).toHaveLength(3);
      for (const h of e.chunk_hashes) expect(h).toMatch(/^[0-9a-f]{64}$/);
    }
  });

  test("reports file_name and relative_path null when the manifest leaves them null", async () => {
    const u = newUser();
    const ct = randomCiphertext(100);
    const m = makeManifest({
      owner: u.address,
      ciphertext: ct,
      path: "legacy",
      fileName: null,
      relativePath: null,
    });
    expectSuccess(await uploadSingle(t, authAt(t, u), m, ct), UPLOAD_RESULT_KEYS);
    const [e] = (await stateOf(t, u)).files;
    expect([e.file_name, e.relative_path]).toEqual([null, null]);
  });

  test("lists only the requested folder of the requested user", async () => {
    const a = newUser();
    const b = newUser();
    await uploadSmall(a, "one");
    await uploadSmall(a, "two", FOLDER_B);
    await uploadSmall(b, "three");
    expect((await stateOf(t, a)).files.map((e: Json) => e.file_name)).toEqual(["one"]);
    expect((await stateOf(t, a, FOLDER_B)).files.map((e: Json) => e.file_name)).toEqual(["two"]);
    expect((await stateOf(t, b)).files.map((e: Json) => e.file_name)).toEqual(["three"]);
  });

  test("pages with offset and limit: no row dropped or repeated, has_more true until the last page", async () => {
    const u = newUser();
    for (let i = 0; i < 7; i++) await uploadSmall(u, `p${i}`);
    const seen: string[] = [];
    for (let offset = 0; offset < 7; offset += 3) {
      const page = await stateOf(t, u, FOLDER, `?offset=${offset}&limit=3`);
      expect([page.offset, page.limit, page.total_count]).toEqual([offset, 3, 7]);
      expect(page.has_more).toBe(offset + 3 < 7);
      seen.push(...page.files.map((e: Json) => e.file_name));
    }
    expect(seen).toHaveLength(7);
    expect(new Set(seen).size).toBe(7);
    const beyond = await stateOf(t, u, FOLDER, "?offset=50");
    expect([beyond.files, beyond.has_more, beyond.total_count]).toEqual([[], false, 7]);
  });

  test("uses the default limit 1000 (also for limit=0) and caps limit at 5000", async () => {
    const u = newUser();
    await seedFiles(u.address, FOLDER, 5001);
    const dflt = await stateOf(t, u);
    expect([dflt.files.length, dflt.limit, dflt.total_count, dflt.has_more]).toEqual([
      1000,
      1000,
      5001,
      true,
    ]);
    const zero = await stateOf(t, u, FOLDER, "?limit=0");
    expect([zero.files.length, zero.limit]).toEqual([1000, 1000]);
    const capped = await stateOf(t, u, FOLDER, "?limit=100000");
    expect([capped.files.length, capped.limit, capped.has_more]).toEqual([5000, 5000, true]);
    const rest = await stateOf(t, u, FOLDER, "?offset=5000&limit=5000");
    expect([rest.files.length, rest.has_more]).toEqual([1, false]);
    const all = new Set(
      [...capped.files, ...rest.files].map((e: Json) => Buffer.from(e.path_hash).toString("hex")),
    );
    expect(all.size).toBe(5001);
  });

  for (const q of [
    "?limit=abc",
    "?limit=-1",
    "?limit=1.5",
    "?offset=-3",
    "?offset=1e3",
    "?limit=99999999999999999999",
  ]) {
    test(`returns 400 invalid_parameter for '${q}'`, async () => {
      const u = newUser();
      expectError(await getState(t, authAt(t, u), u.address, FOLDER, q), 400, "invalid_parameter");
    });
  }

  for (const folder of ["37A8EEC1CE19687D", "37a8eec1ce19687", "..%2F..%2Fetc", "zzzzzzzzzzzzzzzz"]) {
    test(`returns 400 invalid_parameter for folder_hash '${folder}'`, async () => {
      const u = newUser();
      expectError(await getState(t, authAt(t, u), u.address, folder), 400, "invalid_parameter");
    });
  }

  test("returns 400 invalid_user_id for a malformed address", async () => {
    const u = newUser();
    expectError(await getState(t, authAt(t, u), "nope", FOLDER), 400, "invalid_user_id");
  });

  test("returns 403 forbidden for another user's address", async () => {
    const a = newUser();
    const b = newUser();
    await uploadSmall(b, "secret");
    expectError(await getState(t, authAt(t, a), b.address, FOLDER), 403, "forbidden");
  });

  test("returns 401 unauthorized without a token", async () => {
    const u = newUser();
    expectError(await getState(t, null, u.address, FOLDER), 401, "unauthorized");
  });
});

describe("DELETE /delete/{ss58}/{folder_hash}/{file_id}", () => {
  function del(u: TestUser, address: string, folder: string, fileId: string) {
    return sessionCall(t, authAt(t, u), "DELETE", `/delete/${address}/${folder}/${fileId}`);
  }

  test("deletes a file (200 with exactly status, file_id, ss58_address, folder_hash); its blob is swept", async () => {
    const u = newUser();
    const keep = await uploadSmall(u, "keep");
    const m = await uploadSmall(u, "gone");
    const r = await del(u, u.address, FOLDER, fileIdOf(m));
    expect(expectSuccess(r, ["status", "file_id", "ss58_address", "folder_hash"])).toEqual({
      status: "deleted",
      file_id: fileIdOf(m),
      ss58_address: u.address,
      folder_hash: FOLDER,
    });
    expect((await stateOf(t, u)).files.map((e: Json) => e.file_name)).toEqual(["keep"]);
    expect((await download(t, authAt(t, u), u.address, FOLDER, fileIdOf(m))).status).toBe(404);
    expect(await blobFiles(t)).toHaveLength(2);
    await t.sweeper.runOnce();
    expect(await blobFiles(t)).toHaveLength(2); // within ESYNC_BLOB_GRACE_SECONDS: still readable
    t.clock.advance(t.config.blobGraceSeconds);
    await t.sweeper.runOnce();
    expect(await blobFiles(t)).toHaveLength(1);
    expect((await download(t, authAt(t, u), u.address, FOLDER, fileIdOf(keep))).status).toBe(200);
  });

  test("accepts file_id in upper-case hex (200)", async () => {
    const u = newUser();
    const m = await uploadSmall(u, "x");
    expect((await del(u, u.address, FOLDER, fileIdOf(m).toUpperCase())).status).toBe(200);
  });

  test("returns 404 not_found when the file does not exist, and for a second delete", async () => {
    const u = newUser();
    const m = await uploadSmall(u, "x");
    expectError(await del(u, u.address, FOLDER, "00".repeat(32)), 404, "not_found");
    expect((await del(u, u.address, FOLDER, fileIdOf(m))).status).toBe(200);
    expectError(await del(u, u.address, FOLDER, fileIdOf(m)), 404, "not_found");
  });

  test("returns 404 not_found for the right file_id in another folder, keeping the file", async () => {
    const u = newUser();
    const m = await uploadSmall(u, "x");
    const before = await snapshot(t);
    expectError(await del(u, u.address, FOLDER_B, fileIdOf(m)), 404, "not_found");
    expect(await snapshot(t)).toEqual(before);
  });

  test("returns 403 forbidden for another user's file, keeping it", async () => {
    const a = newUser();
    const b = newUser();
    const m = await uploadSmall(b, "x");
    const before = await snapshot(t);
    expectError(await del(a, b.address, FOLDER, fileIdOf(m)), 403, "forbidden");
    expect(await snapshot(t)).toEqual(before);
  });

  for (const fid of [
    "ab".repeat(31),
    "zz".repeat(32),
    `${"ab".repeat(32)}00`,
    "..%2F..%2F..%2Fetc%2Fpasswd",
  ]) {
    test(`returns 400 invalid_parameter for file_id '${fid.slice(0, 30)}', deleting nothing`, async () => {
      const u = newUser();
      await uploadSmall(u, "x");
      const before = await snapshot(t);
      expectError(await del(u, u.address, FOLDER, fid), 400, "invalid_parameter");
      expect(await snapshot(t)).toEqual(before);
    });
  }
});

describe("GET /download/{ss58}/{folder_hash}/{file_id}", () => {
  const SIZE = 3500;
  let u: TestUser;
  let ct: Buffer;
  let manifest: Record<string, unknown>;
  let revision: number[];

  beforeEach(async () => {
    u = newUser();
    ct = randomCiphertext(SIZE);
    const r = await uploadViaSession(t, u, ct, { chunkSize: 1000, sizeBytes: 3452 });
    manifest = r.session.manifest;
    revision = r.result.revision_id;
  });

  const get = (range?: string) => download(t, authAt(t, u), u.address, FOLDER, fileIdOf(manifest), range);

  test("returns the whole ciphertext (200) with Content-Length, Accept-Ranges, X-Size-Bytes, X-Revision-Id, X-Revision-Seq", async () => {
    const r = await get();
    expect(r.status).toBe(200);
    expect(r.headers.get("content-length")).toBe(String(SIZE));
    expect(r.headers.get("accept-ranges")).toBe("bytes");
    expect(r.headers.get("x-size-bytes")).toBe("3452");
    expect(r.headers.get("x-revision-id")).toBe(Buffer.from(revision).toString("hex"));
    expect(r.headers.get("x-revision-seq")).toBe("1");
    expect(r.headers.get("content-range")).toBeNull();
    expect(Buffer.from(await r.arrayBuffer()).equals(ct)).toBe(true);
  });

  const ranges: [string, number, number][] = [
    ["bytes=0-0", 0, 1],
    ["bytes=0-999", 0, 1000],
    ["bytes=900-1100", 900, 1101],
    ["bytes=999-2000", 999, 2001],
    ["bytes=3000-", 3000, SIZE],
    ["bytes=0-", 0, SIZE],
    ["bytes=-500", SIZE - 500, SIZE],
    ["bytes=-1", SIZE - 1, SIZE],
    ["bytes=-999999", 0, SIZE],
    ["bytes=3000-999999", 3000, SIZE],
    ["bytes=3499-3499", 3499, SIZE],
  ];
  for (const [header, start, end] of ranges) {
    test(`returns 206 with Content-Range bytes ${start}-${end - 1}/${SIZE} for '${header}'`, async () => {
      const r = await get(header);
      expect(r.status).toBe(206);
      expect(r.headers.get("content-range")).toBe(`bytes ${start}-${end - 1}/${SIZE}`);
      expect(r.headers.get("content-length")).toBe(String(end - start));
      expect(r.headers.get("accept-ranges")).toBe("bytes");
      expect(r.headers.get("x-size-bytes")).toBe("3452");
      expect(r.headers.get("x-revision-seq")).toBe("1");
      expect(Buffer.from(await r.arrayBuffer()).equals(ct.subarray(start, end))).toBe(true);
    });
  }

  for (const header of ["bytes=3500-", "bytes=4000-5000", "bytes=-0"]) {
    test(`returns 416 with Content-Range bytes */${SIZE} for unsatisfiable '${header}'`, async () => {
      const r = await get(header);
      expect(r.status).toBe(416);
      expect(r.headers.get("content-range")).toBe(`bytes */${SIZE}`);
      expect(r.headers.get("etag")).toBe(`"${Buffer.from(revision).toString("hex")}"`);
      const body = await r.json();
      expect(Object.keys(body)).toEqual(["Error"]);
      expect(Object.keys(body.Error).sort()).toEqual(["error", "message"]);
    });
  }

  test("a resume (Range: bytes=N-) past the end after an overwrite by a shorter revision answers 416 with the new ETag", async () => {
    const shorter = randomCiphertext(1048);
    const m = makeManifest({
      owner: u.address,
      ciphertext: shorter,
      path: "docs/file.bin",
      revisionSeq: 2,
      baseRevisionId: revision,
    });
    const up = await uploadSingle(t, authAt(t, u), m, shorter);
    expect(up.status).toBe(200);
    const r = await get("bytes=2000-");
    expect(r.status).toBe(416);
    expect(r.headers.get("content-range")).toBe("bytes */1048");
    expect(r.headers.get("etag")).toBe(`"${Buffer.from(up.body.Success.revision_id).toString("hex")}"`);
  });

  for (const header of ["bytes=5-2", "bytes=0-1,5-6", "items=0-5", "bytes=abc"]) {
    test(`ignores the invalid or multi-range header '${header}' and returns the whole body (200)`, async () => {
      const r = await get(header);
      expect(r.status).toBe(200);
      expect(Buffer.from(await r.arrayBuffer()).equals(ct)).toBe(true);
    });
  }

  test("returns 404 not_found for an unknown file_id", async () => {
    const r = await download(t, authAt(t, u), u.address, FOLDER, "11".repeat(32));
    expect(r.status).toBe(404);
    expect((await r.json()).Error.error).toBe("not_found");
  });

  test("returns 403 forbidden for another user's file", async () => {
    const other = newUser();
    const r = await download(t, authAt(t, other), u.address, FOLDER, fileIdOf(manifest));
    expect(r.status).toBe(403);
    expect((await r.json()).Error.error).toBe("forbidden");
  });

  test("returns 400 invalid_parameter for a path-traversal file_id", async () => {
    const r = await download(t, authAt(t, u), u.address, FOLDER, "..%2F..%2Fesync.sqlite");
    expect(r.status).toBe(400);
    expect((await r.json()).Error.error).toBe("invalid_parameter");
  });

  test("returns 401 unauthorized without a token", async () => {
    const r = await download(t, null, u.address, FOLDER, fileIdOf(manifest));
    expect(r.status).toBe(401);
  });

  test("serves the files table's blob only: rows of the session are not needed after finalize", async () => {
    expect(await rowsOf(t, "files")).toHaveLength(1);
    const [session] = await rowsOf(t, "upload_sessions");
    expect(await t.store.repos.sessions.remove(String(session?.session_id))).toBe(true);
    const r = await get("bytes=1500-2500");
    expect(Buffer.from(await r.arrayBuffer()).equals(ct.subarray(1500, 2501))).toBe(true);
  });
});
