/**
 * The product's fields and filters on search and browse (docs/protocol.md#api-profiles): `uploaded_by` and
 * `arion_hash` on entries and hits, the `uploaded_by` (with `_none`) and `folder_hash` filters
 * that must never widen a result, browse `sort_by=extension|uploaded_by`.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { expectError, type Json } from "../http/helpers.ts";
import { makeTestApp } from "../support/app.ts";
import { newUser } from "../support/fixtures.ts";
import { browse, FOLDER, search, seedFiles } from "./support.ts";

const t = makeTestApp();
afterAll(() => t.close());
const u = newUser();
const other = newUser();
const FOLDER_B = "0123456789abcdef";

beforeAll(async () => {
  await seedFiles(t, u.address, [
    { path: "docs/a.txt", uploadedBy: u.address, created: 1 },
    { path: "docs/b.pdf", uploadedBy: other.address, created: 2 },
    { path: "docs/c.png", uploadedBy: null, created: 3 },
    { path: "docs/sub/d.txt", uploadedBy: u.address, created: 4 },
    { path: "e.txt", folderHash: FOLDER_B, uploadedBy: u.address, created: 5 },
  ]);
});

const names = (files: Json[]) => files.map((f) => f.file_name);

describe("search", () => {
  test("a hit carries uploaded_by when recorded (absent otherwise) and arion_hash equal to store_hash", async () => {
    const s = (await search(t, u, "sort_by=created_at&sort_order=asc")).body.Success;
    expect(s.files[0].uploaded_by).toBe(u.address);
    expect("uploaded_by" in s.files[2]).toBe(false);
    for (const f of s.files) expect(f.arion_hash).toBe(f.store_hash);
  });

  test("uploaded_by=<address> selects that uploader's files; _none the files without one; another address nothing (200)", async () => {
    const mine = (await search(t, u, `uploaded_by=${u.address}&sort_order=asc`)).body.Success;
    expect({ n: mine.total_count, names: names(mine.files) }).toEqual({
      n: 3,
      names: ["a.txt", "d.txt", "e.txt"],
    });
    const none = (await search(t, u, "uploaded_by=_none")).body.Success;
    expect({ n: none.total_count, names: names(none.files) }).toEqual({ n: 1, names: ["c.png"] });
    const nobody = (await search(t, u, `uploaded_by=${newUser().address}`)).body.Success;
    expect(nobody.total_count).toBe(0);
  });

  test("folder_hash limits the search to one folder and combines with q, file_type and uploaded_by", async () => {
    const b = (await search(t, u, `folder_hash=${FOLDER_B}`)).body.Success;
    expect({ n: b.total_count, names: names(b.files) }).toEqual({ n: 1, names: ["e.txt"] });
    const a = (await search(t, u, `folder_hash=${FOLDER}&q=.txt&uploaded_by=${u.address}&sort_order=asc`))
      .body.Success;
    expect({ n: a.total_count, names: names(a.files) }).toEqual({ n: 2, names: ["a.txt", "d.txt"] });
    const pdf = (await search(t, u, `folder_hash=${FOLDER_B}&file_type=pdf`)).body.Success;
    expect(pdf.total_count).toBe(0);
  });

  test("sort_by=uploaded_by orders by uploader, files without one first ascending", async () => {
    const s = (await search(t, u, `folder_hash=${FOLDER}&sort_by=uploaded_by&sort_order=asc`)).body.Success;
    expect(s.files[0].file_name).toBe("c.png");
    const by = s.files.slice(1).map((f: Json) => f.uploaded_by);
    expect(by).toEqual([...by].sort());
  });

  test("returns 400 invalid_parameter for a folder_hash that is not 16 hex", async () => {
    expectError(await search(t, u, "folder_hash=xyz"), 400, "invalid_parameter");
  });
});

describe("browse", () => {
  test("uploaded_by filters the files and empties folders", async () => {
    const s = (await browse(t, u, FOLDER, `path=docs&uploaded_by=${u.address}`)).body.Success;
    expect(s.folders).toEqual([]);
    expect(names(s.files)).toEqual(["a.txt"]);
    const none = (await browse(t, u, FOLDER, "path=docs&uploaded_by=_none")).body.Success;
    expect(names(none.files)).toEqual(["c.png"]);
  });

  test("a folder_hash naming the path's folder changes nothing; another folder lists nothing (200)", async () => {
    const same = (await browse(t, u, FOLDER, `path=docs&folder_hash=${FOLDER}`)).body.Success;
    expect({ n: same.total_count, folders: same.folders.length }).toEqual({ n: 4, folders: 1 });
    const other = (await browse(t, u, FOLDER, `path=docs&folder_hash=${FOLDER_B}`)).body.Success;
    expect({ n: other.total_count, folders: other.folders, files: other.files }).toEqual({
      n: 0,
      folders: [],
      files: [],
    });
  });

  test("sort_by=extension and sort_by=uploaded_by reorder the files; folders stay first", async () => {
    const ext = (await browse(t, u, FOLDER, "path=docs&sort_by=extension&sort_order=asc")).body.Success;
    expect(ext.folders.map((f: Json) => f.name)).toEqual(["sub"]);
    expect(names(ext.files)).toEqual(["b.pdf", "c.png", "a.txt"]);
    const by = (await browse(t, u, FOLDER, "path=docs&sort_by=uploaded_by&sort_order=desc")).body.Success;
    expect(names(by.files).at(-1)).toBe("c.png");
  });
});
