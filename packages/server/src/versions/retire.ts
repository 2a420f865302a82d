/**
 * @module server/versions/retire
 * What becomes of a revision that stops being current (a write replaced it, or a delete removed
 * it), inside the transaction that replaced or removed its `files` row (docs/versions.md): with
 * version retention on, it is kept as a version until `now + retentionSeconds`; with retention
 * off, its blob is queued for deletion after the grace period, unless a live file or a kept
 * version still uses that blob (a restored version shares its blob with the file it became).
 */
import type { Repositories } from "../db/store.ts";
import type { FileRow } from "../files/file-entry.ts";
import { blobTarget } from "../storage/layout.ts";

/** The retention rule a `retire` applies. Seconds. */
export interface RetirePolicy {
  /** How long a retired revision is kept as a version (`ESYNC_VERSION_RETENTION_DAYS`); 0 = off. */
  retentionSeconds: number;
  /** How long a deleted blob stays readable for downloads in flight (`ESYNC_BLOB_GRACE_SECONDS`). */
  graceSeconds: number;
}

/**
 * Retires `row` (no longer the current revision of its path: its `files` row was already
 * replaced or removed in `tx`) as `reason`, at `now` (Unix seconds), by `policy`.
 * @returns the kept version's id, or null when none was kept.
 */
export async function retire(
  tx: Repositories,
  row: FileRow,
  reason: "replaced" | "deleted",
  now: number,
  policy: RetirePolicy,
): Promise<number | null> {
  if (policy.retentionSeconds > 0)
    return tx.versions.keep({
      owner: row.owner,
      folderHash: row.folderHash,
      pathHash: row.pathHash,
      saltedHash: row.saltedHash,
      sizeBytes: row.sizeBytes,
      revisionSeq: row.revisionSeq,
      revisionId: row.revisionId,
      encryptedPath: row.encryptedPath,
      fileName: row.fileName,
      relativePath: row.relativePath,
      storeHash: row.storeHash,
      chunkHashes: row.chunkHashes,
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
      clientTimestamp: row.clientTimestamp,
      source: row.source,
      attributes: row.attributes,
      ciphertextHash: row.ciphertextHash,
      ciphertextSize: row.ciphertextSize,
      blobId: row.blobId,
      chunkSize: row.chunkSize,
      chunkCount: row.chunkCount,
      chunkGens: row.chunkGens,
      uploadedBy: row.uploadedBy,
      reason,
      keptAt: now,
      expiresAt: now + policy.retentionSeconds,
    });
  if (!(await tx.versions.blobInUse(row.blobId)))
    await tx.deletionQueue.enqueue([blobTarget(row.blobId)], now + policy.graceSeconds);
  return null;
}
