/**
 * @module wire/schemas
 * The contract of the HTTP API, described once (spec §2, §4; complement §1, §4, §5): TypeBox
 * schemas of every route's path parameters, query, headers, JSON bodies and responses. The
 * controllers give them to Elysia, which validates requests with them (failures become the
 * spec's error codes through `validationFailure` in `src/http/contract.ts`) and builds the
 * OpenAPI document from them; `src/wire/types.ts` derives the TypeScript types (`Static<>`)
 * that the server and the client library share.
 *
 * Conventions: byte arrays are JSON arrays of integers; times are Unix seconds; sizes bytes.
 * A schema's `x-error-code` names the catalogue code a failing value gets (default: 400
 * `invalid_parameter` for path and query parameters, `invalid_manifest` for bodies).
 * Schemas check shapes; the services check rules (signatures, cross-field rules, layouts).
 */
import { FormatRegistry, Type } from "@sinclair/typebox";
import { t } from "elysia";
import { isSs58 } from "../auth/ss58.ts";
import type { ErrorCode } from "../errors/errors.ts";
import { MAX_ATTRIBUTES_BYTES } from "../manifest/manifest.ts";

/** The schema key naming the error code of a failing value. */
export const ERROR_CODE_KEY = "x-error-code";

/** Schema options that give a failing value the error `code`. */
function failsWith(code: ErrorCode): { [ERROR_CODE_KEY]: ErrorCode } {
  return { [ERROR_CODE_KEY]: code };
}

FormatRegistry.Set("ss58", isSs58);

// ---------------------------------------------------------------------------------------------
// Shared pieces

/** An SS58 address in a path (spec §2.1): at most 256 bytes, base58 with a valid checksum. */
const AddressParam = t.String({
  format: "ss58",
  minLength: 1,
  maxLength: 256,
  description: "SS58 address of the owner",
  ...failsWith("invalid_user_id"),
});
/** `folder_hash`: first 16 hex characters of SHA-256(label) (spec §2.1). */
const FolderHash = t.String({
  pattern: "^[0-9a-f]{16}$",
  description: "16 lowercase hex characters: the first 8 bytes of SHA-256(label)",
});
/** `file_id`: the 64 hex characters of `path_hash`. */
const FileId = t.String({
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
 * percent-decoded, such as `%ff`) names no session: 404 `not_found`, as any unknown id (spec
 * §4.5–§4.8 list 404 for these paths, not 400).
 */
const SessionId = t.String({
  minLength: 1,
  description: "session_id from POST /upload/session",
  ...failsWith("not_found"),
});
/** A u32 in decimal, no sign or leading zeros (spec §4.5 `chunk_index`). */
const ChunkIndex = Type.Integer({
  minimum: 0,
  maximum: 0xffffffff,
  description: "zero-based chunk index, decimal u32 without sign or leading zeros",
  ...failsWith("invalid_manifest"),
});

const byte = Type.Integer({ minimum: 0, maximum: 255 });
/** 32 bytes as integers. */
const Bytes32 = t.Array(byte, { minItems: 32, maxItems: 32, description: "32 bytes as integers" });
/** Bytes as integers. */
const ByteArray = t.Array(byte, { description: "bytes as integers" });
/** esync extension: a file's opaque, client-encrypted attributes (mode, mtime, symlink); README "File attributes". */
const Attributes = t.Array(byte, {
  minItems: 1,
  maxItems: MAX_ATTRIBUTES_BYTES,
  description: "esync extension: opaque client-encrypted attributes, stored and returned unchanged",
});
const UnixSeconds = Type.Integer({ description: "Unix seconds" });
const NullableString = t.Union([t.String(), t.Null()]);

/** A non-negative integer query parameter; decimal digits only (complement §4). */
function uintQuery(description: string, extra: { default?: number; maximum?: number } = {}) {
  const maximum = extra.maximum ?? Number.MAX_SAFE_INTEGER;
  return t.Optional(Type.Integer({ minimum: 0, description, ...extra, maximum }));
}

// ---------------------------------------------------------------------------------------------
// Envelopes (spec §4, §7; complement §1)

/** `{"Error": {"error", "message"}}` */
export const ErrorEnvelope = t.Object({ Error: t.Object({ error: t.String(), message: t.String() }) });
/** `{"Conflict": {...}}`: a 409 from upload or finalize (complement §1). */
export const ConflictEnvelope = t.Object({
  Conflict: t.Object({
    error: t.String(),
    message: t.String(),
    current_revision_id: t.Union([Bytes32, t.Null()]),
    current_revision_seq: Type.Integer({ minimum: 0 }),
  }),
});

/** A quota refusal (402), flat on every route (extensions §0.2, §1.3). */
export const FlatError = t.Object({
  error: t.String(),
  message: t.String(),
  balance_cents: t.Optional(Type.Integer()),
  required_cents: t.Optional(Type.Integer()),
  frozen_until: t.Optional(t.String({ description: "RFC 3339 end of a frozen drive's grace window" })),
  reason: t.Optional(t.String({ description: "410 of a used-up file share link: download_limit" })),
});

/** `{"Success": schema}` */
export function successOf<S extends ReturnType<typeof t.Object>>(schema: S) {
  return t.Object({ Success: schema });
}

// ---------------------------------------------------------------------------------------------
// Bodies of responses

/** A registered folder (spec §2.2). */
export const RemoteFolderInfo = t.Object({
  label: t.String(),
  folder_hash: FolderHash,
  file_count: Type.Integer({ minimum: 0 }),
  total_bytes: Type.Integer({ minimum: 0, description: "plaintext bytes" }),
  created_at: UnixSeconds,
  updated_at: UnixSeconds,
  device_name: t.String(),
  member_count: t.Optional(
    Type.Integer({ minimum: 1, description: "whole-drive members, owner not counted; absent when 0" }),
  ),
});

/** `GET /list_folders/{base_address}` (spec §4.2). */
export const ListFoldersResult = t.Object({ base_address: t.String(), folders: t.Array(RemoteFolderInfo) });
/** `POST /register_folder` (spec §4.1). */
export const RegisterFolderResult = t.Object({ status: t.Literal("registered") });
/** `DELETE /unregister_folder` (spec §4.3). */
export const UnregisterFolderResult = t.Object({
  status: t.Literal("unregistered"),
  files_deleted: Type.Integer({ minimum: 0 }),
});

/** A file of `/get_state` and `/browse` (spec §2.5 without folder fields; complement §5). */
export const RemoteFileEntry = t.Object({
  path_hash: Bytes32,
  salted_hash: Bytes32,
  size_bytes: Type.Integer({ minimum: 0, description: "plaintext bytes" }),
  revision_seq: Type.Integer({ minimum: 0 }),
  revision_id: Bytes32,
  encrypted_path: ByteArray,
  file_name: NullableString,
  relative_path: NullableString,
  store_hash: NullableString,
  arion_hash: t.Union([t.String(), t.Null()], {
    description: "the product's name of store_hash (extensions §1.7): the same value",
  }),
  chunk_hashes: t.Union([t.Array(t.String()), t.Null()]),
  created_at: UnixSeconds,
  updated_at: UnixSeconds,
  uploaded_by: t.Optional(
    t.String({
      description:
        "SS58 address of the account that wrote the current revision; absent on rows written before attribution",
    }),
  ),
  attributes: t.Optional(Attributes),
});

/** Fields shared by paged listings. */
const PageFields = {
  total_count: Type.Integer({ minimum: 0 }),
  has_more: t.Boolean(),
  offset: Type.Integer({ minimum: 0 }),
  limit: Type.Integer({ minimum: 1 }),
};
/** Fields shared by paged listings. */
export const Page = t.Object(PageFields);

/** A search result (spec §2.5): a file entry plus its folder. */
export const SearchFileHit = t.Object({
  ...RemoteFileEntry.properties,
  folder_hash: FolderHash,
  folder_label: t.String({ description: '"" when the folder is not registered' }),
});

/** `GET /get_state/{ss58}/{folder_hash}` (complement §5). */
export const StateResult = t.Object({
  ss58_address: t.String(),
  folder_hash: FolderHash,
  files: t.Array(RemoteFileEntry),
  ...PageFields,
});

/** `GET /search_files/{ss58}` (spec §4.9). */
export const SearchResult = t.Object({
  ss58_address: t.String(),
  files: t.Array(SearchFileHit),
  ...PageFields,
});

/** A subfolder of a `/browse` listing; counts are recursive. */
export const BrowseFolderEntry = t.Object({
  name: t.String(),
  file_count: Type.Integer({ minimum: 0 }),
  total_bytes: Type.Integer({ minimum: 0 }),
});

/** `GET /browse/{ss58}/{folder_hash}`: subfolders first, then files at `path`. */
export const BrowseResult = t.Object({
  ss58_address: t.String(),
  folder_hash: FolderHash,
  path: t.String(),
  folders: t.Array(BrowseFolderEntry),
  files: t.Array(RemoteFileEntry),
  ...PageFields,
});

/** `DELETE /delete/{ss58}/{folder_hash}/{file_id}` (complement §5). */
export const DeleteFileResult = t.Object({
  status: t.Literal("deleted"),
  file_id: t.String(),
  ss58_address: t.String(),
  folder_hash: FolderHash,
});

/** `POST /upload` and session finalize (spec §2.4). */
export const UploadResult = t.Object({
  upload_id: t.String(),
  timestamp: UnixSeconds,
  revision_id: Bytes32,
  created_at: UnixSeconds,
  updated_at: UnixSeconds,
});

/** `POST /upload/session` (spec §4.4). */
export const SessionCreated = t.Object({ session_id: t.String(), expires_at: UnixSeconds });

/** `GET /upload/session/{id}/status` (spec §2.3, §4.6). */
export const SessionStatus = t.Object({
  session_id: t.String(),
  state: t.Union([t.Literal("receiving"), t.Literal("finalized")]),
  total_chunks: Type.Integer({ minimum: 1 }),
  chunks_received: t.Array(Type.Integer({ minimum: 0 })),
  expires_at: UnixSeconds,
  ciphertext_hash: t.String(),
});

/** `PUT /upload/session/{id}/chunk/{index}` (spec §4.5). */
export const ChunkStored = t.Object({ chunk_index: Type.Integer({ minimum: 0 }) });

/** `DELETE /upload/session/{id}` (spec §4.8). */
export const SessionDeleted = t.Object({ deleted: t.Literal(true) });

/** `GET /health` (complement §5; no envelope). */
export const HealthInfo = t.Object({
  status: t.Literal("healthy"),
  version: t.String(),
  capabilities: t.Array(t.String()),
});

/** `GET /healthz` (extensions §2.2): the process answers; nothing is checked. */
export const Liveness = t.Object({ status: t.Literal("ok") });
/** `GET /readyz` (extensions §2.2): 200 `ready`, or 503 `not_ready` naming the failing dependency. */
export const Readiness = t.Object({
  status: t.Union([t.Literal("ready"), t.Literal("not_ready")]),
  checks: t.Record(t.String(), t.String(), { description: "dependency → ok or what failed" }),
});

// ---------------------------------------------------------------------------------------------
// Bodies of requests (every failing field: 400 invalid_manifest)

/** The signed manifest (spec §2.3, complement §1); its signature and rules are checked by the service. */
export const Manifest = t.Object({
  ss58_address: t.Optional(t.String({ description: "owner (alias user_id)" })),
  user_id: t.Optional(t.String({ description: "alias of ss58_address" })),
  folder_hash: FolderHash,
  ciphertext_hash: t.String({ pattern: "^[0-9a-f]{64}$", description: "BLAKE3 of the whole ciphertext" }),
  size_bytes: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: "plaintext bytes" }),
  timestamp: Type.Integer({ description: "client Unix seconds" }),
  signature: t.Array(byte, { minItems: 64, maxItems: 64, description: "Ed25519 over the ToS sentence" }),
  signing_key: Bytes32,
  path_hash: Bytes32,
  salted_hash: Bytes32,
  revision_seq: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
  base_revision_id: t.Optional(t.Union([Bytes32, t.Null()])),
  encrypted_path: t.Optional(t.Union([ByteArray, t.Null()])),
  file_name: t.Optional(NullableString),
  relative_path: t.Optional(NullableString),
  source: t.Optional(NullableString),
  attributes: t.Optional(t.Union([Attributes, t.Null()])),
});

/** Longest folder label and device name, characters (UTF-16 code units). */
const MAX_LABEL_CHARS = 1024;

const BodyAddress = t.String({ format: "ss58", description: "SS58 address of the owner" });

/** `POST /register_folder` (spec §4.1): `ss58_address` or its alias `user_id` is required. */
export const RegisterFolderBody = t.Object({
  ss58_address: t.Optional(BodyAddress),
  user_id: t.Optional(BodyAddress),
  folder_hash: FolderHash,
  label: t.String({ minLength: 1, maxLength: MAX_LABEL_CHARS, pattern: NO_NUL }),
  device_name: t.Optional(t.Union([t.String({ maxLength: MAX_LABEL_CHARS, pattern: NO_NUL }), t.Null()])),
});

/** `DELETE /unregister_folder` (spec §4.3): `ss58_address` or its alias `user_id` is required. */
export const UnregisterFolderBody = t.Object({
  ss58_address: t.Optional(BodyAddress),
  user_id: t.Optional(BodyAddress),
  folder_hash: FolderHash,
});

/** `POST /upload/session` (spec §4.4); the layout rules are the session engine's. */
export const CreateSessionBody = t.Object({
  manifest: Manifest,
  chunk_count: Type.Integer({ minimum: 1, maximum: 0xffffffff }),
  chunk_size: Type.Integer({ minimum: 1, description: "bytes" }),
  ciphertext_size: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: "bytes" }),
});

// ---------------------------------------------------------------------------------------------
// Path parameters

/** `{base_address}` */
export const ListFoldersParams = t.Object({ base_address: AddressParam });
/** `{ss58}/{folder_hash}` */
export const FolderParams = t.Object({ ss58: AddressParam, folder_hash: FolderHash });
/** `{ss58}/{folder_hash}/{file_id}` */
export const FileParams = t.Object({ ss58: AddressParam, folder_hash: FolderHash, file_id: FileId });
/** `{ss58}` */
export const OwnerParams = t.Object({ ss58: AddressParam });
/** `{session_id}` */
export const SessionParams = t.Object({ session_id: SessionId });
/** `{session_id}/chunk/{chunk_index}` */
export const ChunkParams = t.Object({ session_id: SessionId, chunk_index: ChunkIndex });

// ---------------------------------------------------------------------------------------------
// Queries (complement §4: malformed numbers are 400 invalid_parameter)

/** `/get_state` page size: default and cap (complement §5). */
export const STATE_DEFAULT_LIMIT = 1000;
export const STATE_MAX_LIMIT = 5000;
/** `/search_files` page size: default and cap (spec §4.9). */
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

/** `GET /get_state/{ss58}/{folder_hash}` (complement §5). */
export const StateQuery = t.Object(pageQuery(STATE_DEFAULT_LIMIT, STATE_MAX_LIMIT, 999_999_999_999_999));

/** Columns results can be sorted by (spec §4.9), in the spec's order. */
export const SORT_COLUMNS = ["file_name", "size_bytes", "created_at", "updated_at"] as const;
/** A column results can be sorted by. */
export type SortColumn = (typeof SORT_COLUMNS)[number];
/** Search sort keys: the columns plus `uploaded_by` (extensions §1.7). */
export const SEARCH_SORT_KEYS = [...SORT_COLUMNS, "uploaded_by"] as const;
/** Browse sort keys: the search keys plus `extension` (extensions §1.7). */
export const BROWSE_SORT_KEYS = [...SEARCH_SORT_KEYS, "extension"] as const;

function sortQuery(keys: readonly string[]) {
  return {
    sort_by: t.Optional(
      t.String({
        default: "created_at",
        description: `${keys.join(" | ")} (anything else: created_at)`,
      }),
    ),
    sort_order: t.Optional(
      t.String({ default: "desc", description: "asc | desc, case-insensitive (anything else: desc)" }),
    ),
  };
}

/** `uploaded_by` filter (extensions §1.7). */
const UploadedBy = t.Optional(
  t.String({
    description:
      "only files whose current revision this account wrote; `_none` = files without a recorded uploader",
  }),
);

const Q = t.Optional(
  t.String({
    // Code points, not UTF-16 units: a surrogate pair counts once. The alternatives are
    // exclusive, so a failing match does not backtrack.
    pattern: `^(?:[\\uD800-\\uDBFF][\\uDC00-\\uDFFF]|[\\uD800-\\uDBFF](?![\\uDC00-\\uDFFF])|[^\\uD800-\\uDBFF]){0,${MAX_Q_CHARS}}$`,
    description: `case-insensitive substring of file_name (or relative_path when file_name is null); at most ${MAX_Q_CHARS} characters`,
    ...failsWith("q_too_long"),
  }),
);

const FileType = t.Optional(
  t.String({
    description:
      "category image|video|audio|document|pdf|archive|code or an extension like .png; several comma-separated",
    ...failsWith("invalid_file_type"),
  }),
);

/** `GET /search_files/{ss58}` (spec §4.9, complement §4); bounds are inclusive. */
export const SearchQuery = t.Object({
  q: Q,
  file_type: FileType,
  size_min: uintQuery("smallest size_bytes"),
  size_max: uintQuery("largest size_bytes"),
  date_from: uintQuery("earliest created_at, Unix seconds"),
  date_to: uintQuery("latest created_at, Unix seconds"),
  uploaded_by: UploadedBy,
  folder_hash: t.Optional(
    t.String({ pattern: "^[0-9a-f]{16}$", description: "only files of this folder (16 hex)" }),
  ),
  ...pageQuery(SEARCH_DEFAULT_LIMIT, SEARCH_MAX_LIMIT),
  ...sortQuery(SEARCH_SORT_KEYS),
});

/** `GET /browse/{ss58}/{folder_hash}`: one directory, with the search filters it shares. */
export const BrowseQuery = t.Object({
  path: t.Optional(
    t.String({
      pattern: "^(?![\\s\\S]*(\\.\\.|\\\\))",
      default: "",
      description: "directory inside the folder (no '..' or '\\'); absent = the root",
    }),
  ),
  q: Q,
  file_type: FileType,
  uploaded_by: UploadedBy,
  folder_hash: t.Optional(
    t.String({
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
export const ChunkHeaders = t.Object({
  "content-length": t.Optional(
    t.String({
      pattern: "^\\s*\\d{1,16}\\s*$",
      description: "bytes of the chunk",
      ...failsWith("invalid_manifest"),
    }),
  ),
});

/** Headers of `POST /upload`. */
export const UploadHeaders = t.Object({
  "content-type": t.String({
    pattern:
      "^[Mm][Uu][Ll][Tt][Ii][Pp][Aa][Rr][Tt]/[Ff][Oo][Rr][Mm]-[Dd][Aa][Tt][Aa]\\s*;.*[Bb][Oo][Uu][Nn][Dd][Aa][Rr][Yy]=",
    description: "multipart/form-data with a boundary",
    ...failsWith("invalid_manifest"),
  }),
});

/** Headers of `GET /download` (RFC 9110 single range). */
export const DownloadHeaders = t.Object({
  range: t.Optional(
    t.String({ description: "bytes=a-b, bytes=a- or bytes=-n; malformed or multi-range values are ignored" }),
  ),
  "if-range": t.Optional(t.String({ description: "an ETag: a stale one gets the whole current file (200)" })),
  "if-none-match": t.Optional(
    t.String({ description: "ETags or *: 304 when one names the current revision" }),
  ),
  "if-match": t.Optional(t.String({ description: "ETags or *: 412 precondition_failed when none names it" })),
});

/** Headers of `GET /search_files/{ss58}` (spec §5.5). */
export const SearchHeaders = t.Object({
  "x-billing-bypass": t.Optional(t.String({ description: "accepted and ignored (spec §5.5)" })),
});

// ---------------------------------------------------------------------------------------------
// Product extensions (extensions.md §1, §2): batch operations, folder entries, quota, summaries

/** Most ids of one `POST /delete_files` (extensions §1.1, §8.2). */
export const MAX_BATCH_DELETE = 1000;
/** Most entries of one `POST /rename_files` (extensions §9 item 6). */
export const MAX_BATCH_RENAME = 1000;
/** Most entries of one folder-entry or `/register_relative_paths` call (extensions §8.2). */
export const MAX_PATH_BATCH = 500;

/** `POST /delete_files` (extensions §1.1); ids that are not 64 hex fail one by one, not the request. */
export const DeleteFilesBody = t.Object({
  ss58_address: t.Optional(BodyAddress),
  user_id: t.Optional(BodyAddress),
  folder_hash: FolderHash,
  file_ids: t.Array(t.String({ description: "path_hash as 64 lowercase hex characters" }), {
    minItems: 1,
    description: `1 to ${MAX_BATCH_DELETE} ids (more: 400 batch_too_large)`,
  }),
  quiet: t.Optional(t.Boolean({ default: false, description: "leave successful entries out of the answer" })),
});

/** `POST /delete_files` answer (extensions §1.1): 200 also when some ids fail. */
export const DeleteFilesResult = t.Object({
  deleted: t.Optional(
    t.Array(
      t.Object({
        file_id: t.String(),
        status: t.Union([t.Literal("deleted"), t.Literal("already_deleted")]),
      }),
      { description: "absent when quiet" },
    ),
  ),
  errors: t.Array(
    t.Object({
      file_id: t.String(),
      error: t.Union([t.Literal("invalid_file_id"), t.Literal("database_error")]),
    }),
  ),
  files_deleted: Type.Integer({ minimum: 0 }),
});

/** One entry of `POST /rename_files` (extensions §1.2). */
export const SingleRename = t.Object({
  old_path_hash: Bytes32,
  new_path_hash: Bytes32,
  new_encrypted_path: t.Optional(
    t.Union([t.Array(byte, { maxItems: 8192 }), t.Null()], { description: "default empty" }),
  ),
  new_file_name: t.Optional(t.Union([t.String({ maxLength: 4096, pattern: NO_NUL }), t.Null()])),
  new_relative_path: t.Optional(t.Union([t.String({ maxLength: 4096 }), t.Null()])),
  base_revision_id: Bytes32,
});

/** `POST /rename_files` (extensions §1.2): one Ed25519 signature over the sorted hash pairs. */
export const RenameFilesBody = t.Object({
  ss58_address: t.Optional(BodyAddress),
  user_id: t.Optional(BodyAddress),
  folder_hash: FolderHash,
  renames: t.Array(SingleRename, {
    minItems: 1,
    description: `1 to ${MAX_BATCH_RENAME} entries (more: 400 batch_too_large)`,
  }),
  signature: t.Array(byte, {
    minItems: 64,
    maxItems: 64,
    description: "Ed25519 over the rename declaration",
  }),
  signing_key: Bytes32,
});

/** `POST /rename_files` answer (extensions §1.2): 200 also when some entries fail. */
export const RenameFilesResult = t.Object({
  status: t.Literal("ok"),
  renamed_count: Type.Integer({ minimum: 0 }),
  successes: t.Array(
    t.Object({
      old_path_hash: Bytes32,
      new_path_hash: Bytes32,
      new_revision_id: Bytes32,
      new_revision_seq: Type.Integer({ minimum: 0 }),
    }),
  ),
  failures: t.Array(
    t.Object({
      old_path_hash: Bytes32,
      reason: t.Union([
        t.Literal("not_found"),
        t.Literal("target_exists"),
        t.Literal("revision_mismatch"),
        t.Literal("database_error"),
      ]),
    }),
  ),
});

/**
 * Largest folder-entry body, bytes: 500 paths of up to 4096 characters fit (extensions §1.5 bounds
 * the paths, not the body).
 */
export const MAX_FOLDER_ENTRIES_BODY_BYTES = 4 * 1024 * 1024;

/** Register and unregister folder entries (extensions §1.5, §9 item 1). */
export const FolderEntriesBody = t.Object({
  ss58_address: t.Optional(BodyAddress),
  user_id: t.Optional(BodyAddress),
  folder_hash: FolderHash,
  relative_paths: t.Array(t.String(), {
    description: `directory paths, validated like upload paths (no leading or trailing '/', no empty, '.' or '..' segment, no backslash or control character) and in NFC; at most ${MAX_PATH_BATCH} (more: 400 batch_too_large); [] is a no-op`,
  }),
});
/** `POST /register_folder_entries`: `count` = the named entries now present. */
export const RegisterFolderEntriesResult = t.Object({
  status: t.Literal("registered"),
  count: Type.Integer({ minimum: 0 }),
});
/** `DELETE /unregister_folder_entries`: `count` = the entries removed. */
export const UnregisterFolderEntriesResult = t.Object({
  status: t.Literal("unregistered"),
  count: Type.Integer({ minimum: 0 }),
});
/** `GET /list_folder_entries/{ss58}/{folder_hash}` (flat, no envelope). */
export const ListFolderEntriesResult = t.Object({
  relative_paths: t.Array(t.String()),
  next_after: t.Optional(
    t.Union([t.String(), t.Null()], {
      description: "only with `limit`: the `after` of the next page, null on the last page",
    }),
  ),
});

/** Largest `limit` of `GET /list_folder_entries` (docs/operations.md, "Big answers and batches"). */
export const MAX_FOLDER_ENTRIES_PAGE = 1000;

/**
 * Optional keyset paging of `GET /list_folder_entries`: without `limit` the answer is every entry
 * (as the products' clients expect), with it one page.
 */
export const ListFolderEntriesQuery = t.Object({
  limit: t.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_FOLDER_ENTRIES_PAGE,
      description: `page size, 1 to ${MAX_FOLDER_ENTRIES_PAGE}; absent: every entry in one answer`,
    }),
  ),
  after: t.Optional(
    t.String({ maxLength: 4096, description: "the `next_after` of the previous page (only with `limit`)" }),
  ),
});

/** Largest `/register_relative_paths` body, bytes (extensions §1.6). */
export const MAX_RELATIVE_PATHS_BODY_BYTES = 4 * 1024 * 1024;

/** `POST /register_relative_paths/{ss58}/{folder_hash}` (extensions §1.6). */
export const RegisterRelativePathsBody = t.Object({
  entries: t.Array(
    t.Object({
      path_hash: t.String({ pattern: "^[0-9a-fA-F]{64}$", description: "the row's path_hash as 64 hex" }),
      relative_path: t.String({ description: "plaintext path, validated like upload paths" }),
    }),
    { description: `at most ${MAX_PATH_BATCH} entries (more: 400 batch_too_large); body at most 4 MiB` },
  ),
});
/** `POST /register_relative_paths` answer: 200 also when every entry fails. */
export const RegisterRelativePathsResult = t.Object({
  updated: Type.Integer({ minimum: 0 }),
  skipped: Type.Integer({ minimum: 0 }),
  errors: t.Array(
    t.Object({
      path_hash: t.String(),
      reason: t.Union([
        t.Literal("invalid_path"),
        t.Literal("not_found"),
        t.Literal("path_mismatch"),
        t.Literal("database_error"),
      ]),
    }),
  ),
});

/** `GET /v1/capabilities` (extensions §2.1, v1 family: the object itself). A missing key means false. */
export const Capabilities = t.Object({
  shares: t.Boolean(),
  folder_shares: t.Boolean(),
  folder_share_revoke_by_hash: t.Boolean(),
  share_owner_wrap: t.Boolean(),
  folder_grants: t.Boolean(),
  folder_grant_writes: t.Boolean(),
  member_folder_shares: t.Boolean(),
  upload_folder_shares: t.Boolean(),
  share_max_downloads: t.Boolean({ description: "esync: max_downloads on file shares" }),
  share_access_log: t.Boolean({ description: "esync: GET /v1/shares/{token}/accesses" }),
});

/** `POST /can_upload` (extensions §1.3). */
export const CanUploadBody = t.Object({
  ss58_address: t.Optional(BodyAddress),
  user_id: t.Optional(BodyAddress),
  folder_hash: t.String({
    pattern: "^([0-9a-f]{16})?$",
    description: 'the drive\'s 16 hex characters, or "" for the account itself',
  }),
  size_bytes: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: "plaintext bytes" }),
});
/** `POST /can_upload` answer (flat, advisory; 200 also when the answer is no). */
export const CanUploadResult = t.Object({
  result: t.Boolean(),
  error: t.Union([t.String(), t.Null()]),
});

/** Query of the three summaries (extensions §1.4): `folder_hash` limits a summary to one folder. */
export const SummaryQuery = t.Object({
  folder_hash: t.Optional(
    t.String({ pattern: "^[0-9a-f]{16}$", description: "limit the summary to this folder (16 hex)" }),
  ),
});
const U64 = Type.Integer({ minimum: 0 });
/** `GET /get_user_summary/{ss58}` (extensions §1.4). */
export const UserSummary = t.Object({
  ss58_address: t.String(),
  total_bytes: Type.Integer({ minimum: 0, description: "plaintext bytes" }),
  file_count: U64,
  created_at: Type.Integer({ description: "Unix seconds of the first file write; 0 without files" }),
  updated_at: Type.Integer({ description: "Unix seconds of the last change; 0 without files" }),
});
/** The file-type buckets of `/get_file_type_summary`, in the spec's order. */
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
export const FileTypeSummary = t.Object(bucketFields(FILE_TYPE_BUCKETS));
/** `GET /get_source_summary/{ss58}`: counts and plaintext bytes per client family. */
export const SourceSummary = t.Object(bucketFields(SOURCE_BUCKETS));

// ---------------------------------------------------------------------------------------------
// Shared drives (docs/drives.md): v1 family, bare bodies, flat errors, RFC 3339 times.

/** A v1 error body: `{"error", "message"}` without a wrapper (402: with `frozen_until` when known). */
export const V1Error = t.Object({
  error: t.String(),
  message: t.String(),
  frozen_until: t.Optional(t.String()),
});

/** A whole-drive role. */
const DriveRole = t.Union([t.Literal("reader"), t.Literal("writer"), t.Literal("manager")]);
/** A folder grant's role. */
const GrantRoleSchema = t.Union([t.Literal("reader"), t.Literal("writer")]);
/** An RFC 3339 time. */
const Rfc3339 = t.String({ description: "RFC 3339 UTC time" });
/** A v1 body field that, when malformed, is 400 `bad_request`. */
const v1Field = <S extends TSchemaLike>(s: S) => t.Optional(t.Union([s, t.Null()], failsWith("bad_request")));
type TSchemaLike = ReturnType<typeof t.String> | ReturnType<typeof t.Integer>;

/** `POST /v1/drive-invites`. `null` and an absent field mean the same. */
export const MintInviteBody = t.Object({
  folder_hash: t.String({ ...FolderHash, ...failsWith("bad_request") }),
  role: v1Field(t.String({ maxLength: 64 })),
  expires_in_secs: v1Field(t.Integer({ minimum: 0 })),
  max_uses: v1Field(t.Integer({ minimum: 0, maximum: 4294967295 })),
  owner_ss58: v1Field(t.String({ format: "ss58", maxLength: 256 })),
  path_prefix: v1Field(t.String({ maxLength: 4096 })),
});

/** The answer of `POST /v1/drive-invites`: the token is shown only here. */
export const InviteMinted = t.Object({
  invite_token: t.String(),
  invite_id: t.String({ pattern: "^[0-9a-f]{64}$" }),
  path_prefix: t.Optional(t.String()),
});

/** `?owner=` of the drive management routes: the drive owner when the caller is not the owner. */
export const DriveOwnerQuery = t.Object({
  owner: t.Optional(t.String({ format: "ss58", maxLength: 256, ...failsWith("bad_request") })),
});

/** `{folder_hash}` of the drive management routes. */
export const DriveParams = t.Object({
  folder_hash: t.String({ ...FolderHash, ...failsWith("bad_request") }),
});
/** `{folder_hash}/invites/{invite_id}` (the id is checked by the route: its answers differ). */
export const DriveInviteParams = t.Object({
  folder_hash: t.String({ ...FolderHash, ...failsWith("bad_request") }),
  invite_id: t.String({ maxLength: 256 }),
});
/** `{folder_hash}/members/{member_ss58}`. */
export const DriveMemberParams = t.Object({
  folder_hash: t.String({ ...FolderHash, ...failsWith("bad_request") }),
  member_ss58: t.String({ maxLength: 256 }),
});
/** `{token}` of the invite routes (an unknown or malformed token is 404). */
export const InviteTokenParams = t.Object({ token: t.String({ maxLength: 256 }) });

/** `PUT /v1/drives/{folder_hash}/invites/{invite_id}/sealed-token`. */
export const SealedTokenBody = t.Object({
  sealed_token: t.String({ minLength: 1, maxLength: 65536, ...failsWith("bad_request") }),
});

/** A row of `GET /v1/drives/{folder_hash}/invites`. */
export const DriveInvite = t.Object({
  invite_id: t.String(),
  sealed_token: t.Optional(t.String()),
  role: t.String(),
  minted_by: t.String(),
  expires_at: Rfc3339,
  max_uses: t.Integer({ minimum: 0 }),
  use_count: t.Integer({ minimum: 0 }),
  revoked: t.Boolean(),
  valid: t.Boolean(),
  created_at: Rfc3339,
  path_prefix: t.Optional(t.String()),
});
/** `GET /v1/drives/{folder_hash}/invites`: newest first, at most 500 rows. */
export const DriveInvites = t.Object({ invites: t.Array(DriveInvite), truncated: t.Boolean() });

/** `GET /v1/drive-invites/{token}/meta` (anonymous preview). */
export const InviteMeta = t.Object({
  owner_ss58: t.String(),
  folder_hash: t.String(),
  display_label: t.String(),
  expires_at: Rfc3339,
  role: t.String(),
  valid: t.Boolean(),
  path_prefix: t.Optional(t.String()),
});

/** `POST /v1/drive-invites/{token}/accept`. */
export const AcceptInviteBody = t.Object({
  grant_blob: t.String({ maxLength: 65536, ...failsWith("bad_request") }),
  path_prefix: v1Field(t.String({ maxLength: 4096 })),
});
/** The answer of an accept. */
export const AcceptResult = t.Object({
  owner_ss58: t.String(),
  folder_hash: t.String(),
  role: t.String(),
  already_owner: t.Optional(t.Literal(true)),
  path_prefix: t.Optional(t.String()),
});

/** A whole drive in `GET /v1/drive-memberships`. */
export const Membership = t.Object({
  owner_ss58: t.String(),
  folder_hash: t.String(),
  role: DriveRole,
  grant_blob: t.String(),
  display_label: t.String(),
  created_at: Rfc3339,
  member_count: t.Optional(t.Integer({ minimum: 1 })),
  frozen: t.Optional(t.Literal(true)),
  frozen_until: t.Optional(Rfc3339),
});
/** A folder grant in `GET /v1/drive-memberships`. */
export const FolderGrant = t.Object({
  owner_ss58: t.String(),
  folder_hash: t.String(),
  display_label: t.String(),
  path_prefix: t.String(),
  role: GrantRoleSchema,
  grant_blob: t.String(),
  created_at: Rfc3339,
  frozen: t.Optional(t.Literal(true)),
  frozen_until: t.Optional(Rfc3339),
});
/** `GET /v1/drive-memberships`. */
export const Memberships = t.Object({
  memberships: t.Array(Membership),
  folder_grants: t.Array(FolderGrant),
});

/** A member row of `GET /v1/drives/{folder_hash}/members` and of a role change. */
export const DriveMember = t.Object({ member_ss58: t.String(), role: DriveRole, created_at: Rfc3339 });
/** A folder holder row of `GET /v1/drives/{folder_hash}/members`. */
export const DriveGrantHolder = t.Object({
  member_ss58: t.String(),
  path_prefix: t.String(),
  role: GrantRoleSchema,
  created_at: Rfc3339,
});
/** `GET /v1/drives/{folder_hash}/members`. */
export const DriveMembers = t.Object({
  members: t.Array(DriveMember),
  folder_grants: t.Array(DriveGrantHolder),
});

/** `PATCH /v1/drives/{folder_hash}/members/{member_ss58}`. */
export const ChangeRoleBody = t.Object({ role: t.String({ maxLength: 64, ...failsWith("bad_request") }) });

/** `PUT /v1/account/invite-key`. */
export const InviteKeyBody = t.Object({ pubkey: t.String({ maxLength: 256, ...failsWith("bad_request") }) });
/** The answer of `PUT /v1/account/invite-key`. */
export const InviteKeyResult = t.Object({ status: t.Literal("ok") });

// Sharing (docs/sharing.md): the v1 family, so successes are the bodies themselves and errors
// the flat `{"error", "message"}`.

/** An RFC 3339 time, or null for "never". */
const Rfc3339OrNever = t.Union([Rfc3339, t.Null()], { description: "RFC 3339 time, or null = never" });
/** Standard base64 with padding. */
const Base64 = t.String({
  pattern: "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$",
  description: "standard base64 with padding",
});
/** How long a share lives from the request on; omitted = `24h`. */
export const SHARE_TTLS = ["24h", "7d", "30d", "never"] as const;
const Ttl = t.Union(
  SHARE_TTLS.map((v) => t.Literal(v)),
  { description: "24h (default), 7d, 30d or never" },
);
/** A share or folder-share token in a path: one base64url segment. */
export const SHARE_TOKEN_PATTERN = "^[A-Za-z0-9_-]{1,128}$";
/** A folder share's token hash: BLAKE3 of the token, 64 lowercase hex. */
const TokenHash = t.String({
  pattern: "^[0-9a-f]{64}$",
  description: "BLAKE3 of the token, 64 lowercase hex",
});
/** Bytes, as a JSON integer. */
const Size = Type.Integer({ minimum: 0, description: "bytes" });

/** Path parameters of the routes addressing one share by its token. */
export const ShareTokenParams = t.Object({ token: t.String({ description: "the share token" }) });
/** Path parameters of a chunk PUT. */
export const ShareChunkParams = t.Object({
  token: t.String({ description: "the share token" }),
  index: Type.Integer({ minimum: 0, maximum: 2 ** 32 - 1, description: "0-based chunk index" }),
});
/** Path parameters of the by-hash folder-share routes. */
export const TokenHashParams = t.Object({ token_hash: TokenHash });

/** Largest `max_downloads` of a file share. */
export const MAX_SHARE_DOWNLOADS = 1_000_000;

/**
 * The metadata of a file share: the JSON `metadata` part of `POST /v1/shares` and the body of
 * `POST /v1/shares/init` (with `total_chunks`).
 */
export const ShareMetadata = t.Object({
  ciphertext_size: Size,
  plaintext_size: Size,
  filename_ct: Base64,
  filename_nonce: Base64,
  filename: t.String({
    minLength: 1,
    maxLength: 1024,
    description: "plaintext name, one path segment (owner only)",
  }),
  mime_type: t.String({ minLength: 1, maxLength: 255, pattern: "^[\\x21-\\x7e]+$" }),
  ttl: t.Optional(Ttl),
  total_chunks: t.Optional(Type.Integer({ minimum: 1, maximum: 2 ** 32 - 1 })),
  max_downloads: t.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_SHARE_DOWNLOADS,
      description: "complete downloads the link allows (capability share_max_downloads)",
    }),
  ),
  access_log: t.Optional(
    t.Boolean({ description: "keep an access log for the owner (capability share_access_log)" }),
  ),
});

/** `POST /v1/shares`, `/v1/shares/init`, `/complete`, `PATCH /v1/shares/{token}`: 201/200. */
export const ShareMinted = t.Object({ share_token: t.String(), expires_at: Rfc3339OrNever });
/** `PUT /v1/shares/{token}/chunks/{index}`: 200. */
export const ShareChunkStored = t.Object({ chunk_index: Type.Integer({ minimum: 0 }) });
/** One element of `GET /v1/shares`. */
export const ShareSummary = t.Object({
  share_token: t.String(),
  filename: t.String(),
  plaintext_size: Size,
  ciphertext_size: Size,
  mime_type: t.String(),
  created_at: Rfc3339,
  expires_at: Rfc3339OrNever,
  owner_wrap: t.Union([t.String(), t.Null()]),
  max_downloads: t.Optional(Type.Integer({ minimum: 1, description: "present when the link has a limit" })),
  download_count: t.Optional(
    Type.Integer({
      minimum: 0,
      description: "complete downloads so far; present with max_downloads or access_log",
    }),
  ),
  access_log: t.Optional(t.Boolean({ description: "present (true) when the share keeps an access log" })),
});
/** One row of a file share's access log (docs/sharing.md, "Access log"). */
export const ShareAccess = t.Object({
  at: Type.Integer({ minimum: 0, description: "Unix seconds when the answer started" }),
  bytes_sent: Size,
  completed: t.Boolean({ description: "the whole blob was sent: a counted download" }),
  client_address: t.Optional(t.String({ description: "only when ESYNC_SHARE_LOG_ADDRESSES is on" })),
});
/** `GET /v1/shares/{token}/accesses`: newest first. */
export const ShareAccessList = t.Object({
  max_downloads: t.Union([Type.Integer({ minimum: 1 }), t.Null()]),
  download_count: Type.Integer({ minimum: 0 }),
  accesses: t.Array(ShareAccess),
  truncated: t.Boolean({ description: "older rows exist beyond the newest 1,000" }),
});
/** `GET /v1/shares`: a bare array. */
export const ShareList = t.Array(ShareSummary);
/** `PATCH /v1/shares/{token}` and the folder-share PATCH routes. */
export const TtlBody = t.Object({ ttl: Ttl });
/** `GET /v1/shares/{token}/meta` (anonymous). */
export const ShareMeta = t.Object({
  ciphertext_size: Size,
  plaintext_size: Size,
  filename_ct: t.String(),
  filename_nonce: t.String(),
  mime_type: t.String(),
  expires_at: Rfc3339OrNever,
});
/** Most entries of one owner-wraps PUT. */
export const MAX_OWNER_WRAPS = 64;
/** `PUT /v1/shares/owner-wraps`. */
export const FileOwnerWrapsBody = t.Object({
  wraps: t.Array(
    t.Object({
      token: t.String({ minLength: 1, maxLength: 128 }),
      wrap: t.String({ ...Base64, maxLength: 4096 }),
    }),
    { minItems: 1, maxItems: MAX_OWNER_WRAPS },
  ),
});
/** `PUT /v1/folder-shares/owner-wraps`. */
export const FolderOwnerWrapsBody = t.Object({
  wraps: t.Array(t.Object({ token_hash: TokenHash, wrap: t.String({ ...Base64, maxLength: 4096 }) }), {
    minItems: 1,
    maxItems: MAX_OWNER_WRAPS,
  }),
});
/** Both owner-wraps PUTs: rows updated. */
export const OwnerWrapsApplied = t.Object({ applied: Type.Integer({ minimum: 0 }) });

/** `POST /v1/folder-shares`. */
export const FolderShareBody = t.Object({
  folder_hash: FolderHash,
  path_prefix: t.String({ maxLength: 4096, description: 'directory to share; "" = the whole folder' }),
  display_name: t.String({ maxLength: 1024, description: "non-empty name shown to recipients" }),
  ttl: t.Optional(Ttl),
  owner_ss58: t.Optional(t.String({ maxLength: 256 })),
});
/** `PATCH` of a folder share: the new expiry. */
export const ExpiryResult = t.Object({ expires_at: Rfc3339OrNever });
/** One element of `GET /v1/folder-shares`. */
export const FolderShareSummary = t.Object({
  token_hash: t.String(),
  folder_hash: t.String(),
  path_prefix: t.String(),
  display_name: t.String(),
  created_at: Rfc3339,
  expires_at: Rfc3339OrNever,
  revoked_at: Rfc3339OrNever,
  owner_wrap: t.Union([t.String(), t.Null()]),
  owner_ss58: t.String(),
  minted_by_ss58: t.String(),
  source: t.Union([t.Literal("drive"), t.Literal("uploaded_copy")]),
});
/** `GET /v1/folder-shares`: a bare array. */
export const FolderShareList = t.Array(FolderShareSummary);
/** `GET /v1/folder-shares/{token}/meta` (anonymous). */
export const FolderShareMeta = t.Object({ display_name: t.String(), expires_at: Rfc3339OrNever });
/** Default and largest `limit` of a folder-share browse page. */
export const FOLDER_BROWSE_DEFAULT_LIMIT = 100;
export const FOLDER_BROWSE_MAX_LIMIT = 200;
/** `GET /v1/folder-shares/{token}/browse` query. Larger limits are lowered to the maximum. */
export const FolderBrowseQuery = t.Object({
  path: t.Optional(t.String({ maxLength: 4096 })),
  offset: t.Optional(Type.Integer({ minimum: 0 })),
  limit: t.Optional(Type.Integer({ minimum: 1 })),
});
/** `GET /v1/folder-shares/{token}/browse` (anonymous). */
export const FolderSharePage = t.Object({
  directories: t.Array(
    t.Object({ name: t.String(), file_count: Size, total_bytes: Size, created_at: Rfc3339OrNever }),
  ),
  files: t.Array(t.Object({ name: t.String(), path: t.String(), size_bytes: Size, uploaded_at: Rfc3339 })),
  total_count: Size,
  has_more: t.Boolean(),
  offset: Size,
  limit: Size,
});
/** `GET /v1/folder-shares/{token}/blob` query. */
export const FolderBlobQuery = t.Object({ path: t.Optional(t.String({ maxLength: 4096 })) });
