/**
 * @module server/db/sqlite/search/index
 * `SqliteSearchIndex`: the search backend of the embedded SQLite database. Its tables
 * (`search_entries`, the FTS index, histogram, grid, name and gram counters, directory counts;
 * see `repository.ts`) are kept by triggers on `files` in the transaction of every file
 * write, the FTS index and the counters through a log folded in batches (`counters.ts`):
 * every query folds what is pending first, in its own write transaction, so it answers exactly.
 * `SqlitePlanner` picks the cheapest exact plan over them.
 *
 * Degraded state: when the triggers cannot index a row (`search_index_state`, migration 0016),
 * every query is answered by `SqliteScan` over `files` until `rebuild` has indexed every file. A
 * query whose fold fails is answered by `SqliteScan` too (reported as degraded, with the error).
 */

import type { SearchQuery } from "../../../search/search.query.ts";
import type {
  DirectoryQuery,
  DirRow,
  RebuildProgress,
  RebuildReport,
  SearchIndex,
  SearchIndexHealth,
  SearchOptions,
  SearchPage,
} from "../../../search/search-index.ts";
import type { Db } from "../../client.ts";
import { foldPendingSearchCounters, foldSearchCounters } from "./counters.ts";
import { type SearchTuning, SqlitePlanner } from "./planner.ts";
import { type Cond, type PageKey, SearchRepository } from "./repository.ts";
import { SqliteScan } from "./scan.ts";

/** Reason recorded while `rebuild` runs (the index is incomplete until it ends). */
const REBUILDING = "search index: rebuild under way";

/** Files indexed per transaction by `rebuild` (other writers wait at most one batch). */
const REBUILD_BATCH = 2000;

/**
 * The statement `rebuild` indexes one file with: the entry insert of the `search_files_ai`
 * trigger (drizzle/0016), with the file's columns as parameters; nothing when the id layout cannot
 * take the row (owner id 2^24 or more, partition and spill bucket full) or the entry exists.
 */
const INDEX_FILE = `INSERT INTO search_entries (id, oid, folder_hash, path_hash, file_name, name, ext, dir, size_bytes, created_at, updated_at)
  SELECT b.id, b.oid, $folder_hash, $path_hash, $file_name, replace($search_name, 'ς', 'σ'), $ext,
    CASE WHEN $relative_path IS NULL THEN NULL ELSE trim(rtrim($relative_path, replace($relative_path, '/', '')), '/') END,
    $size_bytes, $created_at, $updated_at
  FROM (SELECT a.oid, CASE WHEN a.next >> 23 = a.part THEN a.next
      ELSE (SELECT s.next FROM (SELECT coalesce((SELECT e.id + 1 FROM search_entries AS e WHERE e.id BETWEEN (a.part | 8191) << 23 AND ((a.part | 8191) << 23) | 8388607 ORDER BY e.id DESC LIMIT 1), (a.part | 8191) << 23) AS next) AS s
        WHERE s.next >> 23 = a.part | 8191) END AS id
    FROM (SELECT p.oid, p.part, coalesce((SELECT e.id + 1 FROM search_entries AS e WHERE e.id BETWEEN p.part << 23 AND (p.part << 23) | 8388607 ORDER BY e.id DESC LIMIT 1), p.part << 23) AS next
      FROM (SELECT o.id AS oid, ((o.id << 16) | (coalesce((SELECT c.class FROM search_ext_classes AS c WHERE c.ext = $ext), 0) << 13) | CASE WHEN $created_at < 946684800 THEN 0 ELSE min((($created_at - 946684800) >> 18) + 1, 8190) END) AS part
        FROM search_owners AS o WHERE o.owner = $owner AND o.id < 16777216) AS p) AS a) AS b
  WHERE b.id IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM search_entries AS x WHERE x.oid = b.oid AND x.folder_hash = $folder_hash AND x.path_hash = $path_hash)`;

/** The columns of a `files` row `INDEX_FILE` reads. */
interface FileColumns {
  rowid: number;
  owner: string;
  folder_hash: string;
  path_hash: Uint8Array;
  file_name: string | null;
  search_name: string | null;
  ext: string | null;
  relative_path: string | null;
  size_bytes: number;
  created_at: number;
  updated_at: number;
}

/** Options of `SqliteSearchIndex`. */
export interface SqliteSearchIndexOptions {
  /** Planner thresholds (tests lower them to reach every plan on small data). */
  tuning?: Partial<SearchTuning>;
  /**
   * Runs synchronous statements outside any open transaction of the process's metadata store
   * (`SqliteMetadataStore.read`: its gate); default: at once.
   */
  read?: <T>(fn: () => T) => Promise<T>;
}

/** The search index of the SQLite metadata database (see the module comment). */
export class SqliteSearchIndex implements SearchIndex {
  readonly kind = "sqlite";
  private readonly repo: SearchRepository;
  private readonly planner: SqlitePlanner;
  private readonly scan: SqliteScan;
  private readonly read: <T>(fn: () => T) => Promise<T>;

  constructor(
    private readonly db: Db,
    opts: SqliteSearchIndexOptions = {},
  ) {
    this.repo = new SearchRepository(db);
    this.planner = new SqlitePlanner(this.repo, opts.tuning);
    this.scan = new SqliteScan(db);
    this.read = opts.read ?? ((fn) => Promise.resolve(fn()));
  }

  private get sql() {
    return this.db.$client;
  }

  /**
   * Folds the counters' pending log (its own IMMEDIATE transaction; call outside any). Null when
   * the counters are up to date, else why they are not: the caller answers through the exact plan.
   */
  private catchUp(): string | null {
    try {
      foldPendingSearchCounters(this.sql);
      return null;
    } catch (e) {
      return `search index: counters not up to date (${String((e as Error)?.message ?? e)})`;
    }
  }

  /** The degraded state row, read inside the caller's snapshot. */
  private readHealth(): SearchIndexHealth {
    const r = this.sql
      .query<{ reason: string; since: number }, []>(
        "SELECT reason, since FROM search_index_state WHERE id = 1",
      )
      .get();
    return r
      ? { state: "degraded", reason: r.reason, since: r.since }
      : { state: "ok", reason: null, since: null };
  }

  private page(
    owner: string,
    outcome: { total: number; keys: PageKey[]; plan: string[] },
    degraded: string | null,
  ) {
    return {
      total: outcome.total,
      hits: this.repo.hits(owner, outcome.keys),
      plan: outcome.plan,
      degraded,
    };
  }

  search(owner: string, query: SearchQuery, opts: SearchOptions = {}): Promise<SearchPage> {
    return this.read(() => {
      const stale = query.nothing ? null : this.catchUp();
      return this.repo.snapshot(() => {
        if (query.nothing)
          return this.page(owner, { total: 0, keys: [], plan: ["matches nothing (profile rule)"] }, null);
        const reason = this.readHealth().reason ?? stale;
        if (reason !== null || opts.exact) {
          const r = this.scan.search(owner, query);
          return this.page(owner, { ...r, plan: ["count: exact scan of files", `total ${r.total}`] }, reason);
        }
        const oid = this.repo.ownerId(owner);
        if (oid === null) return this.page(owner, { total: 0, keys: [], plan: ["no files"] }, null);
        return this.page(owner, this.planner.outcome(oid, query), null);
      });
    });
  }

  directory(owner: string, folderHash: string, query: DirectoryQuery): Promise<SearchPage> {
    return this.read(() => {
      const stale = this.catchUp();
      return this.repo.snapshot(() => {
        const reason = this.readHealth().reason ?? stale;
        if (reason !== null) {
          const r = this.scan.directory(owner, folderHash, query);
          return this.page(owner, { ...r, plan: ["count: exact scan of files", `total ${r.total}`] }, reason);
        }
        const oid = this.repo.ownerId(owner);
        if (oid === null) return this.page(owner, { total: 0, keys: [], plan: ["no files"] }, null);
        const conds: Cond[] = [{ kind: "dir", folderHash, dir: query.path }];
        if (query.exts) conds.push({ kind: "exts", exts: query.exts });
        if (query.q !== null) conds.push({ kind: "substr", q: query.q });
        if (query.uploader !== null) conds.push({ kind: "uploader", by: query.uploader.by });
        const total = this.repo.count(oid, "dir", conds);
        const keys =
          query.limit === 0 || query.offset >= total
            ? []
            : this.repo.page(oid, "dir", conds, query.sortBy, query.descending, query.offset, query.limit);
        return this.page(owner, { total, keys, plan: ["count: scan dir index", `total ${total}`] }, null);
      });
    });
  }

  subdirectories(owner: string, folderHash: string, path: string): Promise<DirRow[]> {
    return this.read(() => {
      const stale = this.catchUp();
      return this.repo.snapshot(() => {
        if (this.readHealth().reason !== null || stale !== null)
          return this.scan.subdirectories(owner, folderHash, path);
        const oid = this.repo.ownerId(owner);
        return oid === null ? [] : this.repo.subdirs(oid, folderHash, path);
      });
    });
  }

  health(): Promise<SearchIndexHealth> {
    return this.read(() => this.readHealth());
  }

  /**
   * Empties the index tables (in one transaction, with the index marked degraded), numbers the
   * owners afresh (so owner ids freed by deleted accounts are reused), indexes every file in
   * batches of `REBUILD_BATCH` by rowid (files written meanwhile are indexed by the triggers or
   * by a later batch), merges the FTS index, and clears the degraded state when every file has
   * its entry (else records how many could not be indexed).
   */
  async rebuild(onProgress: (p: RebuildProgress) => void = () => {}): Promise<RebuildReport> {
    const started = performance.now();
    const sql = this.sql;
    const total = await this.read(
      () => sql.query<{ n: number }, []>("SELECT count(*) AS n FROM files").get()?.n ?? 0,
    );
    const reset = sql.transaction(() => {
      sql
        .query(
          `INSERT INTO search_index_state (id, reason, since) VALUES (1, ?, unixepoch())
           ON CONFLICT (id) DO UPDATE SET reason = excluded.reason`,
        )
        .run(REBUILDING);
      // Emptying search_entries row by row would run its triggers for every row: drop them
      // for the delete and re-create them from their own definitions.
      const triggers = sql
        .query<{ name: string; sql: string }, []>(
          "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'search_entries'",
        )
        .all();
      for (const t of triggers) sql.run(`DROP TRIGGER "${t.name.replaceAll('"', '""')}"`);
      sql.run("DELETE FROM search_entries");
      for (const t of triggers) sql.run(t.sql);
      sql.run("INSERT INTO search_fts (search_fts) VALUES ('delete-all')");
      for (const table of [
        "search_delta",
        "search_stats",
        "search_dirs",
        "search_names",
        "search_grams",
        "search_owners",
      ])
        sql.run(`DELETE FROM ${table}`);
      sql.run("INSERT INTO search_owners (owner) SELECT DISTINCT owner FROM files ORDER BY owner");
    });
    await this.read(() => reset.immediate());
    onProgress({ done: 0, total });
    const next = sql.query<FileColumns, [number, number]>(
      `SELECT rowid, owner, folder_hash, path_hash, file_name, search_name, ext, relative_path, size_bytes,
         created_at, updated_at FROM files WHERE rowid > ? ORDER BY rowid LIMIT ?`,
    );
    const ensureOwner = sql.query(
      "INSERT INTO search_owners (owner) SELECT ?1 WHERE NOT EXISTS (SELECT 1 FROM search_owners WHERE owner = ?1)",
    );
    const index = sql.query(INDEX_FILE);
    let last = 0;
    let done = 0;
    const batch = sql.transaction(() => {
      const rows = next.all(last, REBUILD_BATCH);
      for (const r of rows) {
        const { rowid, ...cols } = r;
        ensureOwner.run(cols.owner);
        index.run(cols as unknown as Record<string, string | number | Uint8Array | null>);
        last = rowid;
      }
      foldSearchCounters(sql);
      return rows.length;
    });
    for (;;) {
      const n = await this.read(() => batch.immediate());
      done += n;
      onProgress({ done, total: Math.max(total, done) });
      if (n < REBUILD_BATCH) break;
    }
    await this.read(() => sql.run("INSERT INTO search_fts (search_fts) VALUES ('optimize')"));
    const finish = sql.transaction(() => {
      const missing =
        sql
          .query<{ n: number }, []>(
            `SELECT count(*) AS n FROM files AS f WHERE NOT EXISTS (SELECT 1 FROM search_owners AS o
               JOIN search_entries AS e ON e.oid = o.id WHERE o.owner = f.owner AND e.folder_hash = f.folder_hash AND e.path_hash = f.path_hash)`,
          )
          .get()?.n ?? 0;
      if (missing === 0) sql.run("DELETE FROM search_index_state");
      else
        sql
          .query("UPDATE search_index_state SET reason = ? WHERE id = 1")
          .run(`search index: ${missing} files could not be indexed (limits of the id layout)`);
    });
    await this.read(() => finish.immediate());
    return { files: done, seconds: (performance.now() - started) / 1000, health: await this.health() };
  }
}
