/**
 * @module server/db/sqlite/sessions
 * `SessionsRepository` on SQLite: `upload_sessions` and `session_chunks`. Every method runs its
 * statements synchronously (no await inside), so a call is atomic with respect to the store's gate.
 */
import { and, asc, eq, gt, inArray, isNotNull, isNull, lte, ne, or, sql } from "drizzle-orm";
import type { ChunkRow, SessionRow, SessionsRepository } from "../../sessions/sessions.repository.ts";
import { changes, type Db } from "../client.ts";
import { sessionChunks, uploadSessions } from "./schema.ts";

/** Upload sessions and their received chunks on SQLite. */
export class SqliteSessionsRepository implements SessionsRepository {
  /**
   * The statements every chunk PUT runs (and the ingest hasher's look-up), prepared once instead
   * of building the Drizzle query on every call (docs/benchmarks.md has the saving).
   */
  private readonly hot;

  constructor(private readonly db: Db) {
    const id = sql.placeholder("sessionId");
    const index = sql.placeholder("index");
    this.hot = {
      get: db.select().from(uploadSessions).where(eq(uploadSessions.sessionId, id)).prepare(),
      chunk: db
        .select()
        .from(sessionChunks)
        .where(and(eq(sessionChunks.sessionId, id), eq(sessionChunks.chunkIndex, index)))
        .prepare(),
      setExpiry: db
        .update(uploadSessions)
        .set({ expiresAt: sql`${sql.placeholder("expiresAt")}` })
        .where(eq(uploadSessions.sessionId, id))
        .prepare(),
      putChunk: db
        .insert(sessionChunks)
        .values({
          sessionId: id,
          chunkIndex: index,
          gen: sql.placeholder("gen"),
          size: sql.placeholder("size"),
          receivedAt: sql.placeholder("receivedAt"),
          etag: sql.placeholder("etag"),
        })
        .onConflictDoUpdate({
          target: [sessionChunks.sessionId, sessionChunks.chunkIndex],
          set: {
            gen: sql`excluded.gen`,
            size: sql`excluded.size`,
            receivedAt: sql`excluded.received_at`,
            etag: sql`excluded.etag`,
          },
        })
        .prepare(),
    };
  }

  async insert(row: SessionRow): Promise<void> {
    this.db.insert(uploadSessions).values(row).run();
  }

  async get(sessionId: string): Promise<SessionRow | undefined> {
    return this.hot.get.get({ sessionId });
  }

  /** A plain read: the store's `BEGIN IMMEDIATE` transaction already excludes every other writer. */
  async getForUpdate(sessionId: string): Promise<SessionRow | undefined> {
    return this.hot.get.get({ sessionId });
  }

  /** Nothing to do on SQLite: `BEGIN IMMEDIATE` already serialises writers. */
  async lockOwner(_owner: string): Promise<void> {}

  async countByState(): Promise<Record<string, number>> {
    const rows = this.db
      .select({ state: uploadSessions.state, n: sql<number>`count(*)` })
      .from(uploadSessions)
      .groupBy(uploadSessions.state)
      .all();
    return Object.fromEntries(rows.map((r) => [r.state, r.n]));
  }

  async liveCount(owner: string, now: number): Promise<{ n: number; earliest: number | null }> {
    const r = this.db
      .select({ n: sql<number>`count(*)`, earliest: sql<number | null>`min(${uploadSessions.expiresAt})` })
      .from(uploadSessions)
      .where(
        and(
          eq(uploadSessions.owner, owner),
          ne(uploadSessions.state, "finalized"),
          gt(uploadSessions.expiresAt, now),
        ),
      )
      .get();
    return { n: r?.n ?? 0, earliest: r?.earliest ?? null };
  }

  async beginFinalizing(
    sessionId: string,
    finalizingUntil: number,
    expiresAt: number,
    holder: string | null,
  ): Promise<boolean> {
    const r = this.db
      .update(uploadSessions)
      .set({ state: "finalizing", finalizingUntil, finalizingHolder: holder, expiresAt })
      .where(and(eq(uploadSessions.sessionId, sessionId), eq(uploadSessions.state, "receiving")))
      .run();
    return changes(r) > 0;
  }

  async renewFinalizing(sessionId: string, lease: number, until: number): Promise<boolean> {
    const r = this.db
      .update(uploadSessions)
      .set({ finalizingUntil: until })
      .where(this.holding(sessionId, lease))
      .run();
    return changes(r) > 0;
  }

  async endFinalizing(
    sessionId: string,
    lease: number,
    to: "receiving" | "finalized",
    set: Partial<Pick<SessionRow, "expiresAt" | "result" | "uploadId">>,
  ): Promise<boolean> {
    const r = this.db
      .update(uploadSessions)
      .set({ ...set, state: to, finalizingUntil: null, finalizingHolder: null })
      .where(this.holding(sessionId, lease))
      .run();
    return changes(r) > 0;
  }

  async releaseExpiredFinalizing(now: number, expiresAt: number): Promise<number> {
    const r = this.db
      .update(uploadSessions)
      .set({ state: "receiving", finalizingUntil: null, finalizingHolder: null, expiresAt })
      .where(
        and(
          eq(uploadSessions.state, "finalizing"),
          or(isNull(uploadSessions.finalizingUntil), lte(uploadSessions.finalizingUntil, now)),
        ),
      )
      .run();
    return changes(r);
  }

  async heldFinalizing(
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
      )
      .all();
  }

  async takeOverFinalizing(
    sessionId: string,
    lease: number,
    holder: string,
    expiresAt: number,
  ): Promise<boolean> {
    const r = this.db
      .update(uploadSessions)
      .set({ state: "receiving", finalizingUntil: null, finalizingHolder: null, expiresAt })
      .where(and(this.holding(sessionId, lease), eq(uploadSessions.finalizingHolder, holder)))
      .run();
    return changes(r) > 0;
  }

  /** The condition "session `sessionId` is finalizing under `lease`". */
  private holding(sessionId: string, lease: number) {
    return and(
      eq(uploadSessions.sessionId, sessionId),
      eq(uploadSessions.state, "finalizing"),
      eq(uploadSessions.finalizingUntil, lease),
    );
  }

  async setExpiry(sessionId: string, expiresAt: number): Promise<void> {
    this.hot.setExpiry.run({ sessionId, expiresAt });
  }

  async remove(sessionId: string): Promise<boolean> {
    this.db.delete(sessionChunks).where(eq(sessionChunks.sessionId, sessionId)).run();
    return changes(this.db.delete(uploadSessions).where(eq(uploadSessions.sessionId, sessionId)).run()) > 0;
  }

  async chunk(sessionId: string, index: number): Promise<ChunkRow | undefined> {
    return this.hot.chunk.get({ sessionId, index });
  }

  async putChunk(row: ChunkRow): Promise<void> {
    this.hot.putChunk.run({
      sessionId: row.sessionId,
      index: row.chunkIndex,
      gen: row.gen,
      size: row.size,
      receivedAt: row.receivedAt,
      etag: row.etag ?? null,
    });
  }

  async leaveMultipart(sessionId: string, uploadId: string): Promise<boolean> {
    const r = this.db
      .update(uploadSessions)
      .set({ uploadId: null })
      .where(and(eq(uploadSessions.sessionId, sessionId), eq(uploadSessions.uploadId, uploadId)))
      .run();
    if (changes(r) === 0) return false;
    this.db.delete(sessionChunks).where(eq(sessionChunks.sessionId, sessionId)).run();
    return true;
  }

  async chunks(sessionId: string): Promise<ChunkRow[]> {
    return this.db
      .select()
      .from(sessionChunks)
      .where(eq(sessionChunks.sessionId, sessionId))
      .orderBy(asc(sessionChunks.chunkIndex))
      .all();
  }

  async chunkIndices(sessionId: string): Promise<number[]> {
    return this.db
      .select({ i: sessionChunks.chunkIndex })
      .from(sessionChunks)
      .where(eq(sessionChunks.sessionId, sessionId))
      .orderBy(asc(sessionChunks.chunkIndex))
      .all()
      .map((r) => r.i);
  }

  async expired(now: number, limit: number): Promise<SessionRow[]> {
    return this.db
      .select()
      .from(uploadSessions)
      .where(
        and(lte(uploadSessions.expiresAt, now), inArray(uploadSessions.state, ["receiving", "finalized"])),
      )
      .limit(limit)
      .all();
  }
}
