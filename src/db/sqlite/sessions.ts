/**
 * @module sessions/sessions.repository
 * Queries on `upload_sessions` and `session_chunks`. All session state that matters lives
 * here (not in process memory), so any API node can serve any request of a session.
 */
import { and, asc, eq, gt, inArray, lte, ne, sql } from "drizzle-orm";
import type { ChunkRow, SessionRow } from "../../sessions/sessions.repository.ts";
import { changes, type Db } from "../client.ts";
import { sessionChunks, uploadSessions } from "../schema.ts";

/** Repository of upload sessions and their received chunks. */
export class SqliteSessionsRepository {
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
        })
        .onConflictDoUpdate({
          target: [sessionChunks.sessionId, sessionChunks.chunkIndex],
          set: {
            gen: sql`excluded.gen`,
            size: sql`excluded.size`,
            receivedAt: sql`excluded.received_at`,
          },
        })
        .prepare(),
    };
  }

  insert(row: SessionRow): void {
    this.db.insert(uploadSessions).values(row).run();
  }

  /** Number of stored sessions per state (metrics, admin stats). */
  countByState(): Record<string, number> {
    const rows = this.db
      .select({ state: uploadSessions.state, n: sql<number>`count(*)` })
      .from(uploadSessions)
      .groupBy(uploadSessions.state)
      .all();
    return Object.fromEntries(rows.map((r) => [r.state, r.n]));
  }

  get(sessionId: string): SessionRow | undefined {
    return this.hot.get.get({ sessionId });
  }

  /** Live (not expired) sessions of `owner` that are not finalized, and the earliest expiry among them. */
  liveCount(owner: string, now: number): { n: number; earliest: number | null } {
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

  /** Moves `state` from `from` to `to` (and sets extra columns); false when the session was not in `from`. */
  transition(
    sessionId: string,
    from: SessionRow["state"],
    to: SessionRow["state"],
    set: Partial<SessionRow> = {},
  ): boolean {
    const r = this.db
      .update(uploadSessions)
      .set({ ...set, state: to })
      .where(and(eq(uploadSessions.sessionId, sessionId), eq(uploadSessions.state, from)))
      .run();
    return changes(r) > 0;
  }

  setExpiry(sessionId: string, expiresAt: number): void {
    this.hot.setExpiry.run({ sessionId, expiresAt });
  }

  /** Deletes the session and its chunk rows. */
  remove(sessionId: string): void {
    this.db.delete(sessionChunks).where(eq(sessionChunks.sessionId, sessionId)).run();
    this.db.delete(uploadSessions).where(eq(uploadSessions.sessionId, sessionId)).run();
  }

  chunk(sessionId: string, index: number): ChunkRow | undefined {
    return this.hot.chunk.get({ sessionId, index });
  }

  /** Records (or replaces) the chunk at `row.chunkIndex`. */
  putChunk(row: ChunkRow): void {
    this.hot.putChunk.run({
      sessionId: row.sessionId,
      index: row.chunkIndex,
      gen: row.gen,
      size: row.size,
      receivedAt: row.receivedAt,
    });
  }

  /** Received chunks in index order. */
  chunks(sessionId: string): ChunkRow[] {
    return this.db
      .select()
      .from(sessionChunks)
      .where(eq(sessionChunks.sessionId, sessionId))
      .orderBy(asc(sessionChunks.chunkIndex))
      .all();
  }

  /** Received chunk indices in ascending order. */
  chunkIndices(sessionId: string): number[] {
    return this.db
      .select({ i: sessionChunks.chunkIndex })
      .from(sessionChunks)
      .where(eq(sessionChunks.sessionId, sessionId))
      .orderBy(asc(sessionChunks.chunkIndex))
      .all()
      .map((r) => r.i);
  }

  /** Sessions idle past their expiry at `now`, excluding ones being finalized. */
  expired(now: number, limit: number): SessionRow[] {
    return this.db
      .select()
      .from(uploadSessions)
      .where(
        and(lte(uploadSessions.expiresAt, now), inArray(uploadSessions.state, ["receiving", "finalized"])),
      )
      .limit(limit)
      .all();
  }

  /** Start-up recovery: sessions left `finalizing` by a crash go back to `receiving`. */
  resetFinalizing(expiresAt: number): number {
    return changes(
      this.db
        .update(uploadSessions)
        .set({ state: "receiving", expiresAt })
        .where(eq(uploadSessions.state, "finalizing"))
        .run(),
    );
  }
}
