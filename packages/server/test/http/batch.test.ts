/**
 * `POST /delete_files` and `POST /rename_files` (docs/protocol.md#delete-files, #rename-files).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import { RENAME_DECLARATION_PREFIX, renameDeclaration } from "@esync/protocol/rename.ts";
import { ed25519Sign } from "@polkadot/util-crypto";
import { jsonInit, makeTestApp, type TestApp } from "../support/app.ts";
import {
  folderKey,
  makeManifest,
  newUser,
  pathHashOf,
  randomCiphertext,
  type TestUser,
} from "../support/fixtures.ts";
import {
  authAt,
  download,
  expectError,
  expectSuccess,
  FOLDER,
  foldersOf,
  type Json,
  rowsOf,
  stateOf,
  uploadSingle,
} from "./helpers.ts";

let t: TestApp;
let u: TestUser;
beforeEach(() => {
  t = makeTestApp();
  u = newUser();
});
afterEach(() => t.close());

/** Uploads `path` (plaintext size `size`) and returns its path hash and revision id. */
async function put(path: string, size = 10): Promise<{ pathHash: number[]; revisionId: number[] }> {
  const ct = randomCiphertext(size + 48);
  const m = makeManifest({ owner: u.address, ciphertext: ct, path, sizeBytes: size });
  const r = await uploadSingle(t, authAt(t, u), m, ct);
  expect(r.status).toBe(200);
  return { pathHash: m.path_hash as number[], revisionId: r.body.Success.revision_id };
}

const hex = (b: number[]) => Buffer.from(b).toString("hex");

function post(path: string, body: unknown, user: TestUser = u) {
  return t.json(path, jsonInit("POST", authAt(t, user), body));
}

/** A signed `/rename_files` body for `renames` (signed over their hash pairs). */
function renameBody(renames: Json[], owner = u.address): Json {
  const text = renameDeclaration(
    renames.map((r) => ({
      oldPathHash: Uint8Array.from(r.old_path_hash),
      newPathHash: Uint8Array.from(r.new_path_hash),
    })),
  );
  const signature = ed25519Sign(new TextEncoder().encode(text), folderKey);
  return {
    ss58_address: owner,
    folder_hash: FOLDER,
    renames,
    signature: Array.from(signature),
    signing_key: Array.from(folderKey.publicKey),
  };
}

const RENAME_KEYS = ["status", "renamed_count", "successes", "failures"];

describe("the rename declaration", () => {
  test("matches the 398-byte example of docs/protocol.md#rename-files byte for byte, in either request order", () => {
    const pairs = [
      { oldPathHash: new Uint8Array(32).fill(0x11), newPathHash: new Uint8Array(32).fill(0x22) },
      { oldPathHash: new Uint8Array(32).fill(0x05), newPathHash: new Uint8Array(32).fill(0x06) },
    ];
    const expected =
      "I hereby declare that I am renaming the following files on HCFS with the understanding that I have read and agree to the Terms of Service: " +
      `${"05".repeat(32)}:${"06".repeat(32)},${"11".repeat(32)}:${"22".repeat(32)}`;
    const text = renameDeclaration(pairs);
    expect(text).toBe(expected);
    expect(new TextEncoder().encode(text).length).toBe(398);
    expect(renameDeclaration([...pairs].reverse())).toBe(expected);
    expect(RENAME_DECLARATION_PREFIX.endsWith(": ")).toBe(true);
  });
});

describe("POST /rename_files", () => {
  test("returns 200 and moves the row: new revision id and seq, old id 404 on download, ciphertext kept", async () => {
    const a = await put("docs/a.txt", 20);
    const newHash = pathHashOf("work/b.txt");
    const before = (await rowsOf(t, "files"))[0]!;
    const r = await post(
      "/rename_files",
      renameBody([
        {
          old_path_hash: a.pathHash,
          new_path_hash: newHash,
          new_file_name: "b.txt",
          new_relative_path: "work/b.txt",
          new_encrypted_path: [1, 2, 3],
          base_revision_id: a.revisionId,
        },
      ]),
    );
    const s = expectSuccess(r, RENAME_KEYS);
    expect(s.status).toBe("ok");
    expect(s.renamed_count).toBe(1);
    expect(s.failures).toEqual([]);
    expect(s.successes[0].old_path_hash).toEqual(a.pathHash);
    expect(s.successes[0].new_path_hash).toEqual(newHash);
    expect(s.successes[0].new_revision_seq).toBe(2);
    expect(s.successes[0].new_revision_id).not.toEqual(a.revisionId);
    const state = await stateOf(t, u);
    expect(state.files).toHaveLength(1);
    expect(state.files[0].path_hash).toEqual(newHash);
    expect(state.files[0].relative_path).toBe("work/b.txt");
    expect(state.files[0].file_name).toBe("b.txt");
    expect(state.files[0].encrypted_path).toEqual([1, 2, 3]);
    expect(state.files[0].uploaded_by).toBe(u.address);
    expect(state.files[0].revision_id).toEqual(s.successes[0].new_revision_id);
    const after = (await rowsOf(t, "files"))[0]!;
    expect(after.blob_id).toBe(before.blob_id);
    expect(after.created_at).toBe(before.created_at);
    expect((await download(t, authAt(t, u), u.address, FOLDER, hex(a.pathHash))).status).toBe(404);
    expect((await download(t, authAt(t, u), u.address, FOLDER, hex(newHash))).status).toBe(200);
    expect(await rowsOf(t, "blob_deletions")).toHaveLength(0);
  });

  test("search and browse follow a rename; folder counters stay", async () => {
    const a = await put("docs/alpha-report.txt", 7);
    await post(
      "/rename_files",
      renameBody([
        {
          old_path_hash: a.pathHash,
          new_path_hash: pathHashOf("moved/omega-notes.txt"),
          new_file_name: "omega-notes.txt",
          new_relative_path: "moved/omega-notes.txt",
          base_revision_id: a.revisionId,
        },
      ]),
    );
    const auth = authAt(t, u);
    const old = await t.json(`/search_files/${u.address}?q=alpha`, { headers: { authorization: auth } });
    expect(old.body.Success.total_count).toBe(0);
    const hit = await t.json(`/search_files/${u.address}?q=omega`, { headers: { authorization: auth } });
    expect(hit.body.Success.files.map((f: Json) => f.relative_path)).toEqual(["moved/omega-notes.txt"]);
    const root = await t.json(`/browse/${u.address}/${FOLDER}`, { headers: { authorization: auth } });
    expect(root.body.Success.folders.map((f: Json) => f.name)).toEqual(["moved"]);
    const folders = await foldersOf(t, u);
    expect(folders.find((f: Json) => f.folder_hash === FOLDER)).toBeUndefined(); // not registered
    const counters = (await rowsOf(t, "folders"))[0]!;
    expect({ n: counters.file_count, b: counters.total_bytes }).toEqual({ n: 1, b: 7 });
  });

  test("a stale base_revision_id fails that entry with revision_mismatch while the others succeed (200)", async () => {
    const a = await put("a.txt");
    const b = await put("b.txt");
    const c = await put("c.txt");
    const r = await post(
      "/rename_files",
      renameBody([
        { old_path_hash: a.pathHash, new_path_hash: pathHashOf("a2.txt"), base_revision_id: a.revisionId },
        {
          old_path_hash: b.pathHash,
          new_path_hash: pathHashOf("b2.txt"),
          base_revision_id: Array(32).fill(9),
        },
        { old_path_hash: c.pathHash, new_path_hash: pathHashOf("c2.txt"), base_revision_id: c.revisionId },
      ]),
    );
    const s = expectSuccess(r, RENAME_KEYS);
    expect(s.renamed_count).toBe(2);
    expect(s.successes.map((x: Json) => x.old_path_hash)).toEqual([a.pathHash, c.pathHash]);
    expect(s.failures).toEqual([{ old_path_hash: b.pathHash, reason: "revision_mismatch" }]);
    const paths = (await stateOf(t, u)).files.map((f: Json) => hex(f.path_hash)).sort();
    expect(paths).toEqual([pathHashOf("a2.txt"), b.pathHash, pathHashOf("c2.txt")].map(hex).sort());
  });

  test("renaming onto an existing path fails with target_exists and changes neither file (200)", async () => {
    const a = await put("a.txt");
    const b = await put("b.txt");
    const r = await post(
      "/rename_files",
      renameBody([{ old_path_hash: a.pathHash, new_path_hash: b.pathHash, base_revision_id: a.revisionId }]),
    );
    const s = expectSuccess(r, RENAME_KEYS);
    expect(s.renamed_count).toBe(0);
    expect(s.failures).toEqual([{ old_path_hash: a.pathHash, reason: "target_exists" }]);
    const state = await stateOf(t, u);
    expect(state.files.map((f: Json) => f.revision_seq)).toEqual([1, 1]);
  });

  test("an unknown or repeated old_path_hash fails with not_found; a repeated target with target_exists", async () => {
    const a = await put("a.txt");
    const b = await put("b.txt");
    const r = await post(
      "/rename_files",
      renameBody([
        { old_path_hash: a.pathHash, new_path_hash: pathHashOf("x.txt"), base_revision_id: a.revisionId },
        { old_path_hash: a.pathHash, new_path_hash: pathHashOf("y.txt"), base_revision_id: a.revisionId },
        { old_path_hash: b.pathHash, new_path_hash: pathHashOf("x.txt"), base_revision_id: b.revisionId },
        {
          old_path_hash: pathHashOf("none.txt"),
          new_path_hash: pathHashOf("z.txt"),
          base_revision_id: a.revisionId,
        },
      ]),
    );
    const s = expectSuccess(r, RENAME_KEYS);
    expect(s.renamed_count).toBe(1);
    expect(s.failures.map((f: Json) => f.reason)).toEqual(["not_found", "target_exists", "not_found"]);
  });

  test("returns 400 invalid_manifest for a signature over other pairs, and changes nothing", async () => {
    const a = await put("a.txt");
    const body = renameBody([
      { old_path_hash: a.pathHash, new_path_hash: pathHashOf("b.txt"), base_revision_id: a.revisionId },
    ]);
    body.renames[0].new_path_hash = pathHashOf("c.txt");
    expectError(await post("/rename_files", body), 400, "invalid_manifest");
    expect((await stateOf(t, u)).files[0].path_hash).toEqual(a.pathHash);
  });

  test("returns 400 invalid_manifest for empty renames or an invalid new_relative_path", async () => {
    const a = await put("a.txt");
    expectError(await post("/rename_files", renameBody([])), 400, "invalid_manifest");
    const bad = renameBody([
      {
        old_path_hash: a.pathHash,
        new_path_hash: pathHashOf("b.txt"),
        new_relative_path: "../b.txt",
        base_revision_id: a.revisionId,
      },
    ]);
    expectError(await post("/rename_files", bad), 400, "invalid_manifest");
  });

  test("a new_relative_path is validated like an upload path: control characters refused, NFD accepted", async () => {
    const a = await put("a.txt");
    for (const bad of ["r/a\nb.txt", "r/a\u0001b.txt", "r/a\u007fb.txt"]) {
      const body = renameBody([
        {
          old_path_hash: a.pathHash,
          new_path_hash: pathHashOf("b.txt"),
          new_relative_path: bad,
          base_revision_id: a.revisionId,
        },
      ]);
      expectError(await post("/rename_files", body), 400, "invalid_manifest");
    }
    const nfd = "p/Cafe\u0301.txt";
    const ok = renameBody([
      {
        old_path_hash: a.pathHash,
        new_path_hash: pathHashOf(nfd),
        new_relative_path: nfd,
        new_file_name: "Cafe\u0301.txt",
        base_revision_id: a.revisionId,
      },
    ]);
    expect(expectSuccess(await post("/rename_files", ok), RENAME_KEYS).renamed_count).toBe(1);
  });

  test("a new_path_hash that is not BLAKE3(NFC(new_relative_path)), or a new_file_name that is not its last segment, is 400 invalid_manifest naming the field, and no route shows a duplicate row", async () => {
    const path = "docs/dup\u00e9.txt";
    const nfd = path.normalize("NFD");
    const dupe = await put(path);
    const other = await put("docs/other.txt");
    const report = await put("docs/report.pdf");
    const nfdBytesHash = Array.from(Buffer.from(blake3Hex(new TextEncoder().encode(nfd)), "hex"));
    const onto = (newPathHash: number[], newRelativePath: string) => ({
      old_path_hash: other.pathHash,
      new_path_hash: newPathHash,
      new_relative_path: newRelativePath,
      base_revision_id: other.revisionId,
    });
    const cases: [Json, string][] = [
      // The hash of the path's NFD bytes, under either spelling of the path.
      [onto(nfdBytesHash, path), "renames[0].new_path_hash"],
      [onto(nfdBytesHash, nfd), "renames[0].new_path_hash"],
      // Another row's path under a hash of no path.
      [onto(Array.from(randomBytes(32)), path), "renames[0].new_path_hash"],
      [
        {
          old_path_hash: report.pathHash,
          new_path_hash: pathHashOf("docs/report2.pdf"),
          new_relative_path: "docs/report2.pdf",
          new_file_name: "evil.exe",
          base_revision_id: report.revisionId,
        },
        "renames[0].new_file_name",
      ],
    ];
    for (const [entry, field] of cases) {
      const r = await post("/rename_files", renameBody([entry]));
      expectError(r, 400, "invalid_manifest");
      expect(r.body.Error.message).toContain(field);
    }
    // The right hash of a taken path is the existing row's: target_exists, not a second row.
    const taken = await post("/rename_files", renameBody([onto(dupe.pathHash, nfd)]));
    expect(expectSuccess(taken, RENAME_KEYS).failures).toEqual([
      { old_path_hash: other.pathHash, reason: "target_exists" },
    ]);
    const auth = { headers: { authorization: authAt(t, u) } };
    const names = (files: Json[]) => files.map((f: Json) => f.relative_path.normalize("NFC")).sort();
    const expected = [path, "docs/other.txt", "docs/report.pdf"].sort();
    expect(names((await stateOf(t, u)).files)).toEqual(expected);
    for (const [q, hits] of [
      ["dup", [path]],
      ["other", ["docs/other.txt"]],
      ["report", ["docs/report.pdf"]],
    ] as const) {
      const search = await t.json(`/search_files/${u.address}?q=${q}`, auth);
      expect(names(search.body.Success.files)).toEqual([...hits]);
    }
    const browse = await t.json(`/browse/${u.address}/${FOLDER}?path=docs`, auth);
    expect(names(browse.body.Success.files)).toEqual(expected);
  });

  test("a new_file_name holding U+0000 is 400 invalid_manifest on every database, and nothing is renamed", async () => {
    const a = await put("a.txt");
    const body = renameBody([
      {
        old_path_hash: a.pathHash,
        new_path_hash: pathHashOf("b.txt"),
        new_file_name: "b\u0000.txt",
        base_revision_id: a.revisionId,
      },
    ]);
    expectError(await post("/rename_files", body), 400, "invalid_manifest");
    expect((await stateOf(t, u)).files[0].path_hash).toEqual(a.pathHash);
  });

  test("a malformed rename from another account is 400 before 403 (docs/protocol.md#open-rules)", async () => {
    const a = await put("a.txt");
    const stranger = newUser();
    const pair = {
      old_path_hash: a.pathHash,
      new_path_hash: pathHashOf("b.txt"),
      base_revision_id: a.revisionId,
    };
    const badPath = renameBody([{ ...pair, new_relative_path: "../x" }]);
    expectError(await post("/rename_files", badPath, stranger), 400, "invalid_manifest");
    const badSignature = renameBody([pair]);
    badSignature.renames[0].new_path_hash = pathHashOf("c.txt");
    expectError(await post("/rename_files", badSignature, stranger), 400, "invalid_manifest");
    const many = Array.from({ length: 1001 }, () => ({
      old_path_hash: Array.from(randomBytes(32)),
      new_path_hash: Array.from(randomBytes(32)),
      base_revision_id: Array(32).fill(0),
    }));
    expectError(await post("/rename_files", renameBody(many), stranger), 400, "batch_too_large");
    expectError(await post("/rename_files", renameBody([pair]), stranger), 403, "forbidden");
    expect((await stateOf(t, u)).files[0].path_hash).toEqual(a.pathHash);
  });

  test("returns 400 batch_too_large over 1000 entries", async () => {
    const renames = Array.from({ length: 1001 }, () => ({
      old_path_hash: Array.from(randomBytes(32)),
      new_path_hash: Array.from(randomBytes(32)),
      base_revision_id: Array(32).fill(0),
    }));
    expectError(await post("/rename_files", renameBody(renames)), 400, "batch_too_large");
  });

  test("returns 403 forbidden for another account's folder and 401 without a token", async () => {
    const a = await put("a.txt");
    const body = renameBody([
      { old_path_hash: a.pathHash, new_path_hash: pathHashOf("b.txt"), base_revision_id: a.revisionId },
    ]);
    expectError(await post("/rename_files", body, newUser()), 403, "forbidden");
    expectError(await t.json("/rename_files", jsonInit("POST", null, body)), 401, "unauthorized");
  });
});

describe("POST /delete_files", () => {
  const DELETE_KEYS = ["deleted", "errors", "files_deleted"];

  test("deletes 1000 ids with some unknown in one request: 200, deleted and already_deleted, blobs queued", async () => {
    const known = [];
    for (let i = 0; i < 10; i++) known.push(hex((await put(`f${i}.txt`, 5)).pathHash));
    const unknown = Array.from({ length: 990 }, () => randomBytes(32).toString("hex"));
    const ids = [...unknown.slice(0, 500), ...known, ...unknown.slice(500)];
    const r = await post("/delete_files", { ss58_address: u.address, folder_hash: FOLDER, file_ids: ids });
    const s = expectSuccess(r, DELETE_KEYS);
    expect(s.files_deleted).toBe(10);
    expect(s.errors).toEqual([]);
    expect(s.deleted).toHaveLength(1000);
    expect(s.deleted.filter((d: Json) => d.status === "deleted").map((d: Json) => d.file_id)).toEqual(known);
    expect(s.deleted.filter((d: Json) => d.status === "already_deleted")).toHaveLength(990);
    expect((await stateOf(t, u)).files).toEqual([]);
    expect(await rowsOf(t, "blob_deletions")).toHaveLength(10);
    const counters = (await rowsOf(t, "folders"))[0]!;
    expect({ n: counters.file_count, b: counters.total_bytes }).toEqual({ n: 0, b: 0 });
  });

  test("reports an id that is not 64 hex as invalid_file_id, a repeated id once, and quiet leaves out successes", async () => {
    const a = hex((await put("a.txt")).pathHash);
    const r = await post("/delete_files", {
      user_id: u.address,
      folder_hash: FOLDER,
      file_ids: [a, "xyz", a],
      quiet: true,
    });
    const s = expectSuccess(r, ["errors", "files_deleted"]);
    expect(s.files_deleted).toBe(1);
    expect(s.errors).toEqual([{ file_id: "xyz", error: "invalid_file_id" }]);
  });

  test("deleting an id twice reports already_deleted the second time (200)", async () => {
    const a = hex((await put("a.txt")).pathHash);
    const body = { ss58_address: u.address, folder_hash: FOLDER, file_ids: [a] };
    expectSuccess(await post("/delete_files", body), DELETE_KEYS);
    const s = expectSuccess(await post("/delete_files", body), DELETE_KEYS);
    expect(s.deleted).toEqual([{ file_id: a, status: "already_deleted" }]);
    expect(s.files_deleted).toBe(0);
  });

  test("returns 400 batch_too_large over 1000 ids and 400 invalid_manifest for a bad folder_hash or no ids", async () => {
    const ids = Array.from({ length: 1001 }, () => randomBytes(32).toString("hex"));
    expectError(
      await post("/delete_files", { ss58_address: u.address, folder_hash: FOLDER, file_ids: ids }),
      400,
      "batch_too_large",
    );
    expectError(
      await post("/delete_files", { ss58_address: u.address, folder_hash: "XYZ", file_ids: ids.slice(0, 1) }),
      400,
      "invalid_manifest",
    );
    expectError(
      await post("/delete_files", { ss58_address: u.address, folder_hash: FOLDER, file_ids: [] }),
      400,
      "invalid_manifest",
    );
  });

  test("over 1000 ids from another account is 400 batch_too_large, not 403 (docs/protocol.md#open-rules)", async () => {
    const ids = Array.from({ length: 1001 }, () => randomBytes(32).toString("hex"));
    expectError(
      await post("/delete_files", { ss58_address: u.address, folder_hash: FOLDER, file_ids: ids }, newUser()),
      400,
      "batch_too_large",
    );
  });

  test("returns 403 forbidden for another account and leaves its files", async () => {
    const a = hex((await put("a.txt")).pathHash);
    const r = await post(
      "/delete_files",
      { ss58_address: u.address, folder_hash: FOLDER, file_ids: [a] },
      newUser(),
    );
    expectError(r, 403, "forbidden");
    expect((await stateOf(t, u)).files).toHaveLength(1);
  });
});
