/**
 * GET /search_files/{ss58} end to end through the app: the check order of docs/protocol.md#open-rules
 * (401 → 400 → 403), the path rules of docs/protocol.md#search, the exact hit shape of docs/protocol.md#file-entries, and the
 * search index following the real write paths (upload, revision, delete, unregister).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { ciphertextSizeFor } from "@esync/protocol/framing.ts";
import {
  ENTRY_KEYS,
  expectError,
  expectSuccess,
  FOLDER_B,
  fileIdOf,
  stateOf,
  uploadSingle,
} from "../http/helpers.ts";
import { jsonInit, makeTestApp } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext, type TestUser } from "../support/fixtures.ts";
import { expectIndexConsistent, FOLDER, hex, insertFiles, search, tokenOf } from "./support.ts";

const t = makeTestApp();
afterAll(() => t.close());

const RESULT_KEYS = ["ss58_address", "files", "total_count", "has_more", "offset", "limit"];
const HIT_KEYS = ["folder_hash", "folder_label", ...ENTRY_KEYS, "uploaded_by"];

/** Uploads a file through POST /upload; returns its manifest. */
async function upload(
  user: TestUser,
  opts: {
    path: string;
    folderHash?: string;
    fileName?: string | null;
    relativePath?: string | null;
    size?: number;
    base?: number[] | null;
    seq?: number;
  },
) {
  const ct = randomCiphertext(ciphertextSizeFor(opts.size ?? 16));
  const m = makeManifest({
    owner: user.address,
    ciphertext: ct,
    path: opts.path,
    folderHash: opts.folderHash ?? FOLDER,
    fileName: opts.fileName,
    relativePath: opts.relativePath,
    sizeBytes: opts.size,
    baseRevisionId: opts.base ?? null,
    revisionSeq: opts.seq ?? 1,
  });
  const r = await uploadSingle(t, tokenOf(t, user), m, ct);
  expect(r.status).toBe(200);
  return { manifest: m, result: r.body.Success };
}

describe("check order and path", () => {
  const u = newUser();
  const other = newUser();

  test("returns 401 unauthorized without a token, even for an empty or malformed address", async () => {
    for (const path of [
      "/search_files",
      "/search_files/",
      "/search_files/%25",
      `/search_files/${u.address}?limit=-1`,
    ]) {
      expectError(await t.json(path), 401, "unauthorized");
    }
    expectError(
      await t.json(`/search_files/${u.address}`, { headers: { authorization: "Bearer nope" } }),
      401,
      "unauthorized",
    );
  });

  test("returns 400 invalid_user_id for an empty {ss58}, with or without the trailing slash", async () => {
    for (const path of ["/search_files", "/search_files/"]) {
      expectError(await t.json(path, { headers: { authorization: tokenOf(t, u) } }), 400, "invalid_user_id");
    }
  });

  test("returns 400 invalid_user_id for an address over 256 bytes, with % or \\, or not SS58, before 403", async () => {
    for (const bad of [
      "x".repeat(257),
      `${u.address}%41`,
      "%2F",
      `${u.address.slice(0, 10)}\\x`,
      "not-an-address",
      "é".repeat(129),
    ]) {
      const raw = bad.includes("\\") ? bad.replace("\\", "%5C") : bad;
      const r = await t.json(`/search_files/${raw}`, { headers: { authorization: tokenOf(t, u) } });
      expectError(r, 400, "invalid_user_id");
    }
  });

  test("returns 400 for a malformed query before 403 for another user's address", async () => {
    for (const [qs, code] of [
      ["limit=-1", "invalid_parameter"],
      ["size_min=1.5", "invalid_parameter"],
      ["date_from=yesterday", "invalid_parameter"],
      [`q=${"q".repeat(257)}`, "q_too_long"],
      ["file_type=other", "invalid_file_type"],
      ["file_type=png", "invalid_file_type"],
    ]) {
      expectError(await search(t, other, qs, u.address), 400, code!);
    }
  });

  test("returns 403 forbidden for a valid token of another address", async () => {
    expectError(await search(t, other, "", u.address), 403, "forbidden");
  });

  test("returns 200 with no files for a user who has none (404 is never produced)", async () => {
    const s = expectSuccess(await search(t, u), RESULT_KEYS);
    expect(s).toEqual({
      ss58_address: u.address,
      files: [],
      total_count: 0,
      has_more: false,
      offset: 0,
      limit: 25,
    });
  });

  test("accepts the X-Billing-Bypass header", async () => {
    const r = await t.json(`/search_files/${u.address}`, {
      headers: { authorization: tokenOf(t, u), "x-billing-bypass": "anything" },
    });
    expectSuccess(r, RESULT_KEYS);
  });
});

describe("hits", () => {
  test("a hit is folder_hash, folder_label, then the RemoteFileEntry of /get_state, in that order", async () => {
    const u = newUser();
    await upload(u, { path: "docs/Report 2024.pdf", size: 1234 });
    const s = expectSuccess(await search(t, u), RESULT_KEYS);
    expect(s.total_count).toBe(1);
    const hit = s.files[0];
    expect(Object.keys(hit)).toEqual(HIT_KEYS);
    const entry = (await stateOf(t, u, FOLDER)).files[0];
    expect(hit).toEqual({ folder_hash: FOLDER, folder_label: "", ...entry });
    expect(hit.file_name).toBe("Report 2024.pdf");
    expect(hit.relative_path).toBe("docs/Report 2024.pdf");
    expect(hit.size_bytes).toBe(1234);
  });

  test('folder_label is "" while the folder is unregistered and the label once it is registered', async () => {
    const u = newUser();
    await upload(u, { path: "a.txt", folderHash: FOLDER_B });
    expect((await search(t, u)).body.Success.files[0].folder_label).toBe("");
    const reg = await t.json(
      "/register_folder",
      jsonInit("POST", tokenOf(t, u), {
        ss58_address: u.address,
        folder_hash: FOLDER_B,
        label: "Work stuff",
      }),
    );
    expect(reg.status).toBe(200);
    const hit = (await search(t, u)).body.Success.files[0];
    expect({ folder_hash: hit.folder_hash, folder_label: hit.folder_label }).toEqual({
      folder_hash: FOLDER_B,
      folder_label: "Work stuff",
    });
  });

  test("store_hash and chunk_hashes are as stored, null where unknown", async () => {
    const u = newUser();
    insertFiles(t, u.address, [
      { path: "a.bin", created: 3, storeHash: null, chunkHashes: null },
      { path: "b.bin", created: 2, storeHash: "ab".repeat(32), chunkHashes: ["c1", "c2"] },
    ]);
    const files = (await search(t, u)).body.Success.files;
    expect(
      files.map((f: { store_hash: unknown; chunk_hashes: unknown }) => [f.store_hash, f.chunk_hashes]),
    ).toEqual([
      [null, null],
      ["ab".repeat(32), ["c1", "c2"]],
    ]);
  });

  test("another user's files are never found", async () => {
    const a = newUser();
    const b = newUser();
    await upload(a, { path: "shared-name.txt" });
    await upload(b, { path: "shared-name.txt" });
    for (const u of [a, b]) {
      const s = (await search(t, u, "q=shared")).body.Success;
      expect(s.total_count).toBe(1);
      expect(s.ss58_address).toBe(u.address);
    }
  });

  test("q is case-insensitive for non-ASCII letters: Ä finds ä and ä finds Ä", async () => {
    const u = newUser();
    await upload(u, { path: "Ärger/übersicht.TXT" });
    await upload(u, { path: "notes/äpfel.txt" });
    // "Ärger" is only in relative_path, which is not searched while file_name is set.
    for (const [q, want] of [
      ["Ä", ["äpfel.txt"]],
      ["ä", ["äpfel.txt"]],
      ["ÜBER", ["übersicht.TXT"]],
      ["Übersicht.txt", ["übersicht.TXT"]],
      ["ÄR", []],
    ] as const) {
      const names = (await search(t, u, `q=${encodeURIComponent(q)}`)).body.Success.files.map(
        (f: { file_name: string }) => f.file_name,
      );
      expect({ q, names }).toEqual({ q, names: [...want] });
    }
  });
});

describe("the index follows the write paths", () => {
  test("a new revision is found with its new size and updated_at; created_at is kept", async () => {
    const u = newUser();
    const first = await upload(u, { path: "r/plan.txt", size: 10 });
    t.clock.advance(100);
    await upload(u, { path: "r/plan.txt", size: 5000, base: first.result.revision_id, seq: 2 });
    const s = (await search(t, u, "size_min=4000")).body.Success;
    expect(s.total_count).toBe(1);
    expect(s.files[0].size_bytes).toBe(5000);
    expect(s.files[0].updated_at).toBe(s.files[0].created_at + 100);
    expect((await search(t, u, "size_max=4000")).body.Success.total_count).toBe(0);
    expectIndexConsistent(t.db);
  });

  test("a deleted file is no longer found, by name or by any filter", async () => {
    const u = newUser();
    const { manifest } = await upload(u, { path: "gone/away.png" });
    await upload(u, { path: "gone/stays.png" });
    const del = await t.json(`/delete/${u.address}/${FOLDER}/${fileIdOf(manifest)}`, {
      method: "DELETE",
      headers: { authorization: tokenOf(t, u) },
    });
    expect(del.status).toBe(200);
    for (const qs of ["", "q=away", "file_type=image", "size_min=0"]) {
      const files = (await search(t, u, qs)).body.Success.files;
      expect(files.map((f: { path_hash: number[] }) => hex(f.path_hash))).not.toContain(
        hex(manifest.path_hash as number[]),
      );
    }
    expect((await search(t, u, "q=away")).body.Success.total_count).toBe(0);
    expectIndexConsistent(t.db);
  });

  test("a file write rolled back leaves no trace in search (the index is written in the same transaction)", async () => {
    const u = newUser();
    await upload(u, { path: "kept.txt" });
    const db = t.db;
    expect(() =>
      db.$client.transaction(() => {
        insertFiles(t, u.address, [{ path: "rolled/back.txt" }]);
        db.$client.query("DELETE FROM files WHERE owner = ? AND file_name = 'kept.txt'").run(u.address);
        throw new Error("abort");
      })(),
    ).toThrow("abort");
    const s = (await search(t, u)).body.Success;
    expect(s.files.map((f: { file_name: string }) => f.file_name)).toEqual(["kept.txt"]);
    expect((await search(t, u, "q=back")).body.Success.total_count).toBe(0);
    expectIndexConsistent(db);
  });

  test("moving a file row to another owner commits and re-indexes it under the new owner", async () => {
    const u = newUser();
    const v = newUser();
    insertFiles(t, u.address, [{ path: "mine.txt" }]);
    insertFiles(t, v.address, [{ path: "theirs.txt" }]);
    t.db.$client
      .query("UPDATE files SET owner = ? WHERE owner = ? AND file_name = 'mine.txt'")
      .run(v.address, u.address);
    expect((await search(t, u)).body.Success.total_count).toBe(0);
    const s = (await search(t, v, "sort_by=file_name&sort_order=asc")).body.Success;
    expect(s.files.map((f: { file_name: string }) => f.file_name)).toEqual(["mine.txt", "theirs.txt"]);
    expectIndexConsistent(t.db);
  });

  test("unregistering a folder removes its files from search; other folders stay", async () => {
    const u = newUser();
    const auth = tokenOf(t, u);
    await t.json(
      "/register_folder",
      jsonInit("POST", auth, { ss58_address: u.address, folder_hash: FOLDER_B, label: "B" }),
    );
    await upload(u, { path: "x/one.txt", folderHash: FOLDER_B });
    await upload(u, { path: "x/two.txt", folderHash: FOLDER_B });
    await upload(u, { path: "x/three.txt" });
    expect((await search(t, u)).body.Success.total_count).toBe(3);
    const r = await t.json(
      "/unregister_folder",
      jsonInit("DELETE", auth, { ss58_address: u.address, folder_hash: FOLDER_B }),
    );
    expect(r.body.Success.files_deleted).toBe(2);
    const s = (await search(t, u)).body.Success;
    expect(s.total_count).toBe(1);
    expect(s.files[0].file_name).toBe("three.txt");
    expectIndexConsistent(t.db);
  });
});
