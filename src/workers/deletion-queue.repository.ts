/**
 * @module workers/deletion-queue.repository
 * The persisted blob deletion queue (`blob_deletions`). Producers call `enqueue` inside the
 * transaction that stops referencing the objects, so nothing is deleted before the row that
 * replaces it is committed, and a crash never loses a pending deletion.
 */
import { asc, eq, lte, sql } from "drizzle-orm";
import type { Db } from "../db/client.ts";
import { blobDeletions } from "../db/schema.ts";

/** A queued deletion: `target` is an object key or a prefix ending in `/`. */
export type DeletionRow = typeof blobDeletions.$inferSelect;

/** Repository of the deletion queue. */
export class DeletionQueueRepository {
  constructor(private readonly db: Db) {}

  /** Queues deletion of object keys or prefixes, due at `notBefore` (Unix seconds). */
  enqueue(targets: string[], notBefore: number): void {
    if (targets.length === 0) return;
    this.db
      .insert(blobDeletions)
      .values(targets.map((target) => ({ target, notBefore })))
      .run();
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
