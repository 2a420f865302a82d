/**
 * GET /browse/{ss58}/{folder_hash} (issue 3): sub-folders of `path` (recursive counts,
 * alphabetical case-insensitive) then files directly at `path` (sorted as search), one offset
 * space, total_count = folders + files, file_type hides folders, rows without relative_path
 * hidden, limits 50/200, path rules, check order 401 → 400 → 403.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { FileRow } from "../../src/files/file-entry.ts";
import { parseSearchQuery } from "../../src/search/search.query.ts";
import { ENTRY_KEYS, expectError, expectSuccess, FOLDER_B } from "../http/helpers.ts";
import { makeTestApp } from "../support/app.ts";
import { newUser } from "../support/fixtures.ts";
import { browse, FOLDER, hex, modelSearch, seedFiles } from "./support.ts";

const t = makeTestApp();
afterAll(() => t.close());

const KEYS = [
  "ss58_address",
  "folder_hash",
  "path",
  "folders",
  "files",
  "total_count",
  "has_more",
  "offset",
  "limit",
];
const u = newUser();
let rows: FileRow[];

beforeAll(async () => {
  rows = await seedFiles(t, u.address, [
    { path: "top.txt", size: 1, created: 10 },
    { path: "Top2.PNG", size: 2, created: 20 },
    { path: "docs/a.pdf", size: 10, created: 30 },
    { path: "docs/b.png", size: 20, created: 40 },
    { path: "docs/2024/q1/r.pdf", size: 100, created: 50 },
    { path: "docs/2024/q2/s.pdf", size: 200, created: 60 },
    { path: "docs/2024/t.txt", size: 300, created: 70 },
    { path: "Docs/x.txt", size: 5, created: 80 },
    { path: "ärger/y.txt", size: 6, created: 90 },
    { path: "beta/z.txt", size: 7, created: 100 },
    { path: "alpha/deep/er/w.txt", size: 8, created: 110 },
    { path: "legacy.txt", relativePath: null, size: 9, created: 120 },
    { path: "nameless", fileName: null, relativePath: null, size: 9, created: 130 },
    { path: "docs/c.txt", fileName: null, size: 11, created: 140 },
    { path: "/lead/slash.txt", size: 12, created: 150 },
    { path: "other-folder/o.txt", folderHash: FOLDER_B, size: 13, created: 160 },
  ]);
});

const fileNames = (s: { files: { relative_path: string }[] }) => s.files.map((f) => f.relative_path);

test("the root lists its sub-folders (recursive counts, case-insensitive order) then its own files, newest first", async () => {
  const s = expectSuccess(await browse(t, u), KEYS);
  expect(s.folders).toEqual([
    { name: "alpha", file_count: 1, total_bytes: 8 },
    { name: "beta", file_count: 1, total_bytes: 7 },
    { name: "Docs", file_count: 1, total_bytes: 5 },
    { name: "docs", file_count: 6, total_bytes: 641 },
    { name: "lead", file_count: 1, total_bytes: 12 },
    { name: "ärger", file_count: 1, total_bytes: 6 },
  ]);
  expect(fileNames(s)).toEqual(["Top2.PNG", "top.txt"]);
  expect(s).toMatchObject({
    ss58_address: u.address,
    folder_hash: FOLDER,
    path: "",
    total_count: 8,
    has_more: false,
    offset: 0,
    limit: 50,
  });
});

test("a sub-directory lists its immediate sub-folders and the files directly in it; path is normalised", async () => {
  for (const path of ["docs", "/docs/", "docs/"]) {
    const s = expectSuccess(await browse(t, u, FOLDER, `path=${encodeURIComponent(path)}`), KEYS);
    expect(s.path).toBe("docs");
    expect(s.folders).toEqual([{ name: "2024", file_count: 3, total_bytes: 600 }]);
    expect(fileNames(s)).toEqual(["docs/c.txt", "docs/b.png", "docs/a.pdf"]);
    expect(s.total_count).toBe(4);
  }
  const deep = expectSuccess(await browse(t, u, FOLDER, "path=docs/2024"), KEYS);
  expect(deep.folders.map((f: { name: string }) => f.name)).toEqual(["q1", "q2"]);
  expect(fileNames(deep)).toEqual(["docs/2024/t.txt"]);
});

test("files are sorted as search sorts, with the same parameters and fallbacks", async () => {
  const s = expectSuccess(await browse(t, u, FOLDER, "path=docs&sort_by=size_bytes&sort_order=ASC"), KEYS);
  expect(fileNames(s)).toEqual(["docs/a.pdf", "docs/c.txt", "docs/b.png"]);
  const byName = expectSuccess(
    await browse(t, u, FOLDER, "path=docs&sort_by=file_name&sort_order=asc"),
    KEYS,
  );
  expect(fileNames(byName)).toEqual(["docs/c.txt", "docs/a.pdf", "docs/b.png"]);
  const fallback = expectSuccess(await browse(t, u, FOLDER, "path=docs&sort_by=nope&sort_order=nope"), KEYS);
  expect(fileNames(fallback)).toEqual(["docs/c.txt", "docs/b.png", "docs/a.pdf"]);
});

test("one offset space runs over folders then files; has_more is exact", async () => {
  const all = expectSuccess(await browse(t, u, FOLDER, "limit=200"), KEYS);
  const sequence = [...all.folders.map((f: { name: string }) => `dir:${f.name}`), ...fileNames(all)];
  const seen: string[] = [];
  for (let offset = 0; offset < 8; offset += 3) {
    const s = expectSuccess(await browse(t, u, FOLDER, `offset=${offset}&limit=3`), KEYS);
    seen.push(...s.folders.map((f: { name: string }) => `dir:${f.name}`), ...fileNames(s));
    expect(s.total_count).toBe(8);
    expect(s.has_more).toBe(offset + 3 < 8);
  }
  expect(seen).toEqual(sequence);
  const past = expectSuccess(await browse(t, u, FOLDER, "offset=8"), KEYS);
  expect(past).toMatchObject({ folders: [], files: [], total_count: 8, has_more: false });
});

test("file_type hides the folders and filters the files; q does too", async () => {
  const s = expectSuccess(await browse(t, u, FOLDER, "file_type=image"), KEYS);
  expect({ folders: s.folders, files: fileNames(s), total: s.total_count }).toEqual({
    folders: [],
    files: ["Top2.PNG"],
    total: 1,
  });
  const pdf = expectSuccess(await browse(t, u, FOLDER, "path=docs&file_type=.PDF"), KEYS);
  expect(fileNames(pdf)).toEqual(["docs/a.pdf"]);
  const q = expectSuccess(await browse(t, u, FOLDER, "q=TOP"), KEYS);
  expect({ folders: q.folders, files: fileNames(q) }).toEqual({
    folders: [],
    files: ["Top2.PNG", "top.txt"],
  });
});

test("rows without relative_path are never listed; rows with only relative_path are", async () => {
  const s = expectSuccess(await browse(t, u, FOLDER, "limit=200"), KEYS);
  const all = JSON.stringify(s);
  expect(all).not.toContain("legacy.txt");
  expect(all).not.toContain("nameless");
  const docs = expectSuccess(await browse(t, u, FOLDER, "path=docs"), KEYS);
  expect(
    docs.files.find((f: { relative_path: string }) => f.relative_path === "docs/c.txt")?.file_name,
  ).toBeNull();
});

test("files are the RemoteFileEntry of the rows, in the order search gives", async () => {
  const s = expectSuccess(await browse(t, u, FOLDER, "path=docs/2024/q1"), KEYS);
  expect(Object.keys(s.files[0])).toEqual(ENTRY_KEYS);
  const row = rows.find((r) => r.relativePath === "docs/2024/q1/r.pdf")!;
  expect(hex(s.files[0].path_hash)).toBe(hex(row.pathHash));
  const model = modelSearch(
    rows.filter((r) => r.relativePath?.startsWith("docs/") && !r.relativePath.slice(5).includes("/")),
    parseSearchQuery(new URLSearchParams("sort_by=updated_at")),
  );
  const byUpdated = expectSuccess(await browse(t, u, FOLDER, "path=docs&sort_by=updated_at"), KEYS);
  expect(byUpdated.files.map((f: { path_hash: number[] }) => hex(f.path_hash))).toEqual(model.page);
});

test("other folders, unknown folders and unknown paths list nothing", async () => {
  const b = expectSuccess(await browse(t, u, FOLDER_B), KEYS);
  expect(b.folders).toEqual([{ name: "other-folder", file_count: 1, total_bytes: 13 }]);
  const none = expectSuccess(await browse(t, u, "00000000000000ff"), KEYS);
  expect(none).toMatchObject({ folders: [], files: [], total_count: 0, has_more: false });
  const nowhere = expectSuccess(await browse(t, u, FOLDER, "path=does/not/exist"), KEYS);
  expect(nowhere).toMatchObject({ folders: [], files: [], total_count: 0 });
  const stranger = newUser();
  expect(expectSuccess(await browse(t, stranger), KEYS).total_count).toBe(0);
});

describe("limits", () => {
  test("default limit 50, capped at 200", async () => {
    const v = newUser();
    await seedFiles(
      t,
      v.address,
      Array.from({ length: 230 }, (_, i) => ({ path: `many/f${i}.txt`, created: i })),
    );
    const d = expectSuccess(await browse(t, v, FOLDER, "path=many"), KEYS);
    expect({ n: d.files.length, limit: d.limit, total: d.total_count, more: d.has_more }).toEqual({
      n: 50,
      limit: 50,
      total: 230,
      more: true,
    });
    const c = expectSuccess(await browse(t, v, FOLDER, "path=many&limit=500"), KEYS);
    expect({ n: c.files.length, limit: c.limit }).toEqual({ n: 200, limit: 200 });
  });
});

describe("errors", () => {
  test("returns 401 before anything else", async () => {
    expectError(await t.json(`/browse/${u.address}/${FOLDER}?path=..`), 401, "unauthorized");
    expectError(await t.json(`/browse/x/y`), 401, "unauthorized");
  });

  test("returns 400 for .. or \\ in path, a bad folder_hash, a bad address or a bad parameter, before 403", async () => {
    const other = newUser();
    for (const [qs, code] of [
      ["path=..", "invalid_parameter"],
      ["path=a/../b", "invalid_parameter"],
      ["path=a%5Cb", "invalid_parameter"],
      ["limit=x", "invalid_parameter"],
      ["file_type=other", "invalid_file_type"],
    ]) {
      expectError(await browse(t, other, FOLDER, qs!, u.address), 400, code!);
    }
    expectError(await browse(t, other, "XYZ", "", u.address), 400, "invalid_parameter");
    expectError(await browse(t, other, FOLDER, "", "not-an-address"), 400, "invalid_user_id");
    expectError(
      await t.json(`/browse/${u.address}`, {
        headers: { authorization: `Bearer ${u.token(t.clock.now())}` },
      }),
      400,
      "invalid_parameter",
    );
  });

  test("returns 403 for a valid token of another address", async () => {
    expectError(await browse(t, newUser(), FOLDER, "", u.address), 403, "forbidden");
  });
});
