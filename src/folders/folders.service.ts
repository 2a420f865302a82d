/**
 * @module folders/folders.service
 * The folder registry (spec §3.2, §4.1–4.3).
 */

import type { Db } from "../db/client.ts";
import type { SqliteDeletionQueueRepository as DeletionQueueRepository } from "../db/sqlite/deletion-queue.ts";
import type { SqliteFilesRepository as FilesRepository } from "../db/sqlite/files.ts";
import type { SqliteFolderEntriesRepository as FolderEntriesRepository } from "../db/sqlite/folder-entries.ts";
import type { SqliteFoldersRepository as FoldersRepository } from "../db/sqlite/folders.ts";
import { fail } from "../errors/errors.ts";
import { isRelativePath } from "../files/paths.ts";
import { blobPrefix } from "../storage/layout.ts";
import type { Clock } from "../util/clock.ts";
import { MAX_PATH_BATCH } from "../wire/schemas.ts";
import type { RemoteFolderInfo } from "../wire/types.ts";
import type { FolderRow } from "./folders.repository.ts";

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
    private readonly entries: FolderEntriesRepository,
    private readonly opts: { upsert: boolean } = { upsert: false },
  ) {}

  /**
   * Registers `folderHash` for `owner` (spec §4.1). Under the hcfs profile (`opts.upsert`) a
   * registered folder is left as it is (label, device name and `created_at` kept; extensions §1.7,
   * §9 item 4).
   * @throws AppError `conflict` (409) when it is already registered (base profile).
   */
  register(owner: string, folderHash: string, label: string, deviceName: string | null): void {
    if (!this.folders.register(owner, folderHash, label, deviceName, this.clock.now()) && !this.opts.upsert) {
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
      this.entries.removeFolder(owner, folderHash);
      return deleted;
    });
  }

  /** Every registered directory of a folder (extensions §1.5), in BINARY order. */
  listEntries(owner: string, folderHash: string): string[] {
    return this.entries.list(owner, folderHash);
  }

  /**
   * Registers directory entries (extensions §1.5): an idempotent batch insert.
   * @returns how many of the named entries are now present (distinct paths).
   * @throws AppError `batch_too_large` (over `MAX_PATH_BATCH`), `invalid_manifest` (an invalid path).
   */
  registerEntries(owner: string, folderHash: string, paths: readonly string[]): number {
    const unique = checkedPaths(paths);
    this.entries.add(owner, folderHash, unique, this.clock.now());
    return unique.length;
  }

  /**
   * Removes exactly the named directory entries (extensions §1.5); files are never touched.
   * @returns how many entries were removed.
   * @throws as `registerEntries`.
   */
  unregisterEntries(owner: string, folderHash: string, paths: readonly string[]): number {
    return this.entries.remove(owner, folderHash, checkedPaths(paths));
  }

  /** Label of a folder, `""` when unregistered (for search hits). */
  labelOf(owner: string, folderHash: string): string {
    return this.folders.get(owner, folderHash)?.label ?? "";
  }
}

/**
 * The distinct paths of a folder-entry batch.
 * @throws AppError `batch_too_large` over `MAX_PATH_BATCH` entries, `invalid_manifest` for a path
 *   that is not a valid relative path (extensions §1.5).
 */
function checkedPaths(paths: readonly string[]): string[] {
  if (paths.length > MAX_PATH_BATCH)
    throw fail(
      "batch_too_large",
      `At most ${MAX_PATH_BATCH} relative_paths per request, got ${paths.length}`,
    );
  paths.forEach((p, i) => {
    if (!isRelativePath(p))
      throw fail("invalid_manifest", `relative_paths[${i}] is not a valid directory path`);
  });
  return [...new Set(paths)];
}
