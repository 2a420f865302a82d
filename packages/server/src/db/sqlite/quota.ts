/**
 * @module server/db/sqlite/quota
 * `QuotaRepository` on SQLite: `account_usage` (per-account totals the triggers on `files` keep
 * exact) and `quota_overrides` (per-account allowances).
 */
import { eq, sql } from "drizzle-orm";
import type { AccountUsageRow, QuotaRepository } from "../../quota/quota.repository.ts";
import type { Db } from "../client.ts";
import { accountUsage, fileVersions, quotaOverrides, shares } from "./schema.ts";

/** The two reads of every write's quota check, prepared once (building them costs more than running them). */
function prepareReads(db: Db) {
  return {
    usage: db
      .select()
      .from(accountUsage)
      .where(eq(accountUsage.owner, sql.placeholder("owner")))
      .prepare(),
    override: db
      .select({ quotaBytes: quotaOverrides.quotaBytes })
      .from(quotaOverrides)
      .where(eq(quotaOverrides.owner, sql.placeholder("owner")))
      .prepare(),
  };
}

/** Usage totals and allowance overrides on SQLite. */
export class SqliteQuotaRepository implements QuotaRepository {
  private readonly reads: ReturnType<typeof prepareReads>;

  constructor(private readonly db: Db) {
    this.reads = prepareReads(db);
  }

  /** The account's totals, or undefined when it never stored a file. */
  async usage(owner: string): Promise<AccountUsageRow | undefined> {
    return this.reads.usage.get({ owner });
  }

  /** Plaintext bytes of the account's stored file shares. */
  async shareBytes(owner: string): Promise<number> {
    const r = this.db
      .select({ n: sql<number>`coalesce(sum(${shares.plaintextSize}), 0)` })
      .from(shares)
      .where(eq(shares.owner, owner))
      .get();
    return Number(r?.n ?? 0);
  }

  /** Plaintext bytes of the account's kept versions. */
  async versionBytes(owner: string): Promise<number> {
    const r = this.db
      .select({ n: sql<number>`coalesce(sum(${fileVersions.sizeBytes}), 0)` })
      .from(fileVersions)
      .where(eq(fileVersions.owner, owner))
      .get();
    return Number(r?.n ?? 0);
  }

  /** The override row: `undefined` = no override; `quotaBytes` null = unlimited. */
  async override(owner: string): Promise<{ quotaBytes: number | null } | undefined> {
    return this.reads.override.get({ owner });
  }

  /** Sets (inserts or replaces) an override. */
  async setOverride(owner: string, quotaBytes: number | null, now: number): Promise<void> {
    this.db
      .insert(quotaOverrides)
      .values({ owner, quotaBytes, updatedAt: now })
      .onConflictDoUpdate({ target: quotaOverrides.owner, set: { quotaBytes, updatedAt: now } })
      .run();
  }

  /** Removes an override; true when there was one. */
  async clearOverride(owner: string): Promise<boolean> {
    return (
      (
        this.db.delete(quotaOverrides).where(eq(quotaOverrides.owner, owner)).run() as unknown as {
          changes: number;
        }
      ).changes > 0
    );
  }
}
