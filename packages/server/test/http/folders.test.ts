/**
 * Folder registry (docs/protocol.md#folders): every row of the folder state table, every error row,
 * and the counters `file_count`/`total_bytes`/`updated_at` through upload, replace, delete and
 * unregister.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { jsonInit, makeTestApp, type TestApp } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext, type TestUser } from "../support/fixtures.ts";
import {
  authAt,
  blobFiles,
  download,
  expectError,
  expectSuccess,
  FOLDER,
  FOLDER_B,
  FOLDER_KEYS,
  fileIdOf,
  foldersOf,
  rowsOf,
  sessionCall,
  snapshot,
  stateOf,
  uploadSingle,
  uploadViaSession,
} from "./helpers.ts";

let t: TestApp;
beforeEach(() => {
  t = makeTestApp();
});
afterEach(() => t.close());

function register(u: TestUser, body: unknown, auth = authAt(t, u)) {
  return t.json("/register_folder", jsonInit("POST", auth, body));
}
function unregister(u: TestUser, body: unknown, auth = authAt(t, u)) {
  return t.json("/unregister_folder", jsonInit("DELETE", auth, body));
}

describe("POST /register_folder", () => {
  test("registers an unregistered folder (200 registered) and lists it with label, device and zero counters", async () => {
    const u = newUser();
    const r = await register(u, {
      ss58_address: u.address,
      folder_hash: FOLDER,
      label: "default",
      device_name: "laptop",
    });
    expect(expectSuccess(r, ["status"])).toEqual({ status: "registered" });
    const folders = await foldersOf(t, u);
    expect(folders).toHaveLength(1);
    expect(Object.keys(folders[0]).sort()).toEqual([...FOLDER_KEYS].sort());
    expect(folders[0]).toEqual({
      label: "default",
      folder_hash: FOLDER,
      file_count: 0,
      total_bytes: 0,
      created_at: t.clock.now(),
      updated_at: t.clock.now(),
      device_name: "laptop",
    });
  });

  test('records device_name as "" when it is absent or null', async () => {
    const u = newUser();
    expect((await register(u, { ss58_address: u.address, folder_hash: FOLDER, label: "a" })).status).toBe(
      200,
    );
    expect(
      (await register(u, { ss58_address: u.address, folder_hash: FOLDER_B, label: "b", device_name: null }))
        .status,
    ).toBe(200);
    const folders = await foldersOf(t, u);
    expect(folders.map((f) => f.device_name)).toEqual(["", ""]);
  });

  test("accepts the alias user_id for ss58_address (200)", async () => {
    const u = newUser();
    expect(
      expectSuccess(await register(u, { user_id: u.address, folder_hash: FOLDER, label: "x" }), ["status"])
        .status,
    ).toBe("registered");
    expect((await foldersOf(t, u)).map((f) => f.folder_hash)).toEqual([FOLDER]);
  });

  test("returns 409 conflict for a folder already registered by the user and keeps the first label and device", async () => {
    const u = newUser();
    await register(u, { ss58_address: u.address, folder_hash: FOLDER, label: "first", device_name: "d1" });
    const before = await snapshot(t);
    t.clock.advance(10);
    expectError(
      await register(u, { ss58_address: u.address, folder_hash: FOLDER, label: "second", device_name: "d2" }),
      409,
      "conflict",
    );
    expect(await snapshot(t)).toEqual(before);
    const [f] = await foldersOf(t, u);
    expect([f.label, f.device_name]).toEqual(["first", "d1"]);
  });

  test("lets two users register the same folder_hash independently (200 each)", async () => {
    const a = newUser();
    const b = newUser();
    expect((await register(a, { ss58_address: a.address, folder_hash: FOLDER, label: "a" })).status).toBe(
      200,
    );
    expect((await register(b, { ss58_address: b.address, folder_hash: FOLDER, label: "b" })).status).toBe(
      200,
    );
    expect((await foldersOf(t, a))[0].label).toBe("a");
    expect((await foldersOf(t, b))[0].label).toBe("b");
  });

  const badBodies: [string, (u: TestUser) => unknown][] = [
    ["ss58_address missing", () => ({ folder_hash: FOLDER, label: "x" })],
    ["ss58_address not a string", () => ({ ss58_address: 42, folder_hash: FOLDER, label: "x" })],
    ["folder_hash missing", (u) => ({ ss58_address: u.address, label: "x" })],
    [
      "folder_hash of 15 characters",
      (u) => ({ ss58_address: u.address, folder_hash: FOLDER.slice(1), label: "x" }),
    ],
    [
      "folder_hash in upper case",
      (u) => ({ ss58_address: u.address, folder_hash: FOLDER.toUpperCase(), label: "x" }),
    ],
    [
      "folder_hash not hex",
      (u) => ({ ss58_address: u.address, folder_hash: "zzzzzzzzzzzzzzzz", label: "x" }),
    ],
    [
      "folder_hash as a number",
      (u) => ({ ss58_address: u.address, folder_hash: 1234567890123456, label: "x" }),
    ],
    ["label missing", (u) => ({ ss58_address: u.address, folder_hash: FOLDER })],
    ["label not a string", (u) => ({ ss58_address: u.address, folder_hash: FOLDER, label: ["x"] })],
    [
      "device_name not a string",
      (u) => ({ ss58_address: u.address, folder_hash: FOLDER, label: "x", device_name: 7 }),
    ],
    ["a JSON array body", (u) => [u.address, FOLDER, "x"]],
    ["a JSON string body", () => JSON.stringify("hello")],
    ["garbage that is not JSON", () => "{ss58_address:"],
    ["an empty body", () => ""],
  ];
  for (const [what, body] of badBodies) {
    test(`returns 400 invalid_manifest for ${what}, registering nothing`, async () => {
      const u = newUser();
      const before = await snapshot(t);
      expectError(await register(u, body(u)), 400, "invalid_manifest");
      expect(await snapshot(t)).toEqual(before);
      expect(await foldersOf(t, u)).toEqual([]);
    });
  }

  test("returns 403 forbidden when ss58_address is not the token's address, registering nothing", async () => {
    const a = newUser();
    const b = newUser();
    expectError(
      await register(a, { ss58_address: b.address, folder_hash: FOLDER, label: "x" }),
      403,
      "forbidden",
    );
    expect(await foldersOf(t, b)).toEqual([]);
  });

  test("returns 401 unauthorized without a token", async () => {
    const u = newUser();
    expectError(
      await register(u, { ss58_address: u.address, folder_hash: FOLDER, label: "x" }, ""),
      401,
      "unauthorized",
    );
  });
});

describe("GET /list_folders/{base_address}", () => {
  test("returns exactly base_address and folders: [] for a user without folders (200)", async () => {
    const u = newUser();
    const r = await sessionCall(t, authAt(t, u), "GET", `/list_folders/${u.address}`);
    expect(expectSuccess(r, ["base_address", "folders"])).toEqual({ base_address: u.address, folders: [] });
  });

  test("lists only the caller's own registered folders", async () => {
    const a = newUser();
    const b = newUser();
    await register(a, { ss58_address: a.address, folder_hash: FOLDER, label: "a1" });
    await register(a, { ss58_address: a.address, folder_hash: FOLDER_B, label: "a2" });
    await register(b, { ss58_address: b.address, folder_hash: FOLDER, label: "b1" });
    expect((await foldersOf(t, a)).map((f) => f.label).sort()).toEqual(["a1", "a2"]);
    expect((await foldersOf(t, b)).map((f) => f.label)).toEqual(["b1"]);
  });

  for (const [what, addr] of [
    ["a bad checksum", "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQZ"],
    ["a '%' character", "5Grw%41"],
    ["a backslash", "5Grw%5C"],
    ["more than 256 bytes", "5".repeat(300)],
    ["a path traversal", "..%2F..%2Fetc"],
  ] as const) {
    test(`returns 400 invalid_user_id for a base_address with ${what}`, async () => {
      const u = newUser();
      expectError(await sessionCall(t, authAt(t, u), "GET", `/list_folders/${addr}`), 400, "invalid_user_id");
    });
  }

  test("returns 403 forbidden for another user's address", async () => {
    const a = newUser();
    const b = newUser();
    expectError(await sessionCall(t, authAt(t, a), "GET", `/list_folders/${b.address}`), 403, "forbidden");
  });
});

describe("DELETE /unregister_folder", () => {
  test("unregisters a registered folder without files (200, files_deleted 0) and drops it from the listing", async () => {
    const u = newUser();
    await register(u, { ss58_address: u.address, folder_hash: FOLDER, label: "x" });
    const r = await unregister(u, { ss58_address: u.address, folder_hash: FOLDER });
    expect(expectSuccess(r, ["status", "files_deleted"])).toEqual({
      status: "unregistered",
      files_deleted: 0,
    });
    expect(await foldersOf(t, u)).toEqual([]);
  });

  test("deletes every file of the folder, queues their blobs and the sweeper removes them", async () => {
    const u = newUser();
    await register(u, { ss58_address: u.address, folder_hash: FOLDER, label: "x" });
    const files = [randomCiphertext(3000), randomCiphertext(100), randomCiphertext(5000)];
    const manifests: Record<string, unknown>[] = [];
    for (const [i, ct] of files.entries()) {
      const { session } = await uploadViaSession(t, u, ct, { path: `f${i}.bin`, chunkSize: 1024 });
      manifests.push(session.manifest);
    }
    const other = randomCiphertext(200);
    await uploadViaSession(t, u, other, { path: "keep.bin", folderHash: FOLDER_B });
    // Finalize assembles the multi-chunk sessions into one object each and queues their chunks:
    // once those are swept, each file is one object.
    t.clock.advance(t.config.blobGraceSeconds);
    await t.sweeper.runOnce();
    expect(await rowsOf(t, "blob_deletions")).toHaveLength(0);
    expect(await blobFiles(t)).toHaveLength(files.length + 1);

    const r = await unregister(u, { ss58_address: u.address, folder_hash: FOLDER });
    expect(expectSuccess(r, ["status", "files_deleted"])).toEqual({
      status: "unregistered",
      files_deleted: 3,
    });
    expect((await stateOf(t, u, FOLDER)).files).toEqual([]);
    for (const m of manifests) {
      expect((await download(t, authAt(t, u), u.address, FOLDER, fileIdOf(m))).status).toBe(404);
    }
    expect(await rowsOf(t, "blob_deletions")).toHaveLength(3);
    await t.sweeper.runOnce();
    expect(await rowsOf(t, "blob_deletions")).toHaveLength(3); // within ESYNC_BLOB_GRACE_SECONDS
    t.clock.advance(t.config.blobGraceSeconds);
    await t.sweeper.runOnce();
    expect(await rowsOf(t, "blob_deletions")).toHaveLength(0);
    expect(await blobFiles(t)).toHaveLength(1);
    expect((await stateOf(t, u, FOLDER_B)).files).toHaveLength(1);
  });

  test("returns 404 not_found for a folder that was never registered", async () => {
    const u = newUser();
    expectError(await unregister(u, { ss58_address: u.address, folder_hash: FOLDER }), 404, "not_found");
  });

  test("returns 404 not_found for a second unregister of the same folder", async () => {
    const u = newUser();
    await register(u, { ss58_address: u.address, folder_hash: FOLDER, label: "x" });
    expect((await unregister(u, { ss58_address: u.address, folder_hash: FOLDER })).status).toBe(200);
    expectError(await unregister(u, { ss58_address: u.address, folder_hash: FOLDER }), 404, "not_found");
  });

  test("returns 404 not_found for a folder that only holds files (never registered) and keeps its files", async () => {
    const u = newUser();
    await uploadViaSession(t, u, randomCiphertext(500), { path: "a.bin" });
    const before = await snapshot(t);
    expectError(await unregister(u, { ss58_address: u.address, folder_hash: FOLDER }), 404, "not_found");
    expect(await snapshot(t)).toEqual(before);
    expect((await stateOf(t, u)).files).toHaveLength(1);
  });

  test("returns 404 not_found for another user's folder hash the caller never registered", async () => {
    const a = newUser();
    const b = newUser();
    await register(b, { ss58_address: b.address, folder_hash: FOLDER, label: "b" });
    expectError(await unregister(a, { ss58_address: a.address, folder_hash: FOLDER }), 404, "not_found");
    expect(await foldersOf(t, b)).toHaveLength(1);
  });

  test("returns 403 forbidden for another user's address and keeps the folder", async () => {
    const a = newUser();
    const b = newUser();
    await register(b, { ss58_address: b.address, folder_hash: FOLDER, label: "b" });
    expectError(await unregister(a, { ss58_address: b.address, folder_hash: FOLDER }), 403, "forbidden");
    expect(await foldersOf(t, b)).toHaveLength(1);
  });

  for (const [what, body] of [
    ["folder_hash missing", (u: TestUser) => ({ ss58_address: u.address })],
    ["ss58_address missing", () => ({ folder_hash: FOLDER })],
    [
      "folder_hash malformed",
      (u: TestUser) => ({ ss58_address: u.address, folder_hash: "../../etc/passwd" }),
    ],
    ["garbage JSON", () => "}{"],
  ] as const) {
    test(`returns 400 invalid_manifest for a body with ${what}, keeping the folder`, async () => {
      const u = newUser();
      await register(u, { ss58_address: u.address, folder_hash: FOLDER, label: "x" });
      const before = await snapshot(t);
      expectError(await unregister(u, body(u)), 400, "invalid_manifest");
      expect(await snapshot(t)).toEqual(before);
    });
  }

  test("registering again after unregister starts from zero counters (200)", async () => {
    const u = newUser();
    await register(u, { ss58_address: u.address, folder_hash: FOLDER, label: "x" });
    await uploadViaSession(t, u, randomCiphertext(500), { path: "a.bin" });
    await unregister(u, { ss58_address: u.address, folder_hash: FOLDER });
    expect((await register(u, { ss58_address: u.address, folder_hash: FOLDER, label: "again" })).status).toBe(
      200,
    );
    const [f] = await foldersOf(t, u);
    expect([f.label, f.file_count, f.total_bytes]).toEqual(["again", 0, 0]);
  });
});

describe("uploads to an unregistered folder_hash", () => {
  test("are accepted, stay out of /list_folders, and registration later adds the label with the counters", async () => {
    const u = newUser();
    const ct = randomCiphertext(1000);
    await uploadViaSession(t, u, ct, { path: "early.bin", sizeBytes: 952 });
    expect((await stateOf(t, u)).files).toHaveLength(1);
    expect(await foldersOf(t, u)).toEqual([]);

    t.clock.advance(30);
    expect(
      (
        await register(u, {
          ss58_address: u.address,
          folder_hash: FOLDER,
          label: "default",
          device_name: "pc",
        })
      ).status,
    ).toBe(200);
    const [f] = await foldersOf(t, u);
    expect(f).toMatchObject({
      label: "default",
      folder_hash: FOLDER,
      file_count: 1,
      total_bytes: 952,
      device_name: "pc",
    });
    expect(f.created_at).toBe(t.clock.now());
  });

  test("registering a folder that only holds files is 200, and a second registration is 409", async () => {
    const u = newUser();
    await uploadViaSession(t, u, randomCiphertext(100), { path: "x.bin" });
    expect((await register(u, { ss58_address: u.address, folder_hash: FOLDER, label: "a" })).status).toBe(
      200,
    );
    expectError(
      await register(u, { ss58_address: u.address, folder_hash: FOLDER, label: "b" }),
      409,
      "conflict",
    );
  });
});

describe("folder counters file_count / total_bytes / updated_at", () => {
  test("follow upload, replace, single-shot upload, delete and unregister", async () => {
    const u = newUser();
    const t0 = t.clock.now();
    await register(u, { ss58_address: u.address, folder_hash: FOLDER, label: "c" });
    const counters = async () => {
      const [f] = await foldersOf(t, u);
      return { n: f.file_count, bytes: f.total_bytes, updated: f.updated_at, created: f.created_at };
    };
    expect(await counters()).toEqual({ n: 0, bytes: 0, updated: t0, created: t0 });

    t.clock.advance(10);
    const a = randomCiphertext(1548);
    const { result: ra } = await uploadViaSession(t, u, a, { path: "a.bin", sizeBytes: 1500 });
    expect(await counters()).toEqual({ n: 1, bytes: 1500, updated: t0 + 10, created: t0 });

    t.clock.advance(10);
    const b = randomCiphertext(400);
    const mb = makeManifest({ owner: u.address, ciphertext: b, path: "b.bin", sizeBytes: 352 });
    expect((await uploadSingle(t, authAt(t, u), mb, b)).status).toBe(200);
    expect(await counters()).toEqual({ n: 2, bytes: 1852, updated: t0 + 20, created: t0 });

    t.clock.advance(10);
    const a2 = randomCiphertext(648);
    await uploadViaSession(t, u, a2, {
      path: "a.bin",
      sizeBytes: 600,
      revisionSeq: 2,
      baseRevisionId: ra.revision_id,
    });
    expect(await counters()).toEqual({ n: 2, bytes: 952, updated: t0 + 30, created: t0 });

    t.clock.advance(10);
    const del = await sessionCall(
      t,
      authAt(t, u),
      "DELETE",
      `/delete/${u.address}/${FOLDER}/${fileIdOf(mb)}`,
    );
    expect(del.status).toBe(200);
    expect(await counters()).toEqual({ n: 1, bytes: 600, updated: t0 + 40, created: t0 });

    const un = await unregister(u, { ss58_address: u.address, folder_hash: FOLDER });
    expect(expectSuccess(un, ["status", "files_deleted"]).files_deleted).toBe(1);
    expect(await foldersOf(t, u)).toEqual([]);
  });

  test("are not changed by a rejected upload (conflict)", async () => {
    const u = newUser();
    await register(u, { ss58_address: u.address, folder_hash: FOLDER, label: "c" });
    await uploadViaSession(t, u, randomCiphertext(148), { path: "a.bin", sizeBytes: 100 });
    const before = await foldersOf(t, u);
    t.clock.advance(5);
    const again = randomCiphertext(298);
    const m = makeManifest({ owner: u.address, ciphertext: again, path: "a.bin", sizeBytes: 250 });
    expect((await uploadSingle(t, authAt(t, u), m, again)).status).toBe(409);
    expect(await foldersOf(t, u)).toEqual(before);
  });
});
