/**
 * @module server/search/search-index
 * The one narrow interface every search backend implements: the tuned SQLite index
 * (`SqliteSearchIndex`, `db/sqlite/search/index.ts`) and the PostgreSQL one (`PgSearchIndex`,
 * `db/postgres/search/index.ts`). The search and browse services (`search.service.ts`,
 * `browse.service.ts`) depend on this interface only; which backend runs is decided where the
 * database is opened.
 *
 * An index is derived data: everything it answers follows from the `files` rows (and the
 * `folders` labels), and `rebuild` recreates it from them. A file write never fails because of
 * the index: when the index cannot take a row (a limit of its layout, a bug), the write commits,
 * the index records that it is degraded (`health`), and queries are answered by an exact plan over
 * `files` (slower, never wrong) until `rebuild` clears the state.
 *
 * Contract, checked for every backend by the conformance suite
 * `test/search/search-index.conformance.ts`:
 * - `search` answers docs/protocol.md#search with docs/protocol.md#open-rules, #api-profiles: every filter combined with
 *   AND, bounds inclusive; `q` a substring of the case-folded name (`foldCase`: NFC, lower case,
 *   final ς as σ) of `file_name ?? relative_path`, of any length (the caller applies profile rules
 *   such as hcfs's minimum length through `SearchQuery.nothing`); files without either name match
 *   no `q` and no `file_type`; the sort column in BINARY (UTF-8 byte) order with nulls first when
 *   ascending, then `path_hash` (bytes) in the same direction; `total` exact (never an estimate).
 * - `directory` lists the files directly in one directory of a folder (everything before the
 *   last `/` of `relative_path`), filtered and sorted the same way; `subdirectories` gives the
 *   immediate sub-directories with recursive counts.
 * - Each call reads one consistent snapshot (counts and rows agree).
 */
import type { FileEntryRow } from "../files/file-entry.ts";
import type { BrowseSortKey, SearchQuery, SortColumn } from "./search.query.ts";

/** An order of listed rows: a sort column, `uploaded_by` or `extension` (docs/protocol.md#api-profiles). */
export type OrderKey = SortColumn | "uploaded_by" | "extension";

/** A file row for a hit: the RemoteFileEntry columns plus its folder and label. */
export interface HitRow extends FileEntryRow {
  folderHash: string;
  /** `""` when the folder is not registered. */
  folderLabel: string;
}

/** One page of matching files and the exact number of matches. */
export interface SearchPage {
  /** Every file matching the filters (exact), whatever the page. */
  total: number;
  /** The page: at most `limit` rows from position `offset` in sort order. */
  hits: HitRow[];
  /**
   * The steps the backend chose (for tests, the bench and the `plan` metric label: the step
   * starting with `count:` names the counting plan).
   */
  plan: string[];
  /**
   * Null while the index is complete; else why it is degraded (`SearchIndexHealth.reason`): this
   * answer then came from the exact plan over `files`.
   */
  degraded: string | null;
}

/** The files part of a `/browse` query (issue 3, docs/protocol.md#api-profiles). */
export interface DirectoryQuery {
  /** Directory inside the folder: no leading or trailing `/`, `""` = the folder root. */
  path: string;
  /** As `SearchQuery.q` (already case-folded). */
  q: string | null;
  /** As `SearchQuery.exts`. */
  exts: readonly string[] | null;
  /** As `SearchQuery.uploader`. */
  uploader: { by: string | null } | null;
  /** `extension` sorts by the lower-cased extension of the name (null first). */
  sortBy: BrowseSortKey;
  descending: boolean;
  offset: number;
  limit: number;
}

/** A sub-folder of a browsed directory. */
export interface DirRow {
  /** Full directory path inside the folder. */
  path: string;
  /** Files anywhere under it. */
  fileCount: number;
  /** Plaintext bytes of those files. */
  totalBytes: number;
}

/** Whether the index can answer through its fast plans. */
export interface SearchIndexHealth {
  /** `ok`; `degraded` (a row the index could not take, or a rebuild under way). */
  state: "ok" | "degraded";
  /** Why it is degraded (null when ok), e.g. `search index: over 2^24 owners`. */
  reason: string | null;
  /** Unix seconds when it became degraded (null when ok). */
  since: number | null;
}

/** Progress of a rebuild: files indexed so far out of about `total`. */
export interface RebuildProgress {
  done: number;
  total: number;
}

/** What a rebuild did. */
export interface RebuildReport {
  /** Files indexed. */
  files: number;
  /** Wall time, seconds. */
  seconds: number;
  /** The state after the rebuild (still degraded when a row cannot be indexed at all). */
  health: SearchIndexHealth;
}

/** Options of one search. */
export interface SearchOptions {
  /** Answer through the exact plan over `files`, whatever the index's state. */
  exact?: boolean;
}

/** A search backend (see the module comment for the contract). */
export interface SearchIndex {
  /** Backend name for logs and the bench: `sqlite` or `postgres`. */
  readonly kind: string;
  /**
   * `owner`'s files matching `query` (parsed by `searchQueryOf`): the exact total and one page.
   * An owner without files, and a query with `nothing` set, give `{ total: 0, hits: [] }`.
   */
  search(owner: string, query: SearchQuery, opts?: SearchOptions): Promise<SearchPage>;
  /** The files directly in directory `query.path` of `owner`'s folder `folderHash`: total and page. */
  directory(owner: string, folderHash: string, query: DirectoryQuery): Promise<SearchPage>;
  /**
   * The immediate sub-directories of `path` (`""` = root) of `owner`'s folder `folderHash` that
   * hold files (recursively), with their counts, in no particular order.
   */
  subdirectories(owner: string, folderHash: string, path: string): Promise<DirRow[]>;
  /** The index's state (see `SearchIndexHealth`). */
  health(): Promise<SearchIndexHealth>;
  /**
   * Recreates the index from `files` (other writes may go on meanwhile; queries use the exact plan
   * until it ends), calling `onProgress` as it goes, and clears the degraded state when every
   * file is indexed.
   */
  rebuild(onProgress?: (p: RebuildProgress) => void): Promise<RebuildReport>;
}
