/**
 * @module server/db/postgres/sessions
 * `SessionsRepository` on PostgreSQL (contract: `src/sessions/sessions.repository.ts`). The
 * per-owner lock is a transaction-scoped advisory lock on a 64-bit hash of the owner; rows a
 * transition depends on are read `FOR UPDATE`; concurrent sweepers skip each other's rows.
 * PostgreSQL text cannot hold U+0000, so a session id containing it names no session (SQLite
 * would simply find no row): such look-ups answer "none" without a query.
 */
import { and, asc, eq, gt, inArray, isNotNull, lte, ne, sql } from "drizzle-orm";
import type { ChunkRow, SessionRow, SessionsRepository } from "../../sessions/sessions.repository.ts";
import type { PgConn } from "./conn.ts";
import { sessionChunks, uploadSessions } from "./schema.ts";

/** True when `id` cannot be stored in a PostgreSQL text column (so no session has it). */
function unstorable(id: string): boolean {
  return id.includes("\u0000");
}

/** Upload sessions and their received chunks on PostgreSQL. */
export class PgSessionsRepository implements SessionsRepository {
  constructor(private readonly db: PgConn) {}

  async insert(row: SessionRow): Promise<void> {
    await this.db.insert(uploadSessions).values(row);
  }

  async get(sessionId: string): Promise<SessionRow | undefined> {
    if (unstorable(sessionId)) return undefined;
    const [row] = await this.db.select().from(uploadSessions).where(eq(uploadSessions.sessionId, sessionId));
    return row;
  }

  async getForUpdate(sessionId: string): Promise<SessionRow | undefined> {
    if (unstorable(sessionId)) return undefined;
    const [row] = await this.db
      .select()
      .from(uploadSessions)
      .where(eq(uploadSessions.sessionId, sessionId))
      .for("update");
    return row;
  }

  async lockOwner(owner: string): Promise<void> {
    await this.db.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${owner}, 0))`);
  }

  async countByState(): Promise<Record<string, number>> {
    const rows = await this.db
      .select({ state: uploadSessions.state, n: sql<number>`count(*)`.mapWith(Number) })
      .from(uploadSessions)
      .groupBy(uploadSessions.state);
    return Object.fromEntries(rows.map((r) => [r.state, r.n]));
  }

  async liveCount(owner: string, now: number): Promise<{ n: number; earliest: number | null }> {
    const [r] = await this.db
      .select({
        n: sql<number>`count(*)`.mapWith(Number),
        earliest: sql<string | null>`min(${uploadSessions.expiresAt})`,
      })
      .from(uploadSessions)
      .where(
        and(
          eq(uploadSessions.owner, owner),
          ne(uploadSessions.state, "finalized"),
          gt(uploadSessions.expiresAt, now),
        ),
      );
    return { n: r?.n ?? 0, earliest: r?.earliest == null ? null : Number(r.earliest) };
  }

  async beginFinalizing(
    sessionId: string,
    finalizingUntil: number,
    expiresAt: number,
    holder: string | null,
  ): Promise<boolean> {
    if (unstorable(sessionId)) return false;
    const rows = await this.db
      .update(uploadSessions)
      .set({ state: "finalizing", finalizingUntil, finalizingHolder: holder, expiresAt })
      .where(and(eq(uploadSessions.sessionId, sessionId), eq(uploadSessions.state, "receiving")))
      .returning({ id: uploadSessions.sessionId });
    return rows.length > 0;
  }

  async renewFinalizing(sessionId: string, lease: number, until: number): Promise<boolean> {
    const rows = await this.db
      .update(uploadSessions)
      .set({ finalizingUntil: until })
      .where(this.holding(sessionId, lease))
      .returning({ id: uploadSessions.sessionId });
    return rows.length > 0;
  }

  async endFinalizing(
    sessionId: string,
    lease: number,
    to: "receiving" | "finalized",
    set: Partial<Pick<SessionRow, "expiresAt" | "result" | "uploadId">>,
  ): Promise<boolean> {
    const rows = await this.db
      .update(uploadSessions)
      .set({ ...set, state: to, finalizingUntil: null, finalizingHolder: null })
      .where(this.holding(sessionId, lease))
      .returning({ id: uploadSessions.sessionId });
    return rows.length > 0;
  }

  /** The session is `finalizing` under `lease`. */
  private holding(sessionId: string, lease: number) {
    return and(
      eq(uploadSessions.sessionId, sessionId),
      eq(uploadSessions.state, "finalizing"),
      eq(uploadSessions.finalizingUntil, lease),
    );
  }

  async releaseExpiredFinalizing(now: number, expiresAt: number): Promise<number> {
    const rows = await this.db
      .update(uploadSessions)
      .set({ state: "receiving", finalizingUntil: null, finalizingHolder: null, expiresAt })
      .where(
        and(
          eq(uploadSessions.state, "finalizing"),
          isNotNull(uploadSessions.finalizingUntil),
          lte(uploadSessions.finalizingUntil, now),
        ),
      )
      .returning({ id: uploadSessions.sessionId });
    return rows.length;
  }

  heldFinalizing(
    now: number,
  ): Promise<Pick<SessionRow, "sessionId" | "finalizingUntil" | "finalizingHolder">[]> {
    return this.db
      .select({
        sessionId: uploadSessions.sessionId,
        finalizingUntil: uploadSessions.finalizingUntil,
        finalizingHolder: uploadSessions.finalizingHolder,
      })
      .from(uploadSessions)
      .where(
        and(
          eq(uploadSessions.state, "finalizing"),
          gt(uploadSessions.finalizingUntil, now),
          isNotNull(uploadSessions.finalizingHolder),
        ),
      );
  }

  async takeOverFinalizing(
    sessionId: string,
    lease: number,
    holder: string,
    expiresAt: number,
  ): Promise<boolean> {
    if (unstorable(sessionId)) return false;
    const rows = await this.db
      .update(uploadSessions)
      .set({ state: "receiving", finalizingUntil: null, finalizingHolder: null, expiresAt })
      .where(and(this.holding(sessionId, lease), eq(uploadSessions.finalizingHolder, holder)))
      .returning({ id: uploadSessions.sessionId });
    return rows.length > 0;
  }

  async setExpiry(sessionId: string, expiresAt: number): Promise<void> {
    if (unstorable(sessionId)) return;
    await this.db.update(uploadSessions).set({ expiresAt }).where(eq(uploadSessions.sessionId, sessionId));
  }

  async remove(sessionId: string): Promise<boolean> {
    if (unstorable(sessionId)) return false;
    await this.db.delete(sessionChunks).where(eq(sessionChunks.sessionId, sessionId));
    const rows = await this.db
      .delete(uploadSessions)
      .where(eq(uploadSessions.sessionId, sessionId))
      .returning({ id: uploadSessions.sessionId });
    return rows.length > 0;
  }

  async chunk(sessionId: string, index: number): Promise<ChunkRow | undefined> {
    if (unstorable(sessionId)) return undefined;
    const [row] = await this.db
      .select()
      .from(sessionChunks)
      .where(and(eq(sessionChunks.sessionId, sessionId), eq(sessionChunks.chunkIndex, index)));
    return row;
  }

  async putChunk(row: ChunkRow): Promise<void> {
    await this.db
      .insert(sessionChunks)
      .values({ ...row, etag: row.etag ?? null })
      .onConflictDoUpdate({
        target: [sessionChunks.sessionId, sessionChunks.chunkIndex],
        set: {
          gen: sql`excluded.gen`,
          size: sql`excluded.size`,
          receivedAt: sql`excluded.received_at`,
          etag: sql`excluded.etag`,
        },
      });
  }

  async leaveMultipart(sessionId: string, uploadId: string): Promise<boolean> {
    if (unstorable(sessionId)) return false;
    const changed = await this.db
      .update(uploadSessions)
      .set({ uploadId: null })
      .where(and(eq(uploadSessions.sessionId, sessionId), eq(uploadSessions.uploadId, uploadId)))
      .returning({ id: uploadSessions.sessionId });
    if (changed.length === 0) return false;
    await this.db.delete(sessionChunks).where(eq(sessionChunks.sessionId, sessionId));
    return true;
  }

  async chunks(sessionId: string): Promise<ChunkRow[]> {
    if (unstorable(sessionId)) return [];
    return this.db
      .select()
      .from(sessionChunks)
      .where(eq(sessionChunks.sessionId, sessionId))
      .orderBy(asc(sessionChunks.chunkIndex));
  }

  async chunkIndices(sessionId: string): Promise<number[]> {
    if (unstorable(sessionId)) return [];
    const rows = await this.db
      .select({ i: sessionChunks.chunkIndex })
      .from(sessionChunks)
      .where(eq(sessionChunks.sessionId, sessionId))
      .orderBy(asc(sessionChunks.chunkIndex));
    return rows.map((r) => r.i);
  }

  expired(now: number, limit: number): Promise<SessionRow[]> {
    return this.db
      .select()
      .from(uploadSessions)
      .where(
        and(lte(uploadSessions.expiresAt, now), inArray(uploadSessions.state, ["receiving", "finalized"])),
      )
      .orderBy(asc(uploadSessions.expiresAt))
      .limit(limit)
      .for("update", { skipLocked: true });
  }
}
