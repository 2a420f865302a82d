/**
 * @module server/folders/folders.repository
 * The contract of the queries on `folders`: registrations (label non-null) and the per-folder
 * counters (`file_count`, `total_bytes` in plaintext bytes, `updated_at` Unix seconds) that file
 * writes keep in the same transaction. Implementations: `src/db/sqlite/folders.ts`,
 * `src/db/postgres/folders.ts`.
 */

/** A `folders` row. */
export type FolderRow = {
  owner: string;
  label: string | null;
  createdAt: number | null;
  folderHash: string;
  deviceName: string | null;
  updatedAt: number;
  fileCount: number;
  totalBytes: number;
};

/** Queries on folder registrations and counters. Every method returns a Promise. */
export interface FoldersRepository {
  /** The row of (owner, folderHash), registered or not, or undefined. */
  get(owner: string, folderHash: string): Promise<FolderRow | undefined>;

  /** Registered folders of `owner`, oldest registration first (then by folder hash). */
  listRegistered(owner: string): Promise<FolderRow[]>;

  /**
   * Registers a folder: inserts the row, or labels an existing unregistered one (files were
   * uploaded before registration). Returns false, changing nothing, when it is already registered.
   */
  register(
    owner: string,
    folderHash: string,
    label: string,
    deviceName: string | null,
    now: number,
  ): Promise<boolean>;

  /**
   * Applies a file change to the counters: `dCount` files and `dBytes` plaintext bytes (either
   * may be negative), `updated_at = now`; creates the (unregistered) row when missing.
   */
  applyFileChange(
    owner: string,
    folderHash: string,
    dCount: number,
    dBytes: number,
    now: number,
  ): Promise<void>;

  /** Deletes the folder row. */
  remove(owner: string, folderHash: string): Promise<void>;
}
