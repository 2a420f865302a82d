/**
 * The PostgreSQL search index runs the `SearchIndex` conformance suite on a fresh database of the
 * test server (test/support/pg-server.ts), written through the PostgreSQL files repository.
 */
import { afterAll, expect, test } from "bun:test";
import { openPostgres } from "../../src/db/postgres/client.ts";
import { PgFilesRepository } from "../../src/db/postgres/files.ts";
import { fineBucket, fineLo } from "../../src/search/postgres-histogram.ts";
import { PgSearchIndex } from "../../src/search/postgres-index.ts";
import { parseSearchQuery } from "../../src/search/search.query.ts";
import { PG_SETUP_TIMEOUT_MS, pgTestDatabase } from "../support/pg-server.ts";
import { type FileWrite, type IndexUnderTest, searchIndexConformance } from "./search-index.conformance.ts";
import { fileRow } from "./support.ts";

const database = await pgTestDatabase("search_index");
const db = await openPostgres(database.url);
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
// Every page past offset 0 in size or time order starts at its histogram bucket.
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
  const progress: number[] = [];
  const report = await sut.index.rebuild((p) => progress.push(p.done));
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
