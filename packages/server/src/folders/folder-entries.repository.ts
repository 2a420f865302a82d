/**
 * @module folders/folder-entries.repository
 * The contract of the queries on `folder_entries`: the explicit directories of a folder
 * (docs/protocol.md#folder-entries). Paths are folder-relative, NFC, without leading or trailing `/`.
 * Implementations: `src/db/sqlite/folder-entries.ts`, `src/db/postgres/folder-entries.ts`.
 */

/** Queries on folder entries. Every method returns a Promise. */
export interface FolderEntriesRepository {
  /**
   * Directory paths of a folder, in bytewise (SQLite BINARY, PostgreSQL `COLLATE "C"`) order: the
   * first `limit` of those after `after` (every one when both are absent).
   */
  list(owner: string, folderHash: string, after?: string | null, limit?: number): Promise<string[]>;

  /** Inserts the paths that are not there yet (existing rows are left as they are); `now` Unix seconds. */
  add(owner: string, folderHash: string, paths: readonly string[], now: number): Promise<void>;

  /** Deletes exactly the named paths; returns how many existed. */
  remove(owner: string, folderHash: string, paths: readonly string[]): Promise<number>;

  /** Deletes every entry of a folder. */
  removeFolder(owner: string, folderHash: string): Promise<void>;

  /**
   * The distinct names of the entries directly inside `path` (`""` = the folder root): the next
   * path segment of every entry below `path/`, in no particular order.
   */
  childNames(owner: string, folderHash: string, path: string): Promise<string[]>;
}
