/**
 * @module server/admin/stats
 * The numbers `esync-admin stats` prints, read from the metadata database (SQLite or
 * PostgreSQL, through the repository contract): accounts, folders, files and their bytes, upload
 * sessions by state, the blob deletion queue and API tokens.
 */
import type { MetadataStore } from "../db/store.ts";

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

/** Reads the statistics of `store` at `now` (Unix seconds). @throws the database's error. */
export async function collectStats(store: MetadataStore, now: number): Promise<Stats> {
  const totals = await store.repos.ops.totals(now);
  const byState = await store.repos.sessions.countByState();
  const queue = await store.repos.deletionQueue.stats(now);
  return {
    accounts: totals.accounts,
    folders: totals.folders,
    files: totals.files,
    plaintext_bytes: totals.plaintextBytes,
    ciphertext_bytes: totals.ciphertextBytes,
    sessions: {
      receiving: byState.receiving ?? 0,
      finalizing: byState.finalizing ?? 0,
      finalized: byState.finalized ?? 0,
    },
    deletion_queue: { depth: queue.depth, oldest_due_age_seconds: queue.oldestDueAgeSeconds },
    active_api_tokens: totals.activeApiTokens,
  };
}
