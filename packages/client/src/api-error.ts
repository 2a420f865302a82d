/**
 * @module client/api-error
 * The one error the API client throws for a failed request: the HTTP status, the service's
 * error code and message (docs/protocol.md#errors envelope `{"Error": {"error", "message"}}`), the Conflict
 * envelope's current revision on a 409 from upload/finalize (docs/protocol.md#manifest), and
 * `Retry-After`. Transport failures (connection refused, reset, timeout) are status 0 with
 * code `network_error`.
 */

/** Current revision carried by a 409 Conflict envelope (docs/protocol.md#manifest). */
export interface ConflictInfo {
  /** 32 bytes, or null when no file exists at the path. */
  currentRevisionId: Uint8Array | null;
  currentRevisionSeq: number;
}

/** A request that failed: an error envelope, another HTTP failure, or the network. */
export class ApiError extends Error {
  constructor(
    /** HTTP status; 0 when no response arrived. */
    readonly status: number,
    /** The service's `error` code (`not_found`, `conflict`, …), `network_error`, or `http_<status>`. */
    readonly code: string,
    message: string,
    readonly extra: {
      /** Present on a 409 that used the Conflict envelope. */
      conflict?: ConflictInfo;
      /** Seconds from `Retry-After`. */
      retryAfter?: number;
      /** The server (origin, e.g. `http://127.0.0.1:8080`) the request went to. */
      server?: string;
      /** Set when retries gave up on this error: how long they went on, ms. */
      retriedForMs?: number;
      /** `METHOD /path` of the request, for logs (messages name files by path instead). */
      request?: string;
      /** A transport failure a retry cannot fix (a failed TLS handshake): not retryable. */
      permanent?: boolean;
      cause?: unknown;
    } = {},
  ) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = "ApiError";
  }

  /** The Conflict envelope's current revision (409 on upload/finalize), if sent. */
  get conflict(): ConflictInfo | undefined {
    return this.extra.conflict;
  }

  /** True for failures worth retrying: network errors (not a failed TLS handshake), 5xx, 429. */
  get retryable(): boolean {
    if (this.extra.permanent) return false;
    return this.status === 0 || this.status >= 500 || this.status === 429;
  }

  /** This error with `retriedForMs` set (retries gave up after `ms`). */
  withRetriedFor(ms: number): ApiError {
    const e = new ApiError(this.status, this.code, this.message, { ...this.extra, retriedForMs: ms });
    e.stack = this.stack;
    return e;
  }

  /** This error with `server` set, unless it already names one. */
  withServer(server: string): ApiError {
    if (this.extra.server !== undefined) return this;
    const e = new ApiError(this.status, this.code, this.message, { ...this.extra, server });
    e.stack = this.stack;
    return e;
  }

  /** One line: `409 conflict: message`. */
  override toString(): string {
    return `${this.status || "network"} ${this.code}: ${this.message}`;
  }
}

function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

/** Turns a non-2xx response into an `ApiError` (reads its body). */
export async function errorFromResponse(res: Response): Promise<ApiError> {
  const retryAfter = parseRetryAfter(res.headers.get("retry-after"));
  const text = await res.text().catch(() => "");
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (body && typeof body === "object") {
    const env = body as Record<string, unknown>;
    const conflict = env.Conflict as Record<string, unknown> | undefined;
    if (conflict && typeof conflict === "object") {
      const id = conflict.current_revision_id;
      return new ApiError(res.status, String(conflict.error ?? "conflict"), String(conflict.message ?? ""), {
        retryAfter,
        conflict: {
          currentRevisionId: Array.isArray(id) ? Uint8Array.from(id as number[]) : null,
          currentRevisionSeq: Number(conflict.current_revision_seq ?? 0),
        },
      });
    }
    const err = env.Error as Record<string, unknown> | undefined;
    if (err && typeof err === "object") {
      return new ApiError(res.status, String(err.error ?? `http_${res.status}`), String(err.message ?? ""), {
        retryAfter,
      });
    }
    // The flat body of the v1 routes and of quota refusals: {"error", "message"}.
    if (typeof env.error === "string")
      return new ApiError(res.status, env.error, String(env.message ?? ""), { retryAfter });
  }
  const snippet = text.slice(0, 200) || res.statusText;
  return new ApiError(res.status, `http_${res.status}`, snippet, { retryAfter });
}
