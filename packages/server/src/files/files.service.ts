/**
 * @module server/files/files.service
 * The file commit (shared by single-shot `/upload` and session finalize), `/get_state`,
 * `/delete` and `/download` rules: revisions (docs/protocol.md#manifest), folder counters, and blob
 * lifecycle through the deletion queue.
 */

import { AppError, type ConflictDetails, fail } from "@esync/protocol/errors.ts";
import { randomHex, toHex } from "@esync/protocol/ids.ts";
import { type Manifest, pathRuleViolation } from "@esync/protocol/manifest.ts";
import { lastSegment } from "@esync/protocol/paths.ts";
import { MAX_BATCH_DELETE, MAX_PATH_BATCH } from "@esync/protocol/schemas.ts";
import type { UploadResult } from "@esync/protocol/types.ts";
import type { MetadataStore, Repositories } from "../db/store.ts";
import type { DriveAccessService } from "../drives/drive-access.service.ts";
import type { QuotaService } from "../quota/quota.service.ts";
import { BlobNotFoundError, BlobReadError, type BlobStore } from "../storage/blob-store.ts";
import { type BlobLayout, readBlobRange } from "../storage/layout.ts";
import type { Clock } from "../util/clock.ts";
import { TimeSlicer } from "../util/yield.ts";
import { type RetirePolicy, retire } from "../versions/retire.ts";
import { extensionOf, type FileRow, searchNameOf } from "./file-entry.ts";

/**
 * Milliseconds a `/delete_files` or `/rename_files` batch runs between two yields to the event
 * loop: the batch stays one transaction (other writes wait for it), while requests that need no
 * database or only read it (downloads and uploads streaming, `/health`, `/get_state`) keep running
 * (docs/operator-guide.md#big-answers-and-batches).
 */
const BATCH_SLICE_MS = 5;

export type { UploadResult } from "@esync/protocol/types.ts";

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

/** Why one rename failed (docs/protocol.md#rename-files). */
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

/** Most commits one group transaction takes (`FilesService.commit`). */
export const MAX_COMMIT_GROUP = 64;
/** Default longest wait of a group for the commits announced by `expectCommit`, milliseconds. */
export const MAX_GROUP_WAIT_MS = 2;

/** A commit waiting for its group transaction. */
interface QueuedCommit {
  m: Manifest;
  blob: StoredBlob;
  also?: (result: UploadResult, tx: Repositories) => Promise<void>;
  intent?: number;
  uploader?: string;
  resolve: (result: UploadResult) => void;
  reject: (error: unknown) => void;
}

/** An open download: the file row, the byte range `[start, end)` and its stream. */
export interface Download {
  row: FileRow;
  /** Where the row's ciphertext is stored. */
  layout: BlobLayout;
  start: number;
  end: number;
  body: ReadableStream<Uint8Array>;
}

/** Rules of file writes, reads and deletes. */
export class FilesService {
  /** Commits waiting for the next group transaction (SQLite). */
  private queued: QueuedCommit[] = [];
  /** True while a group is scheduled or running. */
  private grouping = false;
  /** Longest a group waits for announced commits, milliseconds (tests lengthen it). */
  groupWaitMs = MAX_GROUP_WAIT_MS;
  /** Commits announced by `expectCommit` and not yet asked for (nor withdrawn). */
  private expected = 0;
  /** Wakes a group waiting for announced commits (set while it waits). */
  private wake: (() => void) | null = null;

  constructor(
    private readonly store: MetadataStore,
    private readonly blobs: BlobStore,
    private readonly clock: Clock,
    private readonly quota: QuotaService,
    /** Seconds a replaced or deleted revision's objects stay readable (`ESYNC_BLOB_GRACE_SECONDS`). */
    private readonly graceSeconds: number,
    private readonly access: DriveAccessService,
    /** Seconds a replaced or deleted revision is kept as a version (`ESYNC_VERSION_RETENTION_DAYS`); 0 = off. */
    private readonly retentionSeconds = 0,
  ) {}

  /** How replaced and deleted revisions are retired (src/versions/retire.ts). */
  get retirePolicy(): RetirePolicy {
    return { retentionSeconds: this.retentionSeconds, graceSeconds: this.graceSeconds };
  }

  /**
   * Bytes a write of `sizeBytes` over `current` adds to the owner's usage: its growth over the
   * replaced row, or its whole size while versions are kept (the replaced revision stays counted
   * as a version: docs/versions.md).
   */
  growth(sizeBytes: number, current: FileRow | undefined): number {
    return this.retentionSeconds > 0 ? sizeBytes : sizeBytes - (current?.sizeBytes ?? 0);
  }

  /**
   * Admits `caller` to write the manifest's file: the owner, or a writer or manager of the
   * owner's drive, or a writer folder holder whose folder covers `relative_path`
   * (docs/drives.md); a frozen owner's folders take no writes.
   * @throws AppError `forbidden` (403), `drive_frozen` (402).
   */
  async admitWrite(caller: string, m: Manifest): Promise<void> {
    const access = await this.access.require(caller, m.ss58Address, m.folderHash, "write");
    access.requirePath(m.relativePath);
  }

  /**
   * Checks the revision rules for `m` against the current row before any byte is stored (the
   * commit checks them again).
   * @throws as `checkRevision`.
   */
  async precheck(m: Manifest): Promise<void> {
    this.checkRevision(m, await this.store.repos.files.get(m.ss58Address, m.folderHash, m.pathHash));
  }

  /**
   * Checks the revision rules for writing `m` against the current row (docs/protocol.md#manifest).
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
   * allowance (session create, in its transaction `tx`; the commit checks again in its own).
   * @throws AppError `drive_quota_exceeded` (402).
   */
  async requireQuota(m: Manifest, tx: Repositories): Promise<void> {
    const current = await tx.files.get(m.ss58Address, m.folderHash, m.pathHash);
    await this.quota.require(m.ss58Address, this.growth(m.sizeBytes, current), tx.quota);
  }

  /**
   * The current revision at a path, as carried by the Conflict envelope (null/0 when no file),
   * read through `repos` (a transaction's inside one).
   */
  async currentRevision(
    owner: string,
    folderHash: string,
    pathHash: Uint8Array,
    repos: Repositories = this.store.repos,
  ): Promise<ConflictDetails> {
    const current = await repos.files.get(owner, folderHash, pathHash);
    return {
      currentRevisionId: current ? new Uint8Array(current.revisionId) : null,
      currentRevisionSeq: current?.revisionSeq ?? 0,
    };
  }

  /**
   * Records a verified blob as the new revision of the manifest's file, in one transaction under
   * the owner's lock (`lockOwner`): revision checks, the quota check of the growth over the
   * replaced row, row upsert, folder counters, and the replaced revision's blob queued for
   * deletion after the grace period. `also` runs in the same transaction (finalize marks its
   * session there). With `intent`, the write intent of the blob (`DeletionQueueRepository.reserve`)
   * is claimed in the same transaction.
   *
   * Group commit (SQLite): the commits asked for while a group transaction runs, or in the same
   * turn of the event loop, share the next transaction (at most `MAX_COMMIT_GROUP`), each in its
   * own savepoint, so one commit's failure undoes only its own writes. Every caller's promise
   * settles after that transaction has committed (or failed as a whole), never before: an answer
   * still means the row is in the database. One transaction writes the pages that every commit
   * touches (search index, counters, summaries) once instead of once per file. A group waits
   * up to `groupWaitMs` (2 ms) for the commits announced by `expectCommit` that are still on
   * their way. On PostgreSQL each commit is its own transaction (a group would hold several owners'
   * locks at once).
   * `uploader` is the account recorded as `uploaded_by` (the token's account; default the
   * manifest's owner).
   * @throws as `checkRevision`; `drive_quota_exceeded` (402) over the allowance;
   *   `storage_unavailable` (503) when the intent's lease ran out.
   */
  commit(
    m: Manifest,
    blob: StoredBlob,
    also?: (result: UploadResult, tx: Repositories) => Promise<void>,
    intent?: number,
    uploader?: string,
  ): Promise<UploadResult> {
    if (this.store.dialect !== "sqlite")
      return this.store.transaction((tx) => this.write(tx, m, blob, also, intent, uploader));
    return new Promise((resolve, reject) => {
      this.queued.push({ m, blob, also, intent, uploader, resolve, reject });
      if (!this.grouping) {
        this.grouping = true;
        setImmediate(() => void this.commitGroups());
      }
    });
  }

  /**
   * Announces a `commit` that will come soon (an upload storing its bytes), so that the group it
   * could join waits for it (at most `groupWaitMs`). Call the returned function once, just
   * before that `commit`, or when the upload fails before it.
   */
  expectCommit(): () => void {
    this.expected++;
    let withdrawn = false;
    return () => {
      if (withdrawn) return;
      withdrawn = true;
      this.expected--;
      // Defer the wake-up, so that the commit about to be asked for joins the group.
      if (this.expected === 0 && this.wake) queueMicrotask(() => this.wake?.());
    };
  }

  /** Waits until no announced commit is on its way, or `groupWaitMs` passed. */
  private async gather(): Promise<void> {
    if (this.expected === 0 || this.queued.length >= MAX_COMMIT_GROUP) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => this.wake?.(), this.groupWaitMs);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
    });
  }

  /** Runs the queued commits in group transactions until none is left (see `commit`). */
  private async commitGroups(): Promise<void> {
    try {
      while (this.queued.length > 0) {
        await this.gather();
        const group = this.queued.splice(0, MAX_COMMIT_GROUP);
        const only = group.length === 1 ? group[0] : undefined;
        if (only) {
          // Alone: its own transaction, no savepoint.
          await this.store
            .transaction((tx) => this.write(tx, only.m, only.blob, only.also, only.intent, only.uploader))
            .then(only.resolve, only.reject);
          continue;
        }
        const settled: PromiseSettledResult<UploadResult>[] = [];
        try {
          await this.store.transaction(async (tx) => {
            for (const c of group)
              settled.push(
                await tx
                  .savepoint((sp) => this.write(sp, c.m, c.blob, c.also, c.intent, c.uploader))
                  .then(
                    (value) => ({ status: "fulfilled", value }) as const,
                    (reason: unknown) => ({ status: "rejected", reason }) as const,
                  ),
              );
          });
        } catch (e) {
          for (const c of group) c.reject(e);
          continue;
        }
        group.forEach((c, i) => {
          const r = settled[i] as PromiseSettledResult<UploadResult>;
          if (r.status === "fulfilled") c.resolve(r.value);
          else c.reject(r.reason);
        });
      }
    } finally {
      this.grouping = false;
    }
  }

  /** The body of `commit`, inside the caller's transaction `tx`. */
  private async write(
    tx: Repositories,
    m: Manifest,
    blob: StoredBlob,
    also?: (result: UploadResult, tx: Repositories) => Promise<void>,
    intent?: number,
    uploader?: string,
  ): Promise<UploadResult> {
    const now = this.clock.now();
    await tx.sessions.lockOwner(m.ss58Address);
    const current = await tx.files.get(m.ss58Address, m.folderHash, m.pathHash);
    this.checkRevision(m, current);
    await this.quota.require(m.ss58Address, this.growth(m.sizeBytes, current), tx.quota);
    if (intent !== undefined && !(await tx.deletionQueue.claim(intent, now)))
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
      // Every write path has admitted the token's account (`admitWrite`); it is the uploader.
      uploadedBy: uploader ?? m.ss58Address,
    };
    await tx.files.upsert(row);
    await tx.folders.applyFileChange(
      m.ss58Address,
      m.folderHash,
      current ? 0 : 1,
      m.sizeBytes - (current?.sizeBytes ?? 0),
      now,
    );
    if (current) await retire(tx, current, "replaced", now, this.retirePolicy);
    const result: UploadResult = {
      upload_id: row.uploadId,
      timestamp: now,
      revision_id: Array.from(revisionId),
      created_at: row.createdAt,
      updated_at: row.updatedAt,
    };
    await also?.(result, tx);
    return result;
  }

  /**
   * Back-fills the plaintext `relative_path` of rows that have none (`POST
   * /register_relative_paths`, docs/protocol.md#relative-path-backfill), in one transaction: a row whose path
   * is null gets it (and its last segment as `file_name` when that is null too): `updated`; a row
   * already holding exactly that path: `skipped`; errors per entry: `invalid_path` (not a clean
   * path, or `path_hash` is not its hash: docs/paths.md), `not_found`, `path_mismatch` (a
   * different path, or a `file_name` that is not its last segment; never overwritten),
   * `database_error`. Runs under the
   * owner's lock, so that a commit of the same file between its read and its write cannot have
   * set another path that it would overwrite.
   * @throws AppError `batch_too_large` (400) over `MAX_PATH_BATCH` entries.
   */
  async registerRelativePaths(
    owner: string,
    folderHash: string,
    entries: readonly { path_hash: string; relative_path: string }[],
  ): Promise<RelativePathsOutcome> {
    checkRelativePathsBatch(entries.length);
    const out: RelativePathsOutcome = { updated: 0, skipped: 0, errors: [] };
    await this.store.transaction(async (tx) => {
      await tx.sessions.lockOwner(owner);
      for (const e of entries) {
        const failed = (reason: RelativePathsOutcome["errors"][number]["reason"]) =>
          out.errors.push({ path_hash: e.path_hash, reason });
        const pathHash = Buffer.from(e.path_hash, "hex");
        // The upload's path rule (docs/paths.md): a path is only ever set on the row of its hash.
        if (pathRuleViolation(e.relative_path, pathHash, null)) {
          failed("invalid_path");
          continue;
        }
        try {
          const outcome = await tx.savepoint(async (sp) => {
            const row = await sp.files.get(owner, folderHash, pathHash);
            if (!row) return "not_found";
            if (row.relativePath === e.relative_path) return "skipped";
            if (row.relativePath !== null) return "path_mismatch";
            // A row named otherwise than the path's last segment does not hold this path.
            if (pathRuleViolation(e.relative_path, pathHash, row.fileName)) return "path_mismatch";
            const fileName = row.fileName ?? lastSegment(e.relative_path);
            const searchName = searchNameOf(fileName, e.relative_path);
            await sp.files.setPath(owner, folderHash, pathHash, {
              relativePath: e.relative_path,
              fileName,
              searchName,
              ext: extensionOf(searchName),
            });
            return "updated";
          });
          if (outcome === "updated") out.updated++;
          else if (outcome === "skipped") out.skipped++;
          else failed(outcome);
        } catch (e) {
          // A path the database refuses to hold (PostgreSQL: too long for its indexes) is the
          // entry's invalid_path (src/db/postgres/store.ts); anything else is transient.
          failed(e instanceof AppError && e.code === "invalid_manifest" ? "invalid_path" : "database_error");
        }
      }
    });
    return out;
  }

  /**
   * A page of a folder's files for `/get_state` (docs/protocol.md#sync-endpoints); with `under` (a folder
   * holder's folders), only the files at or under them.
   */
  state(
    owner: string,
    folderHash: string,
    offset: number,
    limit: number,
    under: readonly string[] | null = null,
  ): Promise<{ rows: FileRow[]; total: number }> {
    return this.store.repos.files.page(owner, folderHash, offset, limit, under);
  }

  /**
   * The existing rows of a folder among `fileIds` (64 hex characters each; others are skipped),
   * for a folder holder's path check before a batch.
   */
  async rowsOf(owner: string, folderHash: string, fileIds: readonly string[]): Promise<FileRow[]> {
    const out: FileRow[] = [];
    for (const id of new Set(fileIds.filter((x) => FILE_ID.test(x)).map((x) => x.toLowerCase()))) {
      const row = await this.store.repos.files.get(owner, folderHash, Buffer.from(id, "hex"));
      if (row) out.push(row);
    }
    return out;
  }

  /**
   * Deletes one file (`/delete`): row, counters, its revision retired (kept as a version, or its
   * blob queued for deletion after the grace period: src/versions/retire.ts), under the owner's lock (`lockOwner`), so that the row it removes and the counters it changes
   * are those of the last committed write, rename or unregister.
   * @throws AppError `not_found` when there is no such file.
   */
  async remove(owner: string, folderHash: string, pathHash: Uint8Array): Promise<void> {
    await this.store.transaction(async (tx) => {
      await tx.sessions.lockOwner(owner);
      if (!(await removeRow(tx, owner, folderHash, pathHash, this.clock.now(), this.retirePolicy)))
        throw fail("not_found", "No file with this file_id in this folder");
    });
  }

  /**
   * Deletes files of one folder by id in one transaction (`POST /delete_files`, docs/protocol.md#delete-files): each id is `deleted`, `already_deleted` (no row) or an error (`invalid_file_id`
   * when not 64 hex characters, `database_error` when its delete failed and was rolled back).
   * A repeated id is reported once. Blobs go through the deletion queue as `/delete`'s do. Runs
   * under the owner's lock, as `remove`.
   * @throws AppError `batch_too_large` (400) over `MAX_BATCH_DELETE` ids.
   */
  async removeMany(
    owner: string,
    folderHash: string,
    fileIds: readonly string[],
  ): Promise<BatchDeleteOutcome> {
    checkDeleteBatch(fileIds.length);
    const out: BatchDeleteOutcome = { deleted: [], errors: [], filesDeleted: 0 };
    const seen = new Set<string>();
    await this.store.transaction(async (tx) => {
      await tx.sessions.lockOwner(owner);
      const now = this.clock.now();
      const slicer = new TimeSlicer(BATCH_SLICE_MS);
      for (const id of fileIds) {
        await slicer.tick();
        const key = id.toLowerCase();
        if (seen.has(key)) continue;
        seen.add(key);
        if (!FILE_ID.test(id)) {
          out.errors.push({ file_id: id, error: "invalid_file_id" });
          continue;
        }
        try {
          const removed = await tx.savepoint((sp) =>
            removeRow(sp, owner, folderHash, Buffer.from(key, "hex"), now, this.retirePolicy),
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
   * Renames files of one folder (`POST /rename_files`, docs/protocol.md#rename-files), entries in
   * request order, each on its own: the row moves to `new_path_hash` with the new path metadata
   * (absent fields: empty encrypted path, null name and path), `revision_seq + 1` and a new random
   * `revision_id`; ciphertext, `created_at`, sizes and the uploader stay. Failures: `not_found`,
   * `target_exists`, `revision_mismatch`, `database_error`. The caller has verified the signature.
   * @throws AppError `invalid_manifest` when the database refuses a new name (PostgreSQL: U+0000,
   *   or too long for its indexes); nothing is renamed then.
   */
  async renameMany(
    owner: string,
    folderHash: string,
    renames: readonly RenameEntry[],
  ): Promise<BatchRenameOutcome> {
    const out: BatchRenameOutcome = { successes: [], failures: [] };
    await this.store.transaction(async (tx) => {
      await tx.sessions.lockOwner(owner);
      const now = this.clock.now();
      const slicer = new TimeSlicer(BATCH_SLICE_MS);
      for (const r of renames) {
        await slicer.tick();
        const failed = (reason: RenameFailureReason) =>
          out.failures.push({ oldPathHash: r.oldPathHash, reason });
        try {
          const done = await tx.savepoint(async (sp) => {
            const current = await sp.files.get(owner, folderHash, r.oldPathHash);
            if (!current) return "not_found" as const;
            if (!Buffer.from(current.revisionId).equals(Buffer.from(r.baseRevisionId)))
              return "revision_mismatch" as const;
            if (await sp.files.get(owner, folderHash, r.newPathHash)) return "target_exists" as const;
            const revisionId = Buffer.from(randomHex(32), "hex");
            const searchName = searchNameOf(r.fileName, r.relativePath);
            const revisionSeq = current.revisionSeq + 1;
            await sp.files.rekey(owner, folderHash, r.oldPathHash, {
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
            await sp.folders.applyFileChange(owner, folderHash, 0, 0, now);
            return { revisionId, revisionSeq };
          });
          if (typeof done === "string") failed(done);
          else
            out.successes.push({
              oldPathHash: r.oldPathHash,
              newPathHash: r.newPathHash,
              revisionId: done.revisionId,
              revisionSeq: done.revisionSeq,
            });
        } catch (e) {
          // A name the database refuses to hold (PostgreSQL: U+0000, or too long for its indexes)
          // is the request's fault: the whole request is 400 invalid_manifest, as for an invalid
          // new_relative_path (docs/protocol.md#rename-files), and nothing is renamed.
          if (e instanceof AppError && e.code === "invalid_manifest") throw e;
          failed("database_error");
        }
      }
    });
    return out;
  }

  /**
   * The current row of a file, for `/download` (docs/protocol.md#sync-endpoints).
   * @throws AppError `not_found` when there is no such file.
   */
  async file(owner: string, folderHash: string, pathHash: Uint8Array): Promise<FileRow> {
    const row = await this.store.repos.files.get(owner, folderHash, pathHash);
    if (!row) throw fail("not_found", "No file with this file_id in this folder");
    return row;
  }

  /**
   * Opens bytes `[start, end)` of a file's ciphertext (`0 <= start < end <= ciphertextSize`, or
   * `0, 0` for an empty file). The first piece is read before returning, so that a store failure
   * rejects here, not in the middle of a 200.
   * @throws `BlobNotFoundError` when an object of the file is missing (500
   *   `storage_inconsistency`); `BlobReadError` when the store cannot be read now (503
   *   `storage_unavailable` with `Retry-After: 1`).
   */
  async open(row: FileRow, start: number, end: number): Promise<Download> {
    const layout = layoutOf(row);
    let body: ReadableStream<Uint8Array>;
    try {
      body = await primed(readBlobRange(this.blobs, layout, start, end));
    } catch (e) {
      // A missing object of a committed file stays `storage_inconsistency` (500); a store that
      // cannot be read now (S3 down, I/O) is the server's passing failure: 503 with Retry-After.
      if (e instanceof BlobNotFoundError || e instanceof AppError) throw e;
      throw new BlobReadError(e);
    }
    return { row, layout, start, end, body };
  }
}

/** Where the ciphertext of file row `row` is stored (src/storage/layout.ts). */
export function layoutOf(row: FileRow): BlobLayout {
  return {
    blobId: row.blobId,
    chunkSize: row.chunkSize,
    chunkCount: row.chunkCount,
    size: row.ciphertextSize,
    gens: JSON.parse(row.chunkGens) as string[],
  };
}

/**
 * Reads the first piece of `stream` now (rejecting with its error) and returns a stream of all
 * of its pieces, that piece included.
 */
export async function primed(stream: ReadableStream<Uint8Array>): Promise<ReadableStream<Uint8Array>> {
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
 * Deletes one file inside the transaction `tx`: row, folder counters, and its revision retired
 * by `policy` (kept as a version, or its blob queued for deletion after the grace period:
 * src/versions/retire.ts). False when there is no such file.
 */
async function removeRow(
  tx: Repositories,
  owner: string,
  folderHash: string,
  pathHash: Uint8Array,
  now: number,
  policy: RetirePolicy,
): Promise<boolean> {
  const current = await tx.files.get(owner, folderHash, pathHash);
  if (!current) return false;
  if (!(await tx.files.remove(owner, folderHash, pathHash))) return false;
  await tx.folders.applyFileChange(owner, folderHash, -1, -current.sizeBytes, now);
  await retire(tx, current, "deleted", now, policy);
  return true;
}

/** `X-Revision-Id` value: the revision id as lowercase hex. */
export function revisionHex(row: FileRow): string {
  return toHex(row.revisionId);
}

/**
 * Refuses a `/delete_files` batch of more than `MAX_BATCH_DELETE` ids (docs/protocol.md#delete-files). The
 * controller calls it before the ownership check too (400 before 403, docs/protocol.md#open-rules).
 * @throws AppError `batch_too_large` (400).
 */
export function checkDeleteBatch(count: number): void {
  if (count > MAX_BATCH_DELETE)
    throw fail("batch_too_large", `At most ${MAX_BATCH_DELETE} file_ids per request, got ${count}`);
}

/**
 * Refuses a `/register_relative_paths` batch of more than `MAX_PATH_BATCH` entries (docs/protocol.md#relative-path-backfill). The controller calls it before the ownership check too (400 before 403, docs/protocol.md#open-rules).
 * @throws AppError `batch_too_large` (400).
 */
export function checkRelativePathsBatch(count: number): void {
  if (count > MAX_PATH_BATCH)
    throw fail("batch_too_large", `At most ${MAX_PATH_BATCH} entries per request, got ${count}`);
}
