/**
 * @module server/db/sqlite/ops
 * `OpsRepository` on SQLite (contract: `src/ops/ops.repository.ts`). The snapshot is one read
 * transaction; the store's gate keeps this process's writers out of it, and SQLite's own
 * isolation keeps other processes' commits out.
 */
import type { Database } from "bun:sqlite";
import {
  type AccountedPage,
  type CounterMismatch,
  chunkKeysOf,
  type FileKey,
  type FileLayout,
  type FsckSnapshot,
  type OpsRepository,
  prefixesOf,
  type StoreTotals,
  type StuckSession,
  type VersionLayout,
} from "../../ops/ops.repository.ts";
import { shareIdOfKey } from "../../shares/share-rules.ts";
import { blobIdOfKey, isOneObjectBlob, multipartTarget } from "../../storage/layout.ts";
import type { Db } from "../client.ts";

interface FileRow {
  owner: string;
  folder_hash: string;
  path_hash: Uint8Array;
  blob_id: string;
  chunk_size: number;
  chunk_count: number;
  ciphertext_size: number;
  chunk_gens: string;
}

interface CounterRow {
  owner: string;
  folder_hash: string;
  file_count: unknown;
  total_bytes: unknown;
  count_type: string;
  bytes_type: string;
  n: number;
  bytes: number;
  has_folder: number;
}

const FILES_SQL =
  "SELECT owner, folder_hash, path_hash, blob_id, chunk_size, chunk_count, ciphertext_size, chunk_gens FROM files";
/** The layouts of kept versions (docs/versions.md). */
const VERSIONS_SQL =
  "SELECT version_id, owner, folder_hash, path_hash, blob_id, chunk_size, chunk_count, ciphertext_size, chunk_gens FROM file_versions";

/**
 * Every folder (with a row or with files) whose counters differ from its files' recount, are not
 * integers, or whose row is missing.
 */
const COUNTERS_SQL = `SELECT * FROM (SELECT k.owner, k.folder_hash, f.file_count, f.total_bytes,
    typeof(f.file_count) AS count_type, typeof(f.total_bytes) AS bytes_type,
    coalesce(c.n, 0) AS n, coalesce(c.bytes, 0) AS bytes, f.owner IS NOT NULL AS has_folder
  FROM (SELECT owner, folder_hash FROM folders UNION SELECT owner, folder_hash FROM files) k
  LEFT JOIN folders f ON f.owner = k.owner AND f.folder_hash = k.folder_hash
  LEFT JOIN (SELECT owner, folder_hash, count(*) AS n, sum(size_bytes) AS bytes
               FROM files GROUP BY owner, folder_hash) c
         ON c.owner = k.owner AND c.folder_hash = k.folder_hash)
  WHERE has_folder = 0 OR count_type <> 'integer' OR bytes_type <> 'integer'
     OR file_count <> n OR total_bytes <> bytes
  ORDER BY owner, folder_hash`;

/** A `files` row as `FileLayout`. */
function layoutOf(f: FileRow): FileLayout {
  return {
    owner: f.owner,
    folderHash: f.folder_hash,
    pathHash: f.path_hash,
    blobId: f.blob_id,
    chunkSize: f.chunk_size,
    chunkCount: f.chunk_count,
    ciphertextSize: f.ciphertext_size,
    chunkGens: f.chunk_gens,
  };
}

const STUCK = "state = 'finalizing' AND (finalizing_until IS NULL OR finalizing_until <= ?1)";

/** A stored counter as text: the value, with its SQLite type when it is not an integer. */
function shown(value: unknown, type: string): string {
  return type === "integer" ? String(value) : `${String(value)} (${type})`;
}

/** Operator queries on the SQLite metadata database. */
export class SqliteOpsRepository implements OpsRepository {
  private readonly sqlite: Database;

  constructor(db: Db) {
    this.sqlite = db.$client;
  }

  /**
   * One synchronous read transaction: each table is walked with a statement iterator (SQLite
   * hands rows one at a time), cut into pages for `visit`.
   */
  async snapshot(now: number, pageSize: number, visit: (page: AccountedPage) => void): Promise<FsckSnapshot> {
    const read = this.sqlite.transaction(() => {
      let rows: FileLayout[] = [];
      for (const f of this.sqlite.query<FileRow, []>(FILES_SQL).iterate()) {
        rows.push(layoutOf(f));
        if (rows.length >= pageSize) {
          visit({ kind: "files", rows });
          rows = [];
        }
      }
      if (rows.length > 0) visit({ kind: "files", rows });
      rows = [];
      for (const f of this.sqlite.query<FileRow, []>(VERSIONS_SQL).iterate()) {
        rows.push(layoutOf(f));
        if (rows.length >= pageSize) {
          visit({ kind: "files", rows });
          rows = [];
        }
      }
      if (rows.length > 0) visit({ kind: "files", rows });
      let blobIds: string[] = [];
      for (const r of this.sqlite
        .query<{ blob_id: string }, []>("SELECT blob_id FROM upload_sessions")
        .iterate()) {
        blobIds.push(r.blob_id);
        if (blobIds.length >= pageSize) {
          visit({ kind: "sessions", blobIds });
          blobIds = [];
        }
      }
      if (blobIds.length > 0) visit({ kind: "sessions", blobIds });
      let shareIds: string[] = [];
      for (const r of this.sqlite.query<{ share_id: string }, []>("SELECT share_id FROM shares").iterate()) {
        shareIds.push(r.share_id);
        if (shareIds.length >= pageSize) {
          visit({ kind: "shares", shareIds });
          shareIds = [];
        }
      }
      if (shareIds.length > 0) visit({ kind: "shares", shareIds });
      let targets: string[] = [];
      for (const r of this.sqlite
        .query<{ target: string }, []>("SELECT target FROM blob_deletions")
        .iterate()) {
        targets.push(r.target);
        if (targets.length >= pageSize) {
          visit({ kind: "deletions", targets });
          targets = [];
        }
      }
      if (targets.length > 0) visit({ kind: "deletions", targets });
      const counters = this.sqlite.query<CounterRow, []>(COUNTERS_SQL).all();
      const stuck = this.sqlite
        .query<
          { session_id: string; owner: string; folder_hash: string; finalizing_until: number | null },
          [number]
        >(`SELECT session_id, owner, folder_hash, finalizing_until FROM upload_sessions WHERE ${STUCK}`)
        .all(now);
      return { counters, stuck };
    });
    const r = read.deferred();
    return {
      counterMismatches: r.counters.map(
        (c): CounterMismatch => ({
          owner: c.owner,
          folderHash: c.folder_hash,
          hasRow: c.has_folder === 1,
          fileCount: shown(c.file_count, c.count_type),
          totalBytes: shown(c.total_bytes, c.bytes_type),
          files: c.n,
          bytes: c.bytes,
        }),
      ),
      stuckSessions: r.stuck.map(
        (s): StuckSession => ({
          sessionId: s.session_id,
          owner: s.owner,
          folderHash: s.folder_hash,
          finalizingUntil: s.finalizing_until,
        }),
      ),
    };
  }

  async fileLayouts(after: FileKey | null, limit: number): Promise<FileLayout[]> {
    const rows =
      after === null
        ? this.sqlite
            .query<FileRow, [number]>(`${FILES_SQL} ORDER BY owner, folder_hash, path_hash LIMIT ?`)
            .all(limit)
        : this.sqlite
            .query<FileRow, [string, string, Uint8Array, number]>(
              `${FILES_SQL} WHERE (owner, folder_hash, path_hash) > (?, ?, ?) ORDER BY owner, folder_hash, path_hash LIMIT ?`,
            )
            .all(after.owner, after.folderHash, after.pathHash, limit);
    return rows.map(layoutOf);
  }

  async versionLayouts(after: number | null, limit: number): Promise<VersionLayout[]> {
    return this.sqlite
      .query<FileRow & { version_id: number }, [number, number]>(
        `${VERSIONS_SQL} WHERE version_id > ? ORDER BY version_id LIMIT ?`,
      )
      .all(after ?? 0, limit)
      .map((f) => ({ ...layoutOf(f), versionId: f.version_id }));
  }

  async isReferenced(key: string): Promise<boolean> {
    const targets = [key, ...prefixesOf(key)];
    const queued = this.sqlite
      .query(`SELECT 1 FROM blob_deletions WHERE target IN (${targets.map(() => "?").join(", ")}) LIMIT 1`)
      .get(...targets);
    if (queued) return true;
    const shareId = shareIdOfKey(key);
    if (shareId !== null)
      return this.sqlite.query("SELECT 1 FROM shares WHERE share_id = ? LIMIT 1").get(shareId) !== null;
    const blobId = blobIdOfKey(key);
    if (blobId === null) return false;
    if (this.sqlite.query("SELECT 1 FROM upload_sessions WHERE blob_id = ? LIMIT 1").get(blobId)) return true;
    // The object a multipart session's upload completes into (`multipartBlobId`).
    if (
      isOneObjectBlob(blobId) &&
      this.sqlite
        .query("SELECT 1 FROM upload_sessions WHERE blob_id = ? AND upload_id IS NOT NULL LIMIT 1")
        .get(blobId.slice(1))
    )
      return true;
    const rows = this.sqlite
      .query<{ blob_id: string; chunk_count: number; chunk_gens: string }, [string]>(
        "SELECT blob_id, chunk_count, chunk_gens FROM files WHERE blob_id = ?1 UNION ALL SELECT blob_id, chunk_count, chunk_gens FROM file_versions WHERE blob_id = ?1",
      )
      .all(blobId);
    return rows.some((r) =>
      chunkKeysOf({ blobId: r.blob_id, chunkCount: r.chunk_count, chunkGens: r.chunk_gens }).includes(key),
    );
  }

  async isUploadOwned(key: string, uploadId: string): Promise<boolean> {
    if (this.sqlite.query("SELECT 1 FROM upload_sessions WHERE upload_id = ? LIMIT 1").get(uploadId))
      return true;
    return (
      this.sqlite.query("SELECT 1 FROM blob_deletions WHERE target = ? LIMIT 1").get(multipartTarget(key)) !==
      null
    );
  }

  async recountFolder(owner: string, folderHash: string, now: number): Promise<void> {
    this.sqlite
      .query(
        `INSERT INTO folders (owner, folder_hash, updated_at, file_count, total_bytes)
         SELECT ?1, ?2, ?3, count(*), coalesce(sum(size_bytes), 0) FROM files WHERE owner = ?1 AND folder_hash = ?2
         ON CONFLICT (owner, folder_hash) DO UPDATE SET file_count = excluded.file_count, total_bytes = excluded.total_bytes`,
      )
      .run(owner, folderHash, now);
  }

  async releaseStuckSession(sessionId: string, now: number, expiresAt: number): Promise<boolean> {
    const r = this.sqlite
      .query(
        `UPDATE upload_sessions SET state = 'receiving', finalizing_until = NULL, finalizing_holder = NULL, expires_at = ?2
          WHERE session_id = ?3 AND ${STUCK}`,
      )
      .run(now, expiresAt, sessionId);
    return r.changes > 0;
  }

  async totals(now: number): Promise<StoreTotals> {
    const read = this.sqlite.transaction(() => {
      const accounts = this.sqlite
        .query<{ n: number }, []>(
          "SELECT count(*) AS n FROM (SELECT owner FROM folders UNION SELECT owner FROM files)",
        )
        .get();
      const f = this.sqlite
        .query<{ n: number; plain: number; cipher: number }, []>(
          "SELECT count(*) AS n, coalesce(sum(size_bytes), 0) AS plain, coalesce(sum(ciphertext_size), 0) AS cipher FROM files",
        )
        .get();
      const folders = this.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM folders").get();
      const tokens = this.sqlite
        .query<{ n: number }, [number]>(
          "SELECT count(*) AS n FROM api_tokens WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)",
        )
        .get(now);
      return {
        accounts: accounts?.n ?? 0,
        folders: folders?.n ?? 0,
        files: f?.n ?? 0,
        plaintextBytes: f?.plain ?? 0,
        ciphertextBytes: f?.cipher ?? 0,
        activeApiTokens: tokens?.n ?? 0,
      };
    });
    return read.deferred();
  }
}
