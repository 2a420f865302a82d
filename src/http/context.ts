/**
 * @module http/context
 * Helpers controllers share: authenticating a request and checking address path parameters in
 * the order of complement §4 (401 → 400 → 403).
 */
import { isSs58 } from "../auth/ss58.ts";
import { fail } from "../errors/errors.ts";
import type { Services } from "../services.ts";

/** Resolves the bearer token of `request` to an address. @throws 401 `unauthorized`. */
export function caller(s: Services, request: Request): Promise<string> {
  return s.auth.authenticate(request.headers.get("authorization"));
}

/**
 * Checks a `{base_address}`/`{ss58}` path parameter (raw, still percent-encoded): not empty, at
 * most 256 bytes, no `%` or `\`, and an SS58 address.
 * @throws AppError `invalid_user_id` (400).
 */
export function addressParam(raw: string | undefined): string {
  if (raw === undefined || raw === "") throw fail("invalid_user_id", "The address in the path is empty");
  if (Buffer.byteLength(raw) > 256)
    throw fail("invalid_user_id", "The address in the path is longer than 256 bytes");
  if (raw.includes("%") || raw.includes("\\"))
    throw fail("invalid_user_id", "The address in the path contains '%' or '\\'");
  if (!isSs58(raw)) throw fail("invalid_user_id", "The address in the path is not a valid SS58 address");
  return raw;
}

/** Checks a 64-hex `file_id` (the path_hash). @throws AppError `invalid_parameter` (400). */
export function fileIdParam(raw: string | undefined): Uint8Array {
  if (raw === undefined || !/^[0-9a-fA-F]{64}$/.test(raw))
    throw fail("invalid_parameter", "file_id must be the 64 hex characters of path_hash");
  return Buffer.from(raw, "hex");
}

/** Checks a `folder_hash` path parameter. @throws AppError `invalid_parameter` (400). */
export function folderHashParam(raw: string | undefined): string {
  if (raw === undefined || !/^[0-9a-f]{16}$/.test(raw))
    throw fail("invalid_parameter", "folder_hash must be 16 lowercase hex characters");
  return raw;
}

/**
 * Reads an optional non-negative integer query parameter.
 * @throws AppError `invalid_parameter` (400) when present but not a non-negative integer.
 */
export function uintQuery(query: URLSearchParams, name: string): number | null {
  const v = query.get(name);
  if (v === null || v === "") return null;
  if (!/^\d{1,15}$/.test(v)) throw fail("invalid_parameter", `${name} must be a non-negative integer`);
  return Number(v);
}

/** The query string of `request` as `URLSearchParams`. */
export function queryOf(request: Request): URLSearchParams {
  const i = request.url.indexOf("?");
  return new URLSearchParams(i === -1 ? "" : request.url.slice(i + 1));
}
