/**
 * @module server/db/sqlite/deletion-queue
 * `DeletionQueueRepository` on SQLite (`blob_deletions`). Every method runs its statements
 * synchronously, so a call is atomic with respect to the store's gate; `claimDue` is one
 * `UPDATE … RETURNING`, so two sweepers (one writer at a time) never claim the same row.
 */
import { and, eq, gt, isNotNull, isNull, sql } from "drizzle-orm";
import {
  type DeletionQueueRepository,
  type DeletionRow,
  WRITE_INTENT_LEASE_SECONDS,
} from "../../workers/deletion-queue.repository.ts";
import { changes, type Db } from "../client.ts";
import { blobDeletions } from "./schema.ts";

/** The statements of every upload (write intent reserved, then claimed), prepared once. */
function prepareIntents(db: Db) {
  return {
    reserve: db
      .insert(blobDeletions)
      .values({
        target: sql.placeholder("target"),
        notBefore: sql.placeholder("notBefore"),
        holder: sql.placeholder("holder"),
      })
      .returning({ id: blobDeletions.id })
      .prepare(),
    claim: db
      .delete(blobDeletions)
      .where(
        and(
          eq(blobDeletions.id, sql.placeholder("id")),
          gt(blobDeletions.notBefore, sql.placeholder("now")),
          isNull(blobDeletions.leasedUntil),
        ),
      )
      .prepare(),
  };
}

/** The deletion queue on SQLite. */
export class SqliteDeletionQueueRepository implements DeletionQueueRepository {
  private readonly intents: ReturnType<typeof prepareIntents>;

  constructor(private readonly db: Db) {
    this.intents = prepareIntents(db);
  }

  async enqueue(targets: string[], notBefore: number): Promise<void> {
    this.insert(targets, notBefore);
  }

  private insert(targets: string[], notBefore: number): void {
    if (targets.length === 0) return;
    this.db
      .insert(blobDeletions)
      .values(targets.map((target) => ({ target, notBefore })))
      .run();
  }

  async reserve(target: string, now: number, holder: string | null = null): Promise<number> {
    const row = this.intents.reserve.get({ target, notBefore: now + WRITE_INTENT_LEASE_SECONDS, holder });
    if (!row) throw new Error("write intent insert returned no row");
    return row.id;
  }

  async claim(id: number, now: number): Promise<boolean> {
    return changes(this.intents.claim.run({ id, now })) > 0;
  }

  async release(id: number, target: string, now: number): Promise<void> {
    const r = this.db
      .update(blobDeletions)
      .set({ notBefore: now, holder: null })
      .where(and(eq(blobDeletions.id, id), isNull(blobDeletions.leasedUntil)))
      .run();
    if (changes(r) === 0) this.insert([target], now);
  }

  async intentHolders(now: number): Promise<string[]> {
    const { holder, notBefore, leasedUntil } = blobDeletions;
    return this.db
      .selectDistinct({ holder })
      .from(blobDeletions)
      .where(and(isNotNull(holder), gt(notBefore, now), isNull(leasedUntil)))
      .all()
      .map((r) => r.holder as string);
  }

  async releaseHolder(holder: string, now: number): Promise<number> {
    const t = blobDeletions;
    const r = this.db
      .update(t)
      .set({ notBefore: now, holder: null })
      .where(and(eq(t.holder, holder), gt(t.notBefore, now), isNull(t.leasedUntil)))
      .run();
    return changes(r);
  }

  async claimDue(now: number, limit: number, leaseUntil: number): Promise<DeletionRow[]> {
    const { id, notBefore, leasedUntil } = blobDeletions;
    const due = sql`${notBefore} <= ${now} AND (${leasedUntil} IS NULL OR ${leasedUntil} <= ${now})`;
    return this.db
      .update(blobDeletions)
      .set({ leasedUntil: leaseUntil })
      .where(sql`${id} IN (SELECT ${id} FROM ${blobDeletions} WHERE ${due} ORDER BY ${id} LIMIT ${limit})`)
      .returning()
      .all()
      .sort((a, b) => a.id - b.id);
  }

  async done(id: number): Promise<void> {
    this.db.delete(blobDeletions).where(eq(blobDeletions.id, id)).run();
  }

  async failed(id: number, retryAt: number, error: string): Promise<void> {
    this.db
      .update(blobDeletions)
      .set({
        attempts: sql`${blobDeletions.attempts} + 1`,
        notBefore: retryAt,
        leasedUntil: null,
        lastError: error.slice(0, 500),
      })
      .where(eq(blobDeletions.id, id))
      .run();
  }

  async targets(): Promise<string[]> {
    return this.db
      .select({ target: blobDeletions.target })
      .from(blobDeletions)
      .all()
      .map((r) => r.target);
  }

  async stats(now: number): Promise<{ depth: number; oldestDueAgeSeconds: number }> {
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
