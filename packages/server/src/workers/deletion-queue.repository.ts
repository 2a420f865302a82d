/**
 * @module server/workers/deletion-queue.repository
 * The contract of the persisted blob deletion queue (`blob_deletions`), which is also the
 * write-intent log. Implementations: `src/db/sqlite/deletion-queue.ts`,
 * `src/db/postgres/deletion-queue.ts`. Times are Unix seconds.
 *
 * - Deletions: producers call `enqueue` inside the transaction that stops referencing the
 *   objects, so nothing is deleted before the row that replaces it is committed, and a crash
 *   never loses a pending deletion. Replaced or deleted files' objects are queued `grace`
 *   seconds ahead so that downloads in flight finish (while versions are kept, when their
 *   version expires instead: docs/versions.md).
 * - Write intents: every write path calls `reserve` before the first byte of an object lands:
 *   a row queuing the object's deletion one lease ahead. The transaction that starts referencing
 *   the object cancels the row (`claim`); a failed write `release`s it (due now). A crash at any
 *   instruction therefore leaves every stored byte either referenced by a committed row or queued
 *   for deletion, and a sweeper reclaims it once the lease ends, or as soon as the process that
 *   reserved it (`holder`, see src/sessions/lease-holder.ts) is provably dead: a crashed
 *   server's writes are reclaimed at its restart, not hours later (docs/design.md#write-intents).
 * - Sweepers (one per node) take due rows with `claimDue`, which leases them for a while so that
 *   no other sweeper takes the same row; then delete the objects, then the row (`done`), or
 *   postpone it (`failed`). A sweeper that dies leaves its rows to be claimed again after the lease.
 */

/**
 * A queued deletion: `target` is an object key, a prefix ending in `/`, or `<key>?uploads`: every
 * multipart upload in progress of object `key` (`multipartTarget` in src/storage/layout.ts).
 */
export type DeletionRow = {
  id: number;
  target: string;
  notBefore: number;
  attempts: number;
  lastError: string | null;
  leasedUntil: number | null;
  holder: string | null;
};

/**
 * Lease of a write intent, seconds: longer than any write (a chunk PUT or a single-shot store)
 * can take. A write whose lease ran out before its commit fails (`claim` returns false).
 */
export const WRITE_INTENT_LEASE_SECONDS = 6 * 3600;

/** Seconds a sweeper holds the rows it claimed (`claimDue`) before another sweeper may take them. */
export const DELETION_CLAIM_LEASE_SECONDS = 600;

/** Queries on the deletion queue. Every method returns a Promise. */
export interface DeletionQueueRepository {
  /** Queues deletion of object keys or prefixes, due at `notBefore` (Unix seconds). */
  enqueue(targets: string[], notBefore: number): Promise<void>;

  /**
   * Records the intent to write `target` (an object key or a blob prefix) by process `holder`
   * (`LeaseHolders.self`; null or absent when unknown): queues its deletion at
   * `now + WRITE_INTENT_LEASE_SECONDS`. Call (committed) before the first byte is stored.
   * @returns the intent id for `claim`/`release`/`done`.
   */
  reserve(target: string, now: number, holder?: string | null): Promise<number>;

  /** The distinct holders of intents still within their lease at `now` and unclaimed by a sweeper. */
  intentHolders(now: number): Promise<string[]>;

  /**
   * Makes every intent of `holder` still within its lease at `now` due now, and forgets its
   * holder (a sweeper then deletes its objects): call only for a provably dead holder.
   * @returns how many intents fell due.
   */
  releaseHolder(holder: string, now: number): Promise<number>;

  /**
   * Cancels the intent `id` because the objects are now referenced; call inside the transaction
   * that references them. False when the lease already ran out or a sweeper claimed the row (it
   * may be deleting the objects): the caller must then not reference them.
   */
  claim(id: number, now: number): Promise<boolean>;

  /**
   * A write failed or was refused: the objects of intent `id` (`target`) are due for deletion at
   * `now`. When the row is gone or a sweeper holds it (it may have deleted the objects before the
   * bytes landed), a new deletion of `target` due now is queued.
   */
  release(id: number, target: string, now: number): Promise<void>;

  /**
   * Claims up to `limit` rows due at `now` (`not_before <= now`) that no sweeper holds (or whose
   * claim lease ran out), oldest first, leasing them until `leaseUntil`. Concurrent callers, on
   * any node, get disjoint rows (PostgreSQL `FOR UPDATE SKIP LOCKED`; SQLite: one writer).
   */
  claimDue(now: number, limit: number, leaseUntil: number): Promise<DeletionRow[]>;

  /** Removes a processed row (or drops an intent whose write stored nothing). */
  done(id: number): Promise<void>;

  /** Records a failed attempt, releases the claim and postpones the row to `retryAt`; `error` is cut to 500 characters. */
  failed(id: number, retryAt: number, error: string): Promise<void>;

  /** Every queued target (deletions and write intents), for fsck. */
  targets(): Promise<string[]>;

  /**
   * Rows in the queue, and seconds since the oldest due row became due at `now` (0 when no row is
   * due): how far the sweepers are behind.
   */
  stats(now: number): Promise<{ depth: number; oldestDueAgeSeconds: number }>;
}
