/**
 * @module server/summaries/summaries.service
 * The three summaries of docs/protocol.md#summaries: account totals, counts and plaintext bytes per
 * file_type category and per client family. Every number is read from counters that triggers on
 * `files` keep exact in each write's transaction (`account_usage`, `folders`, `usage_buckets`), so a
 * summary costs a few small reads at any account size and never lags a write.
 */

import { FILE_TYPE_BUCKETS, SOURCE_BUCKETS } from "@esync/protocol/schemas.ts";
import type { FileTypeSummary, SourceSummary, UserSummary } from "@esync/protocol/types.ts";
import type { MetadataStore } from "../db/store.ts";
import type { BucketKind } from "./summaries.repository.ts";

/** Summaries of an account, or of one of its folders when `folderHash` is given. */
export class SummariesService {
  constructor(private readonly store: MetadataStore) {}

  /** Account (or folder) totals; times are 0 when it holds no file and never did. */
  async user(owner: string, folderHash: string | null): Promise<UserSummary> {
    if (folderHash === null) {
      const r = await this.store.repos.quota.usage(owner);
      return {
        ss58_address: owner,
        total_bytes: r?.totalBytes ?? 0,
        file_count: r?.fileCount ?? 0,
        created_at: r?.createdAt ?? 0,
        updated_at: r?.updatedAt ?? 0,
      };
    }
    const f = await this.store.repos.folders.get(owner, folderHash);
    return {
      ss58_address: owner,
      total_bytes: f?.totalBytes ?? 0,
      file_count: f?.fileCount ?? 0,
      created_at: f ? (f.createdAt ?? f.updatedAt) : 0,
      updated_at: f?.updatedAt ?? 0,
    };
  }

  /** Counts and plaintext bytes per file_type category (`other`: no file name or extension listed). */
  async fileTypes(owner: string, folderHash: string | null): Promise<FileTypeSummary> {
    return (await this.buckets(owner, folderHash, "type", FILE_TYPE_BUCKETS)) as FileTypeSummary;
  }

  /** Counts and plaintext bytes per client family of the manifest `source`. */
  async sources(owner: string, folderHash: string | null): Promise<SourceSummary> {
    return (await this.buckets(owner, folderHash, "source", SOURCE_BUCKETS)) as SourceSummary;
  }

  /** `{<bucket>: count, <bucket>_bytes: bytes}` for every key of `keys` (0 when it has no row). */
  private async buckets(
    owner: string,
    folderHash: string | null,
    kind: BucketKind,
    keys: readonly string[],
  ): Promise<Record<string, number>> {
    const rows = await this.store.repos.summaries.buckets(owner, folderHash, kind);
    const out: Record<string, number> = {};
    for (const k of keys) {
      const r = rows.find((x) => x.bucket === k);
      out[k] = r?.fileCount ?? 0;
      out[`${k}_bytes`] = r?.totalBytes ?? 0;
    }
    return out;
  }
}
