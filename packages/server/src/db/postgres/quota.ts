/**
 * @module server/db/postgres/quota
 * `QuotaRepository` on PostgreSQL (contract: `src/quota/quota.repository.ts`); `account_usage`
 * is kept by the triggers of drizzle/postgres/0001_counters.sql.
 */
import { eq, sql } from "drizzle-orm";
import type { AccountUsageRow, QuotaRepository } from "../../quota/quota.repository.ts";
import type { PgConn } from "./conn.ts";
import { accountUsage, fileVersions, quotaOverrides, shares } from "./schema.ts";

/** Usage totals and allowance overrides on PostgreSQL. */
export class PgQuotaRepository implements QuotaRepository {
  constructor(private readonly db: PgConn) {}

  async usage(owner: string): Promise<AccountUsageRow | undefined> {
    const [row] = await this.db.select().from(accountUsage).where(eq(accountUsage.owner, owner));
    return row;
  }

  async shareBytes(owner: string): Promise<number> {
    const [r] = await this.db
      .select({ n: sql<string>`coalesce(sum(${shares.plaintextSize}), 0)` })
      .from(shares)
      .where(eq(shares.owner, owner));
    return Number(r?.n ?? 0);
  }

  async versionBytes(owner: string): Promise<number> {
    const [r] = await this.db
      .select({ n: sql<string>`coalesce(sum(${fileVersions.sizeBytes}), 0)` })
      .from(fileVersions)
      .where(eq(fileVersions.owner, owner));
    return Number(r?.n ?? 0);
  }

  async override(owner: string): Promise<{ quotaBytes: number | null } | undefined> {
    const [row] = await this.db
      .select({ quotaBytes: quotaOverrides.quotaBytes })
      .from(quotaOverrides)
      .where(eq(quotaOverrides.owner, owner));
    return row;
  }

  async setOverride(owner: string, quotaBytes: number | null, now: number): Promise<void> {
    await this.db
      .insert(quotaOverrides)
      .values({ owner, quotaBytes, updatedAt: now })
      .onConflictDoUpdate({ target: quotaOverrides.owner, set: { quotaBytes, updatedAt: now } });
  }

  async clearOverride(owner: string): Promise<boolean> {
    const rows = await this.db
      .delete(quotaOverrides)
      .where(eq(quotaOverrides.owner, owner))
      .returning({ owner: quotaOverrides.owner });
    return rows.length > 0;
  }
}
