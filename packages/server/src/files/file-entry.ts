/**
 * @module server/files/file-entry
 * The wire shape of a stored file: RemoteFileEntry (docs/protocol.md#sync-endpoints = docs/protocol.md#file-entries without
 * `folder_hash`/`folder_label`), byte arrays as JSON arrays of integers.
 */

import type { RemoteFileEntry } from "@esync/protocol/types.ts";

/** A `files` row. */
export type FileRow = {
  owner: string;
  createdAt: number;
  folderHash: string;
  updatedAt: number;
  pathHash: Buffer;
  saltedHash: Buffer;
  sizeBytes: number;
  revisionSeq: number;
  revisionId: Buffer;
  encryptedPath: Buffer;
  fileName: string | null;
  relativePath: string | null;
  searchName: string | null;
  ext: string | null;
  storeHash: string | null;
  chunkHashes: string | null;
  clientTimestamp: number;
  source: string | null;
  attributes: Buffer | null;
  uploadId: string;
  ciphertextHash: string;
  ciphertextSize: number;
  blobId: string;
  chunkSize: number;
  chunkCount: number;
  chunkGens: string;
  uploadedBy: string | null;
};

export type { RemoteFileEntry } from "@esync/protocol/types.ts";

/** Columns a RemoteFileEntry needs (search can select just these). */
export type FileEntryRow = Pick<
  FileRow,
  | "pathHash"
  | "saltedHash"
  | "sizeBytes"
  | "revisionSeq"
  | "revisionId"
  | "encryptedPath"
  | "fileName"
  | "relativePath"
  | "storeHash"
  | "chunkHashes"
  | "createdAt"
  | "updatedAt"
  | "uploadedBy"
> &
  Partial<Pick<FileRow, "attributes">>;

/**
 * Maps a row to its RemoteFileEntry: `arion_hash` repeats `store_hash` (docs/protocol.md#file-entries);
 * `uploaded_by` is absent, not null, on rows without an uploader (docs/protocol.md#api-profiles); `attributes`
 * (an esync extension) is present only when the row has them, so files written by other clients
 * keep exactly the fields of docs/protocol.md#file-entries.
 */
export function toRemoteFileEntry(r: FileEntryRow): RemoteFileEntry {
  const entry: RemoteFileEntry = {
    path_hash: Array.from(r.pathHash),
    salted_hash: Array.from(r.saltedHash),
    size_bytes: r.sizeBytes,
    revision_seq: r.revisionSeq,
    revision_id: Array.from(r.revisionId),
    encrypted_path: Array.from(r.encryptedPath),
    file_name: r.fileName,
    relative_path: r.relativePath,
    store_hash: r.storeHash,
    arion_hash: r.storeHash,
    chunk_hashes: r.chunkHashes === null ? null : (JSON.parse(r.chunkHashes) as string[]),
    created_at: r.createdAt,
    updated_at: r.updatedAt,
  };
  if (r.attributes) entry.attributes = Array.from(r.attributes);
  if (r.uploadedBy !== null) entry.uploaded_by = r.uploadedBy;
  return entry;
}

/**
 * The search key of a file: `file_name`, or `relative_path` when `file_name` is null, normalised
 * to NFC and lower-cased (Unicode-aware), so that an NFD name (macOS) and an NFC query meet;
 * null when both are null (docs/protocol.md#search rule 2).
 */
export function searchNameOf(fileName: string | null, relativePath: string | null): string | null {
  const n = fileName ?? relativePath;
  return n === null ? null : n.normalize("NFC").toLowerCase().normalize("NFC");
}

/** Lower-cased extension (with the dot) of the last path segment of `name`, or null. */
export function extensionOf(name: string | null): string | null {
  if (name === null) return null;
  const seg = name.slice(name.lastIndexOf("/") + 1);
  const dot = seg.lastIndexOf(".");
  if (dot <= 0 || dot === seg.length - 1) return null;
  return seg.slice(dot).toLowerCase();
}
