/**
 * @module client/api-types
 * Wire shapes of the service's JSON bodies, as the `Success` envelope carries them (docs/protocol.md#conventions, #response-families, #sync-endpoints), derived from the schemas of `packages/protocol/src/schemas.ts` through
 * `packages/protocol/src/types.ts`, and the client's request options. Byte arrays stay JSON arrays of
 * integers (`number[]`); use `toHex`/`Uint8Array.from` where bytes are needed. Times are Unix
 * seconds.
 */

import type * as S from "@esync/protocol/schemas.ts";
import type { SortColumn } from "@esync/protocol/schemas.ts";
import type { HealthInfo as WireHealthInfo } from "@esync/protocol/types.ts";
import type { Static } from "@sinclair/typebox";

/** `POST /delete_files` (docs/protocol.md#delete-files): per-id results, also when some ids fail. */
export type DeleteFilesResult = Static<typeof S.DeleteFilesResult>;
/** `POST /rename_files` (docs/protocol.md#rename-files): per-entry successes and failures. */
export type RenameFilesResult = Static<typeof S.RenameFilesResult>;
/** `GET /list_folder_entries/{ss58}/{folder_hash}` (docs/protocol.md#folder-entries; flat). */
export type ListFolderEntriesResult = Static<typeof S.ListFolderEntriesResult>;
/** `POST /register_folder_entries` (docs/protocol.md#folder-entries): `count` = named entries now present. */
export type RegisterFolderEntriesResult = Static<typeof S.RegisterFolderEntriesResult>;
/** `DELETE /unregister_folder_entries` (docs/protocol.md#folder-entries): `count` = entries removed. */
export type UnregisterFolderEntriesResult = Static<typeof S.UnregisterFolderEntriesResult>;
/** `POST /can_upload` (docs/protocol.md#quota; flat, also when the answer is no). */
export type CanUploadResult = Static<typeof S.CanUploadResult>;

/**
 * `GET /health` (no envelope; docs/protocol.md#sync-endpoints). Only `status` is required, so that the client
 * also reads servers that send less than esync does.
 */
export type HealthInfo = Pick<WireHealthInfo, "status"> & Partial<Omit<WireHealthInfo, "status">>;

export type { SortColumn } from "@esync/protocol/schemas.ts";
export type {
  AcceptResult,
  BrowseFolderEntry,
  BrowseResult,
  Capabilities,
  ChunkStored,
  DeleteFileResult,
  DriveInvites,
  DriveMember,
  DriveMembers,
  FileTypeSummary,
  FileVersion,
  FileVersionsResult,
  InviteMeta,
  InviteMinted,
  ListFoldersResult,
  Memberships,
  MintInviteBody,
  Page,
  QuotaReport,
  RegisterFolderResult,
  RemoteFileEntry,
  RemoteFolderInfo,
  RestoreVersionResult,
  SearchFileHit,
  SearchResult,
  SessionCreated,
  SessionDeleted,
  SessionStatus,
  SourceSummary,
  StateResult,
  TrashResult,
  UnregisterFolderResult,
  UploadResult,
  UserSummary,
} from "@esync/protocol/types.ts";

/** One entry of a rename batch (docs/protocol.md#rename-files); hashes are 32 bytes. */
export interface RenameEntry {
  oldPathHash: Uint8Array;
  /** BLAKE3(UTF-8(NFC(new path))). */
  newPathHash: Uint8Array;
  /** The revision the client believes current (32 bytes). */
  baseRevisionId: Uint8Array;
  /** Framed cipher of the new path under the folder key (docs/protocol.md#ciphertext); default empty. */
  newEncryptedPath?: Uint8Array;
  newFileName?: string | null;
  newRelativePath?: string | null;
}

/** Filters of `/search_files` (docs/protocol.md#search, #open-rules); every one optional, combined with AND. */
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
  /**
   * One folder only (16 hex); required when a drive member searches the owner's account
   * (docs/drives.md, "Members on the file routes").
   */
  folderHash?: string;
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

/** A download: the ciphertext stream and the service's headers (docs/protocol.md#sync-endpoints). */
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
