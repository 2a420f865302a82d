/**
 * @module server/http/contract
 * How the controllers apply the schemas of `packages/protocol/src/schemas.ts`: the one function that turns a
 * failed validation into the protocol's error code (`validationFailure`), the integer coercion of
 * path and query parameters, and the response and OpenAPI decorations of a route.
 *
 * Checks run in the order of docs/protocol.md#open-rules: the bearer token first (401, `authenticated`, a
 * derive hook, or inside `jsonBody` before the body is read), then the schemas (400), then
 * ownership in the handler (403).
 */

import { type ErrorCode, fail } from "@esync/protocol/errors.ts";
import { ConflictEnvelope, ErrorEnvelope, FlatError, successOf } from "@esync/protocol/schemas.ts";
import type { TSchema } from "@sinclair/typebox";
import { type DocumentDecoration, t } from "elysia";
import type { Services } from "../services.ts";
import { readJson } from "./request.ts";

/** Resolved callers, one authentication per request. */
const callers = new WeakMap<Request, Promise<string>>();

/** Resolves the bearer token of `request` to an address (once per request). @throws 401 `unauthorized`. */
export function callerOf(s: Services, request: Request): Promise<string> {
  let p = callers.get(request);
  if (!p) {
    p = s.auth.authenticate(request.headers.get("authorization"));
    callers.set(request, p);
  }
  return p;
}

/** `ss58_address`, or its alias `user_id`. @throws AppError `invalid_manifest` when both are absent. */
export function bodyAddress(b: { ss58_address?: string; user_id?: string }): string {
  const a = b.ss58_address ?? b.user_id;
  if (a === undefined) throw fail("invalid_manifest", "ss58_address (alias user_id) is required");
  return a;
}

/** A derive hook giving the route `caller` (the token's address) before any validation: 401 first. */
export function authenticated(s: Services) {
  return async ({ request }: { request: Request }) => ({ caller: await callerOf(s, request) });
}

/**
 * A route-level parse hook for JSON bodies: authenticates first (401 before the body is read),
 * then reads the body with `readJson` (at most `maxBytes`, default 1 MiB; a larger body fails
 * with `tooLargeCode`, default 413 `payload_too_large`). The route's body schema checks the result.
 * @throws AppError `unauthorized`, or `code` (default `invalid_manifest`) for a body that is not JSON.
 */
export function jsonBody(
  s: Services,
  code: ErrorCode = "invalid_manifest",
  maxBytes?: number,
  tooLargeCode?: ErrorCode,
) {
  return async ({ request }: { request: Request }) => {
    await callerOf(s, request);
    return readJson(request, code, maxBytes, tooLargeCode);
  };
}

/** What `rawBody` gives Elysia in place of a parsed body. */
const RAW_BODY = "raw";

/**
 * A route-level parse hook that leaves the body unread, for routes that stream `request.body`
 * themselves (a marker parser works whatever parsers are registered, where `parse: "none"` does not).
 */
export function rawBody() {
  return () => RAW_BODY;
}

/** Error statuses a route can answer. */
export type ErrorStatus =
  | 400
  | 401
  | 402
  | 403
  | 404
  | 408
  | 409
  | 410
  | 412
  | 413
  | 416
  | 429
  | 500
  | 503
  | 507;

/**
 * `errors`, and 507 with them when they hold 500: a route whose database write can fail can also
 * find the database's disk full (507 `storage_full`, src/app.ts).
 */
function withDiskFull(errors: ErrorStatus[]): ErrorStatus[] {
  return errors.includes(500) && !errors.includes(507) ? [...errors, 507] : errors;
}

/**
 * The response schemas of a route: 200 → `{"Success": ok}` (or `ok` as is when `bare`), each
 * error status → the Error envelope (409: Error or Conflict envelope, docs/protocol.md#manifest; 402: the flat
 * quota body, docs/protocol.md#quota); with 500, also 507.
 */
export function responses<S extends ReturnType<typeof t.Object>>(ok: S, errors: ErrorStatus[]) {
  const map: Record<number, TSchema> = { 200: successOf(ok) };
  for (const status of withDiskFull(errors))
    map[status] =
      status === 409
        ? t.Union([ErrorEnvelope, ConflictEnvelope])
        : status === 402
          ? FlatError
          : ErrorEnvelope;
  return map as { 200: ReturnType<typeof successOf<S>> } & Record<number, TSchema>;
}

/**
 * The response schemas of a route of the flat legacy family (docs/protocol.md#response-families): 200 → `ok` as is,
 * each error status → the Error envelope; with 500, also 507.
 */
export function flatResponses<S extends TSchema>(ok: S, errors: ErrorStatus[]) {
  const map: Record<number, TSchema> = { 200: ok };
  for (const status of withDiskFull(errors)) map[status] = ErrorEnvelope;
  return map as { 200: S } & Record<number, TSchema>;
}

/** The OpenAPI decoration of an authenticated route. */
export function doc(tag: string, summary: string, description?: string): DocumentDecoration {
  return { tags: [tag], summary, description, security: [{ bearer: [] }] };
}

/** OpenAPI `requestBody` of a route whose body is raw bytes. */
export const BINARY_BODY = {
  required: true,
  content: { "application/octet-stream": { schema: t.String({ format: "binary" }) } },
};

/** OpenAPI `requestBody` of single-shot `/upload`: multipart parts `manifest` then `ciphertext`. */
export const UPLOAD_BODY = {
  required: true,
  content: {
    "multipart/form-data": {
      schema: t.Object({
        manifest: t.String({ description: "the manifest JSON (see the session body's manifest), first" }),
        ciphertext: t.String({ format: "binary", description: "the ciphertext bytes, second" }),
      }),
    },
  },
};

/**
 * The response schemas of a route of the v1 family (docs/sharing.md): `ok` maps success statuses
 * to their bodies as they are (no envelope), each error status → the flat `{"error", "message"}`;
 * with 500, also 507. `emptyNotFound`: a 404 may also come without a body (a revoke of an unknown
 * folder share).
 */
export function v1Responses(ok: Record<number, TSchema>, errors: ErrorStatus[], emptyNotFound = false) {
  const map: Record<number, TSchema> = { ...ok };
  for (const status of withDiskFull(errors))
    map[status] = status === 404 && emptyNotFound ? t.Union([FlatError, t.Null()]) : FlatError;
  return map;
}
