/**
 * @module server/http/instrument
 * What happens around every request, outside the controllers:
 * - a request id: the client's `x-request-id` when well-formed (1–64 of `[A-Za-z0-9._-]`), else
 *   generated; set on every response and carried (`src/util/request-context.ts`) into every log
 *   line the request causes;
 * - one access-log line at `info`, event `http.request`: method, route template, status, bytes in
 *   and out, duration in ms, request id, and the caller's SS58 address truncated to 8 characters;
 *   on the sharing routes also `path`, the request path with every share token cut to
 *   `TOKEN_LOG_CHARS` characters (`redactedPath`): a token is a capability and never reaches a log;
 * - the HTTP metrics (`src/metrics/metrics.ts`): requests and latency by route template and status
 *   class, bytes received and sent, chunk PUT, single-shot upload and download latency.
 *
 * Bytes in are the declared `Content-Length` of the request. Duration is measured until the
 * response head is ready, except for downloads, which are timed (and logged) when the last body
 * byte has been handed on or the client went away.
 */
import { Elysia } from "elysia";
import { type Metrics, outcomeOf, statusClass } from "../metrics/metrics.ts";
import type { Logger } from "../util/log.ts";
import {
  currentRequest,
  type RequestContext,
  requestIdFrom,
  withRequestContext,
} from "../util/request-context.ts";

/** Route label of a request no route matched. */
export const UNMATCHED_ROUTE = "unmatched";
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]);
const CHUNK_ROUTE = "/upload/session/:session_id/chunk/:chunk_index";
const SINGLE_UPLOAD_ROUTE = "/upload";
const DOWNLOAD_ROUTE = "/download/:ss58/:folder_hash/:file_id";

/**
 * An Elysia plugin recording the matched route template into the request context; it must be
 * used before the controllers (its hook is global).
 */
export function routeTemplatePlugin() {
  return new Elysia({ name: "route-template" }).onTransform({ as: "global" }, ({ route }) => {
    const ctx = currentRequest();
    if (ctx) ctx.route = route;
  });
}

/** Characters of a share token kept in logs (enough to tell links apart, far too few to use one). */
export const TOKEN_LOG_CHARS = 6;

/** Path segments after which a share token follows (docs/sharing.md). */
const TOKEN_PATHS: [RegExp, number][] = [
  // /v1/shares/{token}/…, /v1/folder-shares/{token}/…: the segment after the collection.
  [/^\/v1\/(shares|folder-shares)\/(?!(?:init|owner-wraps|by-hash)(?:\/|$))([^/]+)/, 2],
  // The recipient pages: /share/{token}, /share/folder/{token}.
  [/^\/share\/(folder\/)?(?!folder(?:\/|$))([^/]+)/, 2],
];

/** True when `pathname` is a sharing route, whose access-log line carries `redactedPath`. */
function isSharingPath(pathname: string): boolean {
  return (
    pathname.startsWith("/v1/shares") ||
    pathname.startsWith("/v1/folder-shares") ||
    pathname.startsWith("/share/")
  );
}

/**
 * `pathname` with a share token in it cut to its first `TOKEN_LOG_CHARS` characters and `…`
 * (`/v1/shares/AbCdEf…/meta`); other paths unchanged.
 */
export function redactedPath(pathname: string): string {
  for (const [re, group] of TOKEN_PATHS) {
    const m = re.exec(pathname);
    if (!m) continue;
    const token = m[group] ?? "";
    const at = m[0].length - token.length;
    return `${pathname.slice(0, at)}${token.slice(0, TOKEN_LOG_CHARS)}…${pathname.slice(m[0].length)}`;
  }
  return pathname;
}

/** `url` without its query and with its path's share token cut (`redactedPath`), for logs. */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${redactedPath(u.pathname)}`;
  } catch {
    return "(unparsable url)";
  }
}

function declaredLength(headers: Headers): number {
  const v = headers.get("content-length");
  if (v === null) return 0;
  const n = Number(v);
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

/** Sets `x-request-id` on `res`, copying it when its headers are immutable. */
function withRequestId(res: Response, id: string): Response {
  try {
    res.headers.set("x-request-id", id);
    return res;
  } catch {
    const copy = new Response(res.body, res);
    copy.headers.set("x-request-id", id);
    return copy;
  }
}

const whole = new WeakSet<Response>();

/**
 * Marks `response` as one whose body goes out whole with its `Content-Length` (a file-backed
 * `Blob` or bytes, src/http/download-body.ts): it is passed on untouched and counted by that
 * length, since wrapping its body in a counting stream would make Bun send it chunked.
 * @returns `response`.
 */
export function sentWhole(response: Response): Response {
  whole.add(response);
  return response;
}

/**
 * Wraps `handle` (the app's request handler) with request ids, the access log and the HTTP
 * metrics (when `metrics` is given).
 */
export function instrumentHandle(
  handle: (request: Request) => Promise<Response>,
  log: Logger,
  metrics?: Metrics,
): (request: Request) => Promise<Response> {
  return (request) => {
    const ctx: RequestContext = { id: requestIdFrom(request.headers.get("x-request-id")), route: null };
    return withRequestContext(ctx, async () => {
      const started = performance.now();
      const bytesIn = declaredLength(request.headers);
      const pathname = new URL(request.url).pathname;
      const res = withRequestId(await handle(request), ctx.id);
      const route = ctx.route ?? UNMATCHED_ROUTE;
      const finish = (bytesOut: number, status: number, aborted: boolean) => {
        const seconds = (performance.now() - started) / 1000;
        if (metrics) {
          const method = METHODS.has(request.method) ? request.method : "other";
          const labels = { method, route, status_class: statusClass(status) };
          metrics.httpRequests.inc(labels);
          metrics.httpDuration.observe(labels, seconds);
          if (bytesIn > 0) metrics.httpReceivedBytes.inc(bytesIn);
          if (bytesOut > 0) metrics.httpSentBytes.inc(bytesOut);
          const outcome = aborted ? "aborted" : outcomeOf(status);
          if (route === CHUNK_ROUTE) metrics.chunkPutDuration.observe({ outcome }, seconds);
          else if (route === SINGLE_UPLOAD_ROUTE) metrics.singleUploadDuration.observe({ outcome }, seconds);
          else if (route === DOWNLOAD_ROUTE && request.method === "GET")
            metrics.downloadDuration.observe({ outcome }, seconds);
        }
        withRequestContext(ctx, () =>
          log.info("http.request", {
            method: request.method,
            route,
            status,
            bytes_in: bytesIn,
            bytes_out: bytesOut,
            duration_ms: Math.round(seconds * 10_000) / 10,
            caller: ctx.caller?.slice(0, 8),
            ...(isSharingPath(pathname) ? { path: redactedPath(pathname) } : {}),
            ...(aborted ? { aborted: true } : {}),
          }),
        );
      };
      const { status } = res;
      if (res.body === null) {
        finish(0, status, false);
        return res;
      }
      const length = res.headers.get("content-length");
      const streamed = route === DOWNLOAD_ROUTE && status < 300 && !whole.has(res);
      if (length !== null && !streamed) {
        finish(declaredLength(res.headers), status, false);
        return res;
      }
      if (!streamed && /^(application\/json|text\/)/.test(res.headers.get("content-type") ?? "")) {
        // A JSON or text body of unknown length is small by construction: read it to count it.
        const bytes = new Uint8Array(await res.arrayBuffer());
        finish(bytes.byteLength, status, false);
        return new Response(bytes, { status, headers: res.headers });
      }
      // Downloads and other streams: counted as the bytes go out, finished when drained.
      return new Response(
        countedBody(res.body, (sent, aborted) => finish(sent, status, aborted)),
        {
          status,
          headers: res.headers,
        },
      );
    });
  };
}

/** `body`, passed through piece by piece; `onEnd(bytes, aborted)` is called once, when it ends or fails or is cancelled. */
function countedBody(
  body: ReadableStream<Uint8Array>,
  onEnd: (bytes: number, aborted: boolean) => void,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let sent = 0;
  let done = false;
  const end = (aborted: boolean) => {
    if (done) return;
    done = true;
    onEnd(sent, aborted);
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const r = await reader.read();
        if (r.done) {
          end(false);
          controller.close();
        } else {
          sent += r.value.byteLength;
          controller.enqueue(r.value);
        }
      } catch (e) {
        end(true);
        controller.error(e);
      }
    },
    cancel(reason) {
      end(true);
      return reader.cancel(reason);
    },
  });
}
