/**
 * @module server/folders/folder-entries.repository
 * The contract of the queries on `folder_entries`: the explicit directories of a folder
 * (docs/protocol.md#folder-entries). Paths are folder-relative, NFC, without leading or trailing `/`.
 * Implementations: `src/db/sqlite/folder-entries.ts`, `src/db/postgres/folder-entries.ts`.
 */

/** One folder entry: its directory path and its sealed attributes (null when none were sent). */
export interface FolderEntryRow {
  path: string;
  /** Opaque client-encrypted bytes (docs/protocol.md#folder-entry-attributes), at most 512. */
  attributes: Uint8Array | null;
}

/** Queries on folder entries. Every method returns a Promise. */
export interface FolderEntriesRepository {
  /**
   * Entries of a folder, in bytewise (SQLite BINARY, PostgreSQL `COLLATE "C"`) order of their
   * paths: the first `limit` of those after `after` (every one when both are absent).
   */
  list(owner: string, folderHash: string, after?: string | null, limit?: number): Promise<FolderEntryRow[]>;

  /**
   * Inserts the paths that are not there yet (existing rows are left as they are); `now` Unix
   * seconds. A path in `attributes` gets those attributes, replacing the ones it had.
   */
  add(
    owner: string,
    folderHash: string,
    paths: readonly string[],
    now: number,
    attributes?: ReadonlyMap<string, Uint8Array>,
  ): Promise<void>;

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
