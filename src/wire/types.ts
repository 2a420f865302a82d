/**
 * @module wire/types
 * The JSON bodies the service sends inside `{"Success": ...}` (spec §2, §4; complement §5): one
 * definition shared by the server, which produces them, and the client library, which reads them.
 * Byte arrays are JSON arrays of integers (`number[]`); times are Unix seconds; sizes bytes.
 */

/** A registered folder (spec §2.2). */
export interface RemoteFolderInfo {
  label: string;
  folder_hash: string;
  file_count: number;
  total_bytes: number;
  created_at: number;
  updated_at: number;
  device_name: string;
}

/** `GET /list_folders/{base_address}` (spec §4.2). */
export interface ListFoldersResult {
  base_address: string;
  folders: RemoteFolderInfo[];
}

/** `POST /register_folder` (spec §4.1). */
export interface RegisterFolderResult {
  status: "registered";
}

/** `DELETE /unregister_folder` (spec §4.3). */
export interface UnregisterFolderResult {
  status: "unregistered";
  files_deleted: number;
}

/** A file of `/get_state` and `/browse` (spec §2.5 without folder fields; complement §5). */
export interface RemoteFileEntry {
  path_hash: number[];
  salted_hash: number[];
  /** Plaintext bytes. */
  size_bytes: number;
  revision_seq: number;
  revision_id: number[];
  encrypted_path: number[];
  file_name: string | null;
  relative_path: string | null;
  store_hash: string | null;
  chunk_hashes: string[] | null;
  created_at: number;
  updated_at: number;
  /**
   * esync extension: the manifest's opaque, client-encrypted attributes (mode, mtime, symlink),
   * present only when the file was written with them (`/get_state`).
   */
  attributes?: number[];
}

/** A search result (spec §2.5): a file entry plus its folder. */
export interface SearchFileHit extends RemoteFileEntry {
  folder_hash: string;
  /** `""` when the folder was never registered. */
  folder_label: string;
}

/** Fields shared by paged listings. */
export interface Page {
  total_count: number;
  has_more: boolean;
  offset: number;
  limit: number;
}

/** `GET /get_state/{ss58}/{folder_hash}` (complement §5). */
export interface StateResult extends Page {
  ss58_address: string;
  folder_hash: string;
  files: RemoteFileEntry[];
}

/** `GET /search_files/{ss58}` (spec §4.9). */
export interface SearchResult extends Page {
  ss58_address: string;
  files: SearchFileHit[];
}

/** A subfolder of a `/browse` listing; counts are recursive. */
export interface BrowseFolderEntry {
  name: string;
  file_count: number;
  total_bytes: number;
}

/** `GET /browse/{ss58}/{folder_hash}`: subfolders first, then files at `path`. */
export interface BrowseResult extends Page {
  ss58_address: string;
  folder_hash: string;
  path: string;
  folders: BrowseFolderEntry[];
  files: RemoteFileEntry[];
}

/** `DELETE /delete/{ss58}/{folder_hash}/{file_id}` (complement §5). */
export interface DeleteFileResult {
  status: "deleted";
  file_id: string;
  ss58_address: string;
  folder_hash: string;
}

/** `POST /upload` and session finalize (spec §2.4). */
export interface UploadResult {
  upload_id: string;
  timestamp: number;
  /** 32 bytes. */
  revision_id: number[];
  created_at: number;
  updated_at: number;
}

/** `POST /upload/session` (spec §4.4). */
export interface SessionCreated {
  session_id: string;
  expires_at: number;
}

/** `GET /upload/session/{id}/status` (spec §2.3, §4.6). */
export interface SessionStatus {
  session_id: string;
  state: "receiving" | "finalized";
  total_chunks: number;
  chunks_received: number[];
  expires_at: number;
  ciphertext_hash: string;
}

/** `PUT /upload/session/{id}/chunk/{index}` (spec §4.5). */
export interface ChunkStored {
  chunk_index: number;
}

/** `DELETE /upload/session/{id}` (spec §4.8). */
export interface SessionDeleted {
  deleted: true;
}
