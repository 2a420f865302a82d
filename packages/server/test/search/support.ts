/**
 * Helpers of the search and browse tests (and bench/search.ts): bulk insertion of `files` rows
 * with the statement the file repository runs (so the search triggers fire as on upload), a
 * naive in-memory model of docs/protocol.md#search to compare against, and an index consistency check.
 */
import type { SQLQueryBindings } from "bun:sqlite";
import { expect } from "bun:test";
import { randomBytes } from "node:crypto";
import { getTableColumns } from "drizzle-orm";
import type { Db } from "../../src/db/client.ts";
import { files } from "../../src/db/sqlite/schema.ts";
import {
  ALL_EXTS,
  type BucketLevel,
  GRID,
  HISTOGRAMS,
  type HistogramColumn,
  NO_EXT,
  TOTAL_DIM,
} from "../../src/db/sqlite/search/buckets.ts";
import { foldSearchCounters, pendingCounterRows } from "../../src/db/sqlite/search/counters.ts";
import { classOf, dateBucket, PARTITION } from "../../src/db/sqlite/search/partitions.ts";
import { extensionOf, type FileRow, searchNameOf } from "../../src/files/file-entry.ts";
import { FILE_TYPE_CATEGORIES } from "../../src/search/file-types.ts";
import type { SearchQuery } from "../../src/search/search.query.ts";
import type { TestApp } from "../support/app.ts";
import type { TestUser } from "../support/fixtures.ts";

/** The folder of `folder_hash("default")`. */
export const FOLDER = "37a8eec1ce19687d";

/** A file to insert; unset fields get plain defaults (`path` sets both names). */
export interface FileSpec {
  folderHash?: string;
  /** Sets `relative_path` and `file_name` (its last segment) unless they are given. */
  path?: string;
  fileName?: string | null;
  relativePath?: string | null;
  size?: number;
  created?: number;
  updated?: number;
  pathHash?: Uint8Array;
  storeHash?: string | null;
  chunkHashes?: string[] | null;
  /** Default null (a row written before attribution). */
  uploadedBy?: string | null;
}

/** A full `files` row for `spec`, as `FilesService.commit` would write it. */
export function fileRow(owner: string, spec: FileSpec): FileRow {
  const path = spec.path ?? "docs/file.bin";
  const fileName = spec.fileName === undefined ? path.split("/").pop()! : spec.fileName;
  const relativePath = spec.relativePath === undefined ? path : spec.relativePath;
  const searchName = searchNameOf(fileName, relativePath);
  const created = spec.created ?? 1_700_000_000;
  return {
    owner,
    folderHash: spec.folderHash ?? FOLDER,
    pathHash: Buffer.from(spec.pathHash ?? randomBytes(32)),
    saltedHash: randomBytes(32),
    sizeBytes: spec.size ?? 100,
    revisionSeq: 1,
    revisionId: randomBytes(32),
    encryptedPath: randomBytes(24),
    fileName,
    relativePath,
    searchName,
    ext: extensionOf(searchName),
    storeHash: spec.storeHash === undefined ? randomBytes(32).toString("hex") : spec.storeHash,
    chunkHashes:
      spec.chunkHashes === undefined || spec.chunkHashes === null ? null : JSON.stringify(spec.chunkHashes),
    createdAt: created,
    updatedAt: spec.updated ?? created,
    clientTimestamp: created,
    source: null,
    attributes: null,
    uploadId: randomBytes(16).toString("hex"),
    ciphertextHash: randomBytes(32).toString("hex"),
    ciphertextSize: (spec.size ?? 100) + 48,
    blobId: randomBytes(16).toString("hex"),
    chunkSize: 8 * 1024 * 1024,
    chunkCount: 1,
    chunkGens: '["0"]',
    uploadedBy: spec.uploadedBy ?? null,
  };
}

/**
 * A function inserting (or replacing, same key) `files` rows with the INSERT … ON CONFLICT DO
 * UPDATE that `FilesRepository.upsert` runs, prepared once, over the columns the table has.
 */
export function filesUpserter(db: Db): (row: FileRow) => void {
  // Only the columns the table has now (a migration test writes rows before later migrations).
  const present = new Set(
    db.$client
      .query<{ name: string }, []>("SELECT name FROM pragma_table_info('files')")
      .all()
      .map((c) => c.name),
  );
  const fields = Object.entries(getTableColumns(files)).filter(([, c]) => present.has(c.name));
  const columns = fields.map(([, c]) => c.name);
  const keys = ["owner", "folder_hash", "path_hash"];
  const stmt = db.$client.prepare(
    `INSERT INTO files (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})
     ON CONFLICT (owner, folder_hash, path_hash) DO UPDATE SET ${columns
       .filter((c) => !keys.includes(c))
       .map((c) => `${c} = excluded.${c}`)
       .join(", ")}`,
  );
  return (row) => {
    stmt.run(...fields.map(([key]) => row[key as keyof FileRow] as SQLQueryBindings));
  };
}

/** Inserts `specs` for `owner` in one transaction; returns the rows. */
export function insertFiles(t: TestApp, owner: string, specs: FileSpec[]): FileRow[] {
  const db = t.db;
  const upsert = filesUpserter(db);
  const rows = specs.map((s) => fileRow(owner, s));
  db.$client.transaction(() => {
    for (const r of rows) upsert(r);
  })();
  return rows;
}

/**
 * Inserts `specs` for `owner` through the repository contract (`FilesRepository.upsert` in one
 * store transaction, the statement a commit runs, so the search index follows as on upload) on
 * whichever database the app runs: SQLite or PostgreSQL. Returns the rows.
 */
export async function seedFiles(t: TestApp, owner: string, specs: FileSpec[]): Promise<FileRow[]> {
  const rows = specs.map((s) => fileRow(owner, s));
  await t.store.transaction(async (tx) => {
    for (const r of rows) await tx.files.upsert(r);
  });
  return rows;
}

/** `GET /search_files/{address}?{qs}` as `user` (or with `auth`). */
export function search(t: TestApp, user: TestUser, qs = "", address = user.address) {
  return t.json(`/search_files/${address}${qs ? `?${qs}` : ""}`, {
    headers: { authorization: tokenOf(t, user) },
  });
}

/** `GET /browse/{address}/{folder}?{qs}` as `user`. */
export function browse(t: TestApp, user: TestUser, folder = FOLDER, qs = "", address = user.address) {
  return t.json(`/browse/${address}/${folder}${qs ? `?${qs}` : ""}`, {
    headers: { authorization: tokenOf(t, user) },
  });
}

/** A `Bearer` header valid at the app clock's now. */
export function tokenOf(t: TestApp, user: TestUser): string {
  return `Bearer ${user.token(t.clock.now(), 86400)}`;
}

/** Hex of a path_hash given as bytes or a JSON int array. */
export function hex(h: Uint8Array | number[]): string {
  return Buffer.from(h).toString("hex");
}

// ---------------------------------------------------------------------------------------------
// The naive model of docs/protocol.md#search, written independently of the implementation.

/** Lower-cases for comparison as search must (JS toLowerCase, word-final ς read as σ). */
function fold(s: string): string {
  return s.toLowerCase().replaceAll("ς", "σ");
}

/** Extension of a name: from the last dot of its last segment, when that dot is neither first nor last. */
function extOf(name: string): string | null {
  const seg = name.slice(name.lastIndexOf("/") + 1);
  const dot = seg.lastIndexOf(".");
  return dot > 0 && dot < seg.length - 1 ? seg.slice(dot).toLowerCase() : null;
}

/** Order of SQLite's BINARY collation: UTF-8 bytes; NULL first. */
function binaryCompare(a: string | null, b: string | null): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? -1 : 1;
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/** Extensions a `file_type` value means, for the model (valid values only). */
export function modelExts(fileType: string): string[] {
  return fileType.split(",").flatMap((e) => {
    const v = e.trim().toLowerCase();
    return v.startsWith(".") ? [v] : [...(FILE_TYPE_CATEGORIES[v] ?? [])];
  });
}

/** What docs/protocol.md#search says a query returns from `rows`: the total and the page's path_hashes (hex). */
export function modelSearch(rows: FileRow[], q: SearchQuery): { total: number; page: string[] } {
  const needle = q.q === null ? null : fold(q.q);
  const matches = rows.filter((r) => {
    const name = r.fileName ?? r.relativePath;
    if ((needle !== null || q.exts !== null) && name === null) return false;
    if (needle !== null && !fold(name!).includes(needle)) return false;
    if (q.exts !== null && !q.exts.includes(extOf(name!) ?? "")) return false;
    if (q.sizeMin !== null && r.sizeBytes < q.sizeMin) return false;
    if (q.sizeMax !== null && r.sizeBytes > q.sizeMax) return false;
    if (q.dateFrom !== null && r.createdAt < q.dateFrom) return false;
    if (q.dateTo !== null && r.createdAt > q.dateTo) return false;
    if (q.folderHash !== null && r.folderHash !== q.folderHash) return false;
    if (q.uploader !== null && r.uploadedBy !== q.uploader.by) return false;
    return true;
  });
  const key = (r: FileRow) =>
    q.sortBy === "file_name"
      ? r.fileName
      : q.sortBy === "uploaded_by"
        ? r.uploadedBy
        : q.sortBy === "size_bytes"
          ? r.sizeBytes
          : q.sortBy === "created_at"
            ? r.createdAt
            : r.updatedAt;
  matches.sort((a, b) => {
    const ka = key(a);
    const kb = key(b);
    const c =
      typeof ka === "number" && typeof kb === "number"
        ? ka - kb
        : binaryCompare(ka as string | null, kb as string | null);
    const d = c !== 0 ? c : Buffer.compare(Buffer.from(a.pathHash), Buffer.from(b.pathHash));
    return q.descending ? -d : d;
  });
  return {
    total: matches.length,
    page: matches.slice(q.offset, q.offset + q.limit).map((r) => hex(r.pathHash)),
  };
}

// ---------------------------------------------------------------------------------------------
// Index consistency.

/**
 * Asserts the derived search tables equal what the live `files` rows imply: one entry per file
 * with the right columns, one FTS row per named entry, histogram cells and directory counters
 * recomputed from scratch (zero rows ignored). Folds the counters' pending log first, as every
 * reader of the index does (`src/db/sqlite/search/counters.ts`), and checks that it is then empty.
 */
export function expectIndexConsistent(db: Db): void {
  const sql = db.$client;
  sql.transaction(() => foldSearchCounters(sql)).immediate();
  expect(pendingCounterRows(sql)).toBe(0);
  const q = <T>(s: string) => sql.query<T, []>(s).all();
  expect(q<{ n: number }>("SELECT count(*) AS n FROM search_entries")[0]!.n).toBe(
    q<{ n: number }>("SELECT count(*) AS n FROM files")[0]!.n,
  );
  const mismatched = q<{ n: number }>(
    `SELECT count(*) AS n FROM files f JOIN search_owners o ON o.owner = f.owner
     LEFT JOIN search_entries e ON e.oid = o.id AND e.folder_hash = f.folder_hash AND e.path_hash = f.path_hash
     WHERE e.id IS NULL OR e.name IS NOT replace(f.search_name, 'ς', 'σ')
       OR e.ext IS NOT f.ext OR e.size_bytes <> f.size_bytes OR e.created_at <> f.created_at
       OR e.updated_at <> f.updated_at OR e.file_name IS NOT f.file_name OR e.id >> 39 <> o.id`,
  )[0]!.n;
  expect(mismatched).toBe(0);
  // Id partitions (partitions.ts): the class of the ext and the date bucket of created_at, or the
  // class's spill bucket.
  const misplaced = q<{ ext: string | null; created_at: number; cls: number; bucket: number }>(
    "SELECT ext, created_at, (id >> 36) & 7 AS cls, (id >> 23) & 8191 AS bucket FROM search_entries",
  ).filter(
    (e) =>
      e.cls !== classOf(e.ext) ||
      (e.bucket !== dateBucket(e.created_at) && e.bucket !== PARTITION.spillBucket),
  );
  expect(misplaced).toEqual([]);
  expect(q<{ n: number }>("SELECT count(*) AS n FROM search_fts")[0]!.n).toBe(
    q<{ n: number }>("SELECT count(*) AS n FROM search_entries WHERE name IS NOT NULL")[0]!.n,
  );
  // Histogram cells, recomputed with the bucket functions of buckets.ts (so this also proves the
  // migration's SQL bucket expressions agree with them).
  const entries = q<
    { oid: number; folder_hash: string; dir: string | null; ext: string | null } & Record<
      HistogramColumn,
      number
    >
  >("SELECT oid, folder_hash, dir, ext, size_bytes, created_at, updated_at FROM search_entries");
  const cells = new Map<string, number>();
  const add = (k: string) => cells.set(k, (cells.get(k) ?? 0) + 1);
  for (const e of entries) {
    for (const ext of [e.ext ?? NO_EXT, ALL_EXTS]) {
      add(`${e.oid}:${TOTAL_DIM}:${ext}:0`);
      for (const [col, levels] of Object.entries(HISTOGRAMS) as [HistogramColumn, readonly BucketLevel[]][]) {
        for (const lv of levels) add(`${e.oid}:${lv.dim}:${ext}:${lv.of(e[col])}`);
      }
      add(`${e.oid}:${GRID.dim}:${ext}:${GRID.cell(e.size_bytes, e.created_at)}`);
    }
  }
  const stats = q<{ k: string; n: number }>(
    "SELECT oid || ':' || dim || ':' || ext || ':' || bucket AS k, n FROM search_stats WHERE n <> 0",
  );
  expect(new Map(stats.map((r) => [r.k, r.n]))).toEqual(cells);
  // Name histogram: rows without file_name, and file_name by its first 2, 4, 6, 8, 11, 14, 20 characters.
  const names = new Map<string, number>();
  for (const e of q<{ oid: number; file_name: string | null }>("SELECT oid, file_name FROM search_entries")) {
    const keys =
      e.file_name === null
        ? ["0:"]
        : [2, 4, 6, 8, 11, 14, 20].map((len, i) => `${i + 1}:${[...e.file_name!].slice(0, len).join("")}`);
    for (const k of keys) names.set(`${e.oid}:${k}`, (names.get(`${e.oid}:${k}`) ?? 0) + 1);
  }
  const nameRows = q<{ k: string; n: number }>(
    "SELECT oid || ':' || level || ':' || prefix AS k, n FROM search_names WHERE n <> 0",
  );
  expect(new Map(nameRows.map((r) => [r.k, r.n]))).toEqual(names);
  // Gram counts: each distinct 3- and 4-character substring (in characters) of each name, per
  // owner and class.
  const grams = new Map<string, number>();
  for (const e of q<{ oid: number; cls: number; name: string | null }>(
    "SELECT oid, (id >> 36) & 7 AS cls, name FROM search_entries",
  )) {
    if (e.name === null) continue;
    const chars = [...e.name];
    for (const len of [3, 4]) {
      for (const g of new Set(
        chars.slice(0, 1 - len || undefined).map((_, i) => chars.slice(i, i + len).join("")),
      )) {
        if ([...g].length !== len) continue;
        const k = `${e.oid}:${e.cls}:${g}`;
        grams.set(k, (grams.get(k) ?? 0) + 1);
      }
    }
  }
  const gramRows = q<{ k: string; n: number }>(
    "SELECT oid || ':' || class || ':' || gram AS k, n FROM search_grams WHERE n <> 0",
  );
  expect(new Map(gramRows.map((r) => [r.k, r.n]))).toEqual(grams);
  // Directory counters: every ancestor directory of every entry's dir.
  const dirs = new Map<string, [number, number]>();
  for (const e of entries) {
    if (!e.dir) continue;
    const segs = e.dir.split("/");
    for (let i = 1; i <= segs.length; i++) {
      const k = `${e.oid}:${e.folder_hash}:${segs.slice(0, i).join("/")}`;
      const [n, b] = dirs.get(k) ?? [0, 0];
      dirs.set(k, [n + 1, b + e.size_bytes]);
    }
  }
  const got = q<{ k: string; n: number; b: number }>(
    "SELECT oid || ':' || folder_hash || ':' || path AS k, file_count AS n, total_bytes AS b FROM search_dirs WHERE file_count <> 0",
  );
  expect(Object.fromEntries(got.map((r) => [r.k, [r.n, r.b]]))).toEqual(Object.fromEntries(dirs));
}
