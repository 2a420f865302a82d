/**
 * @module protocol/errors
 * The one error catalogue of the service (docs/protocol.md#errors plus docs/protocol.md#manifest, #open-rules, #errors). Every failure a
 * client can see is an `AppError` carrying one of these codes; `errorResponse` in
 * `packages/server/src/http/envelope.ts` turns it into the protocol's envelope, or into the flat `{"error", "message"}`
 * body on the `/v1/` routes (docs/sharing.md).
 */

/** Every error code with its HTTP status and a default message. */
export const ERRORS = {
  invalid_manifest: { status: 400, message: "The request body or manifest is malformed or incomplete" },
  invalid_user_id: { status: 400, message: "The user address is malformed" },
  invalid_file_type: { status: 400, message: "Unknown or malformed file_type" },
  q_too_long: { status: 400, message: "q is longer than 256 characters" },
  invalid_parameter: { status: 400, message: "A query or path parameter is malformed" },
  batch_too_large: { status: 400, message: "Too many entries in one batch request" },
  bad_request: { status: 400, message: "The request is malformed" },
  stale_sequence: { status: 400, message: "revision_seq must be greater than the current revision's" },
  unauthorized: { status: 401, message: "Missing or invalid bearer token" },
  drive_quota_exceeded: { status: 402, message: "The write would exceed the account's storage allowance" },
  drive_frozen: {
    status: 402,
    message: "The drive's owner account is limited: writes are refused, reads still work",
  },
  forbidden: { status: 403, message: "The token does not grant access to this resource" },
  not_found: { status: 404, message: "Not found" },
  folder_not_found: { status: 404, message: "No such folder, or no right to share it" },
  conflict: { status: 409, message: "Conflict with the current state" },
  already_member: { status: 409, message: "The account already has the whole drive" },
  overlapping_folder_grant: {
    status: 409,
    message: "The account already holds a folder grant on this folder, inside it or around it",
  },
  gone: { status: 410, message: "The link or invite has expired or is no longer valid" },
  upload_conflict: { status: 409, message: "base_revision_id does not match the current revision" },
  request_timeout: { status: 408, message: "The request body arrived too slowly" },
  precondition_failed: { status: 412, message: "The file's current revision does not match If-Match" },
  payload_too_large: { status: 413, message: "The request body is too large" },
  range_not_satisfiable: { status: 416, message: "The requested range is not satisfiable" },
  session_limit: { status: 429, message: "Too many live upload sessions for this user" },
  too_many_requests: { status: 429, message: "Too many chunk uploads in flight; retry later" },
  database_error: { status: 500, message: "A database error occurred; retry later" },
  storage_inconsistency: { status: 500, message: "A storage error occurred; retry later" },
  storage_unavailable: { status: 503, message: "The blob store is unavailable; retry later" },
  storage_full: { status: 507, message: "The server's storage is full; retry later" },
} as const;

/** An error code from the catalogue. */
export type ErrorCode = keyof typeof ERRORS;

/** Current revision details carried by a 409 from upload/finalize (docs/protocol.md#manifest Conflict envelope). */
export interface ConflictDetails {
  /** 32 bytes, or null when no file exists at the path. */
  currentRevisionId: Uint8Array | null;
  /** 0 when no file exists at the path. */
  currentRevisionSeq: number;
}

/** The single error class of the service: a catalogue code, a message and optional extras. */
export class AppError extends Error {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message?: string,
    readonly extra: {
      /** Seconds, sent as `Retry-After`. */
      retryAfter?: number;
      /** Makes the response use the Conflict envelope (docs/protocol.md#manifest). */
      conflict?: ConflictDetails;
      /** Extra response headers (e.g. `Content-Range` on 416). */
      headers?: Record<string, string>;
      /** Extra fields of a flat error body (a 402's `frozen_until`). */
      fields?: Record<string, unknown>;
    } = {},
  ) {
    super(message ?? ERRORS[code].message);
    this.name = "AppError";
    this.status = ERRORS[code].status;
  }
}

/** Shorthand constructor: `fail("not_found", "no such session")`. */
export function fail(code: ErrorCode, message?: string, extra?: AppError["extra"]): AppError {
  return new AppError(code, message, extra);
}

/** Seconds a client is told to wait (`Retry-After`) after a 507 `storage_full`. */
export const STORAGE_FULL_RETRY_AFTER_SECONDS = 60;

/** The fields of a thrown value that `causes` reads. */
export interface CauseLink {
  code?: unknown;
  errno?: unknown;
  message?: unknown;
  cause?: unknown;
}

/**
 * `e` and the errors it wraps (`cause`, as Drizzle and database drivers wrap theirs), outermost
 * first, at most 5.
 */
export function* causes(e: unknown): Generator<CauseLink> {
  let x = e as CauseLink | null | undefined;
  for (let depth = 0; x && depth < 5; depth++, x = x.cause as CauseLink | undefined) yield x;
}

/** Codes of a full disk or quota: errno (ENOSPC, EDQUOT), SQLite's SQLITE_FULL, PostgreSQL's 53100. */
const OUT_OF_SPACE_CODES = new Set(["ENOSPC", "EDQUOT", "SQLITE_FULL", "53100"]);

/**
 * True for an error (or one of its causes, as a database driver wraps them) whose code says the
 * disk or the user's quota is full: the file system's ENOSPC or EDQUOT, SQLite's `SQLITE_FULL`,
 * PostgreSQL's `disk_full` (53100).
 */
export function isOutOfSpace(e: unknown): boolean {
  for (const x of causes(e))
    for (const v of [x.code, x.errno]) if (typeof v === "string" && OUT_OF_SPACE_CODES.has(v)) return true;
  return false;
}

/**
 * The client-facing error for a failure of the server's own storage (blob store, spool file,
 * a full database disk):
 * 507 `storage_full` with `Retry-After` when the disk or quota is full, else 503
 * `storage_unavailable` with `Retry-After: 1`. Never a 4xx: the request was not at fault.
 */
export function storageFailure(e: unknown, message: string): AppError {
  if (isOutOfSpace(e))
    return fail("storage_full", "The server's storage is full; retry later", {
      retryAfter: STORAGE_FULL_RETRY_AFTER_SECONDS,
    });
  return fail("storage_unavailable", message, { retryAfter: 1 });
}
