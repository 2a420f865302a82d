/**
 * @module server/versions/versions.repository
 * The contract of the queries on `file_versions`: the kept versions of replaced and deleted
 * files (docs/versions.md). Writes run inside the transactions of `FilesService`,
 * `FoldersService` and `VersionsService`. Implementations: `src/db/sqlite/versions.ts`,
 * `src/db/postgres/versions.ts`. Times are Unix seconds, sizes bytes.
 */
import type { fileVersions } from "../db/sqlite/schema.ts";

/** A `file_versions` row. */
export type VersionRow = typeof fileVersions.$inferSelect;

/** A row to insert (`version_id` is assigned by the database). */
export type NewVersion = Omit<VersionRow, "versionId">;

/** Queries on kept versions. Every method returns a Promise. */
export interface VersionsRepository {
  /** Inserts a kept version; returns its `version_id`. */
  keep(row: NewVersion): Promise<number>;

  /** The kept versions of one file (owner, folder, path hash), newest first. */
  ofFile(owner: string, folderHash: string, pathHash: Uint8Array): Promise<VersionRow[]>;

  /** One kept version of a folder by id, or undefined. */
  get(owner: string, folderHash: string, versionId: number): Promise<VersionRow | undefined>;

  /**
   * The folder's trash: the newest `deleted` version of each path that has no live file now,
   * newest first, `version_id` below `before` (null: from the newest), at most `limit` rows.
   */
  trash(owner: string, folderHash: string, before: number | null, limit: number): Promise<VersionRow[]>;

  /** Up to `limit` versions whose `expires_at` is at or before `now`, oldest expiry first. */
  expired(now: number, limit: number): Promise<VersionRow[]>;

  /** Deletes kept versions by id; returns how many existed. */
  remove(versionIds: readonly number[]): Promise<number>;

  /** True when a live file row or a kept version still references blob `blobId`. */
  blobInUse(blobId: string): Promise<boolean>;

  /** Deletes every kept version of a folder; returns their distinct blob ids. */
  removeFolder(owner: string, folderHash: string): Promise<string[]>;
}
