/**
 * @module server/http/envelope
 * The response envelopes of docs/protocol.md#response-families, #errors: `{"Success": {...}}`, `{"Error": {"error", "message"}}`
 * and, for a 409 from upload/finalize, `{"Conflict": {...}}` (docs/protocol.md#manifest); and the bodiless 404
 * of a route not mounted in the `/v1/` space (docs/protocol.md#response-families rule 2).
 */
import { type AppError, ERRORS, type ErrorCode } from "@esync/protocol/errors.ts";
import { toIntArray } from "@esync/protocol/ids.ts";

const JSON_TYPE = { "content-type": "application/json" } as const;

/**
 * A 200 response `{"Success": data}`, with its `Content-Length` (so that the access log counts
 * its bytes without reading the body again: src/http/instrument.ts).
 */
export function success(data: unknown, headers: Record<string, string> = {}): Response {
  const body = JSON.stringify({ Success: data });
  return new Response(body, {
    status: 200,
    headers: { ...JSON_TYPE, "content-length": String(Buffer.byteLength(body)), ...headers },
  });
}

/** The error envelope for a code, with the catalogue status. */
export function errorBody(code: ErrorCode, message: string): string {
  return JSON.stringify({ Error: { error: code, message } });
}

/**
 * Turns an `AppError` into its response (Error or Conflict envelope, the flat body of a 402,
 * Retry-After, extra headers). With `flat` (the `/v1/` routes, docs/sharing.md and docs/drives.md),
 * the body is `{"error", "message"}` (plus the code's extra fields) without a wrapper, whatever the status.
 */
export function errorResponse(e: AppError, requestId?: string, flat = false): Response {
  const headers: Record<string, string> = { ...JSON_TYPE, ...(e.extra.headers ?? {}) };
  if (requestId) headers["x-request-id"] = requestId;
  if (e.extra.retryAfter !== undefined) headers["retry-after"] = String(e.extra.retryAfter);
  let body: string;
  if (flat || ERRORS[e.code].status === 402) {
    // Quota refusals are flat on every route (docs/protocol.md#response-families, #quota); so is every v1 error (docs/drives.md).
    // A v1 conflict carries the current revision as the Conflict envelope does (docs/versions.md).
    const conflict =
      flat && e.extra.conflict
        ? {
            current_revision_id: toIntArray(e.extra.conflict.currentRevisionId),
            current_revision_seq: e.extra.conflict.currentRevisionSeq,
          }
        : {};
    body = JSON.stringify({ error: e.code, message: e.message, ...conflict, ...(e.extra.fields ?? {}) });
  } else if (e.extra.conflict) {
    body = JSON.stringify({
      Conflict: {
        error: e.code,
        message: e.message,
        current_revision_id: toIntArray(e.extra.conflict.currentRevisionId),
        current_revision_seq: e.extra.conflict.currentRevisionSeq,
      },
    });
  } else {
    body = errorBody(e.code, e.message);
  }
  return new Response(body, { status: ERRORS[e.code].status, headers });
}

/**
 * True when `pathname` lies in the `/v1/` space, whose feature groups a deployment mounts or not
 * (docs/protocol.md#response-families rule 2): there a request that matches no route is answered by
 * `unmountedResponse`. Other unknown paths keep the error envelope (404 `not_found`).
 */
export function inV1Space(pathname: string): boolean {
  return pathname === "/v1" || pathname.startsWith("/v1/");
}

/**
 * 404 with an empty body and no `Content-Type`: "route not mounted (feature off)", which clients
 * tell from "no such object" (404 with a JSON error body) (docs/protocol.md#response-families, rule 2).
 */
export function unmountedResponse(): Response {
  return new Response(null, { status: 404 });
}
