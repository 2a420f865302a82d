/**
 * @module folders/folders.service
 * The folder registry (spec §3.2, §4.1–4.3).
 */

import type { Db } from "../db/client.ts";
import { fail } from "../errors/errors.ts";
import type { FilesRepository } from "../files/files.repository.ts";
import { blobPrefix } from "../storage/layout.ts";
import type { Clock } from "../util/clock.ts";
import type { RemoteFolderInfo } from "../wire/types.ts";
import type { DeletionQueueRepository } from "../workers/deletion-queue.repository.ts";
import type { FolderRow, FoldersRepository } from "./folders.repository.ts";

export type { RemoteFolderInfo } from "../wire/types.ts";

function toInfo(r: FolderRow): RemoteFolderInfo {
  return {
    label: r.label ?? "",
    folder_hash: r.folderHash,
    file_count: r.fileCount,
    total_bytes: r.totalBytes,
    created_at: r.createdAt ?? r.updatedAt,
    updated_at: r.updatedAt,
    device_name: r.deviceName ?? "",
  };
}

/** Folder registry rules. */
export class FoldersService {
  constructor(
    private readonly db: Db,
    private readonly folders: FoldersRepository,
    private readonly files: FilesRepository,
    private readonly deletions: DeletionQueueRepository,
    private readonly clock: Clock,
    /** Seconds removed files' objects stay readable (`ESYNC_BLOB_GRACE_SECONDS`). */
    private readonly graceSeconds: number,
  ) {}

  /**
   * Registers `folderHash` for `owner` (spec §4.1).
   * @throws AppError `conflict` (409) when it is already registered.
   */
  register(owner: string, folderHash: string, label: string, deviceName: string | null): void {
    if (!this.folders.register(owner, folderHash, label, deviceName, this.clock.now())) {
      throw fail("conflict", "A folder with this folder_hash is already registered for this user");
    }
  }

  /** Registered folders with counters (spec §4.2). */
  list(owner: string): RemoteFolderInfo[] {
    return this.folders.listRegistered(owner).map(toInfo);
  }

  /**
   * Unregisters a folder and removes every file in it, queueing their blobs for deletion after the grace period (spec §4.3).
   * @returns the number of files deleted.
   * @throws AppError `not_found` (404) when no folder is registered at this hash.
   */
  unregister(owner: string, folderHash: string): number {
    return this.db.transaction(() => {
      const row = this.folders.get(owner, folderHash);
      if (!row || row.label === null)
        throw fail("not_found", "No folder is registered at this folder_hash for this user");
      const blobIds = this.files.blobIdsOfFolder(owner, folderHash);
      const deleted = this.files.removeFolder(owner, folderHash);
      this.deletions.enqueue(blobIds.map(blobPrefix), this.clock.now() + this.graceSeconds);
      this.folders.remove(owner, folderHash);
      return deleted;
    });
  }

  /** Label of a folder, `""` when unregistered (for search hits). */
  labelOf(owner: string, folderHash: string): string {
    return this.folders.get(owner, folderHash)?.label ?? "";
  }
}
