/**
 * The result rules of docs/protocol.md#search on bulk data inserted directly (the search triggers run as on
 * upload): filters and their bounds, rule 2, q semantics, sorting with the path_hash tiebreak,
 * paging through equal sort values, has_more, the limit cap; and every planner path (rare and
 * common FTS terms, short terms, histogram counts, complement counts, seeks, far-end walks,
 * sorted candidates) giving the naive model's answer.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SqliteSearchIndex } from "../../src/db/sqlite/search/index.ts";
import type { SearchTuning } from "../../src/db/sqlite/search/planner.ts";
import type { FileRow } from "../../src/files/file-entry.ts";
import { parseSearchQuery } from "../../src/search/search.query.ts";
import { SearchService } from "../../src/search/search.service.ts";
import { makeTestApp } from "../support/app.ts";
import { newUser } from "../support/fixtures.ts";
import { type FileSpec, hex, insertFiles, modelSearch, search } from "./support.ts";

const t = makeTestApp();
afterAll(() => t.close());
const db = t.db;

/** Runs a query through the service (on the SQLite index with `tuning`): total, page (hex) and plan. */
async function run(owner: string, qs: string, tuning: Partial<SearchTuning> = {}) {
  const q = parseSearchQuery(new URLSearchParams(qs));
  const { hits, page } = await new SearchService(new SqliteSearchIndex(db, { tuning })).run(owner, q);
  return {
    total: hits.total_count,
    page: hits.files.map((f) => hex(f.path_hash)),
    plan: page.plan.join("; "),
    hits,
  };
}

/** Asserts the service answers `qs` as the model does on `rows`. */
async function expectModel(owner: string, rows: FileRow[], qs: string, tuning: Partial<SearchTuning> = {}) {
  const got = await run(owner, qs, tuning);
  const want = modelSearch(rows, parseSearchQuery(new URLSearchParams(qs)));
  expect({ qs, total: got.total, page: got.page }).toEqual({ qs, total: want.total, page: want.page });
  return got;
}

describe("filters", () => {
  const u = newUser();
  beforeAll(() => {
    insertFiles(t, u.address, [
      { path: "a/small.png", size: 99, created: 1000 },
      { path: "a/edge.PNG", size: 100, created: 2000 },
      { path: "a/big.jpg", size: 101, created: 3000 },
      { path: "b/Report.pdf", size: 5000, created: 2000 },
      { path: "b/notes", size: 100, created: 2000 },
      { path: "b/.png", size: 100, created: 2000 },
      { path: "legacy/only-path.PDF", fileName: null, size: 100, created: 2000 },
      { path: "x", fileName: null, relativePath: null, size: 100, created: 2000 },
      { path: "c/50%_off.txt", size: 7, created: 4000 },
      { path: "c/50 off.txt", size: 7, created: 4000 },
      { path: 'c/say "hi" (draft).txt', size: 7, created: 4000 },
      { path: "gr/ΟΔΟΣ.txt", size: 3, created: 5000 },
    ]);
  });
  /** The names (file_name ?? relative_path ?? "<none>") a query finds, sorted. */
  const names = (qs: string) =>
    search(t, u, `${qs}&limit=100`).then((r) => {
      expect(r.status).toBe(200);
      expect(r.body.Success.total_count).toBe(r.body.Success.files.length);
      return r.body.Success.files
        .map(
          (f: { file_name: string | null; relative_path: string | null }) =>
            f.file_name ?? f.relative_path ?? "<none>",
        )
        .sort();
    });

  test("size and date bounds are inclusive", async () => {
    expect(await names("size_min=100&size_max=100")).toEqual([
      ".png",
      "<none>",
      "edge.PNG",
      "legacy/only-path.PDF",
      "notes",
    ]);
    expect(await names("size_min=101")).toEqual(["Report.pdf", "big.jpg"]);
    expect(await names("date_from=3000&date_to=4000")).toEqual([
      "50 off.txt",
      "50%_off.txt",
      "big.jpg",
      'say "hi" (draft).txt',
    ]);
    expect(await names("date_to=1000")).toEqual(["small.png"]);
    expect(await names("size_min=101&size_max=100")).toEqual([]);
  });

  test("filters combine with AND", async () => {
    expect(await names("file_type=image&size_min=100&date_to=2000")).toEqual(["edge.PNG"]);
    expect(await names("q=o&size_max=100&date_from=2000")).toEqual([
      "50 off.txt",
      "50%_off.txt",
      "legacy/only-path.PDF",
      "notes",
    ]);
  });

  test("file_type matches categories, explicit extensions case-insensitively, and comma lists", async () => {
    expect(await names("file_type=image")).toEqual(["big.jpg", "edge.PNG", "small.png"]);
    expect(await names("file_type=.PNG")).toEqual(["edge.PNG", "small.png"]);
    expect(await names("file_type=pdf,.jpg")).toEqual(["Report.pdf", "big.jpg", "legacy/only-path.PDF"]);
    expect(await names("file_type=video")).toEqual([]);
  });

  test("rule 2: rows with both names null appear without q and file_type, and never with either", async () => {
    expect(await names("")).toContain("<none>");
    expect(await names("size_min=0")).toContain("<none>");
    expect(await names("q=.")).not.toContain("<none>");
    expect(await names("q=x")).not.toContain("<none>");
    expect(await names("file_type=image,pdf,document,code,.x")).not.toContain("<none>");
  });

  test("q matches file_name, or relative_path only when file_name is null", async () => {
    expect(await names("q=legacy")).toEqual(["legacy/only-path.PDF"]);
    expect(await names("q=a/")).toEqual([]);
    expect(await names("q=REPORT")).toEqual(["Report.pdf"]);
  });

  test("case folding handles the word-final sigma: σ, Σ and ς all find ΟΔΟΣ", async () => {
    for (const q of ["σ", "Σ", "ς", "δοσ", "ΔΟς", "οδοσ.txt"]) {
      expect({ q, names: await names(`q=${encodeURIComponent(q)}`) }).toEqual({ q, names: ["ΟΔΟΣ.txt"] });
    }
  });

  test("% and _ in q are literal characters", async () => {
    expect(await names("q=%25")).toEqual(["50%_off.txt"]);
    expect(await names("q=_")).toEqual(["50%_off.txt"]);
    expect(await names("q=50%25_")).toEqual(["50%_off.txt"]);
    expect(await names("q=0%25_o")).toEqual(["50%_off.txt"]);
  });

  test("FTS query syntax in q is plain text: quotes, parentheses, operators", async () => {
    expect(await names(`q=${encodeURIComponent('"hi"')}`)).toEqual(['say "hi" (draft).txt']);
    expect(await names(`q=${encodeURIComponent('"')}`)).toEqual(['say "hi" (draft).txt']);
    expect(await names(`q=${encodeURIComponent("(draft)")}`)).toEqual(['say "hi" (draft).txt']);
    expect(await names(`q=${encodeURIComponent("hi AND draft")}`)).toEqual([]);
    expect(await names(`q=${encodeURIComponent("dra*")}`)).toEqual([]);
  });

  test("a dotfile named like an extension has no extension", async () => {
    expect(await names("q=.png")).toEqual([".png", "edge.PNG", "small.png"]);
    expect(await names("file_type=.png")).not.toContain(".png");
  });
});

describe("sorting and paging", () => {
  const u = newUser();
  let rows: FileRow[];
  beforeAll(() => {
    // 2,400 rows: few distinct values per column, so pages cut through runs of equal values.
    const specs: FileSpec[] = Array.from({ length: 2400 }, (_, i) => ({
      path: `p/${["same", "Same", "other", "ähnlich"][i % 4]}.txt`,
      size: [5, 5, 5, 900][i % 4],
      created: 1_700_000_000 + (i % 3) * 5000,
      updated: 1_700_000_000 + (i % 2),
      ...(i % 50 === 0 ? { fileName: null } : {}),
    }));
    rows = insertFiles(t, u.address, specs);
  });

  for (const col of ["file_name", "size_bytes", "created_at", "updated_at"]) {
    for (const order of ["asc", "desc"]) {
      test(`pages of sort_by=${col}&sort_order=${order} are the whole set, once each, in order (path_hash tiebreak)`, async () => {
        const seen: string[] = [];
        for (let offset = 0; offset < 2400; offset += 173) {
          const r = await search(t, u, `sort_by=${col}&sort_order=${order}&offset=${offset}&limit=173`);
          const s = r.body.Success;
          expect(s.total_count).toBe(2400);
          expect(s.has_more).toBe(offset + s.files.length < 2400);
          seen.push(...s.files.map((f: { path_hash: number[] }) => hex(f.path_hash)));
        }
        const want = modelSearch(
          rows,
          parseSearchQuery(new URLSearchParams(`sort_by=${col}&sort_order=${order}&limit=10000`)),
        );
        expect(seen).toEqual(want.page);
        expect(new Set(seen).size).toBe(2400);
      });
    }
  }

  test("an offset past the end gives no files and has_more false; has_more is exact at the boundary", async () => {
    const past = (await search(t, u, "offset=2400")).body.Success;
    expect(past).toMatchObject({ files: [], total_count: 2400, has_more: false, offset: 2400, limit: 25 });
    const last = (await search(t, u, "offset=2375")).body.Success;
    expect({ n: last.files.length, has_more: last.has_more }).toEqual({ n: 25, has_more: false });
    const before = (await search(t, u, "offset=2374")).body.Success;
    expect({ n: before.files.length, has_more: before.has_more }).toEqual({ n: 25, has_more: true });
  });

  test("unknown sort_by and sort_order fall back to created_at desc", async () => {
    const a = (await search(t, u, "sort_by=bogus&sort_order=sideways&limit=50")).body.Success.files;
    const b = (await search(t, u, "sort_by=created_at&sort_order=desc&limit=50")).body.Success.files;
    expect(a).toEqual(b);
  });

  test("sort_order is case-insensitive", async () => {
    const a = (await search(t, u, "sort_by=size_bytes&sort_order=AsC&limit=50")).body.Success.files;
    const b = (await search(t, u, "sort_by=size_bytes&sort_order=asc&limit=50")).body.Success.files;
    expect(a).toEqual(b);
  });
});

describe("limit", () => {
  test("limit is capped at 10000 and the response says so", async () => {
    const u = newUser();
    insertFiles(
      t,
      u.address,
      Array.from({ length: 10_001 }, (_, i) => ({ path: `f${i}.bin`, created: i })),
    );
    const s = (await search(t, u, "limit=20000")).body.Success;
    expect({ n: s.files.length, limit: s.limit, total: s.total_count, more: s.has_more }).toEqual({
      n: 10_000,
      limit: 10_000,
      total: 10_001,
      more: true,
    });
    const d = (await search(t, u, "limit=0")).body.Success;
    expect({ n: d.files.length, limit: d.limit }).toEqual({ n: 25, limit: 25 });
  });
});

describe("planner paths", () => {
  const u = newUser();
  let rows: FileRow[];
  beforeAll(() => {
    const specs: FileSpec[] = [];
    for (let i = 0; i < 3000; i++) {
      const kind = i % 10;
      const name =
        kind < 6
          ? `IMG_${1000 + i}.jpg`
          : kind < 8
            ? `report-${i % 97}.pdf`
            : kind === 8
              ? `Übersicht ${i}.docx`
              : `song ${i}.mp3`;
      specs.push({
        path: `d${i % 13}/${name}`,
        size: Math.floor(10 ** (1 + (i % 7)) * (1 + (i % 5))),
        created: 1_650_000_000 + i * 1500 + (i % 3) * 100_000,
        updated: 1_650_000_000 + i * 2000,
        ...(i % 97 === 0 ? { fileName: null } : {}),
        ...(i % 199 === 0 ? { fileName: null, relativePath: null } : {}),
      });
    }
    rows = insertFiles(t, u.address, specs);
  });
  const cases: [string, string, Partial<SearchTuning>][] = [
    ["histogram total", "", {}],
    ["histogram total", "file_type=image", {}],
    ["histogram of size_bytes", "size_min=150&size_max=40000", {}],
    ["histogram of created_at", "date_from=1651000000&date_to=1653000000&file_type=pdf", {}],
    ["size × date grid", "size_min=11&date_from=1650000100", { gridMinRows: 0 }],
    [
      "size × date grid",
      "size_min=150&size_max=40000&date_from=1651000000&date_to=1654000000",
      { gridMinRows: 0 },
    ],
    [
      "size × date grid",
      "size_min=100&size_max=199&date_to=1652000000&file_type=image,pdf",
      { gridMinRows: 0 },
    ],
    ["size × date grid", "size_min=20&date_from=1652000000&date_to=1652100000", { gridMinRows: 0 }],
    ["size × date grid", "size_min=5000&size_max=5000&date_from=1640000000", { gridMinRows: 0 }],
    ["count: scan", "size_min=2000&size_max=2100&date_from=1651000000&date_to=1652000000", {}],
    ["rare term", "q=img_12", {}],
    ["rare term, check q on", "q=img_12&size_min=20", {}],
    ["check q on ext index", "q=report-4&file_type=pdf&size_min=20", {}],
    ["common term, FTS index", "q=img_1", { rareHits: 10 }],
    ["gram table", "q=img", {}],
    ["gram table", "q=img_", {}],
    ["gram table", "q=IMG&file_type=image,pdf&offset=30", {}],
    ["gram table", "q=t-4&file_type=pdf&sort_by=size_bytes", {}],
    ["check q on", "q=IMG&file_type=.jpg,.pdf&offset=30", {}],
    ["gram table", "q=übe&sort_by=file_name&offset=3", {}],
    ["gram table", "q=zzz", {}],
    [
      "FTS over partitions (1 of 1 classes",
      "q=img_1&file_type=image",
      { partitions: "always", rareHits: 10 },
    ],
    [
      "FTS over partitions (1 of 8 classes",
      "q=ort-4&date_from=1651000000&date_to=1654000000",
      { partitions: "always", rareHits: 10 },
    ],
    [
      "FTS over partitions",
      "q=img_&date_from=1651000000&file_type=image,audio&sort_by=file_name",
      { partitions: "always", rareHits: 10 },
    ],
    ["check q on", "q=img_&date_from=1651000000&date_to=1651100000", { partitions: "always", rareHits: 10 }],
    ["check q on", "q=img_1&file_type=image", { partitions: "never", rareHits: 10 }],
    ["check q on", "q=img&date_from=1651000000&date_to=1652000000", { rareHits: 10 }],
    ["check q on", "q=üb&size_min=100", {}],
    ["check q on", "q=g", {}],
    ["from bucket", "offset=1500&sort_by=created_at&sort_order=asc", { seekMinOffset: 10 }],
    ["from bucket", "offset=700&sort_by=size_bytes&file_type=image&size_min=50", { seekMinOffset: 10 }],
    ["from bucket", "offset=900&sort_by=updated_at", { seekMinOffset: 0 }],
    ["far end", "offset=2900&sort_by=file_name", {}],
    ["from name bucket", "offset=1200&sort_by=file_name&sort_order=asc", { seekMinOffset: 10 }],
    ["from name bucket", "offset=1200&sort_by=file_name&sort_order=desc", { seekMinOffset: 10 }],
    ["from name bucket", "offset=1490&limit=30&sort_by=file_name&sort_order=desc", { seekMinOffset: 0 }],
    // Among the rows without a file_name (they sort first): no bucket to seek to.
    ["walk file_name index, skipping 5", "offset=5&sort_by=file_name&sort_order=asc", { seekMinOffset: 0 }],
    ["far end", "offset=1700&q=img&sort_by=size_bytes&sort_order=asc", { rareHits: 10 }],
    ["sort candidates", "q=report-42&sort_by=file_name", {}],
    ["walk", "offset=40&sort_by=size_bytes&size_min=1000", {}],
  ];
  for (const [path, qs, tuning] of cases) {
    test(`"${path}" answers ${qs || "(no filter)"} ${JSON.stringify(tuning)} as the model does`, async () => {
      const got = await expectModel(u.address, rows, qs, tuning);
      expect(got.plan).toContain(path);
    });
  }
});
