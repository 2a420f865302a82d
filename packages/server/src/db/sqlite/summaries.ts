/** @module server/db/sqlite/summaries  `SummariesRepository` on SQLite (`usage_buckets`). */
import { and, eq, sql } from "drizzle-orm";
import type { BucketKind, BucketTotals, SummariesRepository } from "../../summaries/summaries.repository.ts";
import type { Db } from "../client.ts";
import { usageBuckets } from "./schema.ts";

/** Summary reads on SQLite. */
export class SqliteSummariesRepository implements SummariesRepository {
  constructor(private readonly db: Db) {}

  async buckets(owner: string, folderHash: string | null, kind: BucketKind): Promise<BucketTotals[]> {
    return this.db
      .select({
        bucket: usageBuckets.bucket,
        fileCount: sql<number>`sum(${usageBuckets.fileCount})`,
        totalBytes: sql<number>`sum(${usageBuckets.totalBytes})`,
      })
      .from(usageBuckets)
      .where(
        and(
          eq(usageBuckets.owner, owner),
          eq(usageBuckets.kind, kind),
          folderHash === null ? undefined : eq(usageBuckets.folderHash, folderHash),
        ),
      )
      .groupBy(usageBuckets.bucket)
      .all();
  }
}
