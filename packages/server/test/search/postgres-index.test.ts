/**
 * The PostgreSQL search index runs the `SearchIndex` conformance suite on a fresh database of the
 * test server (test/support/pg-server.ts), written through the PostgreSQL files repository.
 */
import { afterAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { openPostgres } from "../../src/db/postgres/client.ts";
import { PgFilesRepository } from "../../src/db/postgres/files.ts";
import { fineBucket, fineLo } from "../../src/db/postgres/search/histogram.ts";
import { PgSearchIndex } from "../../src/db/postgres/search/index.ts";
import type { FileRow } from "../../src/files/file-entry.ts";
import { parseSearchQuery } from "../../src/search/search.query.ts";
import { PG_SETUP_TIMEOUT_MS, pgTestDatabase } from "../support/pg-server.ts";
import { type FileWrite, type IndexUnderTest, searchIndexConformance } from "./search-index.conformance.ts";
import { fileRow, hex, modelSearch } from "./support.ts";

const database = await pgTestDatabase("search_index");
// Name fence intervals split past 3 files instead of 4,000, so that the small data of these tests
// splits them often (every session of this database).
{
  const admin = new SQL(database.url);
  await admin.unsafe(
    `ALTER DATABASE "${new URL(database.url).pathname.slice(1)}" SET esync.search_names_max = '3'`,
  );
  await admin.close();
}
const db = await openPostgres(database.url);
const sql = db.$client;
afterAll(async () => {
  await db.$client.close();
  await database.drop();
}, PG_SETUP_TIMEOUT_MS);

const sut: IndexUnderTest = {
  index: new PgSearchIndex(db),
  write: async (writes: FileWrite[]) => {
    await db.transaction(async (tx) => {
      const files = new PgFilesRepository(tx);
      for (const w of writes) {
        if (w.kind === "upsert") await files.upsert(w.row);
        else await files.remove(w.owner, w.folderHash, w.pathHash);
      }
    });
  },
  // The counters the triggers keep equal a recount from files (zero rows ignored).
  checkConsistent: async () => {
    const sql = db.$client;
    const exts = await sql`SELECT owner, ext, n::int AS n FROM search_ext_counts WHERE n <> 0 ORDER BY 1, 2`;
    const extsWanted = await sql`SELECT owner, coalesce(ext, '') AS ext, count(*)::int AS n FROM files
      GROUP BY 1, 2 ORDER BY 1, 2`;
    expect([...exts]).toEqual([...extsWanted]);
    const dirs = await sql`SELECT owner, folder_hash, path, file_count::int AS n, total_bytes::float8 AS b
      FROM search_dirs WHERE file_count <> 0 ORDER BY 1, 2, 3`;
    const dirsWanted = await sql`SELECT f.owner, f.folder_hash, array_to_string(f.segs[1:i], '/') AS path,
        count(*)::int AS n, sum(f.size_bytes)::float8 AS b
      FROM (SELECT owner, folder_hash, size_bytes,
          string_to_array(btrim(regexp_replace(relative_path, '[^/]*$', ''), '/'), '/') AS segs
        FROM files WHERE relative_path IS NOT NULL) AS f
        CROSS JOIN LATERAL generate_series(1, coalesce(array_length(f.segs, 1), 0)) AS i
      GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`;
    expect([...dirs]).toEqual([...dirsWanted]);
    const hist = await sql`SELECT owner, key, level, bucket::float8 AS b, ext, n::int AS n FROM search_hist
      WHERE n <> 0 ORDER BY 1, 2, 3, 4, 5`;
    const histWanted = await sql`SELECT f.owner, k.key, k.level, k.b::float8 AS b, coalesce(f.ext, '') AS ext,
        count(*)::int AS n
      FROM (SELECT owner, ext, esync_size_bucket(size_bytes) AS fs, created_at, updated_at FROM files) AS f
        CROSS JOIN LATERAL (VALUES (1, 0, f.fs >> 5), (1, 1, f.fs), (2, 0, f.created_at >> 20),
          (2, 1, f.created_at >> 10), (3, 0, f.updated_at >> 20), (3, 1, f.updated_at >> 10)) AS k(key, level, b)
      GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5`;
    expect([...hist]).toEqual([...histWanted]);
    const grams =
      await sql`SELECT owner, gram, ext, n::int AS n FROM search_grams WHERE n <> 0 ORDER BY 1, 2, 3`;
    const gramsWanted = await sql`SELECT f.owner, s.g AS gram, f.e AS ext, count(*)::int AS n
      FROM (SELECT owner, coalesce(ext, '') AS e, replace(search_name, 'ς', 'σ') AS nm FROM files) AS f
        CROSS JOIN LATERAL (SELECT DISTINCT substr(f.nm, i, l) AS g
          FROM generate_series(1, length(f.nm)) AS i, (VALUES (3), (4)) AS k(l)
          WHERE i + l - 1 <= length(f.nm)) AS s
      GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`;
    expect([...grams]).toEqual([...gramsWanted]);
    const grid = await sql`SELECT owner, tl, sl, sb::float8 AS sb, tb::float8 AS tb, ext, n::int AS n
      FROM search_grid WHERE n <> 0 ORDER BY 1, 2, 3, 4, 5, 6`;
    const gridWanted =
      await sql`SELECT f.owner, t.tl, s.sl, s.sb::float8 AS sb, (f.ca >> t.shift)::float8 AS tb,
        f.e AS ext, count(*)::int AS n
      FROM (SELECT owner, coalesce(ext, '') AS e, esync_size_bucket(size_bytes) AS fs, created_at AS ca FROM files) AS f
        CROSS JOIN LATERAL (VALUES (0, f.fs), (1, f.fs >> 5)) AS s(sl, sb)
        CROSS JOIN (VALUES (0, 10), (1, 15), (2, 20)) AS t(tl, shift)
      GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6`;
    expect([...grid]).toEqual([...gridWanted]);
    // Each name fence counts the named files from it up to the next fence of its owner; every
    // owner with named files has the empty fence.
    const fences = await sql`SELECT s.owner, s.file_name, s.n::int AS n, (SELECT count(*)::int FROM files AS f
        WHERE f.owner = s.owner AND f.file_name IS NOT NULL
          AND (f.file_name, f.path_hash, f.folder_hash) >= (s.file_name, s.path_hash, s.folder_hash)
          AND (s.nx_name IS NULL OR (f.file_name, f.path_hash, f.folder_hash) < (s.nx_name, s.nx_path, s.nx_folder))) AS want
      FROM (SELECT *, lead(file_name) OVER w AS nx_name, lead(path_hash) OVER w AS nx_path,
          lead(folder_hash) OVER w AS nx_folder
        FROM search_names WINDOW w AS (PARTITION BY owner ORDER BY file_name, path_hash, folder_hash)) AS s
      WHERE s.n <> 0 OR s.nx_name IS NOT NULL`;
    for (const f of fences) expect(f).toEqual({ ...f, n: f.want });
    const unfenced = await sql`SELECT DISTINCT owner FROM files WHERE file_name IS NOT NULL
      EXCEPT SELECT owner FROM search_names WHERE file_name = '' AND path_hash = ''::bytea AND folder_hash = ''`;
    expect([...unfenced]).toEqual([]);
    // One search_files row per file, and the suffix rows of each file's current name, ext and date.
    const orphans = await sql`SELECT count(*)::int AS n FROM search_files AS sf
      WHERE NOT EXISTS (SELECT 1 FROM files AS f
        WHERE (f.owner, f.folder_hash, f.path_hash) = (sf.owner, sf.folder_hash, sf.path_hash))`;
    const missing = await sql`SELECT count(*)::int AS n FROM files AS f
      WHERE NOT EXISTS (SELECT 1 FROM search_files AS sf
        WHERE (f.owner, f.folder_hash, f.path_hash) = (sf.owner, sf.folder_hash, sf.path_hash))`;
    expect([orphans[0].n, missing[0].n]).toEqual([0, 0]);
    const suffixes = await sql`SELECT o.owner, sf.folder_hash, encode(sf.path_hash, 'hex') AS p, s.suffix,
        s.next_lcp::int AS l, s.ext, s.created_at::float8 AS c
      FROM search_suffixes AS s JOIN search_owners AS o ON o.id = s.owner_id
        JOIN search_files AS sf ON sf.id = s.file_id ORDER BY 1, 2, 3, 4`;
    const suffixesWanted = await sql`SELECT f.owner, f.folder_hash, encode(f.path_hash, 'hex') AS p, s.suffix,
        s.next_lcp::int AS l, f.ext, f.created_at::float8 AS c
      FROM files AS f CROSS JOIN LATERAL esync_search_suffixes(replace(f.search_name, 'ς', 'σ')) AS s
      ORDER BY 1, 2, 3, s.suffix COLLATE "C"`;
    expect([...suffixes]).toEqual([...suffixesWanted]);
  },
};

searchIndexConformance("postgres", () => sut, { numRuns: 100, timeoutMs: 120_000 });
// Every page past offset 0 in size or time order starts at its histogram bucket, in name order at
// its name fence.
searchIndexConformance(
  "postgres, pages located in the histograms",
  () => ({
    ...sut,
    index: new PgSearchIndex(db, { locateFromOffset: 1 }),
  }),
  { numRuns: 100, timeoutMs: 120_000 },
);

// Every page of a q of 3 or more characters with at most file_type and a date range is read from
// the suffix rows.
searchIndexConformance(
  "postgres, pages of q read from the suffix rows",
  () => ({
    ...sut,
    index: new PgSearchIndex(db, { walkRows: 0 }),
  }),
  { numRuns: 100, timeoutMs: 120_000 },
);

// Every q of 3 or more characters with a date range (and at most file_type) reads its suffix rows
// by their first 3 characters and date (search_suffixes_by_created).
searchIndexConformance(
  "postgres, q with a date range read by first 3 characters and date",
  () => ({
    ...sut,
    index: new PgSearchIndex(db, { walkRows: 0, suffixRoute: "prefix_dates" }),
  }),
  { numRuns: 100, timeoutMs: 120_000 },
);

// Every such page walks 3 rows of the sort b-tree, then (mostly) reads the suffix rows.
searchIndexConformance(
  "postgres, pages of q walking 3 rows before the suffix rows",
  () => ({
    ...sut,
    index: new PgSearchIndex(db, { walkRows: 3 }),
  }),
  { numRuns: 50, timeoutMs: 120_000 },
);

test("rebuild recounts counters that drifted from files and re-creates the indexes; the index stays ok", async () => {
  const sql = db.$client;
  await sut.write([
    {
      kind: "upsert",
      row: fileRow("rebuild-owner", { path: "a/b/one.png", size: 10 }),
    },
    {
      kind: "upsert",
      row: fileRow("rebuild-owner", { path: "a/two.pdf", size: 20 }),
    },
  ]);
  await sql`UPDATE search_ext_counts SET n = n + 5 WHERE owner = 'rebuild-owner'`;
  await sql`UPDATE search_dirs SET file_count = 99 WHERE owner = 'rebuild-owner'`;
  await sql`UPDATE search_hist SET n = n + 2 WHERE owner = 'rebuild-owner'`;
  await sql`UPDATE search_grams SET n = 0 WHERE owner = 'rebuild-owner'`;
  await sql`UPDATE search_grid SET n = n + 3 WHERE owner = 'rebuild-owner'`;
  await sql`UPDATE search_names SET n = n + 4 WHERE owner = 'rebuild-owner'`;
  // REINDEX gives an index a new file (search_suffixes' indexes get one from the recount's
  // TRUNCATE anyway).
  const filenode = async () =>
    Number((await sql`SELECT pg_relation_filenode('files_by_created') AS n`)[0]?.n);
  const before = await filenode();
  const progress: number[] = [];
  const report = await sut.index.rebuild((p) => progress.push(p.done));
  expect(await filenode()).not.toBe(before);
  expect(report.health).toEqual({ state: "ok", reason: null, since: null });
  expect(progress.at(-1)).toBe(report.files);
  await sut.checkConsistent?.();
  const page = await sut.index.search(
    "rebuild-owner",
    parseSearchQuery(new URLSearchParams("file_type=image,pdf")),
  );
  expect(page.total).toBe(2);
}, 120_000);

test("the size buckets of the histogram queries equal the trigger's esync_size_bucket, and each starts at fineLo", async () => {
  const values = new Set<number>();
  for (let v = 0; v <= 200; v++) values.add(v);
  for (let k = 5; k <= 52; k++) for (const d of [-1, 0, 1]) values.add(2 ** k + d);
  for (let i = 0; i < 300; i++)
    values.add(Math.floor(Math.random() * 2 ** (5 + Math.floor(Math.random() * 47))));
  const list = [...values];
  const rows = (await db.$client.unsafe(
    "SELECT v::float8 AS v, esync_size_bucket(v)::float8 AS b FROM unnest($1::bigint[]) AS v",
    [`{${list.join(",")}}`],
  )) as { v: number; b: number }[];
  expect(rows.length).toBe(list.length);
  for (const r of rows) {
    expect([r.v, fineBucket("size_bytes", r.v)]).toEqual([r.v, r.b]);
    const lo = fineLo("size_bytes", r.b);
    expect(lo).toBeLessThanOrEqual(r.v);
    expect(fineBucket("size_bytes", lo)).toBe(r.b);
    if (lo > 0) expect(fineBucket("size_bytes", lo - 1)).toBe(r.b - 1);
  }
});

/**
 * A small deterministic account for the counter tests: sizes over many powers of two, creation
 * times over ~60 days with a burst of files 7 s apart, names from a few stems (many equal), some
 * without a name, in two directories of one folder.
 */
function counterRows(owner: string, n: number, seed: number): FileRow[] {
  let x = seed;
  const rnd = () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return x / 2 ** 31;
  };
  const stems = ["IMG_0001", "IMG_0002", "a", "b", "report", "zz"];
  const exts = [".jpg", ".png", ".pdf", ""];
  return Array.from({ length: n }, (_, i) => {
    const name = `${stems[Math.floor(rnd() * stems.length)]}${i % 3 === 0 ? i : ""}${exts[i % exts.length]}`;
    const created =
      i % 4 === 0 ? 1_700_000_000 + i * 7 : 1_700_000_000 + Math.floor((rnd() - 0.5) * 60 * 86_400);
    const dir = i % 5 === 0 ? "photos/2017" : i % 5 === 1 ? "photos/2017/raw" : "docs";
    return fileRow(owner, {
      path: `${dir}/${name}`,
      fileName: i % 11 === 0 ? null : undefined,
      size: Math.floor(2 ** (rnd() * 34)),
      created,
    });
  });
}

/** Total and page of a search (hex path_hash) and the plan's first step. */
async function answer(index: PgSearchIndex, owner: string, qs: string) {
  const page = await index.search(owner, parseSearchQuery(new URLSearchParams(qs)));
  return { total: page.total, page: page.hits.map((h) => hex(h.pathHash)), how: page.plan[0] };
}

/** Rewrites some rows (size, date or name changed) and deletes others; returns the live rows. */
async function churn(rows: FileRow[]): Promise<FileRow[]> {
  const next = rows.map((r, i) => {
    if (i % 7 === 1) return { ...r, sizeBytes: r.sizeBytes * 3 + 1 };
    if (i % 7 === 2) return { ...r, createdAt: r.createdAt + 86_400 * 9 };
    if (i % 7 === 3) return { ...r, fileName: `renamed-${i}.png`, ext: ".png" };
    return r;
  });
  const gone = new Set(next.filter((_, i) => i % 7 === 4));
  await sut.write([
    ...next.filter((_, i) => i % 7 >= 1 && i % 7 <= 3).map((row) => ({ kind: "upsert" as const, row })),
    ...[...gone].map((r) => ({
      kind: "delete" as const,
      owner: r.owner,
      folderHash: r.folderHash,
      pathHash: r.pathHash,
    })),
  ]);
  return next.filter((r) => !gone.has(r));
}

test("size x date totals from the grid equal the model after inserts, revisions changing size and date, deletes and a rebuild", async () => {
  const owner = "grid-owner";
  let rows = counterRows(owner, 600, 7);
  await sut.write(rows.map((row) => ({ kind: "upsert", row })));
  const index = new PgSearchIndex(db);
  const base = 1_700_000_000;
  const queries = [
    `size_min=1000&size_max=5000000&date_from=${base - 20 * 86_400}&date_to=${base + 20 * 86_400}`,
    `size_min=1&date_from=${base - 30 * 86_400 + 17}&date_to=${base + 3_333}&file_type=image`,
    `size_min=65536&size_max=65536&date_from=${base}&date_to=${base + 86_400 * 40}`,
    `size_min=31&size_max=2147483648&date_from=${base - 1024 * 32 * 5}&date_to=${base + 1024 * 33 - 1}`,
    `size_max=99999&date_to=${base + 12_345}&file_type=pdf,.jpg&sort_by=size_bytes&offset=3`,
  ];
  const check = async () => {
    for (const qs of queries) {
      const got = await answer(index, owner, qs);
      const want = modelSearch(rows, parseSearchQuery(new URLSearchParams(qs)));
      expect({ qs, ...got }).toEqual({ qs, ...want, how: "count: size x date grid" });
    }
  };
  await check();
  rows = await churn(rows);
  await check();
  await sql`UPDATE search_grid SET n = n + 1 WHERE owner = ${owner}`;
  await index.rebuild();
  await check();
  await sut.checkConsistent?.();
}, 60_000);

test("deep pages in name order start at the name fences and equal the model, ascending and descending, after inserts, renames, deletes and a rebuild", async () => {
  const owner = "names-owner";
  let rows = counterRows(owner, 500, 11);
  await sut.write(rows.map((row) => ({ kind: "upsert", row })));
  const index = new PgSearchIndex(db, { locateFromOffset: 5 });
  const check = async () => {
    for (const order of ["asc", "desc"])
      for (const offset of [5, 40, 41, 199, rows.length - 30, rows.length - 3]) {
        const qs = `sort_by=file_name&sort_order=${order}&offset=${offset}&limit=25`;
        const got = await answer(index, owner, qs);
        const want = modelSearch(rows, parseSearchQuery(new URLSearchParams(qs)));
        const page = await index.search(owner, parseSearchQuery(new URLSearchParams(qs)));
        expect({ qs, total: got.total, page: got.page }).toEqual({ qs, ...want });
        // Offsets among the nameless files (first ascending, last descending) walk the b-tree.
        const nameless = rows.filter((r) => r.fileName === null).length;
        const first = order === "asc" ? offset : rows.length - Math.min(offset + 25, rows.length);
        if (first >= nameless) expect(page.plan.at(-1)).toStartWith("page: name fences");
      }
  };
  await check();
  rows = await churn(rows);
  await check();
  await sql`UPDATE search_names SET n = n + 1 WHERE owner = ${owner}`;
  await index.rebuild();
  await check();
  await sut.checkConsistent?.();
}, 60_000);

test("browse totals of a directory from the directory counters equal the files directly in it after inserts, revisions, deletes and a rebuild", async () => {
  const owner = "dirs-owner";
  let rows = counterRows(owner, 300, 13);
  await sut.write(rows.map((row) => ({ kind: "upsert", row })));
  const index = new PgSearchIndex(db);
  const check = async () => {
    for (const path of ["photos/2017", "photos", "docs", "photos/2017/raw", "nowhere"]) {
      const page = await index.directory(owner, rows[0]!.folderHash, {
        path,
        q: null,
        exts: null,
        uploader: null,
        sortBy: "file_name",
        descending: false,
        offset: 0,
        limit: 10,
      });
      const want = rows.filter((r) => r.relativePath?.replace(/\/[^/]*$/, "") === path).length;
      expect({ path, total: page.total, how: page.plan[0] }).toEqual({
        path,
        total: want,
        how: "count: directory counters",
      });
    }
  };
  await check();
  const moved = rows.map((r, i) =>
    i % 6 === 0 ? { ...r, relativePath: `photos/2017/${r.fileName ?? "x"}`, sizeBytes: r.sizeBytes + 1 } : r,
  );
  await sut.write(moved.filter((_, i) => i % 6 === 0).map((row) => ({ kind: "upsert", row })));
  rows = await churn(moved);
  await check();
  await sql`UPDATE search_dirs SET file_count = file_count + 2 WHERE owner = ${owner}`;
  await index.rebuild();
  await check();
}, 60_000);

test("concurrent writers of one owner keep every name fence exact while intervals split, with and without the account_usage lock that serializes them", async () => {
  for (const serialized of [true, false]) {
    const owner = `fence-race-owner-${serialized}`;
    const batches = Array.from({ length: 6 }, (_, b) =>
      counterRows(owner, 15, 100 + b).map((row, i) => ({ ...row, fileName: `n${(i * 37 + b) % 23}.jpg` })),
    );
    // account_usage (first trigger to fire) locks the owner's row, so an owner's writers reach
    // the fence trigger one at a time; off, they race on the fences and the re-check must hold.
    if (!serialized) await sql`ALTER TABLE files DISABLE TRIGGER account_usage_files`;
    try {
      await Promise.all(
        batches.map(async (rows) => {
          for (const row of rows) await sut.write([{ kind: "upsert", row }]);
        }),
      );
    } finally {
      await sql`ALTER TABLE files ENABLE TRIGGER account_usage_files`;
    }
    const rows = batches.flat();
    const index = new PgSearchIndex(db, { locateFromOffset: 1 });
    for (const offset of [1, 17, 50, 88]) {
      const qs = `sort_by=file_name&offset=${offset}&limit=7`;
      const got = await answer(index, owner, qs);
      const want = modelSearch(rows, parseSearchQuery(new URLSearchParams(qs)));
      expect({ qs, total: got.total, page: got.page }).toEqual({ qs, ...want });
    }
    const [fences] = await sql`SELECT count(*)::int AS n FROM search_names WHERE owner = ${owner}`;
    expect(fences.n).toBeGreaterThan(10);
  }
  await sut.checkConsistent?.();
}, 60_000);
