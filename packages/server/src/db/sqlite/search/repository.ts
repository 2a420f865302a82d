/**
 * @module server/db/sqlite/search/repository
 * The queries of the SQLite search index (`SqliteSearchIndex`), on the tables of
 * drizzle/sqlite/0002_search_index.sql:
 *
 * - `search_entries`: one compact row per file (owner id, folder, path_hash, names, ext, dir,
 *   size, times). `id` is partitioned (`partitions.ts`): one owner's rows are one id range, and so
 *   are one owner's rows of one file_type category and a run of date buckets. Indexes:
 *   `search_by_{created,updated,size,name}` = (oid, sort column, path_hash, then the filter
 *   columns ext/size/created and `name`), so a walk in sort order decides every filter from the
 *   index alone; `search_by_ext` (oid, ext, created_at, size_bytes, name), also the covering full
 *   scan of an owner; `search_by_dir` (browse).
 * - `search_fts`: trigram FTS5 over `name`, rowid = entry id.
 * - `search_stats`: counts per (oid, dim, ext, bucket) (see `buckets.ts`).
 * - `search_dirs`: recursive file count and bytes per directory.
 * - `search_names`: rows per `file_name` prefix (see `name-histogram.ts`).
 * - `search_grams`: rows per (oid, class, 3- or 4-character substring of `name`).
 *
 * Triggers on `files` keep all of them in the transaction of every file write (the FTS index and
 * the counters through the log of `counters.ts`, which readers fold first). This module only
 * reads; raw SQL through bun:sqlite's statement cache, since the shapes (FTS MATCH, INDEXED BY)
 * are beyond Drizzle's builder.
 */
import type { SQLQueryBindings } from "bun:sqlite";
import type { SortColumn } from "../../../search/search.query.ts";
import type { DirRow, HitRow, OrderKey } from "../../../search/search-index.ts";
import type { Db } from "../../client.ts";
import { ALL_EXTS, GRID, type HistogramColumn, TOTAL_DIM } from "./buckets.ts";
import type { PartitionRange } from "./partitions.ts";

/**
 * SQL bounds (for `BETWEEN`) of an owner's ids, with the owner id bound twice: ids are 63-bit,
 * so they are computed in SQL, never in JS (`partitions.ts`).
 */
const OWNER_IDS = "(? << 39) AND ((? << 39) | 549755813887)";

/** SQL bounds of a `PartitionRange`: parameters oid, cls, bLo, oid, cls, bHi (`partitionParams`). */
const PARTITION_IDS =
  "(((? << 16) | (? << 13) | ?) << 23) AND ((((? << 16) | (? << 13) | ?) << 23) | 8388607)";

function partitionParams(r: PartitionRange): number[] {
  return [r.oid, r.cls, r.bLo, r.oid, r.cls, r.bHi];
}

/** A condition on `search_entries` rows; a list of them is combined with AND. */
export type Cond =
  /** `ext` is one of these (lower-case, with the dot). */
  | { kind: "exts"; exts: readonly string[] }
  /** `lo <= col <= hi`. */
  | { kind: "range"; col: HistogramColumn; lo: number; hi: number }
  /** `name` contains `q` (already case-folded): `instr`, any length. */
  | { kind: "substr"; q: string }
  /**
   * `name` contains `q` (3+ characters), answered by the trigram FTS index; among the ids of
   * `range` only, when given.
   */
  | { kind: "fts"; q: string; range?: PartitionRange }
  /** Files directly in directory `dir` of folder `folderHash` (browse). */
  | { kind: "dir"; folderHash: string; dir: string }
  /** `file_name >= from` (BINARY order; rows without file_name never match). */
  | { kind: "nameFrom"; from: string }
  /** Files of folder `folderHash`. */
  | { kind: "folder"; folderHash: string }
  /** Files whose `files.uploaded_by` is `by` (null: without an uploader); each row looked up. */
  | { kind: "uploader"; by: string | null };

/** The `files` row of a `search_entries` row, for columns only `files` holds. */
const FILE_OF_ENTRY =
  "FROM files AS f, search_owners AS o WHERE o.id = search_entries.oid AND f.owner = o.owner AND f.folder_hash = search_entries.folder_hash AND f.path_hash = search_entries.path_hash";

const ORDER_SQL: Record<OrderKey, string> = {
  file_name: "file_name",
  size_bytes: "size_bytes",
  created_at: "created_at",
  updated_at: "updated_at",
  extension: "ext",
  uploaded_by: `(SELECT f.uploaded_by ${FILE_OF_ENTRY})`,
};

/**
 * How a query reaches the rows: walk one of the sort indexes (in sort order), the ext index (also
 * the covering scan of all of an owner's rows), the browse index, or the FTS hits (`fts`, needs
 * an `fts` condition; each hit is looked up in the table by id).
 */
export type Access = SortColumn | "ext" | "dir" | "fts";

const INDEX: Record<Exclude<Access, "fts">, string> = {
  created_at: "INDEXED BY search_by_created",
  updated_at: "INDEXED BY search_by_updated",
  size_bytes: "INDEXED BY search_by_size",
  file_name: "INDEXED BY search_by_name",
  ext: "INDEXED BY search_by_ext",
  dir: "INDEXED BY search_by_dir",
};

/** The FTS5 query for a substring: one quoted string (the trigram tokenizer makes it a phrase). */
export function ftsPhrase(q: string): string {
  return `"${q.replaceAll('"', '""')}"`;
}

/** A page entry: the entry and the key of its `files` row. */
export interface PageKey {
  folderHash: string;
  pathHash: Uint8Array;
}

/** Read-only queries of search and browse. */
export class SearchRepository {
  constructor(private readonly db: Db) {}

  private get sql() {
    return this.db.$client;
  }

  /** Runs `fn` in one read transaction, so that counts and rows come from one snapshot. */
  snapshot<T>(fn: () => T): T {
    return this.sql.transaction(fn).deferred();
  }

  /** The small integer id of an owner, or null when it never had a file. */
  ownerId(owner: string): number | null {
    const r = this.sql
      .query<{ id: number }, [string]>("SELECT id FROM search_owners WHERE owner = ?")
      .get(owner);
    return r?.id ?? null;
  }

  /** The `search_stats.ext` keys of an ext filter: the list itself, or `*` for every file. */
  private extKeys(exts: readonly string[] | null): { sql: string; params: string[] } {
    const keys = exts ?? [ALL_EXTS];
    return { sql: `ext IN (${keys.map(() => "?").join(", ")})`, params: [...keys] };
  }

  /** Files of an owner with one of `exts` (null = every file), from the histogram totals. */
  total(oid: number, exts: readonly string[] | null): number {
    const k = this.extKeys(exts);
    const r = this.sql
      .query<{ n: number | null }, SQLQueryBindings[]>(
        `SELECT sum(n) AS n FROM search_stats WHERE oid = ? AND dim = ? AND ${k.sql}`,
      )
      .get(oid, TOTAL_DIM, ...k.params);
    return r?.n ?? 0;
  }

  /** Non-empty buckets `bLo..bHi` of a histogram level, summed over `exts`, in bucket order. */
  cells(
    oid: number,
    dim: number,
    exts: readonly string[] | null,
    bLo: number,
    bHi: number,
  ): { bucket: number; n: number }[] {
    const k = this.extKeys(exts);
    const group = exts === null ? "" : " GROUP BY bucket";
    const n = exts === null ? "n" : "sum(n)";
    return this.sql
      .query<{ bucket: number; n: number }, SQLQueryBindings[]>(
        `SELECT bucket, ${n} AS n FROM search_stats WHERE oid = ? AND dim = ? AND ${k.sql} AND bucket BETWEEN ? AND ?${group} ORDER BY bucket`,
      )
      .all(oid, dim, ...k.params, bLo, bHi)
      .filter((c) => c.n > 0);
  }

  /**
   * Sums of a histogram level over `exts`: the buckets strictly between `bLo` and `bHi`, and the
   * buckets `bLo` and `bHi` themselves (each counted once when they are equal).
   */
  cellSums(
    oid: number,
    dim: number,
    exts: readonly string[] | null,
    bLo: number,
    bHi: number,
  ): { inner: number; first: number; last: number } {
    const k = this.extKeys(exts);
    const r = this.sql
      .query<{ inner: number; first: number; last: number }, SQLQueryBindings[]>(
        `SELECT coalesce(sum(n) FILTER (WHERE bucket > ? AND bucket < ?), 0) AS inner,
           coalesce(sum(n) FILTER (WHERE bucket = ?), 0) AS first,
           coalesce(sum(n) FILTER (WHERE bucket = ?), 0) AS last
         FROM search_stats WHERE oid = ? AND dim = ? AND ${k.sql} AND bucket BETWEEN ? AND ?`,
      )
      .get(bLo, bHi, bLo, bHi, oid, dim, ...k.params, bLo, bHi);
    return r ?? { inner: 0, first: 0, last: 0 };
  }

  /**
   * Rows in the size × date grid cells (`GRID`, dim 7) whose date bucket is in `[dLo, dHi]` and
   * size bucket in `[sLo, sHi]`, summed over `exts` (null = every file). Reads the cells of the
   * date buckets in range (date-major numbering), keeping those of the size buckets in range.
   */
  gridSum(
    oid: number,
    exts: readonly string[] | null,
    dLo: number,
    dHi: number,
    sLo: number,
    sHi: number,
  ): number {
    const k = this.extKeys(exts);
    const r = this.sql
      .query<{ n: number | null }, SQLQueryBindings[]>(
        `SELECT sum(n) AS n FROM search_stats WHERE oid = ? AND dim = ? AND ${k.sql}
           AND bucket BETWEEN ? AND ? AND (bucket & ?) BETWEEN ? AND ?`,
      )
      .get(
        oid,
        GRID.dim,
        ...k.params,
        dLo * GRID.sizeSlots,
        (dHi + 1) * GRID.sizeSlots - 1,
        GRID.sizeSlots - 1,
        sLo,
        sHi,
      );
    return r?.n ?? 0;
  }

  /**
   * Rows of an owner, among the classes `classes`, whose `name` contains `gram` (3 or 4
   * characters, already case-folded), from `search_grams`: exact.
   */
  gramRows(oid: number, gram: string, classes: readonly number[]): number {
    let n = 0;
    for (const counts of this.gramsByClass(oid, [gram], classes).values()) n += counts.get(gram) ?? 0;
    return n;
  }

  /**
   * For each of `classes`, the rows of an owner in that class holding each of `grams` (3 or 4
   * characters), from `search_grams`: `counts.get(cls)?.get(gram)`, absent when 0.
   */
  gramsByClass(
    oid: number,
    grams: readonly string[],
    classes: readonly number[],
  ): Map<number, Map<string, number>> {
    const rows = this.sql
      .query<{ class: number; gram: string; n: number }, SQLQueryBindings[]>(
        `SELECT class, gram, n FROM search_grams WHERE oid = ? AND class IN (${classes.map(() => "?").join(", ")})
           AND gram IN (${grams.map(() => "?").join(", ")}) AND n > 0`,
      )
      .all(oid, ...classes, ...grams);
    const out = new Map<number, Map<string, number>>();
    for (const r of rows) {
      const m = out.get(r.class) ?? new Map<string, number>();
      m.set(r.gram, r.n);
      out.set(r.class, m);
    }
    return out;
  }

  /** Whether any entry's id lies in a partition range (e.g. a class's spill bucket). */
  anyIn(range: PartitionRange): boolean {
    return (
      this.sql
        .query<{ x: number }, number[]>(
          `SELECT 1 AS x FROM search_entries WHERE id BETWEEN ${PARTITION_IDS} LIMIT 1`,
        )
        .get(...partitionParams(range)) !== null
    );
  }

  /** Rows of an owner without `file_name` (`search_names` level 0). */
  namelessRows(oid: number): number {
    const r = this.sql
      .query<{ n: number }, [number]>(
        "SELECT n FROM search_names WHERE oid = ? AND level = 0 AND prefix = ''",
      )
      .get(oid);
    return r?.n ?? 0;
  }

  /**
   * The name bucket of `level` (`search_names`, non-empty, prefixes `>= lo` and `< hi` in BINARY
   * order; null bounds are open) that holds the `pos`-th (0-based) of the rows of those buckets
   * in prefix order: its prefix, the rows of the buckets before it, and the next bucket's prefix
   * (null if it is the last). Null when the buckets hold at most `pos` rows.
   */
  nameBucket(
    oid: number,
    level: number,
    lo: string | null,
    hi: string | null,
    pos: number,
  ): { prefix: string; before: number; next: string | null } | null {
    const bounds = `${lo === null ? "" : " AND prefix >= ?"}${hi === null ? "" : " AND prefix < ?"}`;
    const params: SQLQueryBindings[] = [oid, level];
    if (lo !== null) params.push(lo);
    if (hi !== null) params.push(hi);
    return (
      this.sql
        .query<{ prefix: string; before: number; next: string | null }, SQLQueryBindings[]>(
          `SELECT prefix, cum - n AS before, next FROM (
             SELECT prefix, n, sum(n) OVER w AS cum, lead(prefix) OVER w AS next FROM search_names
             WHERE oid = ? AND level = ? AND n > 0${bounds}
             WINDOW w AS (ORDER BY prefix ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW))
           WHERE cum > ? ORDER BY prefix LIMIT 1`,
        )
        .get(...params, pos) ?? null
    );
  }

  /** The FROM and WHERE of a query on an owner's entries. */
  private from(
    oid: number,
    access: Access,
    conds: readonly Cond[],
  ): { sql: string; params: SQLQueryBindings[] } {
    const where: string[] = [];
    const params: SQLQueryBindings[] = [];
    if (access === "fts") {
      where.push(`id BETWEEN ${OWNER_IDS}`, "oid = ?");
      params.push(oid, oid, oid);
    } else {
      where.push("oid = ?");
      params.push(oid);
    }
    for (const c of conds) {
      switch (c.kind) {
        case "exts":
          where.push(`ext IN (${c.exts.map(() => "?").join(", ")})`);
          params.push(...c.exts);
          break;
        case "range":
          where.push(`${c.col} BETWEEN ? AND ?`);
          params.push(c.lo, c.hi);
          break;
        case "substr":
          where.push("instr(name, ?) > 0");
          params.push(c.q);
          break;
        case "fts":
          where.push(
            `id IN (SELECT rowid FROM search_fts WHERE search_fts MATCH ? AND rowid BETWEEN ${c.range ? PARTITION_IDS : OWNER_IDS})`,
          );
          params.push(ftsPhrase(c.q), ...(c.range ? partitionParams(c.range) : [oid, oid]));
          break;
        case "dir":
          where.push("folder_hash = ?", "dir = ?");
          params.push(c.folderHash, c.dir);
          break;
        case "nameFrom":
          where.push("file_name >= ?");
          params.push(c.from);
          break;
        case "folder":
          where.push("folder_hash = ?");
          params.push(c.folderHash);
          break;
        case "uploader":
          where.push(`EXISTS (SELECT 1 ${FILE_OF_ENTRY} AND f.uploaded_by IS ?)`);
          params.push(c.by);
          break;
      }
    }
    const index = access === "fts" ? "NOT INDEXED" : INDEX[access];
    return { sql: `FROM search_entries ${index} WHERE ${where.join(" AND ")}`, params };
  }

  /** Number of an owner's entries that meet `conds`, reached through `access`. */
  count(oid: number, access: Access, conds: readonly Cond[]): number {
    const f = this.from(oid, access, conds);
    return (
      this.sql.query<{ n: number }, SQLQueryBindings[]>(`SELECT count(*) AS n ${f.sql}`).get(...f.params)
        ?.n ?? 0
    );
  }

  /**
   * One page of an owner's entries that meet `conds`, ordered by `sortBy` then `path_hash`, both
   * descending or both ascending, reached through `access`.
   */
  page(
    oid: number,
    access: Access,
    conds: readonly Cond[],
    sortBy: OrderKey,
    descending: boolean,
    offset: number,
    limit: number,
  ): PageKey[] {
    const f = this.from(oid, access, conds);
    const dir = descending ? "DESC" : "ASC";
    return this.sql
      .query<{ folder_hash: string; path_hash: Uint8Array }, SQLQueryBindings[]>(
        `SELECT folder_hash, path_hash ${f.sql} ORDER BY ${ORDER_SQL[sortBy]} ${dir}, path_hash ${dir} LIMIT ? OFFSET ?`,
      )
      .all(...f.params, limit, offset)
      .map((r) => ({ folderHash: r.folder_hash, pathHash: r.path_hash }));
  }

  /** How many FTS hits `q` has among an owner's entries. */
  ftsCount(oid: number, q: string): number {
    return (
      this.sql
        .query<{ n: number }, SQLQueryBindings[]>(
          `SELECT count(*) AS n FROM search_fts WHERE search_fts MATCH ? AND rowid BETWEEN ${OWNER_IDS}`,
        )
        .get(ftsPhrase(q), oid, oid)?.n ?? 0
    );
  }

  /** How many FTS hits `q` has among the ids of one partition range. */
  ftsCountIn(q: string, range: PartitionRange): number {
    return (
      this.sql
        .query<{ n: number }, SQLQueryBindings[]>(
          `SELECT count(*) AS n FROM search_fts WHERE search_fts MATCH ? AND rowid BETWEEN ${PARTITION_IDS}`,
        )
        .get(ftsPhrase(q), ...partitionParams(range))?.n ?? 0
    );
  }

  /** How many FTS hits `q` has among an owner's entries, counting at most `cap`. */
  ftsHits(oid: number, q: string, cap: number): number {
    return (
      this.sql
        .query<{ n: number }, SQLQueryBindings[]>(
          `SELECT count(*) AS n FROM (SELECT 1 FROM search_fts WHERE search_fts MATCH ? AND rowid BETWEEN ${OWNER_IDS} LIMIT ?)`,
        )
        .get(ftsPhrase(q), oid, oid, cap)?.n ?? 0
    );
  }

  /** The `files` rows of page keys, in the keys' order, with their folder labels. */
  hits(owner: string, keys: readonly PageKey[]): HitRow[] {
    if (keys.length === 0) return [];
    const json = JSON.stringify(keys.map((k) => [k.folderHash, Buffer.from(k.pathHash).toString("hex")]));
    return this.sql
      .query<Record<string, unknown>, [string, string]>(
        `SELECT f.folder_hash, coalesce(fo.label, '') AS folder_label, f.path_hash, f.salted_hash, f.size_bytes,
           f.revision_seq, f.revision_id, f.encrypted_path, f.file_name, f.relative_path, f.store_hash,
           f.chunk_hashes, f.created_at, f.updated_at, f.uploaded_by
         FROM json_each(?) AS j
         CROSS JOIN files AS f ON f.owner = ? AND f.folder_hash = j.value ->> 0 AND f.path_hash = unhex(j.value ->> 1)
         LEFT JOIN folders AS fo ON fo.owner = f.owner AND fo.folder_hash = f.folder_hash
         ORDER BY j.key`,
      )
      .all(json, owner)
      .map((r) => ({
        folderHash: r.folder_hash as string,
        folderLabel: r.folder_label as string,
        pathHash: r.path_hash as Buffer,
        saltedHash: r.salted_hash as Buffer,
        sizeBytes: r.size_bytes as number,
        revisionSeq: r.revision_seq as number,
        revisionId: r.revision_id as Buffer,
        encryptedPath: r.encrypted_path as Buffer,
        fileName: r.file_name as string | null,
        relativePath: r.relative_path as string | null,
        storeHash: r.store_hash as string | null,
        chunkHashes: r.chunk_hashes as string | null,
        createdAt: r.created_at as number,
        updatedAt: r.updated_at as number,
        uploadedBy: r.uploaded_by as string | null,
      }));
  }

  /**
   * The immediate sub-directories of `path` (`""` = the folder root) in a folder, with recursive
   * file counts and bytes, in no particular order.
   */
  subdirs(oid: number, folderHash: string, path: string): DirRow[] {
    const rows =
      path === ""
        ? this.sql
            .query<{ path: string; file_count: number; total_bytes: number }, SQLQueryBindings[]>(
              "SELECT path, file_count, total_bytes FROM search_dirs WHERE oid = ? AND folder_hash = ? AND file_count > 0 AND instr(path, '/') = 0",
            )
            .all(oid, folderHash)
        : this.sql
            .query<{ path: string; file_count: number; total_bytes: number }, SQLQueryBindings[]>(
              `SELECT path, file_count, total_bytes FROM search_dirs
               WHERE oid = ? AND folder_hash = ? AND file_count > 0 AND path > ? AND path < ? AND instr(substr(path, length(?) + 2), '/') = 0`,
            )
            .all(oid, folderHash, `${path}/`, `${path}0`, path);
    return rows.map((r) => ({ path: r.path, fileCount: r.file_count, totalBytes: r.total_bytes }));
  }
}
