/**
 * @module workers/deletion-queue.repository
 * The persisted blob deletion queue (`blob_deletions`), which is also the write-intent log.
 *
 * - Deletions: producers call `enqueue` inside the transaction that stops referencing the
 *   objects, so nothing is deleted before the row that replaces it is committed, and a crash
 *   never loses a pending deletion. Replaced or deleted files' objects are queued `grace`
 *   seconds ahead so that downloads in flight finish.
 * - Write intents: every write path calls `reserve` before the first byte of an object lands:
 *   a row queuing the object's deletion one lease ahead. The transaction that starts referencing
 *   the object cancels the row (`claim`); a failed write `release`s it (due now). A crash at any
 *   instruction therefore leaves every stored byte either referenced by a committed row or queued
 *   for deletion, and the sweeper reclaims it once the lease ends.
 */
import { and, asc, eq, gt, lte, sql } from "drizzle-orm";
import { type DeletionRow, WRITE_INTENT_LEASE_SECONDS } from "../../workers/deletion-queue.repository.ts";
import { changes, type Db } from "../client.ts";
import { blobDeletions } from "../schema.ts";

/** Repository of the deletion queue. */
export class SqliteDeletionQueueRepository {
  constructor(private readonly db: Db) {}

  /** Queues deletion of object keys or prefixes, due at `notBefore` (Unix seconds). */
  enqueue(targets: string[], notBefore: number): void {
    if (targets.length === 0) return;
    this.db
      .insert(blobDeletions)
      .values(targets.map((target) => ({ target, notBefore })))
      .run();
  }

  /**
   * Records the intent to write `target` (an object key or a blob prefix): queues its deletion
   * at `now + WRITE_INTENT_LEASE_SECONDS`. Call (committed) before the first byte is stored.
   * @returns the intent id for `claim`/`release`.
   */
  reserve(target: string, now: number): number {
    const row = this.db
      .insert(blobDeletions)
      .values({ target, notBefore: now + WRITE_INTENT_LEASE_SECONDS })
      .returning({ id: blobDeletions.id })
      .get();
    return row.id;
  }

  /**
   * Cancels the intent `id` because the objects are now referenced; call inside the transaction
   * that references them. False when the lease already ran out (the sweeper may be deleting the
   * objects): the caller must then not reference them.
   */
  claim(id: number, now: number): boolean {
    return (
      changes(
        this.db
          .delete(blobDeletions)
          .where(and(eq(blobDeletions.id, id), gt(blobDeletions.notBefore, now)))
          .run(),
      ) > 0
    );
  }

  /**
   * A write failed or was refused: the objects of intent `id` (`target`) are due for deletion at
   * `now`. When the lease had run out and the sweeper already processed the row (possibly before
   * the bytes landed), the deletion is queued again.
   */
  release(id: number, target: string, now: number): void {
    const r = this.db.update(blobDeletions).set({ notBefore: now }).where(eq(blobDeletions.id, id)).run();
    if (changes(r) === 0) this.enqueue([target], now);
  }

  /** Up to `limit` rows due at `now`, oldest first. */
  due(now: number, limit: number): DeletionRow[] {
    return this.db
      .select()
      .from(blobDeletions)
      .where(lte(blobDeletions.notBefore, now))
      .orderBy(asc(blobDeletions.id))
      .limit(limit)
      .all();
  }

  /** Every queued target (deletions and write intents), for fsck. */
  targets(): string[] {
    return this.db
      .select({ target: blobDeletions.target })
      .from(blobDeletions)
      .all()
      .map((r) => r.target);
  }

  /** Removes a processed row. */
  done(id: number): void {
    this.db.delete(blobDeletions).where(eq(blobDeletions.id, id)).run();
  }

  /** Records a failed attempt and postpones the row to `retryAt`. */
  failed(id: number, retryAt: number, error: string): void {
    this.db
      .update(blobDeletions)
      .set({
        attempts: sql`${blobDeletions.attempts} + 1`,
        notBefore: retryAt,
        lastError: error.slice(0, 500),
      })
      .where(eq(blobDeletions.id, id))
      .run();
  }

  /**
   * Rows in the queue, and seconds since the oldest due row became due at `now` (Unix seconds;
   * 0 when no row is due): how far the sweeper is behind.
   */
  stats(now: number): { depth: number; oldestDueAgeSeconds: number } {
    const r = this.db
      .select({
        depth: sql<number>`count(*)`,
        oldestDue: sql<
          number | null
        >`min(case when ${blobDeletions.notBefore} <= ${now} then ${blobDeletions.notBefore} end)`,
      })
      .from(blobDeletions)
      .get();
    return { depth: r?.depth ?? 0, oldestDueAgeSeconds: r?.oldestDue == null ? 0 : now - r.oldestDue };
  }
}
