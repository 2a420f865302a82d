/**
 * @module client/api-types
 * Wire shapes of the service's JSON bodies, as the `Success` envelope carries them (spec §2,
 * §4; complement §5; defined once in `src/wire/types.ts`), and the client's request options. Byte arrays stay JSON arrays of integers (`number[]`); use
 * `toHex`/`Uint8Array.from` where bytes are needed. Times are Unix seconds.
 */

/** `GET /health` (no envelope; complement §5). */
export interface HealthInfo {
  status: string;
  version?: string;
  capabilities?: string[];
}

export type {
  BrowseFolderEntry,
  BrowseResult,
  ChunkStored,
  DeleteFileResult,
  ListFoldersResult,
  Page,
  RegisterFolderResult,
  RemoteFileEntry,
  RemoteFolderInfo,
  SearchFileHit,
  SearchResult,
  SessionCreated,
  SessionDeleted,
  SessionStatus,
  StateResult,
  UnregisterFolderResult,
  UploadResult,
} from "../wire/types.ts";

/** Columns `/search_files` sorts by (spec §4.9). */
export type SortColumn = "file_name" | "size_bytes" | "created_at" | "updated_at";

/** Filters of `/search_files` (spec §4.9, complement §4); every one optional, combined with AND. */
export interface SearchFilters {
  /** Case-insensitive substring of `file_name` (or `relative_path`), up to 256 characters. */
  q?: string;
  /** Category (`image`, `pdf`, …) or extension (`.png`); several are sent comma-separated. */
  fileType?: string | string[];
  /** Plaintext bytes, inclusive. */
  sizeMin?: number;
  sizeMax?: number;
  /** `created_at` bounds, Unix seconds, inclusive. */
  dateFrom?: number;
  dateTo?: number;
  offset?: number;
  /** Default 25 on the server, capped at 10000. */
  limit?: number;
  sortBy?: SortColumn;
  sortOrder?: "asc" | "desc";
}

/** Options of `/browse`: the directory, paging, and the search filters it shares. */
export interface BrowseOptions extends Pick<SearchFilters, "q" | "fileType" | "sortBy" | "sortOrder"> {
  /** Directory inside the folder, POSIX style; default the root. */
  path?: string;
  offset?: number;
  limit?: number;
}

/** A `Range` request (RFC 9110 single range): `start-end` (inclusive), `start-`, or the last `suffix` bytes. */
export type ByteRange = { start: number; end?: number } | { suffix: number };

/** A download: the ciphertext stream and the service's headers (complement §5). */
export interface DownloadResult {
  /** 200 for the whole blob, 206 for a range. */
  status: number;
  /** Ciphertext bytes. */
  body: ReadableStream<Uint8Array>;
  /** Bytes in `body` (`Content-Length`), or null when absent. */
  contentLength: number | null;
  /** Parsed `Content-Range` of a 206. */
  contentRange: { start: number; end: number; total: number } | null;
  /** Plaintext size (`X-Size-Bytes`). */
  sizeBytes: number | null;
  /** `X-Revision-Id`, hex. */
  revisionIdHex: string | null;
  /** `X-Revision-Seq`. */
  revisionSeq: number | null;
  /** `ETag`: the revision's strong validator (quoted revision id hex), for `If-Range` on a resume. */
  etag: string | null;
}
