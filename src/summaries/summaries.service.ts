/**
 * @module summaries/summaries.service
 * The three summaries of extensions.md §1.4: account totals, counts and plaintext bytes per
 * file_type category and per client family. Every number is read from counters that triggers on
 * `files` keep exact in each write's transaction (`account_usage`, `folders`, `usage_buckets`), so a
 * summary costs a few small reads at any account size and never lags a write.
 */
import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client.ts";
import { accountUsage, folders, usageBuckets } from "../db/schema.ts";
import { FILE_TYPE_BUCKETS, SOURCE_BUCKETS } from "../wire/schemas.ts";
import type { FileTypeSummary, SourceSummary, UserSummary } from "../wire/types.ts";

/** Summaries of an account, or of one of its folders when `folderHash` is given. */
export class SummariesService {
  constructor(private readonly db: Db) {}

  /** Account (or folder) totals; times are 0 when it holds no file and never did. */
  user(owner: string, folderHash: string | null): UserSummary {
    if (folderHash === null) {
      const r = this.db.select().from(accountUsage).where(eq(accountUsage.owner, owner)).get();
      return {
        ss58_address: owner,
        total_bytes: r?.totalBytes ?? 0,
        file_count: r?.fileCount ?? 0,
        created_at: r?.createdAt ?? 0,
        updated_at: r?.updatedAt ?? 0,
      };
    }
    const f = this.db
      .select()
      .from(folders)
      .where(and(eq(folders.owner, owner), eq(folders.folderHash, folderHash)))
      .get();
    return {
      ss58_address: owner,
      total_bytes: f?.totalBytes ?? 0,
      file_count: f?.fileCount ?? 0,
      created_at: f ? (f.createdAt ?? f.updatedAt) : 0,
      updated_at: f?.updatedAt ?? 0,
    };
  }

  /** Counts and plaintext bytes per file_type category (`other`: no file name or extension listed). */
  fileTypes(owner: string, folderHash: string | null): FileTypeSummary {
    return this.buckets(owner, folderHash, "type", FILE_TYPE_BUCKETS) as FileTypeSummary;
  }

  /** Counts and plaintext bytes per client family of the manifest `source`. */
  sources(owner: string, folderHash: string | null): SourceSummary {
    return this.buckets(owner, folderHash, "source", SOURCE_BUCKETS) as SourceSummary;
  }

  private buckets(
    owner: string,
    folderHash: string | null,
    kind: "type" | "source",
    keys: readonly string[],
  ): Record<string, number> {
    const rows = this.db
      .select({
        bucket: usageBuckets.bucket,
        n: sql<number>`sum(${usageBuckets.fileCount})`,
        bytes: sql<number>`sum(${usageBuckets.totalBytes})`,
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
    const out: Record<string, number> = {};
    for (const k of keys) {
      const r = rows.find((x) => x.bucket === k);
      out[k] = r?.n ?? 0;
      out[`${k}_bytes`] = r?.bytes ?? 0;
    }
    return out;
  }
}
