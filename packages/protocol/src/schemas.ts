/**
 * @module protocol/schemas
 * The contract of the HTTP API, described once (docs/protocol.md#conventions, #response-families, #manifest, #open-rules, #sync-endpoints): TypeBox
 * schemas of every route's path parameters, query, headers, JSON bodies and responses. The
 * controllers give them to Elysia, which validates requests with them (failures become the
 * protocol's error codes through `validationFailure` in `packages/server/src/http/contract.ts`) and builds the
 * OpenAPI document from them; `packages/protocol/src/types.ts` derives the TypeScript types (`Static<>`)
 * that the server and the client library share.
 *
 * Conventions: byte arrays are JSON arrays of integers; times are Unix seconds; sizes bytes.
 * A schema's `x-error-code` names the catalogue code a failing value gets (default: 400
 * `invalid_parameter` for path and query parameters, `invalid_manifest` for bodies).
 * Schemas check shapes; the services check rules (signatures, cross-field rules, layouts).
 */
import { FormatRegistry, Type } from "@sinclair/typebox";
import type { ErrorCode } from "./errors.ts";
import { MAX_ATTRIBUTES_BYTES } from "./manifest.ts";
import { isSs58 } from "./ss58.ts";

/** The schema key naming the error code of a failing value. */
export const ERROR_CODE_KEY = "x-error-code";

/** Schema options that give a failing value the error `code`. */
function failsWith(code: ErrorCode): { [ERROR_CODE_KEY]: ErrorCode } {
  return { [ERROR_CODE_KEY]: code };
}

FormatRegistry.Set("ss58", isSs58);

// ---------------------------------------------------------------------------------------------
// Shared pieces

/** An SS58 address in a path (docs/protocol.md#conventions): at most 256 bytes, base58 with a valid checksum. */
const AddressParam = Type.String({
  format: "ss58",
  minLength: 1,
  maxLength: 256,
  description: "SS58 address of the owner",
  ...failsWith("invalid_user_id"),
});
/** `folder_hash`: first 16 hex characters of SHA-256(label) (docs/protocol.md#conventions). */
const FolderHash = Type.String({
  pattern: "^[0-9a-f]{16}$",
  description: "16 lowercase hex characters: the first 8 bytes of SHA-256(label)",
});
/** `file_id`: the 64 hex characters of `path_hash`. */
const FileId = Type.String({
  pattern: "^[0-9a-fA-F]{64}$",
  description: "path_hash as 64 hex characters",
});
/** An upload session id (opaque to clients). */
/**
 * Pattern of a stored text without U+0000: no database keeps it the same way (PostgreSQL cannot
 * store it at all), so every database refuses it with 400 `invalid_manifest`.
 */
const NO_NUL = "^[^\\u0000]*$";

/**
 * A session id in a path. One that is not even a string (bytes that are not UTF-8 once
 * percent-decoded, such as `%ff`) names no session: 404 `not_found`, as any unknown id (docs/protocol.md#upload-sessions list 404 for these paths, not 400).
 */
const SessionId = Type.String({
  minLength: 1,
  description: "session_id from POST /upload/session",
  ...failsWith("not_found"),
});
/** A u32 in decimal, no sign or leading zeros (docs/protocol.md#upload-sessions `chunk_index`). */
const ChunkIndex = Type.Integer({
  minimum: 0,
  maximum: 0xffffffff,
  description: "zero-based chunk index, decimal u32 without sign or leading zeros",
  ...failsWith("invalid_manifest"),
});

const byte = Type.Integer({ minimum: 0, maximum: 255 });
/** 32 bytes as integers. */
const Bytes32 = Type.Array(byte, { minItems: 32, maxItems: 32, description: "32 bytes as integers" });
/** Bytes as integers. */
const ByteArray = Type.Array(byte, { description: "bytes as integers" });
/** esync extension: a file's opaque, client-encrypted attributes (mode, mtime, symlink); docs/user-guide.md#file-attributes. */
const Attributes = Type.Array(byte, {
  minItems: 1,
  maxItems: MAX_ATTRIBUTES_BYTES,
  description: "esync extension: opaque client-encrypted attributes, stored and returned unchanged",
});
const UnixSeconds = Type.Integer({ description: "Unix seconds" });
const NullableString = Type.Union([Type.String(), Type.Null()]);

/** A non-negative integer query parameter; decimal digits only (docs/protocol.md#open-rules). */
function uintQuery(description: string, extra: { default?: number; maximum?: number } = {}) {
  const maximum = extra.maximum ?? Number.MAX_SAFE_INTEGER;
  return Type.Optional(Type.Integer({ minimum: 0, description, ...extra, maximum }));
}

// ---------------------------------------------------------------------------------------------
// Envelopes (docs/protocol.md#response-families, #errors, #manifest)

/** `{"Error": {"error", "message"}}` */
export const ErrorEnvelope = Type.Object({
  Error: Type.Object({ error: Type.String(), message: Type.String() }),
});
/** `{"Conflict": {...}}`: a 409 from upload or finalize (docs/protocol.md#manifest). */
export const ConflictEnvelope = Type.Object({
  Conflict: Type.Object({
    error: Type.String(),
    message: Type.String(),
    current_revision_id: Type.Union([Bytes32, Type.Null()]),
    current_revision_seq: Type.Integer({ minimum: 0 }),
  }),
});

/**
 * A flat error `{"error", "message"}` without a wrapper: a quota refusal (402) on every route, and
 * every error of the v1 family (shares, drives, versions, quota report;
 * docs/protocol.md#response-families, #quota). The optional fields appear only where named.
 */
export const FlatError = Type.Object({
  error: Type.String(),
  message: Type.String(),
  balance_cents: Type.Optional(Type.Integer()),
  required_cents: Type.Optional(Type.Integer()),
  frozen_until: Type.Optional(Type.String({ description: "RFC 3339 end of a frozen drive's grace window" })),
  reason: Type.Optional(Type.String({ description: "410 of a used-up file share link: download_limit" })),
  current_revision_id: Type.Optional(
    Type.Union([Bytes32, Type.Null()], { description: "409 of a version restore: the current revision" }),
  ),
  current_revision_seq: Type.Optional(Type.Integer({ minimum: 0, description: "409 of a version restore" })),
});

/** `{"Success": schema}` */
export function successOf<S extends ReturnType<typeof Type.Object>>(schema: S) {
  return Type.Object({ Success: schema });
}

// ---------------------------------------------------------------------------------------------
// Bodies of responses

/** A registered folder (docs/protocol.md#folders). */
export const RemoteFolderInfo = Type.Object({
  label: Type.String(),
  folder_hash: FolderHash,
  file_count: Type.Integer({ minimum: 0 }),
  total_bytes: Type.Integer({ minimum: 0, description: "plaintext bytes" }),
  created_at: UnixSeconds,
  updated_at: UnixSeconds,
  device_name: Type.String(),
  member_count: Type.Optional(
    Type.Integer({ minimum: 1, description: "whole-drive members, owner not counted; absent when 0" }),
  ),
});

/** `GET /list_folders/{base_address}` (docs/protocol.md#folders). */
export const ListFoldersResult = Type.Object({
  base_address: Type.String(),
  folders: Type.Array(RemoteFolderInfo),
});
/** `POST /register_folder` (docs/protocol.md#folders). */
export const RegisterFolderResult = Type.Object({ status: Type.Literal("registered") });
/** `DELETE /unregister_folder` (docs/protocol.md#folders). */
export const UnregisterFolderResult = Type.Object({
  status: Type.Literal("unregistered"),
  files_deleted: Type.Integer({ minimum: 0 }),
});

/** A file of `/get_state` and `/browse` (docs/protocol.md#file-entries without folder fields; docs/protocol.md#sync-endpoints). */
export const RemoteFileEntry = Type.Object({
  path_hash: Bytes32,
  salted_hash: Bytes32,
  size_bytes: Type.Integer({ minimum: 0, description: "plaintext bytes" }),
  revision_seq: Type.Integer({ minimum: 0 }),
  revision_id: Bytes32,
  encrypted_path: ByteArray,
  file_name: NullableString,
  relative_path: NullableString,
  store_hash: NullableString,
  arion_hash: Type.Union([Type.String(), Type.Null()], {
    description: "the product's name of store_hash (docs/protocol.md#api-profiles): the same value",
  }),
  chunk_hashes: Type.Union([Type.Array(Type.String()), Type.Null()]),
  created_at: UnixSeconds,
  updated_at: UnixSeconds,
  uploaded_by: Type.Optional(
    Type.String({
      description:
        "SS58 address of the account that wrote the current revision; absent on rows written before attribution",
    }),
  ),
  attributes: Type.Optional(Attributes),
});

/** Fields shared by paged listings. */
const PageFields = {
  total_count: Type.Integer({ minimum: 0 }),
  has_more: Type.Boolean(),
  offset: Type.Integer({ minimum: 0 }),
  limit: Type.Integer({ minimum: 1 }),
};
/** Fields shared by paged listings. */
export const Page = Type.Object(PageFields);

/** A search result (docs/protocol.md#file-entries): a file entry plus its folder. */
export const SearchFileHit = Type.Object({
  ...RemoteFileEntry.properties,
  folder_hash: FolderHash,
  folder_label: Type.String({ description: '"" when the folder is not registered' }),
});

/** `GET /get_state/{ss58}/{folder_hash}` (docs/protocol.md#sync-endpoints). */
export const StateResult = Type.Object({
  ss58_address: Type.String(),
  folder_hash: FolderHash,
  files: Type.Array(RemoteFileEntry),
  ...PageFields,
});

/** `GET /search_files/{ss58}` (docs/protocol.md#search). */
export const SearchResult = Type.Object({
  ss58_address: Type.String(),
  files: Type.Array(SearchFileHit),
  ...PageFields,
});

/** A subfolder of a `/browse` listing; counts are recursive. */
export const BrowseFolderEntry = Type.Object({
  name: Type.String(),
  file_count: Type.Integer({ minimum: 0 }),
  total_bytes: Type.Integer({ minimum: 0 }),
});

/** `GET /browse/{ss58}/{folder_hash}`: subfolders first, then files at `path`. */
export const BrowseResult = Type.Object({
  ss58_address: Type.String(),
  folder_hash: FolderHash,
  path: Type.String(),
  folders: Type.Array(BrowseFolderEntry),
  files: Type.Array(RemoteFileEntry),
  ...PageFields,
});

/** `DELETE /delete/{ss58}/{folder_hash}/{file_id}` (docs/protocol.md#sync-endpoints). */
export const DeleteFileResult = Type.Object({
  status: Type.Literal("deleted"),
  file_id: Type.String(),
  ss58_address: Type.String(),
  folder_hash: FolderHash,
});

/** `POST /upload` and session finalize (docs/protocol.md#upload-result). */
export const UploadResult = Type.Object({
  upload_id: Type.String(),
  timestamp: UnixSeconds,
  revision_id: Bytes32,
  created_at: UnixSeconds,
  updated_at: UnixSeconds,
});

/** `POST /upload/session` (docs/protocol.md#upload-sessions). */
export const SessionCreated = Type.Object({ session_id: Type.String(), expires_at: UnixSeconds });

/** `GET /upload/session/{id}/status` (docs/protocol.md#upload-sessions). */
export const SessionStatus = Type.Object({
  session_id: Type.String(),
  state: Type.Union([Type.Literal("receiving"), Type.Literal("finalized")]),
  total_chunks: Type.Integer({ minimum: 1 }),
  chunks_received: Type.Array(Type.Integer({ minimum: 0 })),
  expires_at: UnixSeconds,
  ciphertext_hash: Type.String(),
});

/** `PUT /upload/session/{id}/chunk/{index}` (docs/protocol.md#upload-sessions). */
export const ChunkStored = Type.Object({ chunk_index: Type.Integer({ minimum: 0 }) });

/** `DELETE /upload/session/{id}` (docs/protocol.md#upload-sessions). */
export const SessionDeleted = Type.Object({ deleted: Type.Literal(true) });

/** `GET /health` (docs/protocol.md#sync-endpoints; no envelope). */
export const HealthInfo = Type.Object({
  status: Type.Literal("healthy"),
  version: Type.String(),
  capabilities: Type.Array(Type.String()),
});

/** `GET /healthz` (docs/protocol.md#health-probes): the process answers; nothing is checked. */
export const Liveness = Type.Object({ status: Type.Literal("ok") });
/** `GET /readyz` (docs/protocol.md#health-probes): 200 `ready`, or 503 `not_ready` naming the failing dependency. */
export const Readiness = Type.Object({
  status: Type.Union([Type.Literal("ready"), Type.Literal("not_ready")]),
  checks: Type.Record(Type.String(), Type.String(), { description: "dependency → ok or what failed" }),
});

// ---------------------------------------------------------------------------------------------
// Bodies of requests (every failing field: 400 invalid_manifest)

/** The signed manifest (docs/protocol.md#upload-sessions, #manifest); its signature and rules are checked by the service. */
export const Manifest = Type.Object({
  ss58_address: Type.Optional(Type.String({ description: "owner (alias user_id)" })),
  user_id: Type.Optional(Type.String({ description: "alias of ss58_address" })),
  folder_hash: FolderHash,
  ciphertext_hash: Type.String({ pattern: "^[0-9a-f]{64}$", description: "BLAKE3 of the whole ciphertext" }),
  size_bytes: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: "plaintext bytes" }),
  timestamp: Type.Integer({ description: "client Unix seconds" }),
  signature: Type.Array(byte, { minItems: 64, maxItems: 64, description: "Ed25519 over the ToS sentence" }),
  signing_key: Bytes32,
  path_hash: Bytes32,
  salted_hash: Bytes32,
  revision_seq: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
  base_revision_id: Type.Optional(Type.Union([Bytes32, Type.Null()])),
  encrypted_path: Type.Optional(Type.Union([ByteArray, Type.Null()])),
  file_name: Type.Optional(NullableString),
  relative_path: Type.Optional(NullableString),
  source: Type.Optional(NullableString),
  attributes: Type.Optional(Type.Union([Attributes, Type.Null()])),
});

/** Longest folder label and device name, characters (UTF-16 code units). */
const MAX_LABEL_CHARS = 1024;

const BodyAddress = Type.String({ format: "ss58", description: "SS58 address of the owner" });

/** `POST /register_folder` (docs/protocol.md#folders): `ss58_address` or its alias `user_id` is required. */
export const RegisterFolderBody = Type.Object({
  ss58_address: Type.Optional(BodyAddress),
  user_id: Type.Optional(BodyAddress),
  folder_hash: FolderHash,
  label: Type.String({ minLength: 1, maxLength: MAX_LABEL_CHARS, pattern: NO_NUL }),
  device_name: Type.Optional(
    Type.Union([Type.String({ maxLength: MAX_LABEL_CHARS, pattern: NO_NUL }), Type.Null()]),
  ),
});

/** `DELETE /unregister_folder` (docs/protocol.md#folders): `ss58_address` or its alias `user_id` is required. */
export const UnregisterFolderBody = Type.Object({
  ss58_address: Type.Optional(BodyAddress),
  user_id: Type.Optional(BodyAddress),
  folder_hash: FolderHash,
});

/** `POST /upload/session` (docs/protocol.md#upload-sessions); the layout rules are the session engine's. */
export const CreateSessionBody = Type.Object({
  manifest: Manifest,
  chunk_count: Type.Integer({ minimum: 1, maximum: 0xffffffff }),
  chunk_size: Type.Integer({ minimum: 1, description: "bytes" }),
  ciphertext_size: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: "bytes" }),
});

// ---------------------------------------------------------------------------------------------
// Path parameters

/** `{base_address}` */
export const ListFoldersParams = Type.Object({ base_address: AddressParam });
/** `{ss58}/{folder_hash}` */
export const FolderParams = Type.Object({ ss58: AddressParam, folder_hash: FolderHash });
/** `{ss58}/{folder_hash}/{file_id}` */
export const FileParams = Type.Object({ ss58: AddressParam, folder_hash: FolderHash, file_id: FileId });
/** `{ss58}` */
export const OwnerParams = Type.Object({ ss58: AddressParam });
/** `{session_id}` */
export const SessionParams = Type.Object({ session_id: SessionId });
/** `{session_id}/chunk/{chunk_index}` */
export const ChunkParams = Type.Object({ session_id: SessionId, chunk_index: ChunkIndex });

// ---------------------------------------------------------------------------------------------
// Queries (docs/protocol.md#open-rules: malformed numbers are 400 invalid_parameter)

/** `/get_state` page size: default and cap (docs/protocol.md#sync-endpoints). */
export const STATE_DEFAULT_LIMIT = 1000;
export const STATE_MAX_LIMIT = 5000;
/** `/search_files` page size: default and cap (docs/protocol.md#search). */
export const SEARCH_DEFAULT_LIMIT = 25;
export const SEARCH_MAX_LIMIT = 10000;
/** `/browse` page size: default and cap (issue 3). */
export const BROWSE_DEFAULT_LIMIT = 50;
export const BROWSE_MAX_LIMIT = 200;
/** Longest `q`, in characters (Unicode code points). */
export const MAX_Q_CHARS = 256;

/** `offset` and `limit`; a `limit` of 0 means the default, one above the cap is read as the cap. */
function pageQuery(def: number, max: number, maximum?: number) {
  return {
    offset: uintQuery("rows to skip", { default: 0, maximum }),
    limit: uintQuery(`page size; 0 or absent = ${def}; values above ${max} are read as ${max}`, {
      default: def,
      maximum,
    }),
  };
}

/** `GET /get_state/{ss58}/{folder_hash}` (docs/protocol.md#sync-endpoints). */
export const StateQuery = Type.Object(pageQuery(STATE_DEFAULT_LIMIT, STATE_MAX_LIMIT, 999_999_999_999_999));

/** Columns results can be sorted by (docs/protocol.md#search), in the order of docs/protocol.md#summaries. */
export const SORT_COLUMNS = ["file_name", "size_bytes", "created_at", "updated_at"] as const;
/** A column results can be sorted by. */
export type SortColumn = (typeof SORT_COLUMNS)[number];
/** Search sort keys: the columns plus `uploaded_by` (docs/protocol.md#api-profiles). */
export const SEARCH_SORT_KEYS = [...SORT_COLUMNS, "uploaded_by"] as const;
/** Browse sort keys: the search keys plus `extension` (docs/protocol.md#api-profiles). */
export const BROWSE_SORT_KEYS = [...SEARCH_SORT_KEYS, "extension"] as const;

function sortQuery(keys: readonly string[]) {
  return {
    sort_by: Type.Optional(
      Type.String({
        default: "created_at",
        description: `${keys.join(" | ")} (anything else: created_at)`,
      }),
    ),
    sort_order: Type.Optional(
      Type.String({ default: "desc", description: "asc | desc, case-insensitive (anything else: desc)" }),
    ),
  };
}

/** `uploaded_by` filter (docs/protocol.md#api-profiles). */
const UploadedBy = Type.Optional(
  Type.String({
    description:
      "only files whose current revision this account wrote; `_none` = files without a recorded uploader",
  }),
);

const Q = Type.Optional(
  Type.String({
    // Code points, not UTF-16 units: a surrogate pair counts once. The alternatives are
    // exclusive, so a failing match does not backtrack.
    pattern: `^(?:[\\uD800-\\uDBFF][\\uDC00-\\uDFFF]|[\\uD800-\\uDBFF](?![\\uDC00-\\uDFFF])|[^\\uD800-\\uDBFF]){0,${MAX_Q_CHARS}}$`,
    description: `case-insensitive substring of file_name (or relative_path when file_name is null); at most ${MAX_Q_CHARS} characters`,
    ...failsWith("q_too_long"),
  }),
);

const FileType = Type.Optional(
  Type.String({
    description:
      "category image|video|audio|document|pdf|archive|code or an extension like .png; several comma-separated",
    ...failsWith("invalid_file_type"),
  }),
);

/** `GET /search_files/{ss58}` (docs/protocol.md#search, #open-rules); bounds are inclusive. */
export const SearchQuery = Type.Object({
  q: Q,
  file_type: FileType,
  size_min: uintQuery("smallest size_bytes"),
  size_max: uintQuery("largest size_bytes"),
  date_from: uintQuery("earliest created_at, Unix seconds"),
  date_to: uintQuery("latest created_at, Unix seconds"),
  uploaded_by: UploadedBy,
  folder_hash: Type.Optional(
    Type.String({ pattern: "^[0-9a-f]{16}$", description: "only files of this folder (16 hex)" }),
  ),
  ...pageQuery(SEARCH_DEFAULT_LIMIT, SEARCH_MAX_LIMIT),
  ...sortQuery(SEARCH_SORT_KEYS),
});

/** `GET /browse/{ss58}/{folder_hash}`: one directory, with the search filters it shares. */
export const BrowseQuery = Type.Object({
  path: Type.Optional(
    Type.String({
      pattern: "^(?![\\s\\S]*(\\.\\.|\\\\))",
      default: "",
      description: "directory inside the folder (no '..' or '\\'); absent = the root",
    }),
  ),
  q: Q,
  file_type: FileType,
  uploaded_by: UploadedBy,
  folder_hash: Type.Optional(
    Type.String({
      pattern: "^[0-9a-f]{16}$",
      description: "as in search; a value other than the path's folder_hash lists nothing",
    }),
  ),
  ...pageQuery(BROWSE_DEFAULT_LIMIT, BROWSE_MAX_LIMIT),
  ...sortQuery(BROWSE_SORT_KEYS),
});

// ---------------------------------------------------------------------------------------------
// Headers

/** Headers of a chunk PUT. */
export const ChunkHeaders = Type.Object({
  "content-length": Type.Optional(
    Type.String({
      pattern: "^\\s*\\d{1,16}\\s*$",
      description: "bytes of the chunk",
      ...failsWith("invalid_manifest"),
    }),
  ),
});

/** Headers of `POST /upload`. */
export const UploadHeaders = Type.Object({
  "content-type": Type.String({
    pattern:
      "^[Mm][Uu][Ll][Tt][Ii][Pp][Aa][Rr][Tt]/[Ff][Oo][Rr][Mm]-[Dd][Aa][Tt][Aa]\\s*;.*[Bb][Oo][Uu][Nn][Dd][Aa][Rr][Yy]=",
    description: "multipart/form-data with a boundary",
    ...failsWith("invalid_manifest"),
  }),
});

/** Headers of `GET /download` (RFC 9110 single range). */
export const DownloadHeaders = Type.Object({
  range: Type.Optional(
    Type.String({
      description: "bytes=a-b, bytes=a- or bytes=-n; malformed or multi-range values are ignored",
    }),
  ),
  "if-range": Type.Optional(
    Type.String({ description: "an ETag: a stale one gets the whole current file (200)" }),
  ),
  "if-none-match": Type.Optional(
    Type.String({ description: "ETags or *: 304 when one names the current revision" }),
  ),
  "if-match": Type.Optional(
    Type.String({ description: "ETags or *: 412 precondition_failed when none names it" }),
  ),
});

/** Headers of `GET /search_files/{ss58}` (docs/protocol.md#authentication). */
export const SearchHeaders = Type.Object({
  "x-billing-bypass": Type.Optional(
    Type.String({ description: "accepted and ignored (docs/protocol.md#authentication)" }),
  ),
});

// ---------------------------------------------------------------------------------------------
// Product extensions (docs/protocol.md#api-profiles, #capabilities): batch operations, folder entries, quota, summaries

/** Most ids of one `POST /delete_files` (docs/protocol.md#delete-files, #limits). */
export const MAX_BATCH_DELETE = 1000;
/** Most entries of one `POST /rename_files` (docs/protocol.md#rename-files). */
export const MAX_BATCH_RENAME = 1000;
/** Most entries of one folder-entry or `/register_relative_paths` call (docs/protocol.md#limits). */
export const MAX_PATH_BATCH = 500;

/** `POST /delete_files` (docs/protocol.md#delete-files); ids that are not 64 hex fail one by one, not the request. */
export const DeleteFilesBody = Type.Object({
  ss58_address: Type.Optional(BodyAddress),
  user_id: Type.Optional(BodyAddress),
  folder_hash: FolderHash,
  file_ids: Type.Array(Type.String({ description: "path_hash as 64 lowercase hex characters" }), {
    minItems: 1,
    description: `1 to ${MAX_BATCH_DELETE} ids (more: 400 batch_too_large)`,
  }),
  quiet: Type.Optional(
    Type.Boolean({ default: false, description: "leave successful entries out of the answer" }),
  ),
});

/** `POST /delete_files` answer (docs/protocol.md#delete-files): 200 also when some ids fail. */
export const DeleteFilesResult = Type.Object({
  deleted: Type.Optional(
    Type.Array(
      Type.Object({
        file_id: Type.String(),
        status: Type.Union([Type.Literal("deleted"), Type.Literal("already_deleted")]),
      }),
      { description: "absent when quiet" },
    ),
  ),
  errors: Type.Array(
    Type.Object({
      file_id: Type.String(),
      error: Type.Union([Type.Literal("invalid_file_id"), Type.Literal("database_error")]),
    }),
  ),
  files_deleted: Type.Integer({ minimum: 0 }),
});

/** One entry of `POST /rename_files` (docs/protocol.md#rename-files). */
export const SingleRename = Type.Object({
  old_path_hash: Bytes32,
  new_path_hash: Bytes32,
  new_encrypted_path: Type.Optional(
    Type.Union([Type.Array(byte, { maxItems: 8192 }), Type.Null()], { description: "default empty" }),
  ),
  new_file_name: Type.Optional(Type.Union([Type.String({ maxLength: 4096, pattern: NO_NUL }), Type.Null()])),
  new_relative_path: Type.Optional(Type.Union([Type.String({ maxLength: 4096 }), Type.Null()])),
  base_revision_id: Bytes32,
});

/** `POST /rename_files` (docs/protocol.md#rename-files): one Ed25519 signature over the sorted hash pairs. */
export const RenameFilesBody = Type.Object({
  ss58_address: Type.Optional(BodyAddress),
  user_id: Type.Optional(BodyAddress),
  folder_hash: FolderHash,
  renames: Type.Array(SingleRename, {
    minItems: 1,
    description: `1 to ${MAX_BATCH_RENAME} entries (more: 400 batch_too_large)`,
  }),
  signature: Type.Array(byte, {
    minItems: 64,
    maxItems: 64,
    description: "Ed25519 over the rename declaration",
  }),
  signing_key: Bytes32,
});

/** `POST /rename_files` answer (docs/protocol.md#rename-files): 200 also when some entries fail. */
export const RenameFilesResult = Type.Object({
  status: Type.Literal("ok"),
  renamed_count: Type.Integer({ minimum: 0 }),
  successes: Type.Array(
    Type.Object({
      old_path_hash: Bytes32,
      new_path_hash: Bytes32,
      new_revision_id: Bytes32,
      new_revision_seq: Type.Integer({ minimum: 0 }),
    }),
  ),
  failures: Type.Array(
    Type.Object({
      old_path_hash: Bytes32,
      reason: Type.Union([
        Type.Literal("not_found"),
        Type.Literal("target_exists"),
        Type.Literal("revision_mismatch"),
        Type.Literal("database_error"),
      ]),
    }),
  ),
});

/**
 * Largest folder-entry body, bytes: 500 paths of up to 4096 characters fit (docs/protocol.md#folder-entries bounds
 * the paths, not the body).
 */
export const MAX_FOLDER_ENTRIES_BODY_BYTES = 4 * 1024 * 1024;

/** Register and unregister folder entries (docs/protocol.md#folder-entries). */
export const FolderEntriesBody = Type.Object({
  ss58_address: Type.Optional(BodyAddress),
  user_id: Type.Optional(BodyAddress),
  folder_hash: FolderHash,
  relative_paths: Type.Array(Type.String(), {
    description: `directory paths, validated like upload paths (no leading or trailing '/', no empty, '.' or '..' segment, no backslash or control character) and in NFC; at most ${MAX_PATH_BATCH} (more: 400 batch_too_large); [] is a no-op`,
  }),
});
/**
 * Largest sealed attributes of one folder entry, bytes (docs/protocol.md#folder-entry-attributes): a
 * directory's sealed modification time takes about 90.
 */
export const MAX_FOLDER_ENTRY_ATTRIBUTES_BYTES = 512;

/** esync extension: a folder entry's opaque, client-encrypted attributes (docs/protocol.md#folder-entry-attributes). */
const FolderEntryAttributes = Type.Array(byte, {
  minItems: 1,
  maxItems: MAX_FOLDER_ENTRY_ATTRIBUTES_BYTES,
  description: `esync extension: opaque client-encrypted attributes of a directory, 1 to ${MAX_FOLDER_ENTRY_ATTRIBUTES_BYTES} bytes, stored and returned unchanged`,
});

/** Directory path → its sealed attributes (docs/protocol.md#folder-entry-attributes). */
const folderEntryAttributesMap = (description: string) =>
  Type.Record(Type.String(), FolderEntryAttributes, { description });

/**
 * `POST /register_folder_entries` (docs/protocol.md#folder-entries): the entries body, plus esync's
 * optional `attributes` (docs/protocol.md#folder-entry-attributes).
 */
export const RegisterFolderEntriesBody = Type.Object({
  ...FolderEntriesBody.properties,
  attributes: Type.Optional(
    folderEntryAttributesMap(
      "esync extension (capability folder_entry_attributes): sealed attributes by directory path; every key must be one of relative_paths (else 400 invalid_manifest); a named entry's attributes are replaced, an entry not named here keeps its own",
    ),
  ),
});
/** `POST /register_folder_entries`: `count` = the named entries now present. */
export const RegisterFolderEntriesResult = Type.Object({
  status: Type.Literal("registered"),
  count: Type.Integer({ minimum: 0 }),
});
/** `DELETE /unregister_folder_entries`: `count` = the entries removed. */
export const UnregisterFolderEntriesResult = Type.Object({
  status: Type.Literal("unregistered"),
  count: Type.Integer({ minimum: 0 }),
});
/** `GET /list_folder_entries/{ss58}/{folder_hash}` (flat, no envelope). */
export const ListFolderEntriesResult = Type.Object({
  relative_paths: Type.Array(Type.String()),
  attributes: Type.Optional(
    folderEntryAttributesMap(
      "esync extension, only with `limit` and only when some entry of the page has them: the sealed attributes of those entries, by path",
    ),
  ),
  next_after: Type.Optional(
    Type.Union([Type.String(), Type.Null()], {
      description: "only with `limit`: the `after` of the next page, null on the last page",
    }),
  ),
});

/** Largest `limit` of `GET /list_folder_entries` (docs/operator-guide.md#big-answers-and-batches). */
export const MAX_FOLDER_ENTRIES_PAGE = 1000;

/**
 * Optional keyset paging of `GET /list_folder_entries`: without `limit` the answer is every entry
 * (as the products' clients expect), with it one page.
 */
export const ListFolderEntriesQuery = Type.Object({
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_FOLDER_ENTRIES_PAGE,
      description: `page size, 1 to ${MAX_FOLDER_ENTRIES_PAGE}; absent: every entry in one answer`,
    }),
  ),
  after: Type.Optional(
    Type.String({
      maxLength: 4096,
      description: "the `next_after` of the previous page (only with `limit`)",
    }),
  ),
});

/** Largest `/register_relative_paths` body, bytes (docs/protocol.md#relative-path-backfill). */
export const MAX_RELATIVE_PATHS_BODY_BYTES = 4 * 1024 * 1024;

/** `POST /register_relative_paths/{ss58}/{folder_hash}` (docs/protocol.md#relative-path-backfill). */
export const RegisterRelativePathsBody = Type.Object({
  entries: Type.Array(
    Type.Object({
      path_hash: Type.String({ pattern: "^[0-9a-fA-F]{64}$", description: "the row's path_hash as 64 hex" }),
      relative_path: Type.String({ description: "plaintext path, validated like upload paths" }),
    }),
    { description: `at most ${MAX_PATH_BATCH} entries (more: 400 batch_too_large); body at most 4 MiB` },
  ),
});
/** `POST /register_relative_paths` answer: 200 also when every entry fails. */
export const RegisterRelativePathsResult = Type.Object({
  updated: Type.Integer({ minimum: 0 }),
  skipped: Type.Integer({ minimum: 0 }),
  errors: Type.Array(
    Type.Object({
      path_hash: Type.String(),
      reason: Type.Union([
        Type.Literal("invalid_path"),
        Type.Literal("not_found"),
        Type.Literal("path_mismatch"),
        Type.Literal("database_error"),
      ]),
    }),
  ),
});

/** `GET /v1/capabilities` (docs/protocol.md#capabilities, v1 family: the object itself). A missing key means false. */
export const Capabilities = Type.Object({
  shares: Type.Boolean(),
  folder_shares: Type.Boolean(),
  folder_share_revoke_by_hash: Type.Boolean(),
  share_owner_wrap: Type.Boolean(),
  folder_grants: Type.Boolean(),
  folder_grant_writes: Type.Boolean(),
  member_folder_shares: Type.Boolean(),
  upload_folder_shares: Type.Boolean(),
  share_max_downloads: Type.Boolean({ description: "esync: max_downloads on file shares" }),
  share_access_log: Type.Boolean({ description: "esync: GET /v1/shares/{token}/accesses" }),
  /**
   * esync extension: version history and trash (docs/versions.md); true while the server keeps
   * replaced and deleted revisions (`ESYNC_VERSION_RETENTION_DAYS` above 0).
   */
  versions: Type.Optional(Type.Boolean()),
  /** esync extension: `GET /v1/quota/{ss58}` reports the allowance and what uses it (docs/protocol.md#quota). */
  quota_report: Type.Optional(Type.Boolean()),
  /**
   * esync extension: folder entries carry sealed attributes (a directory's modification time;
   * docs/protocol.md#folder-entry-attributes).
   */
  folder_entry_attributes: Type.Optional(Type.Boolean()),
});

/** `POST /can_upload` (docs/protocol.md#quota). */
export const CanUploadBody = Type.Object({
  ss58_address: Type.Optional(BodyAddress),
  user_id: Type.Optional(BodyAddress),
  folder_hash: Type.String({
    pattern: "^([0-9a-f]{16})?$",
    description: 'the drive\'s 16 hex characters, or "" for the account itself',
  }),
  size_bytes: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: "plaintext bytes" }),
});
/** `POST /can_upload` answer (flat, advisory; 200 also when the answer is no). */
export const CanUploadResult = Type.Object({
  result: Type.Boolean(),
  error: Type.Union([Type.String(), Type.Null()]),
});

/**
 * `GET /v1/quota/{ss58}` answer (docs/protocol.md#quota; esync extension, capability
 * `quota_report`). Plaintext bytes; `used_bytes` = `file_bytes` + `share_bytes` + `version_bytes`.
 */
export const QuotaReport = Type.Object({
  ss58_address: Type.String(),
  used_bytes: Type.Integer({ minimum: 0, description: "everything the allowance counts" }),
  file_bytes: Type.Integer({ minimum: 0, description: "the live files" }),
  file_count: Type.Integer({ minimum: 0 }),
  share_bytes: Type.Integer({ minimum: 0, description: "stored file shares" }),
  version_bytes: Type.Integer({ minimum: 0, description: "kept versions of replaced and deleted files" }),
  quota_bytes: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
    description: "the allowance; null: unlimited",
  }),
  free_bytes: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
    description: "room left (0 when over the allowance); null: unlimited",
  }),
});

/** Query of the three summaries (docs/protocol.md#summaries): `folder_hash` limits a summary to one folder. */
export const SummaryQuery = Type.Object({
  folder_hash: Type.Optional(
    Type.String({ pattern: "^[0-9a-f]{16}$", description: "limit the summary to this folder (16 hex)" }),
  ),
});
const U64 = Type.Integer({ minimum: 0 });
/** `GET /get_user_summary/{ss58}` (docs/protocol.md#summaries). */
export const UserSummary = Type.Object({
  ss58_address: Type.String(),
  total_bytes: Type.Integer({ minimum: 0, description: "plaintext bytes" }),
  file_count: U64,
  created_at: Type.Integer({ description: "Unix seconds of the first file write; 0 without files" }),
  updated_at: Type.Integer({ description: "Unix seconds of the last change; 0 without files" }),
});
/** The file-type buckets of `/get_file_type_summary`, in the order of docs/protocol.md#summaries. */
export const FILE_TYPE_BUCKETS = [
  "image",
  "video",
  "audio",
  "document",
  "pdf",
  "archive",
  "code",
  "other",
] as const;
/** The client-family buckets of `/get_source_summary`. */
export const SOURCE_BUCKETS = ["desktop", "console", "mobile", "other"] as const;
function bucketFields<const K extends readonly string[]>(keys: K) {
  const props: Record<string, typeof U64> = {};
  for (const k of keys) {
    props[k] = U64;
    props[`${k}_bytes`] = U64;
  }
  return props as { [P in K[number] | `${K[number]}_bytes`]: typeof U64 };
}
/** `GET /get_file_type_summary/{ss58}`: counts and plaintext bytes per file_type category. */
export const FileTypeSummary = Type.Object(bucketFields(FILE_TYPE_BUCKETS));
/** `GET /get_source_summary/{ss58}`: counts and plaintext bytes per client family. */
export const SourceSummary = Type.Object(bucketFields(SOURCE_BUCKETS));

// ---------------------------------------------------------------------------------------------
// Shared drives (docs/drives.md): v1 family, bare bodies, flat errors, RFC 3339 times.

/** A whole-drive role. */
const DriveRole = Type.Union([Type.Literal("reader"), Type.Literal("writer"), Type.Literal("manager")]);
/** A folder grant's role. */
const GrantRoleSchema = Type.Union([Type.Literal("reader"), Type.Literal("writer")]);
/** An RFC 3339 time. */
const Rfc3339 = Type.String({ description: "RFC 3339 UTC time" });
/** A v1 body field that, when malformed, is 400 `bad_request`. */
const v1Field = <S extends TSchemaLike>(s: S) =>
  Type.Optional(Type.Union([s, Type.Null()], failsWith("bad_request")));
type TSchemaLike = ReturnType<typeof Type.String> | ReturnType<typeof Type.Integer>;

/** `POST /v1/drive-invites`. `null` and an absent field mean the same. */
export const MintInviteBody = Type.Object({
  folder_hash: Type.String({ ...FolderHash, ...failsWith("bad_request") }),
  role: v1Field(Type.String({ maxLength: 64 })),
  expires_in_secs: v1Field(Type.Integer({ minimum: 0 })),
  max_uses: v1Field(Type.Integer({ minimum: 0, maximum: 4294967295 })),
  owner_ss58: v1Field(Type.String({ format: "ss58", maxLength: 256 })),
  path_prefix: v1Field(Type.String({ maxLength: 4096 })),
});

/** The answer of `POST /v1/drive-invites`: the token is shown only here. */
export const InviteMinted = Type.Object({
  invite_token: Type.String(),
  invite_id: Type.String({ pattern: "^[0-9a-f]{64}$" }),
  path_prefix: Type.Optional(Type.String()),
});

/** `?owner=` of the drive management routes: the drive owner when the caller is not the owner. */
export const DriveOwnerQuery = Type.Object({
  owner: Type.Optional(Type.String({ format: "ss58", maxLength: 256, ...failsWith("bad_request") })),
});

/** `{folder_hash}` of the drive management routes. */
export const DriveParams = Type.Object({
  folder_hash: Type.String({ ...FolderHash, ...failsWith("bad_request") }),
});
/** `{folder_hash}/invites/{invite_id}` (the id is checked by the route: its answers differ). */
export const DriveInviteParams = Type.Object({
  folder_hash: Type.String({ ...FolderHash, ...failsWith("bad_request") }),
  invite_id: Type.String({ maxLength: 256 }),
});
/** `{folder_hash}/members/{member_ss58}`. */
export const DriveMemberParams = Type.Object({
  folder_hash: Type.String({ ...FolderHash, ...failsWith("bad_request") }),
  member_ss58: Type.String({ maxLength: 256 }),
});
/** `{token}` of the invite routes (an unknown or malformed token is 404). */
export const InviteTokenParams = Type.Object({ token: Type.String({ maxLength: 256 }) });

/** `PUT /v1/drives/{folder_hash}/invites/{invite_id}/sealed-token`. */
export const SealedTokenBody = Type.Object({
  sealed_token: Type.String({ minLength: 1, maxLength: 65536, ...failsWith("bad_request") }),
});

/** A row of `GET /v1/drives/{folder_hash}/invites`. */
export const DriveInvite = Type.Object({
  invite_id: Type.String(),
  sealed_token: Type.Optional(Type.String()),
  role: Type.String(),
  minted_by: Type.String(),
  expires_at: Rfc3339,
  max_uses: Type.Integer({ minimum: 0 }),
  use_count: Type.Integer({ minimum: 0 }),
  revoked: Type.Boolean(),
  valid: Type.Boolean(),
  created_at: Rfc3339,
  path_prefix: Type.Optional(Type.String()),
});
/** `GET /v1/drives/{folder_hash}/invites`: newest first, at most 500 rows. */
export const DriveInvites = Type.Object({ invites: Type.Array(DriveInvite), truncated: Type.Boolean() });

/** `GET /v1/drive-invites/{token}/meta` (anonymous preview). */
export const InviteMeta = Type.Object({
  owner_ss58: Type.String(),
  folder_hash: Type.String(),
  display_label: Type.String(),
  expires_at: Rfc3339,
  role: Type.String(),
  valid: Type.Boolean(),
  path_prefix: Type.Optional(Type.String()),
});

/** `POST /v1/drive-invites/{token}/accept`. */
export const AcceptInviteBody = Type.Object({
  grant_blob: Type.String({ maxLength: 65536, ...failsWith("bad_request") }),
  path_prefix: v1Field(Type.String({ maxLength: 4096 })),
});
/** The answer of an accept. */
export const AcceptResult = Type.Object({
  owner_ss58: Type.String(),
  folder_hash: Type.String(),
  role: Type.String(),
  already_owner: Type.Optional(Type.Literal(true)),
  path_prefix: Type.Optional(Type.String()),
});

/** A whole drive in `GET /v1/drive-memberships`. */
export const Membership = Type.Object({
  owner_ss58: Type.String(),
  folder_hash: Type.String(),
  role: DriveRole,
  grant_blob: Type.String(),
  display_label: Type.String(),
  created_at: Rfc3339,
  member_count: Type.Optional(Type.Integer({ minimum: 1 })),
  frozen: Type.Optional(Type.Literal(true)),
  frozen_until: Type.Optional(Rfc3339),
});
/** A folder grant in `GET /v1/drive-memberships`. */
export const FolderGrant = Type.Object({
  owner_ss58: Type.String(),
  folder_hash: Type.String(),
  display_label: Type.String(),
  path_prefix: Type.String(),
  role: GrantRoleSchema,
  grant_blob: Type.String(),
  created_at: Rfc3339,
  frozen: Type.Optional(Type.Literal(true)),
  frozen_until: Type.Optional(Rfc3339),
});
/** `GET /v1/drive-memberships`. */
export const Memberships = Type.Object({
  memberships: Type.Array(Membership),
  folder_grants: Type.Array(FolderGrant),
});

/** A member row of `GET /v1/drives/{folder_hash}/members` and of a role change. */
export const DriveMember = Type.Object({ member_ss58: Type.String(), role: DriveRole, created_at: Rfc3339 });
/** A folder holder row of `GET /v1/drives/{folder_hash}/members`. */
export const DriveGrantHolder = Type.Object({
  member_ss58: Type.String(),
  path_prefix: Type.String(),
  role: GrantRoleSchema,
  created_at: Rfc3339,
});
/** `GET /v1/drives/{folder_hash}/members`. */
export const DriveMembers = Type.Object({
  members: Type.Array(DriveMember),
  folder_grants: Type.Array(DriveGrantHolder),
});

/** `PATCH /v1/drives/{folder_hash}/members/{member_ss58}`. */
export const ChangeRoleBody = Type.Object({
  role: Type.String({ maxLength: 64, ...failsWith("bad_request") }),
});

/** `PUT /v1/account/invite-key`. */
export const InviteKeyBody = Type.Object({
  pubkey: Type.String({ maxLength: 256, ...failsWith("bad_request") }),
});
/** The answer of `PUT /v1/account/invite-key`. */
export const InviteKeyResult = Type.Object({ status: Type.Literal("ok") });

// Sharing (docs/sharing.md): the v1 family, so successes are the bodies themselves and errors
// the flat `{"error", "message"}`.

/** An RFC 3339 time, or null for "never". */
const Rfc3339OrNever = Type.Union([Rfc3339, Type.Null()], { description: "RFC 3339 time, or null = never" });
/** Standard base64 with padding. */
const Base64 = Type.String({
  pattern: "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$",
  description: "standard base64 with padding",
});
/** How long a share lives from the request on; omitted = `24h`. */
export const SHARE_TTLS = ["24h", "7d", "30d", "never"] as const;
const Ttl = Type.Union(
  SHARE_TTLS.map((v) => Type.Literal(v)),
  { description: "24h (default), 7d, 30d or never" },
);
/** A share or folder-share token in a path: one base64url segment. */
export const SHARE_TOKEN_PATTERN = "^[A-Za-z0-9_-]{1,128}$";
/** A folder share's token hash: BLAKE3 of the token, 64 lowercase hex. */
const TokenHash = Type.String({
  pattern: "^[0-9a-f]{64}$",
  description: "BLAKE3 of the token, 64 lowercase hex",
});
/** Bytes, as a JSON integer. */
const Size = Type.Integer({ minimum: 0, description: "bytes" });

/** Path parameters of the routes addressing one share by its token. */
export const ShareTokenParams = Type.Object({ token: Type.String({ description: "the share token" }) });
/** Path parameters of a chunk PUT. */
export const ShareChunkParams = Type.Object({
  token: Type.String({ description: "the share token" }),
  index: Type.Integer({ minimum: 0, maximum: 2 ** 32 - 1, description: "0-based chunk index" }),
});
/** Path parameters of the by-hash folder-share routes. */
export const TokenHashParams = Type.Object({ token_hash: TokenHash });

/** Largest `max_downloads` of a file share. */
export const MAX_SHARE_DOWNLOADS = 1_000_000;

/**
 * The metadata of a file share: the JSON `metadata` part of `POST /v1/shares` and the body of
 * `POST /v1/shares/init` (with `total_chunks`).
 */
export const ShareMetadata = Type.Object({
  ciphertext_size: Size,
  plaintext_size: Size,
  filename_ct: Base64,
  filename_nonce: Base64,
  filename: Type.String({
    minLength: 1,
    maxLength: 1024,
    description: "plaintext name, one path segment (owner only)",
  }),
  mime_type: Type.String({ minLength: 1, maxLength: 255, pattern: "^[\\x21-\\x7e]+$" }),
  ttl: Type.Optional(Ttl),
  total_chunks: Type.Optional(Type.Integer({ minimum: 1, maximum: 2 ** 32 - 1 })),
  max_downloads: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_SHARE_DOWNLOADS,
      description: "complete downloads the link allows (capability share_max_downloads)",
    }),
  ),
  access_log: Type.Optional(
    Type.Boolean({ description: "keep an access log for the owner (capability share_access_log)" }),
  ),
});

/** `POST /v1/shares`, `/v1/shares/init`, `/complete`, `PATCH /v1/shares/{token}`: 201/200. */
export const ShareMinted = Type.Object({ share_token: Type.String(), expires_at: Rfc3339OrNever });
/** `PUT /v1/shares/{token}/chunks/{index}`: 200. */
export const ShareChunkStored = Type.Object({ chunk_index: Type.Integer({ minimum: 0 }) });
/** One element of `GET /v1/shares`. */
export const ShareSummary = Type.Object({
  share_token: Type.String(),
  filename: Type.String(),
  plaintext_size: Size,
  ciphertext_size: Size,
  mime_type: Type.String(),
  created_at: Rfc3339,
  expires_at: Rfc3339OrNever,
  owner_wrap: Type.Union([Type.String(), Type.Null()]),
  max_downloads: Type.Optional(
    Type.Integer({ minimum: 1, description: "present when the link has a limit" }),
  ),
  download_count: Type.Optional(
    Type.Integer({
      minimum: 0,
      description: "complete downloads so far; present with max_downloads or access_log",
    }),
  ),
  access_log: Type.Optional(
    Type.Boolean({ description: "present (true) when the share keeps an access log" }),
  ),
});
/** One row of a file share's access log (docs/sharing.md, "Access log"). */
export const ShareAccess = Type.Object({
  at: Type.Integer({ minimum: 0, description: "Unix seconds when the answer started" }),
  bytes_sent: Size,
  completed: Type.Boolean({ description: "the whole blob was sent: a counted download" }),
  client_address: Type.Optional(Type.String({ description: "only when ESYNC_SHARE_LOG_ADDRESSES is on" })),
});
/** `GET /v1/shares/{token}/accesses`: newest first. */
export const ShareAccessList = Type.Object({
  max_downloads: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()]),
  download_count: Type.Integer({ minimum: 0 }),
  accesses: Type.Array(ShareAccess),
  truncated: Type.Boolean({ description: "older rows exist beyond the newest 1,000" }),
});
/** `GET /v1/shares`: a bare array. */
export const ShareList = Type.Array(ShareSummary);
/** `PATCH /v1/shares/{token}` and the folder-share PATCH routes. */
export const TtlBody = Type.Object({ ttl: Ttl });
/** `GET /v1/shares/{token}/meta` (anonymous). */
export const ShareMeta = Type.Object({
  ciphertext_size: Size,
  plaintext_size: Size,
  filename_ct: Type.String(),
  filename_nonce: Type.String(),
  mime_type: Type.String(),
  expires_at: Rfc3339OrNever,
});
/** Most entries of one owner-wraps PUT. */
export const MAX_OWNER_WRAPS = 64;
/** `PUT /v1/shares/owner-wraps`. */
export const FileOwnerWrapsBody = Type.Object({
  wraps: Type.Array(
    Type.Object({
      token: Type.String({ minLength: 1, maxLength: 128 }),
      wrap: Type.String({ ...Base64, maxLength: 4096 }),
    }),
    { minItems: 1, maxItems: MAX_OWNER_WRAPS },
  ),
});
/** `PUT /v1/folder-shares/owner-wraps`. */
export const FolderOwnerWrapsBody = Type.Object({
  wraps: Type.Array(
    Type.Object({ token_hash: TokenHash, wrap: Type.String({ ...Base64, maxLength: 4096 }) }),
    {
      minItems: 1,
      maxItems: MAX_OWNER_WRAPS,
    },
  ),
});
/** Both owner-wraps PUTs: rows updated. */
export const OwnerWrapsApplied = Type.Object({ applied: Type.Integer({ minimum: 0 }) });

/** `POST /v1/folder-shares`. */
export const FolderShareBody = Type.Object({
  folder_hash: FolderHash,
  path_prefix: Type.String({ maxLength: 4096, description: 'directory to share; "" = the whole folder' }),
  display_name: Type.String({ maxLength: 1024, description: "non-empty name shown to recipients" }),
  ttl: Type.Optional(Ttl),
  owner_ss58: Type.Optional(Type.String({ maxLength: 256 })),
});
/** `PATCH` of a folder share: the new expiry. */
export const ExpiryResult = Type.Object({ expires_at: Rfc3339OrNever });
/** One element of `GET /v1/folder-shares`. */
export const FolderShareSummary = Type.Object({
  token_hash: Type.String(),
  folder_hash: Type.String(),
  path_prefix: Type.String(),
  display_name: Type.String(),
  created_at: Rfc3339,
  expires_at: Rfc3339OrNever,
  revoked_at: Rfc3339OrNever,
  owner_wrap: Type.Union([Type.String(), Type.Null()]),
  owner_ss58: Type.String(),
  minted_by_ss58: Type.String(),
  source: Type.Union([Type.Literal("drive"), Type.Literal("uploaded_copy")]),
});
/** `GET /v1/folder-shares`: a bare array. */
export const FolderShareList = Type.Array(FolderShareSummary);
/** `GET /v1/folder-shares/{token}/meta` (anonymous). */
export const FolderShareMeta = Type.Object({ display_name: Type.String(), expires_at: Rfc3339OrNever });
/** Default and largest `limit` of a folder-share browse page. */
export const FOLDER_BROWSE_DEFAULT_LIMIT = 100;
export const FOLDER_BROWSE_MAX_LIMIT = 200;
/** `GET /v1/folder-shares/{token}/browse` query. Larger limits are lowered to the maximum. */
export const FolderBrowseQuery = Type.Object({
  path: Type.Optional(Type.String({ maxLength: 4096 })),
  offset: Type.Optional(Type.Integer({ minimum: 0 })),
  limit: Type.Optional(Type.Integer({ minimum: 1 })),
});
/** `GET /v1/folder-shares/{token}/browse` (anonymous). */
export const FolderSharePage = Type.Object({
  directories: Type.Array(
    Type.Object({ name: Type.String(), file_count: Size, total_bytes: Size, created_at: Rfc3339OrNever }),
  ),
  files: Type.Array(
    Type.Object({ name: Type.String(), path: Type.String(), size_bytes: Size, uploaded_at: Rfc3339 }),
  ),
  total_count: Size,
  has_more: Type.Boolean(),
  offset: Size,
  limit: Size,
});
/** `GET /v1/folder-shares/{token}/blob` query. */
export const FolderBlobQuery = Type.Object({ path: Type.Optional(Type.String({ maxLength: 4096 })) });

// ---------------------------------------------------------------------------------------------
// Version history and trash (esync extension, docs/versions.md; capability `versions`): v1
// family, bare bodies, flat errors.

/** Default and largest page of `GET /v1/trash/{ss58}/{folder_hash}`. */
export const TRASH_DEFAULT_LIMIT = 100;
export const TRASH_MAX_LIMIT = 1000;

/** A kept version: why and when it stopped being current, until when it is kept, and its file entry. */
export const FileVersion = Type.Object({
  version_id: Type.Integer({ minimum: 1, description: "the id `restore` takes" }),
  reason: Type.Union([Type.Literal("replaced"), Type.Literal("deleted")], {
    description: "`replaced`: a newer revision took its place; `deleted`: the file was deleted",
  }),
  kept_at: Type.Integer({ description: "Unix seconds it stopped being the current revision" }),
  expires_at: Type.Integer({ description: "Unix seconds after which it is deleted" }),
  entry: RemoteFileEntry,
});

/** `GET /v1/versions/{ss58}/{folder_hash}/{file_id}`. */
export const FileVersionsResult = Type.Object({
  folder_hash: FolderHash,
  file_id: Type.String({ description: "64 hex characters of path_hash" }),
  current: Type.Union([RemoteFileEntry, Type.Null()], {
    description: "the current revision, or null when deleted",
  }),
  versions: Type.Array(FileVersion, { description: "newest first" }),
});

/** Query of `GET /v1/trash/{ss58}/{folder_hash}`: keyset pagination by `version_id`. */
export const TrashQuery = Type.Object({
  before: uintQuery("the `next` of the previous page: only versions with a smaller version_id"),
  limit: uintQuery(
    `page size; 0 or absent = ${TRASH_DEFAULT_LIMIT}; values above ${TRASH_MAX_LIMIT} are read as ${TRASH_MAX_LIMIT}`,
  ),
});

/** `GET /v1/trash/{ss58}/{folder_hash}`: the newest deleted version of each path with no live file. */
export const TrashResult = Type.Object({
  folder_hash: FolderHash,
  deleted: Type.Array(FileVersion, { description: "newest first" }),
  next: Type.Union([Type.Integer(), Type.Null()], {
    description: "the `before` of the next page; null at the end",
  }),
});

/** `POST /v1/versions/{ss58}/{folder_hash}/{file_id}/restore` body. */
export const RestoreVersionBody = Type.Object({
  version_id: Type.Integer({ minimum: 1 }),
  base_revision_id: Type.Union([Bytes32, Type.Null()], {
    description: "the current revision (as an upload's base_revision_id); null to restore a deleted file",
  }),
});

/** `POST /v1/versions/{ss58}/{folder_hash}/{file_id}/restore` answer: the new current revision. */
export const RestoreVersionResult = Type.Object({
  version_id: Type.Integer(),
  upload_id: Type.String(),
  revision_id: Bytes32,
  revision_seq: Type.Integer({ minimum: 1 }),
  size_bytes: Type.Integer({ minimum: 0, description: "plaintext bytes" }),
  created_at: UnixSeconds,
  updated_at: UnixSeconds,
});
