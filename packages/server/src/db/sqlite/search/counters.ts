/**
 * @module server/db/sqlite/search/counters
 * The counters of the SQLite search index (`search_stats` histograms and size × date grid,
 * `search_dirs`, `search_names`, `search_grams`; see `repository.ts`) and its FTS index
 * are kept through a log instead of row by row: the triggers of `search_entries` append every
 * change to `search_delta` in the transaction of the file write (migration 0018: `d` = +1 with
 * the new entry, -1 with the old one; `k` = what the change touches), and `foldSearchCounters`
 * applies the log in one set-based statement per table, then empties it. A key that several rows
 * of the log share (an owner's totals, the buckets of files written together, the name prefixes
 * and grams they share) is written once per fold, the pages of those tables once per fold
 * instead of once per commit, and the FTS index gets one segment per fold.
 *
 * Invariant: after every commit, the index plus the rows of the log are exact. Whoever reads the
 * counters or the FTS index folds first (`SqliteSearchIndex`); the metadata store folds before its
 * COMMIT once the log holds `FOLD_AT` rows (`foldSearchCountersIfDue`), so the log stays short;
 * opening the store folds what a previous process left. `search_entries` itself (the rows, the
 * sort indexes, the id partitions) is still written in the file write's own statement.
 */
import type { Database } from "bun:sqlite";

/** Rows of `search_delta` at which a writing transaction folds them before it commits. */
export const FOLD_AT = 256;

/** The log's bits of `k` (drizzle/sqlite/0018_search_counter_log.sql); `GRAMS` covers the FTS index too. */
const HISTOGRAMS = 1;
const DIRECTORIES = 2;
const GRID = 4;
const NAMES = 8;
const GRAMS = 16;

/**
 * The fold: one statement per counter table, with the bucket expressions of the triggers they
 * replace (drizzle/sqlite/0002, 0003, 0004, 0005), each grouping the log's rows by counter key and
 * adding the sums that are not zero (a key written and unwritten within one fold is not touched;
 * readers treat a missing key and a zero count alike); then the FTS index; then the log emptied.
 */
const FOLD = [
  // Histograms (dims 0-6) and the size × date grid (dim 7), per extension and for every file ('*').
  `INSERT INTO search_stats (oid, dim, ext, bucket, n)
   SELECT l.oid, v.dim, CASE x.w WHEN 0 THEN coalesce(l.ext, '') ELSE '*' END AS e,
     CASE v.dim
       WHEN 0 THEN 0
       WHEN 1 THEN length(l.size_bytes)
       WHEN 2 THEN CASE WHEN l.size_bytes < 10 THEN 100 + l.size_bytes ELSE length(l.size_bytes) * 100 + CAST(substr(l.size_bytes, 1, 2) AS INTEGER) END
       WHEN 3 THEN l.created_at >> 18
       WHEN 4 THEN l.created_at >> 12
       WHEN 5 THEN l.updated_at >> 18
       WHEN 6 THEN l.updated_at >> 12
       ELSE (l.created_at >> 21) * 4096 + CASE WHEN l.size_bytes < 10 THEN 100 + l.size_bytes ELSE length(l.size_bytes) * 100 + CAST(substr(l.size_bytes, 1, 2) AS INTEGER) END
     END AS b,
     sum(l.d)
   FROM search_delta AS l,
     (SELECT 0 AS dim UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
       UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7) AS v,
     (SELECT 0 AS w UNION ALL SELECT 1) AS x
   WHERE l.k & CASE WHEN v.dim = 7 THEN ${GRID} ELSE ${HISTOGRAMS} END
   GROUP BY l.oid, v.dim, e, b HAVING sum(l.d) <> 0
   ON CONFLICT (oid, dim, ext, bucket) DO UPDATE SET n = n + excluded.n`,
  // Recursive file count and bytes of every ancestor directory of the entry's dir.
  `INSERT INTO search_dirs (oid, folder_hash, path, file_count, total_bytes)
   SELECT l.oid, l.folder_hash,
     substr(l.dir, 1, (SELECT sum(length(j2.value) + 1) FROM json_each('[' || replace(json_quote(l.dir), '/', '","') || ']') AS j2 WHERE j2.key <= j.key) - 1) AS p,
     sum(l.d), sum(l.d * l.size_bytes)
   FROM search_delta AS l, json_each('[' || replace(json_quote(l.dir), '/', '","') || ']') AS j
   WHERE l.k & ${DIRECTORIES} AND l.dir <> ''
   GROUP BY l.oid, l.folder_hash, p HAVING sum(l.d) <> 0 OR sum(l.d * l.size_bytes) <> 0
   ON CONFLICT (oid, folder_hash, path) DO UPDATE SET file_count = file_count + excluded.file_count, total_bytes = total_bytes + excluded.total_bytes`,
  // Rows without file_name (level 0), and file_name by its first 2, 4, 6, 8, 11, 14, 20 characters.
  `INSERT INTO search_names (oid, level, prefix, n)
   SELECT l.oid, v.level, CASE WHEN v.level = 0 THEN '' ELSE substr(l.file_name, 1, v.len) END AS p, sum(l.d)
   FROM search_delta AS l,
     (SELECT 0 AS level, 0 AS len UNION ALL SELECT 1, 2 UNION ALL SELECT 2, 4 UNION ALL SELECT 3, 6
       UNION ALL SELECT 4, 8 UNION ALL SELECT 5, 11 UNION ALL SELECT 6, 14 UNION ALL SELECT 7, 20) AS v
   WHERE l.k & ${NAMES} AND (v.level = 0) = (l.file_name IS NULL)
   GROUP BY l.oid, v.level, p HAVING sum(l.d) <> 0
   ON CONFLICT (oid, level, prefix) DO UPDATE SET n = n + excluded.n`,
  // Each distinct 3- and 4-character substring of each name, per owner and file_type class.
  `INSERT INTO search_grams (oid, class, gram, n)
   SELECT t.oid, t.class, t.gram, sum(t.d)
   FROM (SELECT DISTINCT l.rowid AS r, l.d, l.oid, (l.id >> 36) & 7 AS class, substr(l.name, j.key + 1, g.len) AS gram
     FROM search_delta AS l,
       json_each('[' || rtrim(replace(hex(zeroblob(length(l.name))), '00', '0,'), ',') || ']') AS j,
       (SELECT 3 AS len UNION ALL SELECT 4) AS g
     WHERE l.k & ${GRAMS} AND l.name IS NOT NULL AND j.key + g.len <= length(l.name)) AS t
   GROUP BY t.oid, t.class, t.gram HAVING sum(t.d) <> 0
   ON CONFLICT (oid, class, gram) DO UPDATE SET n = n + excluded.n`,
  // The FTS index: per entry id, the row that existed before the log's first change of it goes,
  // the row after its last change comes (ids whose name did not change are not in the log's
  // bit 16 rows; changes in between cancel out).
  `DELETE FROM search_fts WHERE rowid IN (SELECT f.id FROM (
     SELECT id, d, name, row_number() OVER (PARTITION BY id ORDER BY rowid) AS i FROM search_delta WHERE k & ${GRAMS}) AS f
   WHERE f.i = 1 AND f.d = -1 AND f.name IS NOT NULL)`,
  `INSERT INTO search_fts (rowid, name) SELECT f.id, f.name FROM (
     SELECT id, d, name, row_number() OVER (PARTITION BY id ORDER BY rowid DESC) AS i FROM search_delta WHERE k & ${GRAMS}) AS f
   WHERE f.i = 1 AND f.d = 1 AND f.name IS NOT NULL ORDER BY f.id`,
  "DELETE FROM search_delta",
];

/**
 * Rows waiting in the log. The log is only ever emptied as a whole, so its largest rowid is its
 * row count (one index seek).
 */
export function pendingCounterRows(sqlite: Database): number {
  return sqlite.query<{ n: number | null }, []>("SELECT max(rowid) AS n FROM search_delta").get()?.n ?? 0;
}

/**
 * Folds the log into the counters and the FTS index and empties it, all or nothing (a
 * savepoint). Call inside a write transaction (or outside any, as its own).
 * @returns the log rows folded.
 * @throws the SQLite error of a failed statement, after undoing the fold (the log is kept).
 */
export function foldSearchCounters(sqlite: Database): number {
  const n = pendingCounterRows(sqlite);
  if (n === 0) return 0;
  sqlite.query("SAVEPOINT search_fold").run();
  try {
    for (const statement of FOLD) sqlite.query(statement).run();
    sqlite.query("RELEASE search_fold").run();
  } catch (e) {
    try {
      sqlite.query("ROLLBACK TO search_fold").run();
      sqlite.query("RELEASE search_fold").run();
    } catch {
      // The failure ended the transaction itself (its caller sees that when it commits).
    }
    throw e;
  }
  return n;
}

/**
 * Folds what the log holds now: inside the caller's transaction when one is open, else in its own
 * IMMEDIATE transaction, taken only when rows are pending (an empty log takes no write lock).
 * @returns the log rows folded.
 * @throws as `foldSearchCounters`.
 */
export function foldPendingSearchCounters(sqlite: Database): number {
  if (pendingCounterRows(sqlite) === 0) return 0;
  if (sqlite.inTransaction) return foldSearchCounters(sqlite);
  return sqlite.transaction(() => foldSearchCounters(sqlite)).immediate();
}

/**
 * The writers' fold: folds when the log holds at least `FOLD_AT` rows. Never throws, so that an
 * index bug can never fail the write whose transaction calls it: a failed fold leaves the log as
 * it was, and the next reader folds it (or answers through the exact plan; `SqliteSearchIndex`).
 * @returns the log rows folded (0 when not due or failed).
 */
export function foldSearchCountersIfDue(sqlite: Database): number {
  try {
    return pendingCounterRows(sqlite) >= FOLD_AT ? foldSearchCounters(sqlite) : 0;
  } catch {
    return 0;
  }
}
