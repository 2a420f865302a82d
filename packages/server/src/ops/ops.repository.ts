/**
 * @module server/ops/ops.repository
 * What the operator tools (`fsck`, src/ops/fsck.ts; `esync-admin stats`, src/admin/stats.ts) read
 * and repair in the metadata database, on either dialect. Implementations:
 * `src/db/sqlite/ops.ts`, `src/db/postgres/ops.ts`.
 */
import { type BlobObject, blobObjects, chunkKey, isOneObjectBlob } from "../storage/layout.ts";

/** The chunk layout of one file row: what its chunk objects are called and how long they are. */
export interface FileLayout {
  owner: string;
  folderHash: string;
  pathHash: Uint8Array;
  blobId: string;
  /** Bytes. */
  chunkSize: number;
  chunkCount: number;
  /** Bytes. */
  ciphertextSize: number;
  /** JSON array of the chunks' generations (as stored; may be malformed in a damaged row). */
  chunkGens: string;
}

/** The chunk layout of one kept version (docs/versions.md), and its id (the order `versionLayouts` pages in). */
export interface VersionLayout extends FileLayout {
  versionId: number;
}

/** A folder whose counters differ from its files (or are not non-negative integers, or whose row is missing). */
export interface CounterMismatch {
  owner: string;
  folderHash: string;
  /** False when files name the folder but it has no row. */
  hasRow: boolean;
  /** The stored `file_count` and `total_bytes` as text for a person (SQLite adds a non-integer's type). */
  fileCount: string;
  totalBytes: string;
  /** What its files give: their number and the sum of their `size_bytes`. */
  files: number;
  bytes: number;
}

/** A session in `finalizing` whose lease ran out, or that has none. */
export interface StuckSession {
  sessionId: string;
  owner: string;
  folderHash: string;
  /** Unix seconds; null for a session left by a version without leases. */
  finalizingUntil: number | null;
}

/** A file row's primary key (the order `fileLayouts` pages in). */
export interface FileKey {
  owner: string;
  folderHash: string;
  pathHash: Uint8Array;
}

/**
 * One page of what the database accounts for in the blob store, as `OpsRepository.snapshot`
 * reads it: file rows and kept versions (their chunk objects), the blob ids of stored upload sessions (any state,
 * expired or not yet swept: every object under their blob prefix), the ids of stored file shares
 * (every object under `s/<share_id>/`, docs/sharing.md), or the targets of `blob_deletions`
 * (queued deletions and write intents: object keys, or prefixes ending in `/`).
 */
export type AccountedPage =
  | { kind: "files"; rows: FileLayout[] }
  | { kind: "sessions"; blobIds: string[] }
  | { kind: "shares"; shareIds: string[] }
  | { kind: "deletions"; targets: string[] };

/** The small part of an fsck snapshot, returned whole. */
export interface FsckSnapshot {
  counterMismatches: CounterMismatch[];
  /** Stuck at the snapshot's `now`. */
  stuckSessions: StuckSession[];
}

/** Whole-database aggregates of `esync-admin stats`. */
export interface StoreTotals {
  /** Distinct addresses owning a folder or a file. */
  accounts: number;
  folders: number;
  files: number;
  /** Sum of the files' `size_bytes` (plaintext, as manifests declare it). */
  plaintextBytes: number;
  /** Sum of the files' `ciphertext_size`. */
  ciphertextBytes: number;
  /** API tokens neither revoked nor expired at `now`. */
  activeApiTokens: number;
}

/** Queries and repairs of the operator tools. */
export interface OpsRepository {
  /**
   * Reads, from one snapshot, everything the database accounts for in the blob store, handed to
   * `visit` in pages of at most `pageSize` rows (every file row's chunk layout, every session's
   * blob id, every deletion target), then returns the folder counters that differ from a
   * recount and the sessions stuck at `now` (Unix seconds). Memory stays at one page of rows
   * however large the database: `visit` must not keep the pages, and runs synchronously (on
   * SQLite the snapshot is one synchronous read transaction through the store's gate; on
   * PostgreSQL one `REPEATABLE READ READ ONLY` transaction read by keyset pages). Call it on
   * `store.repos`, not inside a store transaction (PostgreSQL would read at the transaction's
   * isolation level).
   */
  snapshot(now: number, pageSize: number, visit: (page: AccountedPage) => void): Promise<FsckSnapshot>;
  /**
   * Up to `limit` file layouts after the file `after` (null: from the first) in primary-key
   * order (owner, folder hash, path hash bytewise): keyset pages, each its own statement, so a
   * caller walks every file with one page in memory.
   */
  fileLayouts(after: FileKey | null, limit: number): Promise<FileLayout[]>;

  /**
   * Up to `limit` layouts of kept versions (docs/versions.md) with `version_id` above `after`
   * (null: from the first), in `version_id` order: keyset pages, as `fileLayouts`.
   */
  versionLayouts(after: number | null, limit: number): Promise<VersionLayout[]>;
  /**
   * True when the database still accounts for object `key`: a file row or a kept version lists
   * it among its chunk objects, an upload session has its blob, or a `blob_deletions` target is `key` or one of its
   * prefixes. fsck asks again just before deleting an orphan.
   */
  isReferenced(key: string): Promise<boolean>;
  /**
   * True when the database accounts for the multipart upload `uploadId` of object `key`: a session
   * names it (`upload_id`), or a `blob_deletions` target aborts the uploads of `key` (a write
   * intent of a session being opened, or a queued abort). fsck asks before aborting one.
   */
  isUploadOwned(key: string, uploadId: string): Promise<boolean>;
  /**
   * Sets the counters of folder (`owner`, `folderHash`) to its files' count and byte sum, creating
   * a row with no registration when it is missing. Call it inside a transaction, after
   * `sessions.lockOwner(owner)` (which serialises it with every write of the owner's files). No
   * counter change of a concurrent writer may be lost, with or without that lock: the change
   * lands either in the recount or after it.
   */
  recountFolder(owner: string, folderHash: string, now: number): Promise<void>;
  /**
   * Returns a session stuck at `now` to `receiving` with `expiresAt` (Unix seconds), chunks
   * intact. Conditional: false when the session is no longer stuck (a live finalize renewed its
   * lease, a sweeper released it, it was deleted).
   */
  releaseStuckSession(sessionId: string, now: number, expiresAt: number): Promise<boolean>;
  /** The aggregates of `StoreTotals` at `now` (Unix seconds). */
  totals(now: number): Promise<StoreTotals>;
}

/** Every prefix (ending in `/`) of `key`, shortest first: `a/`, `a/b/`, … */
export function prefixesOf(key: string): string[] {
  const out: string[] = [];
  for (let i = key.indexOf("/"); i >= 0; i = key.indexOf("/", i + 1)) out.push(key.slice(0, i + 1));
  return out;
}

/** The parsed `chunk_gens` of `row` (a malformed value reads as none). */
function gensOf(row: Pick<FileLayout, "chunkGens">): string[] {
  let gens: unknown = [];
  try {
    gens = JSON.parse(row.chunkGens);
  } catch {}
  return Array.isArray(gens) ? gens.map((g) => String(g ?? "")) : [];
}

/**
 * The object keys of `row`'s blob in byte order: its chunks' for a chunked blob, its one object
 * for a one-object blob (src/storage/layout.ts).
 */
export function chunkKeysOf(row: Pick<FileLayout, "blobId" | "chunkCount" | "chunkGens">): string[] {
  if (isOneObjectBlob(row.blobId)) return [chunkKey(row.blobId, 0, "")];
  const gens = gensOf(row);
  const keys: string[] = [];
  for (let i = 0; i < row.chunkCount; i++) keys.push(chunkKey(row.blobId, i, gens[i] ?? ""));
  return keys;
}

/** The objects of `row`'s blob with the bytes each must hold (`blobObjects`). */
export function objectsOf(row: FileLayout): BlobObject[] {
  return blobObjects({
    blobId: row.blobId,
    chunkSize: row.chunkSize,
    chunkCount: row.chunkCount,
    size: row.ciphertextSize,
    gens: gensOf(row),
  });
}
