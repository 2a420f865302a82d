/**
 * @module server/files/files.repository
 * The contract of the queries on `files` (one row per live file). Writes run inside the
 * transactions of `FilesService`. Implementations: `src/db/sqlite/files.ts`,
 * `src/db/postgres/files.ts`. Times are Unix seconds, sizes bytes.
 */
import type { FileRow } from "./file-entry.ts";

/** The path metadata and revision a rename writes (`FilesRepository.rekey`). */
export type RekeyColumns = Pick<
  FileRow,
  | "pathHash"
  | "encryptedPath"
  | "fileName"
  | "relativePath"
  | "searchName"
  | "ext"
  | "revisionSeq"
  | "revisionId"
  | "updatedAt"
>;

/** The plaintext path columns of a relative-path back-fill (`FilesRepository.setPath`). */
export type PathColumns = Pick<FileRow, "relativePath" | "fileName" | "searchName" | "ext">;

/** Queries on file rows, keyed by (owner, folder_hash, path_hash). Every method returns a Promise. */
export interface FilesRepository {
  /** The row at the key, or undefined. */
  get(owner: string, folderHash: string, pathHash: Uint8Array): Promise<FileRow | undefined>;

  /**
   * The file whose plaintext `relative_path` is exactly `relativePath` (bytewise), or undefined;
   * when several rows claim the same path, the most recently updated (a folder share's blob
   * route, docs/sharing.md).
   */
  byRelativePath(owner: string, folderHash: string, relativePath: string): Promise<FileRow | undefined>;

  /** Inserts or replaces the row at (owner, folder_hash, path_hash). */
  upsert(row: FileRow): Promise<void>;

  /** Deletes one row; true when it existed. */
  remove(owner: string, folderHash: string, pathHash: Uint8Array): Promise<boolean>;

  /**
   * Moves the row at `oldPathHash` to `row.pathHash` with the new path metadata and revision
   * (rename, docs/protocol.md#rename-files); every other column stays. True when the row existed.
   * @throws the dialect's unique-violation error when a row exists at `row.pathHash` (callers
   *   check first, under `SessionsRepository.lockOwner`).
   */
  rekey(owner: string, folderHash: string, oldPathHash: Uint8Array, row: RekeyColumns): Promise<boolean>;

  /** Sets the plaintext path columns of one row (relative-path back-fill, docs/protocol.md#relative-path-backfill). */
  setPath(owner: string, folderHash: string, pathHash: Uint8Array, cols: PathColumns): Promise<void>;

  /** Blob ids of every file of a folder. */
  blobIdsOfFolder(owner: string, folderHash: string): Promise<string[]>;

  /** Deletes every file of a folder; returns how many. */
  removeFolder(owner: string, folderHash: string): Promise<number>;

  /**
   * A page of a folder's files in `path_hash` order (bytewise), `offset` rows skipped, at most
   * `limit` rows, and the folder's total file count. With `under` (a folder holder's granted
   * folders), only the rows whose `relative_path` is one of them or lies under one, and their count.
   */
  page(
    owner: string,
    folderHash: string,
    offset: number,
    limit: number,
    under?: readonly string[] | null,
  ): Promise<{ rows: FileRow[]; total: number }>;
}
