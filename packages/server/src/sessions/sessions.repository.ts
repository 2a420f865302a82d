/**
 * @module server/sessions/sessions.repository
 * The contract of the upload-session queries (`upload_sessions`, `session_chunks`). All session
 * state that matters lives here, not in process memory, so that any API node can serve any request
 * of a session. Implementations: `src/db/sqlite/sessions.ts`, `src/db/postgres/sessions.ts`.
 * Times are Unix seconds.
 */

/** An `upload_sessions` row (byte columns as `Buffer`, times Unix seconds). */
export type SessionRow = {
  owner: string;
  createdAt: number;
  expiresAt: number;
  folderHash: string;
  pathHash: Buffer;
  ciphertextHash: string;
  ciphertextSize: number;
  blobId: string;
  chunkSize: number;
  chunkCount: number;
  sessionId: string;
  manifest: string;
  state: "receiving" | "finalizing" | "finalized";
  finalizingUntil: number | null;
  finalizingHolder: string | null;
  result: string | null;
  /**
   * The store's multipart upload whose parts are the chunks (its object: the one-object blob
   * `o<blobId>`), or null (absent: null) when each chunk is an object of its own.
   */
  uploadId?: string | null;
};
/** A `session_chunks` row. */
export type ChunkRow = {
  sessionId: string;
  chunkIndex: number;
  gen: string;
  size: number;
  receivedAt: number;
  /** The part's ETag when the session has a multipart upload; null (absent: null) otherwise. */
  etag?: string | null;
};
/** A session state. */
export type SessionState = SessionRow["state"];

/** Queries on upload sessions and their received chunks. Every method returns a Promise. */
export interface SessionsRepository {
  /** Inserts a new session row. */
  insert(row: SessionRow): Promise<void>;

  /** The session, or undefined when there is no such row (expired rows are returned until swept). */
  get(sessionId: string): Promise<SessionRow | undefined>;

  /**
   * The session, locked until the calling transaction ends (PostgreSQL `SELECT … FOR UPDATE`;
   * SQLite: a plain read, the transaction already excludes every other writer). Call inside a
   * transaction, before deciding on the row's state (a chunk record, a delete).
   */
  getForUpdate(sessionId: string): Promise<SessionRow | undefined>;

  /**
   * Serialises, until the calling transaction ends, every transaction that takes the same lock
   * for `owner` (PostgreSQL `pg_advisory_xact_lock`; SQLite: nothing to do, `BEGIN IMMEDIATE`
   * already serialises writers). Taken by the rules that read and then write one owner's rows:
   * the per-user session limit, the quota check and the revision (conflict) checks of a commit,
   * and every change of the owner's files and folder counters (delete, batch delete, rename,
   * relative paths, unregister), so that none acts on a row a concurrent write replaced.
   * Call inside a transaction, before the reads the rule depends on.
   */
  lockOwner(owner: string): Promise<void>;

  /** Number of stored sessions per state (metrics, admin stats). */
  countByState(): Promise<Record<string, number>>;

  /**
   * Live sessions of `owner` (not finalized and `expires_at > now`), and the earliest expiry
   * among them (Unix seconds; null when none).
   */
  liveCount(owner: string, now: number): Promise<{ n: number; earliest: number | null }>;

  /**
   * `receiving` → `finalizing` with the lease `finalizingUntil` (Unix seconds) held by `holder`
   * (`finalizing_holder`: the process string of `src/sessions/lease-holder.ts`, or null) and a
   * new `expiresAt`. False when the session was not `receiving` (another finalize won, or it is
   * gone).
   */
  beginFinalizing(
    sessionId: string,
    finalizingUntil: number,
    expiresAt: number,
    holder: string | null,
  ): Promise<boolean>;

  /**
   * Extends the lease of the finalize holding `lease` to `until`. False when the session is no
   * longer `finalizing` under that lease (the lease ran out and a sweeper took the session back).
   */
  renewFinalizing(sessionId: string, lease: number, until: number): Promise<boolean>;

  /**
   * Ends the finalize holding `lease`: `finalizing` → `to` (lease and holder cleared) with the extra columns
   * `set`. False when the session is no longer `finalizing` under that lease, in which case
   * nothing changes.
   */
  endFinalizing(
    sessionId: string,
    lease: number,
    to: "receiving" | "finalized",
    set: Partial<Pick<SessionRow, "expiresAt" | "result" | "uploadId">>,
  ): Promise<boolean>;

  /**
   * Returns every `finalizing` session whose lease ran out (`finalizing_until <= now`, or null:
   * left by a version without leases) to `receiving` with `expires_at = expiresAt` and the lease
   * and holder cleared (the node that finalized it died or stalled).
   * @returns how many sessions were returned.
   */
  releaseExpiredFinalizing(now: number, expiresAt: number): Promise<number>;

  /**
   * Every `finalizing` session whose lease has not run out at `now` and names its holder: the
   * candidates for a take-over when that holder is provably dead.
   */
  heldFinalizing(
    now: number,
  ): Promise<Pick<SessionRow, "sessionId" | "finalizingUntil" | "finalizingHolder">[]>;

  /**
   * Takes over the lease of a dead holder: `finalizing` under exactly `lease` and `holder` →
   * `receiving` with `expires_at = expiresAt`, lease and holder cleared. False when the session
   * is no longer finalizing under that lease and holder (released, ended or taken over already),
   * in which case nothing changes. The caller must have proven `holder` dead
   * (`LeaseHolders.isDead`); a live holder's finalize is never taken over.
   */
  takeOverFinalizing(sessionId: string, lease: number, holder: string, expiresAt: number): Promise<boolean>;

  /** Sets `expires_at` (Unix seconds). */
  setExpiry(sessionId: string, expiresAt: number): Promise<void>;

  /** Deletes the session and its chunk rows; true when the session row existed. */
  remove(sessionId: string): Promise<boolean>;

  /** The chunk row at `index`, or undefined when that chunk was not received. */
  chunk(sessionId: string, index: number): Promise<ChunkRow | undefined>;

  /** Records (or replaces) the chunk at `row.chunkIndex`. */
  putChunk(row: ChunkRow): Promise<void>;

  /**
   * The session stops using its multipart upload `uploadId` (a finalize consumed it, or it is
   * gone): `upload_id` becomes null and every chunk row is removed, provided the session still
   * names `uploadId`. False (nothing changed) otherwise.
   */
  leaveMultipart(sessionId: string, uploadId: string): Promise<boolean>;

  /** Received chunks in index order. */
  chunks(sessionId: string): Promise<ChunkRow[]>;

  /** Received chunk indices in ascending order. */
  chunkIndices(sessionId: string): Promise<number[]>;

  /**
   * Up to `limit` sessions idle past their expiry at `now` (`expires_at <= now`) in state
   * `receiving` or `finalized`; `finalizing` ones are never returned. Inside a transaction the
   * rows are locked for it and rows another transaction holds are skipped (PostgreSQL
   * `FOR UPDATE SKIP LOCKED`), so concurrent sweepers collect disjoint sets.
   */
  expired(now: number, limit: number): Promise<SessionRow[]>;
}
