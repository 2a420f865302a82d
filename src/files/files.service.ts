/**
 * @module files/files.service
 * The file commit (shared by single-shot `/upload` and session finalize), `/get_state`,
 * `/delete` and `/download` rules: revisions (complement §1), folder counters, and blob
 * lifecycle through the deletion queue.
 */

import type { Db } from "../db/client.ts";
import { type ConflictDetails, fail } from "../errors/errors.ts";
import type { FoldersRepository } from "../folders/folders.repository.ts";
import { evaluatePreconditions, type Preconditions, revisionEtag } from "../http/conditional.ts";
import type { Manifest } from "../manifest/manifest.ts";
import type { BlobStore } from "../storage/blob-store.ts";
import { type BlobLayout, blobPrefix, readBlobRange } from "../storage/layout.ts";
import type { Clock } from "../util/clock.ts";
import { randomHex, toHex } from "../util/ids.ts";
import type { UploadResult } from "../wire/types.ts";
import type { DeletionQueueRepository } from "../workers/deletion-queue.repository.ts";
import { extensionOf, type FileRow, searchNameOf } from "./file-entry.ts";
import type { FilesRepository } from "./files.repository.ts";

export type { UploadResult } from "../wire/types.ts";

const NO_PRECONDITIONS: Preconditions = { ifMatch: null, ifNoneMatch: null, ifRange: null };

/** Where a verified ciphertext lives, given to `commit`. */
export interface StoredBlob extends BlobLayout {
  /** BLAKE3 hex of the whole ciphertext (already verified against the manifest). */
  ciphertextHash: string;
  /** BLAKE3 hex of each chunk, or null when unknown. */
  chunkHashes: string[] | null;
}

/**
 * A resolved download: the file row, its strong entity tag, the byte range `[start, end)` and the
 * stream. `notModified` (If-None-Match matched): no range and no body; answer 304.
 */
export interface Download {
  row: FileRow;
  /** Strong entity tag of the revision (`"<revision id hex>"`). */
  etag: string;
  start: number;
  end: number;
  partial: boolean;
  notModified: boolean;
  /** Null when `notModified`. */
  body: ReadableStream<Uint8Array> | null;
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
   * transaction or a new one: revision checks, row upsert, folder counters, and the replaced
   * revision's blob queued for deletion after the grace period. `also` runs in the same
   * transaction (finalize marks its session there). With `intent`, the write intent of the blob
   * (`DeletionQueueRepository.reserve`) is claimed in the same transaction.
   * @throws as `checkRevision`; `storage_unavailable` (503) when the intent's lease ran out.
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
      const now = this.clock.now();
      const current = this.filesRepo.get(owner, folderHash, pathHash);
      if (!current) throw fail("not_found", "No file with this file_id in this folder");
      this.filesRepo.remove(owner, folderHash, pathHash);
      this.foldersRepo.applyFileChange(owner, folderHash, -1, -current.sizeBytes, now);
      this.deletions.enqueue([blobPrefix(current.blobId)], now + this.graceSeconds);
    });
  }

  /**
   * Opens a download of the ciphertext, whole or one byte range (complement §4/§5), after its
   * conditional headers (`src/http/conditional.ts`) are evaluated against the same row: a range
   * whose If-Range names another revision gets the whole current file, never a splice.
   * @param range the `Range` header value, or null.
   * @param preconditions parsed If-Match / If-None-Match / If-Range (default: none).
   * @throws AppError `not_found`; `precondition_failed` (412) when If-Match does not match;
   *   `range_not_satisfiable` (416) for an unsatisfiable range.
   */
  async download(
    owner: string,
    folderHash: string,
    pathHash: Uint8Array,
    range: string | null,
    preconditions: Preconditions = NO_PRECONDITIONS,
  ): Promise<Download> {
    const row = this.filesRepo.get(owner, folderHash, pathHash);
    if (!row) throw fail("not_found", "No file with this file_id in this folder");
    const etag = revisionEtag(toHex(row.revisionId));
    const outcome = evaluatePreconditions(preconditions, etag, range !== null);
    if (outcome === "precondition_failed")
      throw fail(
        "precondition_failed",
        `The file's current revision is ${etag}, not the one If-Match names`,
        {
          headers: { etag },
        },
      );
    const size = row.ciphertextSize;
    if (outcome === "not_modified")
      return { row, etag, start: 0, end: size, partial: false, notModified: true, body: null };
    const r = parseRange(outcome === "full" ? null : range, size);
    if (r === "unsatisfiable") {
      throw fail("range_not_satisfiable", `Range not satisfiable for ${size} bytes`, {
        headers: { "content-range": `bytes */${size}` },
      });
    }
    const [start, end] = r ?? [0, size];
    const layout: BlobLayout = {
      blobId: row.blobId,
      chunkSize: row.chunkSize,
      chunkCount: row.chunkCount,
      size,
      gens: JSON.parse(row.chunkGens) as string[],
    };
    // Read the first piece before answering, so that a store failure is a 500, not a truncated 200.
    const body = await primed(readBlobRange(this.blobs, layout, start, end));
    return { row, etag, start, end, partial: r !== null, notModified: false, body };
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

/**
 * Parses a single-range `Range` header (RFC 9110: `bytes=a-b`, `a-`, `-n`; end clamped).
 * Returns `[start, end)`, null to serve the whole body (absent, malformed or multi-range
 * headers are ignored), or `"unsatisfiable"`.
 */
export function parseRange(header: string | null, size: number): [number, number] | null | "unsatisfiable" {
  if (header === null) return null;
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m) return null;
  const [, a, b] = m as unknown as [string, string, string];
  if (a === "" && b === "") return null;
  if (a === "") {
    const n = Number(b);
    if (n === 0 || size === 0) return "unsatisfiable";
    return [Math.max(0, size - n), size];
  }
  const start = Number(a);
  if (b !== "" && Number(b) < start) return null;
  if (start >= size) return "unsatisfiable";
  const end = b === "" ? size : Math.min(Number(b) + 1, size);
  return [start, end];
}

/** `X-Revision-Id` value: the revision id as lowercase hex. */
export function revisionHex(row: FileRow): string {
  return toHex(row.revisionId);
}
