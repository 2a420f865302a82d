/**
 * @module files/files.service
 * The file commit (shared by single-shot `/upload` and session finalize), `/get_state`,
 * `/delete` and `/download` rules: revisions (complement §1), folder counters, and blob
 * lifecycle through the deletion queue.
 */

import type { Db } from "../db/client.ts";
import type { SqliteDeletionQueueRepository as DeletionQueueRepository } from "../db/sqlite/deletion-queue.ts";
import type { SqliteFilesRepository as FilesRepository } from "../db/sqlite/files.ts";
import type { SqliteFoldersRepository as FoldersRepository } from "../db/sqlite/folders.ts";
import { type ConflictDetails, fail } from "../errors/errors.ts";
import type { Manifest } from "../manifest/manifest.ts";
import type { QuotaService } from "../quota/quota.service.ts";
import type { BlobStore } from "../storage/blob-store.ts";
import { type BlobLayout, blobPrefix, readBlobRange } from "../storage/layout.ts";
import type { Clock } from "../util/clock.ts";
import { randomHex, toHex } from "../util/ids.ts";
import { MAX_BATCH_DELETE, MAX_PATH_BATCH } from "../wire/schemas.ts";
import type { UploadResult } from "../wire/types.ts";
import { extensionOf, type FileRow, searchNameOf } from "./file-entry.ts";
import { isRelativePath, lastSegment } from "./paths.ts";

export type { UploadResult } from "../wire/types.ts";

/** Where a verified ciphertext lives, given to `commit`. */
export interface StoredBlob extends BlobLayout {
  /** BLAKE3 hex of the whole ciphertext (already verified against the manifest). */
  ciphertextHash: string;
  /** BLAKE3 hex of each chunk, or null when unknown. */
  chunkHashes: string[] | null;
}

/** `file_id`: 64 hex characters. */
const FILE_ID = /^[0-9a-fA-F]{64}$/;

/** What `removeMany` did, per id. */
export interface BatchDeleteOutcome {
  deleted: { file_id: string; status: "deleted" | "already_deleted" }[];
  errors: { file_id: string; error: "invalid_file_id" | "database_error" }[];
  filesDeleted: number;
}

/** One rename of `renameMany`: 32-byte hashes and the new path metadata. */
export interface RenameEntry {
  oldPathHash: Uint8Array;
  newPathHash: Uint8Array;
  baseRevisionId: Uint8Array;
  encryptedPath: Uint8Array;
  fileName: string | null;
  relativePath: string | null;
}

/** Why one rename failed (extensions §1.2). */
export type RenameFailureReason = "not_found" | "target_exists" | "revision_mismatch" | "database_error";

/** What `renameMany` did, per entry. */
export interface BatchRenameOutcome {
  successes: {
    oldPathHash: Uint8Array;
    newPathHash: Uint8Array;
    revisionId: Uint8Array;
    revisionSeq: number;
  }[];
  failures: { oldPathHash: Uint8Array; reason: RenameFailureReason }[];
}

/** What `registerRelativePaths` did. */
export interface RelativePathsOutcome {
  updated: number;
  skipped: number;
  errors: {
    path_hash: string;
    reason: "invalid_path" | "not_found" | "path_mismatch" | "database_error";
  }[];
}

/** An open download: the file row, the byte range `[start, end)` and its stream. */
export interface Download {
  row: FileRow;
  start: number;
  end: number;
  body: ReadableStream<Uint8Array>;
}

/** Rules of file writes, reads and deletes. */
export class FilesService {
  constructor(
    private readonly db: Db,
    private readonly filesRepo: FilesRepository,
    private readonly foldersRepo: FoldersRepository,
    private readonly deletions: DeletionQueueRepository,
    private readonly blobs: BlobStore,
    private readonly clock: Clock,
    private readonly quota: QuotaService,
    /** Seconds a replaced or deleted revision's objects stay readable (`ESYNC_BLOB_GRACE_SECONDS`). */
    private readonly graceSeconds: number,
  ) {}

  /**
   * Checks the revision rules for `m` against the current row before any byte is stored (the
   * commit checks them again).
   * @throws as `checkRevision`.
   */
  precheck(m: Manifest): void {
    this.checkRevision(m, this.filesRepo.get(m.ss58Address, m.folderHash, m.pathHash));
  }

  /**
   * Checks the revision rules for writing `m` against the current row (complement §1).
   * Call inside the commit transaction.
   * @throws AppError `conflict` (409, Conflict envelope) when `base_revision_id` does not match,
   *   `stale_sequence` (400) when `revision_seq` does not grow.
   */
  checkRevision(m: Manifest, current: FileRow | undefined): void {
    const conflict = (message: string) =>
      fail("conflict", message, {
        conflict: {
          currentRevisionId: current ? new Uint8Array(current.revisionId) : null,
          currentRevisionSeq: current?.revisionSeq ?? 0,
        },
      });
    if (m.baseRevisionId === null) {
      if (current) throw conflict("A file already exists at this path; upload with its base_revision_id");
      return;
    }
    if (!current) throw conflict("base_revision_id given but no file exists at this path");
    if (!Buffer.from(current.revisionId).equals(Buffer.from(m.baseRevisionId))) {
      throw conflict("base_revision_id does not match the current revision");
    }
    if (m.revisionSeq <= current.revisionSeq) {
      throw fail(
        "stale_sequence",
        `revision_seq ${m.revisionSeq} must be greater than the current ${current.revisionSeq}`,
      );
    }
  }

  /**
   * Refuses, before any bytes are received, a write of `m` that would grow its owner past the
   * allowance (session create; the commit checks again in its transaction).
   * @throws AppError `drive_quota_exceeded` (402).
   */
  requireQuota(m: Manifest): void {
    const current = this.filesRepo.get(m.ss58Address, m.folderHash, m.pathHash);
    this.quota.require(m.ss58Address, m.sizeBytes - (current?.sizeBytes ?? 0));
  }

  /** The current revision at a path, as carried by the Conflict envelope (null/0 when no file). */
  currentRevision(owner: string, folderHash: string, pathHash: Uint8Array): ConflictDetails {
    const current = this.filesRepo.get(owner, folderHash, pathHash);
    return {
      currentRevisionId: current ? new Uint8Array(current.revisionId) : null,
      currentRevisionSeq: current?.revisionSeq ?? 0,
    };
  }

  /**
   * Records a verified blob as the new revision of the manifest's file, in the caller's
   * transaction or a new one: revision checks, the quota check of the growth over the replaced
   * row, row upsert, folder counters, and the replaced revision's blob queued for deletion after
   * the grace period. `also` runs in the same transaction (finalize marks its session there).
   * With `intent`, the write intent of the blob (`DeletionQueueRepository.reserve`) is claimed in
   * the same transaction.
   * @throws as `checkRevision`; `drive_quota_exceeded` (402) over the allowance;
   *   `storage_unavailable` (503) when the intent's lease ran out.
   */
  commit(
    m: Manifest,
    blob: StoredBlob,
    also?: (result: UploadResult) => void,
    intent?: number,
  ): UploadResult {
    return this.db.transaction(() => {
      const now = this.clock.now();
      const current = this.filesRepo.get(m.ss58Address, m.folderHash, m.pathHash);
      this.checkRevision(m, current);
      this.quota.require(m.ss58Address, m.sizeBytes - (current?.sizeBytes ?? 0));
      if (intent !== undefined && !this.deletions.claim(intent, now))
        throw fail("storage_unavailable", "The upload took too long to commit; retry", { retryAfter: 1 });
      const revisionId = Buffer.from(randomHex(32), "hex");
      const searchName = searchNameOf(m.fileName, m.relativePath);
      const row: FileRow = {
        owner: m.ss58Address,
        folderHash: m.folderHash,
        pathHash: Buffer.from(m.pathHash),
        saltedHash: Buffer.from(m.saltedHash),
        sizeBytes: m.sizeBytes,
        revisionSeq: m.revisionSeq,
        revisionId,
        encryptedPath: Buffer.from(m.encryptedPath),
        fileName: m.fileName,
        relativePath: m.relativePath,
        searchName,
        ext: extensionOf(searchName),
        storeHash: blob.ciphertextHash,
        chunkHashes: blob.chunkHashes ? JSON.stringify(blob.chunkHashes) : null,
        createdAt: current?.createdAt ?? now,
        updatedAt: now,
        clientTimestamp: m.timestamp,
        source: m.source,
        attributes: m.attributes === null ? null : Buffer.from(m.attributes),
        uploadId: randomHex(16),
        ciphertextHash: blob.ciphertextHash,
        ciphertextSize: blob.size,
        blobId: blob.blobId,
        chunkSize: blob.chunkSize,
        chunkCount: blob.chunkCount,
        chunkGens: JSON.stringify(blob.gens),
        // Every write path has checked that the token's account is the manifest's owner.
        uploadedBy: m.ss58Address,
      };
      this.filesRepo.upsert(row);
      this.foldersRepo.applyFileChange(
        m.ss58Address,
        m.folderHash,
        current ? 0 : 1,
        m.sizeBytes - (current?.sizeBytes ?? 0),
        now,
      );
      if (current && current.blobId !== blob.blobId)
        this.deletions.enqueue([blobPrefix(current.blobId)], now + this.graceSeconds);
      const result: UploadResult = {
        upload_id: row.uploadId,
        timestamp: now,
        revision_id: Array.from(revisionId),
        created_at: row.createdAt,
        updated_at: row.updatedAt,
      };
      also?.(result);
      return result;
    });
  }

  /**
   * Back-fills the plaintext `relative_path` of rows that have none (`POST
   * /register_relative_paths`, extensions §1.6, §9 item 8), in one transaction: a row whose path
   * is null gets it (and its last segment as `file_name` when that is null too): `updated`; a row
   * already holding exactly that path: `skipped`; errors per entry: `invalid_path`, `not_found`,
   * `path_mismatch` (a different path is never overwritten), `database_error`.
   * @throws AppError `batch_too_large` (400) over `MAX_PATH_BATCH` entries.
   */
  registerRelativePaths(
    owner: string,
    folderHash: string,
    entries: readonly { path_hash: string; relative_path: string }[],
  ): RelativePathsOutcome {
    if (entries.length > MAX_PATH_BATCH)
      throw fail("batch_too_large", `At most ${MAX_PATH_BATCH} entries per request, got ${entries.length}`);
    const out: RelativePathsOutcome = { updated: 0, skipped: 0, errors: [] };
    this.db.transaction((tx) => {
      for (const e of entries) {
        const failed = (reason: RelativePathsOutcome["errors"][number]["reason"]) =>
          out.errors.push({ path_hash: e.path_hash, reason });
        if (!isRelativePath(e.relative_path)) {
          failed("invalid_path");
          continue;
        }
        try {
          const pathHash = Buffer.from(e.path_hash, "hex");
          const row = this.filesRepo.get(owner, folderHash, pathHash);
          if (!row) failed("not_found");
          else if (row.relativePath === e.relative_path) out.skipped++;
          else if (row.relativePath !== null) failed("path_mismatch");
          else {
            const fileName = row.fileName ?? lastSegment(e.relative_path);
            const searchName = searchNameOf(fileName, e.relative_path);
            tx.transaction(() =>
              this.filesRepo.setPath(owner, folderHash, pathHash, {
                relativePath: e.relative_path,
                fileName,
                searchName,
                ext: extensionOf(searchName),
              }),
            );
            out.updated++;
          }
        } catch {
          failed("database_error");
        }
      }
    });
    return out;
  }

  /** A page of a folder's files for `/get_state` (complement §5). */
  state(
    owner: string,
    folderHash: string,
    offset: number,
    limit: number,
  ): { rows: FileRow[]; total: number } {
    return this.filesRepo.page(owner, folderHash, offset, limit);
  }

  /**
   * Deletes one file (`/delete`): row, counters, blob queued for deletion after the grace period.
   * @throws AppError `not_found` when there is no such file.
   */
  remove(owner: string, folderHash: string, pathHash: Uint8Array): void {
    this.db.transaction(() => {
      if (!this.removeRow(owner, folderHash, pathHash, this.clock.now()))
        throw fail("not_found", "No file with this file_id in this folder");
    });
  }

  /**
   * Deletes one file inside the caller's transaction: row, folder counters, and its blob queued
   * for deletion after the grace period. False when there is no such file.
   */
  private removeRow(owner: string, folderHash: string, pathHash: Uint8Array, now: number): boolean {
    const current = this.filesRepo.get(owner, folderHash, pathHash);
    if (!current) return false;
    this.filesRepo.remove(owner, folderHash, pathHash);
    this.foldersRepo.applyFileChange(owner, folderHash, -1, -current.sizeBytes, now);
    this.deletions.enqueue([blobPrefix(current.blobId)], now + this.graceSeconds);
    return true;
  }

  /**
   * Deletes files of one folder by id in one transaction (`POST /delete_files`, extensions §1.1,
   * §9 item 7): each id is `deleted`, `already_deleted` (no row) or an error (`invalid_file_id`
   * when not 64 hex characters, `database_error` when its delete failed and was rolled back).
   * A repeated id is reported once. Blobs go through the deletion queue as `/delete`'s do.
   * @throws AppError `batch_too_large` (400) over `MAX_BATCH_DELETE` ids.
   */
  removeMany(owner: string, folderHash: string, fileIds: readonly string[]): BatchDeleteOutcome {
    if (fileIds.length > MAX_BATCH_DELETE)
      throw fail(
        "batch_too_large",
        `At most ${MAX_BATCH_DELETE} file_ids per request, got ${fileIds.length}`,
      );
    const out: BatchDeleteOutcome = { deleted: [], errors: [], filesDeleted: 0 };
    const seen = new Set<string>();
    this.db.transaction((tx) => {
      const now = this.clock.now();
      for (const id of fileIds) {
        const key = id.toLowerCase();
        if (seen.has(key)) continue;
        seen.add(key);
        if (!FILE_ID.test(id)) {
          out.errors.push({ file_id: id, error: "invalid_file_id" });
          continue;
        }
        try {
          const removed = tx.transaction(() =>
            this.removeRow(owner, folderHash, Buffer.from(key, "hex"), now),
          );
          out.deleted.push({ file_id: id, status: removed ? "deleted" : "already_deleted" });
          if (removed) out.filesDeleted++;
        } catch {
          out.errors.push({ file_id: id, error: "database_error" });
        }
      }
    });
    return out;
  }

  /**
   * Renames files of one folder (`POST /rename_files`, extensions §1.2, §9 item 6), entries in
   * request order, each on its own: the row moves to `new_path_hash` with the new path metadata
   * (absent fields: empty encrypted path, null name and path), `revision_seq + 1` and a new random
   * `revision_id`; ciphertext, `created_at`, sizes and the uploader stay. Failures: `not_found`,
   * `target_exists`, `revision_mismatch`, `database_error`. The caller has verified the signature.
   */
  renameMany(owner: string, folderHash: string, renames: readonly RenameEntry[]): BatchRenameOutcome {
    const out: BatchRenameOutcome = { successes: [], failures: [] };
    this.db.transaction((tx) => {
      const now = this.clock.now();
      for (const r of renames) {
        const failed = (reason: RenameFailureReason) =>
          out.failures.push({ oldPathHash: r.oldPathHash, reason });
        try {
          const current = this.filesRepo.get(owner, folderHash, r.oldPathHash);
          if (!current) {
            failed("not_found");
            continue;
          }
          if (!Buffer.from(current.revisionId).equals(Buffer.from(r.baseRevisionId))) {
            failed("revision_mismatch");
            continue;
          }
          if (this.filesRepo.get(owner, folderHash, r.newPathHash)) {
            failed("target_exists");
            continue;
          }
          const revisionId = Buffer.from(randomHex(32), "hex");
          const searchName = searchNameOf(r.fileName, r.relativePath);
          const revisionSeq = current.revisionSeq + 1;
          tx.transaction(() => {
            this.filesRepo.rekey(owner, folderHash, r.oldPathHash, {
              pathHash: Buffer.from(r.newPathHash),
              encryptedPath: Buffer.from(r.encryptedPath),
              fileName: r.fileName,
              relativePath: r.relativePath,
              searchName,
              ext: extensionOf(searchName),
              revisionSeq,
              revisionId,
              updatedAt: now,
            });
            this.foldersRepo.applyFileChange(owner, folderHash, 0, 0, now);
          });
          out.successes.push({
            oldPathHash: r.oldPathHash,
            newPathHash: r.newPathHash,
            revisionId,
            revisionSeq,
          });
        } catch {
          failed("database_error");
        }
      }
    });
    return out;
  }

  /**
   * The current row of a file, for `/download` (complement §5).
   * @throws AppError `not_found` when there is no such file.
   */
  file(owner: string, folderHash: string, pathHash: Uint8Array): FileRow {
    const row = this.filesRepo.get(owner, folderHash, pathHash);
    if (!row) throw fail("not_found", "No file with this file_id in this folder");
    return row;
  }

  /**
   * Opens bytes `[start, end)` of a file's ciphertext (`0 <= start < end <= ciphertextSize`, or
   * `0, 0` for an empty file). The first piece is read before returning, so that a store failure
   * rejects here (a 500), not in the middle of a 200.
   */
  async open(row: FileRow, start: number, end: number): Promise<Download> {
    const layout: BlobLayout = {
      blobId: row.blobId,
      chunkSize: row.chunkSize,
      chunkCount: row.chunkCount,
      size: row.ciphertextSize,
      gens: JSON.parse(row.chunkGens) as string[],
    };
    const body = await primed(readBlobRange(this.blobs, layout, start, end));
    return { row, start, end, body };
  }
}

/**
 * Reads the first piece of `stream` now (rejecting with its error) and returns a stream of all
 * of its pieces, that piece included.
 */
async function primed(stream: ReadableStream<Uint8Array>): Promise<ReadableStream<Uint8Array>> {
  const reader = stream.getReader();
  let first: Awaited<ReturnType<typeof reader.read>> | null = await reader.read();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const r = first ?? (await reader.read());
        first = null;
        if (r.done) controller.close();
        else controller.enqueue(r.value);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}

/** `X-Revision-Id` value: the revision id as lowercase hex. */
export function revisionHex(row: FileRow): string {
  return toHex(row.revisionId);
}
