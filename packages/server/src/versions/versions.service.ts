/**
 * @module server/versions/versions.service
 * Version history and trash (docs/versions.md): the kept versions of a file, a folder's deleted
 * files, restoring a kept version as a new revision without re-uploading (its blob is reused),
 * and the expiry of kept versions through the deletion queue. Access is decided as for every
 * file route (`DriveAccessService`): reads to list, writes to restore.
 */

import { fail } from "@esync/protocol/errors.ts";
import { randomHex } from "@esync/protocol/ids.ts";
import type { MetadataStore, Repositories } from "../db/store.ts";
import type { DriveAccessService } from "../drives/drive-access.service.ts";
import { extensionOf, type FileRow, searchNameOf } from "../files/file-entry.ts";
import type { FilesService } from "../files/files.service.ts";
import type { QuotaService } from "../quota/quota.service.ts";
import { blobTarget } from "../storage/layout.ts";
import type { Clock } from "../util/clock.ts";
import { retire } from "./retire.ts";
import type { VersionRow } from "./versions.repository.ts";

/** Kept versions removed per expiry transaction. */
const EXPIRE_BATCH = 100;

/** What a restore wrote: the new current revision of the file. */
export interface RestoreResult {
  /** 32 bytes. */
  revisionId: Buffer;
  revisionSeq: number;
  uploadId: string;
  /** Unix seconds. */
  createdAt: number;
  updatedAt: number;
  /** The version that was restored. */
  versionId: number;
  /** Plaintext bytes. */
  sizeBytes: number;
}

/** Rules of version history and trash. */
export class VersionsService {
  constructor(
    private readonly store: MetadataStore,
    private readonly clock: Clock,
    private readonly access: DriveAccessService,
    private readonly files: FilesService,
    private readonly quota: QuotaService,
  ) {}

  /**
   * The current row (if any) and the kept versions (newest first) of one file. A folder-grant
   * holder sees only those whose path its folders cover.
   * @throws AppError `forbidden` (403) without read access.
   */
  async list(
    caller: string,
    owner: string,
    folderHash: string,
    pathHash: Uint8Array,
  ): Promise<{ current: FileRow | null; versions: VersionRow[] }> {
    const access = await this.access.require(caller, owner, folderHash, "read");
    const current = (await this.store.repos.files.get(owner, folderHash, pathHash)) ?? null;
    const versions = await this.store.repos.versions.ofFile(owner, folderHash, pathHash);
    return {
      current: current && access.allowsPath(current.relativePath) ? current : null,
      versions: versions.filter((v) => access.allowsPath(v.relativePath)),
    };
  }

  /**
   * A page of the folder's trash (`VersionsRepository.trash`), newest first: at most `limit`
   * rows with `version_id` below `before`. `next` is the cursor of the following page, null at
   * the end. A folder-grant holder sees only the paths its folders cover (its pages may be short).
   * @throws AppError `forbidden` (403) without read access.
   */
  async trash(
    caller: string,
    owner: string,
    folderHash: string,
    before: number | null,
    limit: number,
  ): Promise<{ rows: VersionRow[]; next: number | null }> {
    const access = await this.access.require(caller, owner, folderHash, "read");
    const rows = await this.store.repos.versions.trash(owner, folderHash, before, limit);
    const last = rows[rows.length - 1];
    return {
      rows: rows.filter((v) => access.allowsPath(v.relativePath)),
      next: rows.length === limit && last ? last.versionId : null,
    };
  }

  /**
   * Restores kept version `versionId` of the file at `pathHash` as its new current revision, in
   * one transaction under the owner's lock: the blob and every column of the version are reused,
   * with a new random `revision_id`, `revision_seq` one above any the path has had, the caller as
   * `uploaded_by` and `updated_at` now; the replaced current revision is retired as any replaced
   * revision is. `baseRevisionId` must name the current revision (null: no file at the path now,
   * i.e. a restore from the trash), as an upload's `base_revision_id`.
   * @throws AppError `forbidden` (403) without write access or outside a folder grant;
   *   `drive_frozen` (402); `not_found` (404) when the folder has no such version of this file;
   *   `conflict` (409, Conflict envelope) when `baseRevisionId` is not the current revision;
   *   `drive_quota_exceeded` (402) when the restored bytes do not fit the allowance.
   */
  async restore(
    caller: string,
    owner: string,
    folderHash: string,
    pathHash: Uint8Array,
    versionId: number,
    baseRevisionId: Uint8Array | null,
  ): Promise<RestoreResult> {
    const access = await this.access.require(caller, owner, folderHash, "write");
    return this.store.transaction(async (tx) => {
      await tx.sessions.lockOwner(owner);
      const version = await tx.versions.get(owner, folderHash, versionId);
      if (!version || !Buffer.from(version.pathHash).equals(Buffer.from(pathHash)))
        throw fail("not_found", `No kept version ${versionId} of this file`);
      access.requirePath(version.relativePath);
      const current = await tx.files.get(owner, folderHash, pathHash);
      checkBase(current, baseRevisionId);
      await this.quota.require(owner, this.files.growth(version.sizeBytes, current), tx.quota);
      const now = this.clock.now();
      const row = await this.rowOf(tx, version, current, caller, now);
      await tx.files.upsert(row);
      await tx.folders.applyFileChange(
        owner,
        folderHash,
        current ? 0 : 1,
        row.sizeBytes - (current?.sizeBytes ?? 0),
        now,
      );
      if (current) await retire(tx, current, "replaced", now, this.files.retirePolicy);
      return {
        revisionId: row.revisionId,
        revisionSeq: row.revisionSeq,
        uploadId: row.uploadId,
        createdAt: row.createdAt,
        updatedAt: row.updatedAt,
        versionId,
        sizeBytes: row.sizeBytes,
      };
    });
  }

  /** The `files` row a restore of `version` over `current` writes. */
  private async rowOf(
    tx: Repositories,
    version: VersionRow,
    current: FileRow | undefined,
    caller: string,
    now: number,
  ): Promise<FileRow> {
    const seqs = (await tx.versions.ofFile(version.owner, version.folderHash, version.pathHash)).map(
      (v) => v.revisionSeq,
    );
    const searchName = searchNameOf(version.fileName, version.relativePath);
    const { versionId: _id, reason: _reason, keptAt: _kept, expiresAt: _expires, ...columns } = version;
    return {
      ...columns,
      revisionSeq: Math.max(current?.revisionSeq ?? 0, ...seqs) + 1,
      revisionId: Buffer.from(randomHex(32), "hex"),
      searchName,
      ext: extensionOf(searchName),
      createdAt: current?.createdAt ?? version.createdAt,
      updatedAt: now,
      uploadId: randomHex(16),
      uploadedBy: caller,
    };
  }

  /**
   * Removes the kept versions that expired by now, in transactions of up to 100 under their
   * owners' locks: each removes its rows and queues (in the same transaction, so that a crash loses nothing) the deletion of
   * every blob they held that no live file nor other kept version still uses, after the grace
   * period. The sweeper calls it on every pass.
   * @returns how many versions were removed.
   */
  async expire(): Promise<number> {
    let total = 0;
    for (;;) {
      const removed = await this.store.transaction(async (tx) => {
        const now = this.clock.now();
        const due = await tx.versions.expired(now, EXPIRE_BATCH);
        if (due.length === 0) return 0;
        // Under the owners' locks (in one order), so that a restore of one of these versions
        // either committed before (its file row then keeps the blob) or finds it gone.
        const owners = [...new Set(due.map((r) => r.owner))].sort();
        for (const owner of owners) await tx.sessions.lockOwner(owner);
        const rows = (await tx.versions.expired(now, EXPIRE_BATCH)).filter((r) => owners.includes(r.owner));
        const n = await tx.versions.remove(rows.map((r) => r.versionId));
        const unused: string[] = [];
        for (const blobId of new Set(rows.map((r) => r.blobId)))
          if (!(await tx.versions.blobInUse(blobId))) unused.push(blobTarget(blobId));
        if (unused.length > 0)
          await tx.deletionQueue.enqueue(unused, now + this.files.retirePolicy.graceSeconds);
        return n;
      });
      total += removed;
      if (removed === 0) return total;
    }
  }
}

/**
 * The revision rule of a restore: `baseRevisionId` must be the current revision, or null when
 * there is no file at the path.
 * @throws AppError `conflict` (409, Conflict envelope).
 */
function checkBase(current: FileRow | undefined, baseRevisionId: Uint8Array | null): void {
  const matches =
    baseRevisionId === null
      ? current === undefined
      : current !== undefined && Buffer.from(current.revisionId).equals(Buffer.from(baseRevisionId));
  if (matches) return;
  throw fail(
    "conflict",
    current
      ? "base_revision_id does not match the current revision"
      : "base_revision_id given but no file exists at this path",
    {
      conflict: {
        currentRevisionId: current ? new Uint8Array(current.revisionId) : null,
        currentRevisionSeq: current?.revisionSeq ?? 0,
      },
    },
  );
}
