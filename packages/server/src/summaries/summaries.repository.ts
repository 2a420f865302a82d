/**
 * @module server/summaries/summaries.repository
 * The contract of the summary reads of docs/protocol.md#summaries that no other repository serves: the
 * per-bucket counters of `usage_buckets` (kept exact by triggers on `files`). Account totals come
 * from `QuotaRepository.usage`, folder totals from `FoldersRepository.get`. Implementations:
 * `src/db/sqlite/summaries.ts`, `src/db/postgres/summaries.ts`.
 */

/** Which classification a bucket belongs to: file_type category or client family. */
export type BucketKind = "type" | "source";

/** Totals of one bucket: live files and their plaintext bytes. */
export interface BucketTotals {
  bucket: string;
  fileCount: number;
  totalBytes: number;
}

/** Summary reads. Every method returns a Promise. */
export interface SummariesRepository {
  /**
   * Totals per bucket of `kind` over the account's folders, or of one folder when `folderHash`
   * is given; buckets without a row are absent (callers treat them as 0).
   */
  buckets(owner: string, folderHash: string | null, kind: BucketKind): Promise<BucketTotals[]>;
}
