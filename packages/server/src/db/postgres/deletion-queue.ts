/**
 * @module server/db/postgres/deletion-queue
 * `DeletionQueueRepository` on PostgreSQL (contract: `src/workers/deletion-queue.repository.ts`).
 * Sweepers on every node claim due rows with `FOR UPDATE SKIP LOCKED` and a lease
 * (`leased_until`), so that each row is processed by one sweeper at a time.
 */
import { and, eq, gt, isNotNull, isNull, sql } from "drizzle-orm";
import {
  type DeletionQueueRepository,
  type DeletionRow,
  WRITE_INTENT_LEASE_SECONDS,
} from "../../workers/deletion-queue.repository.ts";
import type { PgConn } from "./conn.ts";
import { blobDeletions } from "./schema.ts";

/** The deletion queue and write-intent log on PostgreSQL. */
export class PgDeletionQueueRepository implements DeletionQueueRepository {
  constructor(private readonly db: PgConn) {}

  async enqueue(targets: string[], notBefore: number): Promise<void> {
    if (targets.length === 0) return;
    await this.db.insert(blobDeletions).values(targets.map((target) => ({ target, notBefore })));
  }

  async reserve(target: string, now: number, holder: string | null = null): Promise<number> {
    const [row] = await this.db
      .insert(blobDeletions)
      .values({ target, notBefore: now + WRITE_INTENT_LEASE_SECONDS, holder })
      .returning({ id: blobDeletions.id });
    if (!row) throw new Error("INSERT … RETURNING gave no row");
    return row.id;
  }

  async claim(id: number, now: number): Promise<boolean> {
    const rows = await this.db
      .delete(blobDeletions)
      .where(
        and(eq(blobDeletions.id, id), gt(blobDeletions.notBefore, now), isNull(blobDeletions.leasedUntil)),
      )
      .returning({ id: blobDeletions.id });
    return rows.length > 0;
  }

  async release(id: number, target: string, now: number): Promise<void> {
    const rows = await this.db
      .update(blobDeletions)
      .set({ notBefore: now, holder: null })
      .where(and(eq(blobDeletions.id, id), isNull(blobDeletions.leasedUntil)))
      .returning({ id: blobDeletions.id });
    if (rows.length === 0) await this.enqueue([target], now);
  }

  async intentHolders(now: number): Promise<string[]> {
    const { holder, notBefore, leasedUntil } = blobDeletions;
    const rows = await this.db
      .selectDistinct({ holder })
      .from(blobDeletions)
      .where(and(isNotNull(holder), gt(notBefore, now), isNull(leasedUntil)));
    return rows.map((r) => r.holder as string);
  }

  async releaseHolder(holder: string, now: number): Promise<number> {
    const t = blobDeletions;
    const rows = await this.db
      .update(t)
      .set({ notBefore: now, holder: null })
      .where(and(eq(t.holder, holder), gt(t.notBefore, now), isNull(t.leasedUntil)))
      .returning({ id: t.id });
    return rows.length;
  }

  async claimDue(now: number, limit: number, leaseUntil: number): Promise<DeletionRow[]> {
    const t = blobDeletions;
    const rows = await this.db.execute<Record<string, unknown>>(sql`
      UPDATE ${t} SET leased_until = ${leaseUntil}
      WHERE ${t.id} IN (
        SELECT id FROM ${t}
        WHERE ${t.notBefore} <= ${now} AND (${t.leasedUntil} IS NULL OR ${t.leasedUntil} <= ${now})
        ORDER BY id LIMIT ${limit} FOR UPDATE SKIP LOCKED)
      RETURNING id, target, not_before, attempts, last_error, leased_until, holder`);
    return [...rows]
      .map((r) => ({
        id: Number(r.id),
        target: String(r.target),
        notBefore: Number(r.not_before),
        attempts: Number(r.attempts),
        lastError: r.last_error == null ? null : String(r.last_error),
        leasedUntil: r.leased_until == null ? null : Number(r.leased_until),
        holder: r.holder == null ? null : String(r.holder),
      }))
      .sort((a, b) => a.id - b.id);
  }

  async done(id: number): Promise<void> {
    await this.db.delete(blobDeletions).where(eq(blobDeletions.id, id));
  }

  async failed(id: number, retryAt: number, error: string): Promise<void> {
    await this.db
      .update(blobDeletions)
      .set({
        attempts: sql`${blobDeletions.attempts} + 1`,
        notBefore: retryAt,
        lastError: error.slice(0, 500),
        leasedUntil: null,
      })
      .where(eq(blobDeletions.id, id));
  }

  async targets(): Promise<string[]> {
    const rows = await this.db.select({ target: blobDeletions.target }).from(blobDeletions);
    return rows.map((r) => r.target);
  }

  async stats(now: number): Promise<{ depth: number; oldestDueAgeSeconds: number }> {
    const [r] = await this.db
      .select({
        depth: sql<number>`count(*)`.mapWith(Number),
        oldestDue: sql<
          string | null
        >`min(CASE WHEN ${blobDeletions.notBefore} <= ${now} THEN ${blobDeletions.notBefore} END)`,
      })
      .from(blobDeletions);
    return {
      depth: r?.depth ?? 0,
      oldestDueAgeSeconds: r?.oldestDue == null ? 0 : now - Number(r.oldestDue),
    };
  }
}
