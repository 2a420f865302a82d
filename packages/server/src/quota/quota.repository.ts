/**
 * @module server/quota/quota.repository
 * The contract of the queries on `account_usage` (per-account totals of live files, kept exact in
 * each write's transaction: triggers on SQLite and PostgreSQL) and `quota_overrides` (per-account
 * allowances). Bytes are plaintext bytes, times Unix seconds. Implementations:
 * `src/db/sqlite/quota.ts`, `src/db/postgres/quota.ts`.
 */

/** An `account_usage` row. */
export type AccountUsageRow = {
  owner: string;
  createdAt: number;
  updatedAt: number;
  fileCount: number;
  totalBytes: number;
};

/** Queries on usage totals and allowance overrides. Every method returns a Promise. */
export interface QuotaRepository {
  /** The account's totals, or undefined when it never stored a file. */
  usage(owner: string): Promise<AccountUsageRow | undefined>;

  /**
   * Plaintext bytes of `owner`'s file shares still stored (every row until the reaper removes it:
   * uploading, complete, revoked or expired), which count against the allowance (docs/sharing.md).
   */
  shareBytes(owner: string): Promise<number>;

  /**
   * Plaintext bytes of `owner`'s kept versions of replaced and deleted files, which count against
   * the allowance until they expire (docs/versions.md).
   */
  versionBytes(owner: string): Promise<number>;

  /** The override row: `undefined` = no override; `quotaBytes` null = unlimited. */
  override(owner: string): Promise<{ quotaBytes: number | null } | undefined>;

  /** Sets (inserts or replaces) an override; `quotaBytes` null = unlimited. */
  setOverride(owner: string, quotaBytes: number | null, now: number): Promise<void>;

  /** Removes an override; true when there was one. */
  clearOverride(owner: string): Promise<boolean>;
}
