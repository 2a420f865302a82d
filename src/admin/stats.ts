/**
 * @module admin/stats
 * The numbers `esync-admin stats` prints, read from the database: accounts, folders, files and
 * their bytes, upload sessions by state, the blob deletion queue and API tokens. Reads the
 * embedded SQLite database directly (a tool of the single-process deployment).
 */
import { sql } from "drizzle-orm";
import type { Db } from "../db/client.ts";
import { apiTokens, files, folders } from "../db/schema.ts";
import { SqliteDeletionQueueRepository } from "../db/sqlite/deletion-queue.ts";
import { SqliteSessionsRepository } from "../db/sqlite/sessions.ts";

/** What `collectStats` reports. Sizes are bytes, ages seconds. */
export interface Stats {
  /** Distinct addresses owning a folder or a file. */
  accounts: number;
  folders: number;
  files: number;
  /** Sum of the files' plaintext sizes (as their manifests declare them). */
  plaintext_bytes: number;
  /** Sum of the files' ciphertext sizes (what the blob store holds for current revisions). */
  ciphertext_bytes: number;
  /** Stored upload sessions by state. */
  sessions: { receiving: number; finalizing: number; finalized: number };
  deletion_queue: { depth: number; oldest_due_age_seconds: number };
  /** API tokens neither revoked nor expired at `now`. */
  active_api_tokens: number;
}

/** Reads the statistics at `now` (Unix seconds). */
export async function collectStats(db: Db, now: number): Promise<Stats> {
  const accounts =
    db.$client
      .query<{ n: number }, []>(
        "select count(*) as n from (select owner from folders union select owner from files)",
      )
      .get()?.n ?? 0;
  const f = db
    .select({
      n: sql<number>`count(*)`,
      plain: sql<number>`coalesce(sum(${files.sizeBytes}), 0)`,
      cipher: sql<number>`coalesce(sum(${files.ciphertextSize}), 0)`,
    })
    .from(files)
    .get();
  const folderCount = db.select({ n: sql<number>`count(*)` }).from(folders).get()?.n ?? 0;
  const tokens =
    db
      .select({ n: sql<number>`count(*)` })
      .from(apiTokens)
      .where(
        sql`${apiTokens.revokedAt} is null and (${apiTokens.expiresAt} is null or ${apiTokens.expiresAt} > ${now})`,
      )
      .get()?.n ?? 0;
  const byState = await new SqliteSessionsRepository(db).countByState();
  const queue = await new SqliteDeletionQueueRepository(db).stats(now);
  return {
    accounts,
    folders: folderCount,
    files: f?.n ?? 0,
    plaintext_bytes: f?.plain ?? 0,
    ciphertext_bytes: f?.cipher ?? 0,
    sessions: {
      receiving: byState.receiving ?? 0,
      finalizing: byState.finalizing ?? 0,
      finalized: byState.finalized ?? 0,
    },
    deletion_queue: { depth: queue.depth, oldest_due_age_seconds: queue.oldestDueAgeSeconds },
    active_api_tokens: tokens,
  };
}
