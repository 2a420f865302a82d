/**
 * @module server/db/postgres/summaries
 * `SummariesRepository` on PostgreSQL (contract: `src/summaries/summaries.repository.ts`);
 * `usage_buckets` is kept by the triggers of drizzle/postgres/0001_counters.sql.
 */
import { and, eq, sql } from "drizzle-orm";
import type { BucketKind, BucketTotals, SummariesRepository } from "../../summaries/summaries.repository.ts";
import type { PgConn } from "./conn.ts";
import { usageBuckets } from "./schema.ts";

/** Summary bucket reads on PostgreSQL. */
export class PgSummariesRepository implements SummariesRepository {
  constructor(private readonly db: PgConn) {}

  buckets(owner: string, folderHash: string | null, kind: BucketKind): Promise<BucketTotals[]> {
    return this.db
      .select({
        bucket: usageBuckets.bucket,
        fileCount: sql<number>`sum(${usageBuckets.fileCount})`.mapWith(Number),
        totalBytes: sql<number>`sum(${usageBuckets.totalBytes})`.mapWith(Number),
      })
      .from(usageBuckets)
      .where(
        and(
          eq(usageBuckets.owner, owner),
          eq(usageBuckets.kind, kind),
          folderHash === null ? undefined : eq(usageBuckets.folderHash, folderHash),
        ),
      )
      .groupBy(usageBuckets.bucket);
  }
}
