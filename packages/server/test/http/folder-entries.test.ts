/**
 * Folder entries (explicit directories) and the relative-path back-fill (docs/protocol.md#folder-entries, #relative-path-backfill).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { MAX_FOLDER_ENTRY_ATTRIBUTES_BYTES } from "@esync/protocol/schemas.ts";
import { jsonInit, makeTestApp, type TestApp } from "../support/app.ts";
import { makeManifest, newUser, pathHashOf, randomCiphertext, type TestUser } from "../support/fixtures.ts";
import {
  authAt,
  expectError,
  expectSuccess,
  FOLDER,
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

function call(method: string, path: string, body?: unknown, user: TestUser | null = u) {
  if (body === undefined)
    return t.json(path, { method, headers: user ? { authorization: authAt(t, user) } : {} });
  return t.json(path, jsonInit(method, user ? authAt(t, user) : null, body));
}
const register = (paths: string[], user: TestUser = u) =>
  call(
    "POST",
    "/register_folder_entries",
    { ss58_address: u.address, folder_hash: FOLDER, relative_paths: paths },
    user,
  );
const unregister = (paths: string[]) =>
  call("DELETE", "/unregister_folder_entries", {
    ss58_address: u.address,
    folder_hash: FOLDER,
    relative_paths: paths,
  });
const list = () => call("GET", `/list_folder_entries/${u.address}/${FOLDER}`);

async function put(path: string, m: Partial<Record<string, unknown>> = {}): Promise<Json> {
  const ct = randomCiphertext(60);
  const manifest = { ...makeManifest({ owner: u.address, ciphertext: ct, path }), ...m };
  expect((await uploadSingle(t, authAt(t, u), manifest, ct)).status).toBe(200);
  return manifest;
}

describe("folder entries", () => {
  test("register is idempotent (200 registered with the named count) and list answers flat", async () => {
    expect(expectSuccess(await register(["Work", "Work/Reports", "Work"]), ["status", "count"])).toEqual({
      status: "registered",
      count: 2,
    });
    expectSuccess(await register(["Work"]), ["status", "count"]);
    const r = await list();
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ relative_paths: ["Work", "Work/Reports"] });
  });

  test("unregister removes exactly the named entries (200 unregistered with the removed count)", async () => {
    await register(["A", "A/B", "C"]);
    expect(expectSuccess(await unregister(["A/B", "nope"]), ["status", "count"])).toEqual({
      status: "unregistered",
      count: 1,
    });
    expect((await list()).body.relative_paths).toEqual(["A", "C"]);
    expect(expectSuccess(await register([]), ["status", "count"]).count).toBe(0);
  });

  test("/browse shows entries as empty folders, once by name beside file-derived folders, sorted", async () => {
    await put("docs/a.txt");
    await register(["docs", "Empty", "zeta", "Empty/Inner"]);
    const auth = { headers: { authorization: authAt(t, u) } };
    const root = expectSuccess(await t.json(`/browse/${u.address}/${FOLDER}`, auth), [
      "ss58_address",
      "folder_hash",
      "path",
      "folders",
      "files",
      "total_count",
      "has_more",
      "offset",
      "limit",
    ]);
    expect(root.folders).toEqual([
      { name: "docs", file_count: 1, total_bytes: 12 },
      { name: "Empty", file_count: 0, total_bytes: 0 },
      { name: "zeta", file_count: 0, total_bytes: 0 },
    ]);
    expect(root.total_count).toBe(3);
    const inner = await t.json(`/browse/${u.address}/${FOLDER}?path=Empty`, auth);
    expect(inner.body.Success.folders).toEqual([{ name: "Inner", file_count: 0, total_bytes: 0 }]);
    expect((await stateOf(t, u)).files).toHaveLength(1);
  });

  test("unregistering the folder removes its entries", async () => {
    await call("POST", "/register_folder", {
      ss58_address: u.address,
      folder_hash: FOLDER,
      label: "default",
    });
    await register(["X"]);
    expect(
      (await call("DELETE", "/unregister_folder", { ss58_address: u.address, folder_hash: FOLDER })).status,
    ).toBe(200);
    expect((await list()).body.relative_paths).toEqual([]);
  });

  test("returns 400 invalid_manifest for an invalid path and 400 batch_too_large over 500 paths", async () => {
    for (const bad of ["/abs", "trail/", "a//b", "a/../b", ".", ""])
      expectError(await register([bad]), 400, "invalid_manifest");
    expectError(await register(Array.from({ length: 501 }, (_, i) => `d${i}`)), 400, "batch_too_large");
    expect((await list()).body.relative_paths).toEqual([]);
  });

  test("refuses control characters and backslashes as upload paths do, and NFD (entries are NFC)", async () => {
    for (const bad of ["a\u0001b", "a\nb", "a\u007fb", "a\u0085b", "a\\b", "Cafe\u0301"])
      expectError(await register([bad]), 400, "invalid_manifest");
    expect(expectSuccess(await register(["Caf\u00e9"]), ["status", "count"]).count).toBe(1);
  });

  test("a bulky but valid batch is accepted: 500 paths of 2,500 characters (about 1.25 MB of body)", async () => {
    const paths = Array.from({ length: 500 }, (_, i) => `${i}-${"p".repeat(2500)}`);
    expect(expectSuccess(await register(paths), ["status", "count"]).count).toBe(500);
    expect(expectSuccess(await unregister(paths), ["status", "count"]).count).toBe(500);
  });

  test("a malformed batch from another account is 400 before 403 (docs/protocol.md#open-rules: 400, then ownership)", async () => {
    const stranger = newUser();
    expectError(
      await register(
        Array.from({ length: 501 }, (_, i) => `d${i}`),
        stranger,
      ),
      400,
      "batch_too_large",
    );
    expectError(await register(["/abs"], stranger), 400, "invalid_manifest");
    expectError(await register(["A"], stranger), 403, "forbidden");
    expect((await list()).body.relative_paths).toEqual([]);
  });

  test("returns 403 forbidden for another account and 401 without a token", async () => {
    expectError(await register(["A"], newUser()), 403, "forbidden");
    expectError(
      await call("GET", `/list_folder_entries/${u.address}/${FOLDER}`, undefined, newUser()),
      403,
      "forbidden",
    );
    expectError(
      await call("GET", `/list_folder_entries/${u.address}/${FOLDER}`, undefined, null),
      401,
      "unauthorized",
    );
    expectError(await call("GET", `/list_folder_entries/nope/${FOLDER}`), 400, "invalid_user_id");
  });
});

describe("POST /register_relative_paths", () => {
  const url = () => `/register_relative_paths/${u.address}/${FOLDER}`;
  const hex = (b: number[]) => Buffer.from(b).toString("hex");

  test("fills a null path (and file_name), skips the same path, never overwrites another (200)", async () => {
    const a = await put("photos/cat.png", { relative_path: null, file_name: null });
    const b = await put("y/Caf\u00e9.txt");
    const missing = pathHashOf("m.txt");
    const r = await call("POST", url(), {
      entries: [
        { path_hash: hex(a.path_hash), relative_path: "photos/cat.png" },
        { path_hash: hex(b.path_hash), relative_path: "y/Caf\u00e9.txt" },
        // The same path in NFD: same hash, another spelling of the row's path.
        { path_hash: hex(b.path_hash), relative_path: "y/Cafe\u0301.txt" },
        { path_hash: hex(missing), relative_path: "m.txt" },
        { path_hash: hex(missing), relative_path: "../m.txt" },
      ],
    });
    const s = expectSuccess(r, ["updated", "skipped", "errors"]);
    expect(s.updated).toBe(1);
    expect(s.skipped).toBe(1);
    expect(s.errors).toEqual([
      { path_hash: hex(b.path_hash), reason: "path_mismatch" },
      { path_hash: hex(missing), reason: "not_found" },
      { path_hash: hex(missing), reason: "invalid_path" },
    ]);
    const files = (await stateOf(t, u)).files;
    const filled = files.find((f: Json) => hex(f.path_hash) === hex(a.path_hash));
    expect({ p: filled.relative_path, n: filled.file_name }).toEqual({ p: "photos/cat.png", n: "cat.png" });
    const hits = await t.json(`/search_files/${u.address}?q=cat.png`, {
      headers: { authorization: authAt(t, u) },
    });
    expect(hits.body.Success.total_count).toBe(1);
    // Idempotent: the same call again updates nothing.
    const again = expectSuccess(
      await call("POST", url(), {
        entries: [{ path_hash: hex(a.path_hash), relative_path: "photos/cat.png" }],
      }),
      ["updated", "skipped", "errors"],
    );
    expect({ u: again.updated, s: again.skipped }).toEqual({ u: 0, s: 1 });
  });

  test("refuses a path whose hash is another row's (invalid_path) or whose last segment is not the row's file_name (path_mismatch), changing nothing", async () => {
    const one = await put("docs/1.txt", { relative_path: null, file_name: null });
    const two = await put("docs/2.txt", { relative_path: null, file_name: null });
    // Written without a plaintext path, under a name that is not its path's last segment.
    const named = await put("docs/report.pdf", { relative_path: null, file_name: "evil.exe" });
    const before = await rowsOf(t, "files");
    const r = await call("POST", url(), {
      entries: [
        { path_hash: hex(two.path_hash), relative_path: "docs/1.txt" },
        { path_hash: hex(one.path_hash), relative_path: "docs/2.txt" },
        { path_hash: hex(named.path_hash), relative_path: "docs/evil.exe" },
        { path_hash: hex(named.path_hash), relative_path: "docs/report.pdf" },
      ],
    });
    const s = expectSuccess(r, ["updated", "skipped", "errors"]);
    expect(s.updated).toBe(0);
    expect(s.errors).toEqual([
      { path_hash: hex(two.path_hash), reason: "invalid_path" },
      { path_hash: hex(one.path_hash), reason: "invalid_path" },
      { path_hash: hex(named.path_hash), reason: "invalid_path" },
      { path_hash: hex(named.path_hash), reason: "path_mismatch" },
    ]);
    expect(await rowsOf(t, "files")).toEqual(before);
  });

  test("returns 400 batch_too_large over 500 entries or 4 MiB, 400 invalid_manifest for a malformed body, 403 for another account", async () => {
    const entry = { path_hash: randomBytes(32).toString("hex"), relative_path: "a" };
    expectError(await call("POST", url(), { entries: Array(501).fill(entry) }), 400, "batch_too_large");
    const long = { ...entry, relative_path: "x".repeat(11_000) };
    expectError(await call("POST", url(), { entries: Array(400).fill(long) }), 400, "batch_too_large");
    expectError(
      await call("POST", url(), { entries: [{ path_hash: "zz", relative_path: "a" }] }),
      400,
      "invalid_manifest",
    );
    expectError(await call("POST", url(), { entries: [entry] }, newUser()), 403, "forbidden");
  });

  test("a batch over 500 entries from another account is 400 batch_too_large, not 403 (docs/protocol.md#open-rules)", async () => {
    const entry = { path_hash: randomBytes(32).toString("hex"), relative_path: "a" };
    expectError(
      await call("POST", url(), { entries: Array(501).fill(entry) }, newUser()),
      400,
      "batch_too_large",
    );
  });

  test("paths are validated like upload paths: control characters refused, NFD accepted as upload accepts it", async () => {
    const nfd = "p/Cafe\u0301.txt";
    const paths = ["c/a\u0001b.txt", "c/a\nb.txt", "c/a\u007fb.txt", nfd];
    const rows = await Promise.all(
      paths.map((p) => put(p, { relative_path: null, file_name: null, path_hash: pathHashOf(p) })),
    );
    const r = await call("POST", url(), {
      entries: paths.map((p, i) => ({ path_hash: hex(rows[i].path_hash), relative_path: p })),
    });
    const s = expectSuccess(r, ["updated", "skipped", "errors"]);
    expect(s.errors).toEqual(
      rows.slice(0, 3).map((row: Json) => ({ path_hash: hex(row.path_hash), reason: "invalid_path" })),
    );
    expect(s.updated).toBe(1);
    // The same NFD path is one row: an upload of it without base revision is a conflict.
    const again = randomCiphertext(60);
    const m = makeManifest({ owner: u.address, ciphertext: again, path: nfd });
    expect((await uploadSingle(t, authAt(t, u), m, again)).status).toBe(409);
  });
});

describe("folder entries listing: whole or in keyset pages", () => {
  const many = [...Array(250)].map((_, i) => `dir${String(i).padStart(3, "0")}`);

  test("without limit, every entry in one flat answer without next_after (read in pages of 100 inside)", async () => {
    for (let i = 0; i < many.length; i += 100) await register(many.slice(i, i + 100));
    const r = await list();
    expect(r.status).toBe(200);
    expect(Object.keys(r.body)).toEqual(["relative_paths"]);
    expect(r.body.relative_paths).toEqual(many);
  });

  test("an empty folder lists as an empty array, with and without limit", async () => {
    expect((await list()).body).toEqual({ relative_paths: [] });
    const r = await call("GET", `/list_folder_entries/${u.address}/${FOLDER}?limit=10`);
    expect(r.body).toEqual({ relative_paths: [], next_after: null });
  });

  test("with limit, pages follow next_after in BINARY order until it is null, each entry once", async () => {
    for (let i = 0; i < many.length; i += 100) await register(many.slice(i, i + 100));
    const seen: string[] = [];
    let after: string | null = null;
    let pages = 0;
    do {
      const q: string = after === null ? "limit=100" : `limit=100&after=${encodeURIComponent(after)}`;
      const r = await call("GET", `/list_folder_entries/${u.address}/${FOLDER}?${q}`);
      expect(r.status).toBe(200);
      expect(r.body.relative_paths.length).toBeLessThanOrEqual(100);
      seen.push(...r.body.relative_paths);
      after = r.body.next_after;
      pages++;
    } while (after !== null);
    expect(pages).toBe(3);
    expect(seen).toEqual(many);
  });

  test("a page ending exactly at the last entry answers next_after null", async () => {
    await register(["a", "b"]);
    const r = await call("GET", `/list_folder_entries/${u.address}/${FOLDER}?limit=2`);
    expect(r.body).toEqual({ relative_paths: ["a", "b"], next_after: null });
    const r1 = await call("GET", `/list_folder_entries/${u.address}/${FOLDER}?limit=1`);
    expect(r1.body).toEqual({ relative_paths: ["a"], next_after: "a" });
  });

  test("returns 400 invalid_parameter for a limit of 0 or over 1000", async () => {
    for (const limit of ["0", "1001", "x"])
      expectError(
        await call("GET", `/list_folder_entries/${u.address}/${FOLDER}?limit=${limit}`),
        400,
        "invalid_parameter",
      );
  });
});

describe("folder entry attributes (esync extension, capability folder_entry_attributes)", () => {
  const sealed = (n: number, fill = 7) => Array(n).fill(fill) as number[];
  const registerWith = (paths: string[], attributes: unknown, user: TestUser = u) =>
    call(
      "POST",
      "/register_folder_entries",
      { ss58_address: u.address, folder_hash: FOLDER, relative_paths: paths, attributes },
      user,
    );
  const page = (q = "limit=1000") => call("GET", `/list_folder_entries/${u.address}/${FOLDER}?${q}`);

  test("GET /v1/capabilities advertises folder_entry_attributes", async () => {
    expect((await t.json("/v1/capabilities")).body.folder_entry_attributes).toBe(true);
  });

  test("attributes round-trip byte for byte in the paged listing (200), only for entries that have them", async () => {
    const a = [...randomBytes(90)];
    expectSuccess(await registerWith(["A", "A/B", "C"], { A: a, "A/B": [0, 255] }), ["status", "count"]);
    const r = await page();
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      relative_paths: ["A", "A/B", "C"],
      attributes: { A: a, "A/B": [0, 255] },
      next_after: null,
    });
    // Keyset pages carry the attributes of their own entries only.
    expect((await page("limit=1&after=A")).body).toEqual({
      relative_paths: ["A/B"],
      attributes: { "A/B": [0, 255] },
      next_after: "A/B",
    });
  });

  test("registering again with attributes replaces them; without, an entry keeps its own", async () => {
    await registerWith(["A", "B"], { A: sealed(20, 1), B: sealed(20, 2) });
    expectSuccess(await registerWith(["A"], { A: sealed(30, 3) }), ["status", "count"]);
    expectSuccess(await register(["B", "C"]), ["status", "count"]);
    expect((await page()).body.attributes).toEqual({ A: sealed(30, 3), B: sealed(20, 2) });
  });

  test("the listing without limit (the contract's flat answer) carries no attributes", async () => {
    await registerWith(["A"], { A: sealed(40) });
    expect((await list()).body).toEqual({ relative_paths: ["A"] });
  });

  test(`attributes of ${MAX_FOLDER_ENTRY_ATTRIBUTES_BYTES} bytes are accepted; larger, empty, non-byte or for an unnamed path is 400 invalid_manifest, storing nothing`, async () => {
    expectSuccess(await registerWith(["Max"], { Max: sealed(MAX_FOLDER_ENTRY_ATTRIBUTES_BYTES) }), [
      "status",
      "count",
    ]);
    for (const bad of [
      { A: sealed(MAX_FOLDER_ENTRY_ATTRIBUTES_BYTES + 1) },
      { A: [] },
      { A: [256] },
      { A: [-1] },
      { A: "AAAA" },
      { Other: [1] },
      ["A"],
      "A",
    ])
      expectError(await registerWith(["A"], bad), 400, "invalid_manifest");
    expect((await page()).body.relative_paths).toEqual(["Max"]);
  });

  test("attributes from another account are 403 forbidden, a malformed one from it 400 first", async () => {
    const stranger = newUser();
    expectError(await registerWith(["A"], { A: [1] }, stranger), 403, "forbidden");
    expectError(await registerWith(["A"], { B: [1] }, stranger), 400, "invalid_manifest");
  });
});
