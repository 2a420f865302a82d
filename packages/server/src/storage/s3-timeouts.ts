/**
 * @module server/storage/s3-timeouts
 * Time-outs on every request the S3 store sends, so that an S3 server that stops answering (a
 * paused or overloaded gateway, a network that drops packets) fails a call within a bounded time
 * instead of holding it, and the upload or download waiting on it, until the server returns.
 * The rules and their settings are in docs/operator-guide.md#s3-time-outs.
 *
 * Three bounds, each measuring only time spent waiting on S3, never on our own caller:
 * - connect: from the request's start until its TCP connection is established (a reused
 *   keep-alive connection counts as established at once);
 * - first byte: from the moment the whole request (headers and body) is handed to the
 *   connection until the response's headers arrive;
 * - idle: while a request body is being sent, the longest S3 may leave written bytes unread
 *   (only while a write is pending: a caller that is slow to supply the body is not S3 stalling);
 *   while a response body is being read, the longest between two pieces while the reader wants
 *   more (a paused reader, such as a slow download client, stops the clock).
 * A request past a bound is destroyed with `S3TimeoutError`, which the store's callers answer
 * as a passing storage failure (503 `storage_unavailable` with `Retry-After`).
 *
 * Two senders apply them: `timedTransport`, the `node:http` transport of the minio client (reads,
 * listings, deletes, completing uploads), and `timedFetch`, Bun's `fetch` for the writes (object
 * and part PUTs, starting a multipart upload). `fetch` does not report when its connection is
 * up, so there the connect bound runs until the connection takes the first piece of the body
 * (for a request without a body, connect and first byte are one bound of their sum).
 */
import type { ClientRequest, IncomingMessage, RequestOptions } from "node:http";

/** The three bounds, in milliseconds (each at least 1). */
export interface S3Timeouts {
  connectMs: number;
  firstByteMs: number;
  idleMs: number;
}

/** Which bound ran out. */
export type S3TimeoutPhase = "connect" | "first byte" | "idle";

/**
 * A request to S3 ran past one of its time-outs (see the module comment). `code` is
 * `ETIMEDOUT`, as for a network time-out, so it reads as "unreachable", not as an S3 reply.
 */
export class S3TimeoutError extends Error {
  readonly code = "ETIMEDOUT";

  constructor(
    readonly phase: S3TimeoutPhase,
    readonly ms: number,
  ) {
    super(`S3 did not answer within the ${phase} time-out of ${ms} ms`);
    this.name = "S3TimeoutError";
  }
}

/** The part of `node:http` (or `node:https`) a transport needs. */
export interface RequestModule {
  request(options: RequestOptions, callback: (res: IncomingMessage) => void): ClientRequest;
}

type WriteCallback = (error?: Error | null) => void;

/** The one bound that runs at a time for a request: `arm` (re)starts it for a phase, `clear` stops it. */
interface BoundTimer {
  arm(phase: S3TimeoutPhase, ms: number): void;
  clear(): void;
}

/** A `BoundTimer` that hands `onTimeout` an `S3TimeoutError` naming the phase whose bound ran out. */
function boundTimer(onTimeout: (error: S3TimeoutError) => void): BoundTimer {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const clear = () => {
    clearTimeout(timer);
    timer = undefined;
  };
  return {
    arm(phase, ms) {
      clear();
      timer = setTimeout(() => {
        timer = undefined;
        onTimeout(new S3TimeoutError(phase, ms));
      }, ms);
    },
    clear,
  };
}

/**
 * A transport for the minio client (its `transport` option) that sends every request through
 * `base` and destroys it with `S3TimeoutError` when a bound of `timeouts` runs out.
 */
export function timedTransport(base: RequestModule, timeouts: S3Timeouts): RequestModule {
  return {
    request(options, callback) {
      let response: IncomingMessage | undefined;
      let connected = false;
      let pendingWrites = 0;
      let done = false;
      const bound = boundTimer((error) => {
        if (response) response.destroy(error);
        else req.destroy(error);
      });
      const clear = bound.clear;
      const arm = (phase: S3TimeoutPhase, ms: number) => {
        if (done) bound.clear();
        else bound.arm(phase, ms);
      };
      /** After the connection is up: wait on S3 only if it has something of ours to take. */
      const whileSending = () => {
        if (!connected || response) return;
        if (req.writableFinished) arm("first byte", timeouts.firstByteMs);
        else if (pendingWrites > 0) arm("idle", timeouts.idleMs);
        else clear();
      };
      const finish = () => {
        done = true;
        clear();
      };

      const req = base.request(options, (res) => {
        response = res;
        clear();
        // Sees each piece without a 'data' listener, which would start the flow before the
        // reader is attached and lose what arrives in between.
        const emit = res.emit.bind(res) as (event: string | symbol, ...args: unknown[]) => boolean;
        res.emit = ((event: string | symbol, ...args: unknown[]) => {
          if (event === "data") arm("idle", timeouts.idleMs);
          return emit(event, ...args);
        }) as typeof res.emit;
        res.on("resume", () => arm("idle", timeouts.idleMs));
        res.on("pause", clear);
        res.on("end", finish);
        res.on("close", finish);
        res.on("error", finish);
        callback(res);
      });
      arm("connect", timeouts.connectMs);
      req.on("socket", (socket) => {
        const up = () => {
          connected = true;
          whileSending();
        };
        if ((socket as { connecting?: boolean }).connecting) socket.once("connect", up);
        else up();
      });
      req.on("finish", whileSending);
      req.on("error", finish);
      req.on("close", () => {
        if (!response) finish();
      });

      const write = req.write.bind(req) as (chunk: unknown, encoding: unknown, cb: WriteCallback) => boolean;
      req.write = ((chunk: unknown, encoding?: unknown, cb?: WriteCallback) => {
        const callback = typeof encoding === "function" ? (encoding as WriteCallback) : cb;
        pendingWrites++;
        whileSending();
        return write(chunk, typeof encoding === "function" ? undefined : encoding, (error) => {
          pendingWrites--;
          whileSending();
          callback?.(error);
        });
      }) as typeof req.write;
      return req;
    },
  };
}

/**
 * A request body handed over piece by piece: `next` resolves with the next piece, or `null` once
 * the body is complete; it may reject (the request then fails with that error). `cancel`
 * releases the source when the request ends before the body does.
 */
export interface BodySource {
  next(): Promise<Uint8Array | null>;
  cancel(reason?: unknown): Promise<void>;
}

/** The `fetch` the S3 store sends its writes with: the global one, or a test's stand-in. */
export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

/** A request `timedFetch` sends: `body` null for none (send `Content-Length: 0` in `headers`). */
export interface TimedRequest {
  method: "PUT" | "POST";
  headers: Record<string, string>;
  body: BodySource | null;
  /** Aborts the request; it then rejects with `signal.reason`. */
  signal?: AbortSignal;
}

/** An answer `timedFetch` read whole: status, headers and the body as UTF-8 text. */
export interface TimedAnswer {
  status: number;
  headers: Headers;
  text: string;
}

/**
 * Sends one request with `fetch` to `url`, streaming `request.body` as `fetch` asks for it, and
 * reads the (small) answer whole, with the bounds of `timeouts` (see the module comment); the
 * caller's time to produce a piece never counts.
 * @throws S3TimeoutError when a bound runs out; `request.signal.reason` when aborted; the body
 *   source's own error when it rejects; else `fetch`'s network error (`code` `ECONNREFUSED`,
 *   `ECONNRESET`, ...). An answer with any status resolves.
 */
export async function timedFetch(
  send: FetchLike,
  url: string,
  request: TimedRequest,
  timeouts: S3Timeouts,
): Promise<TimedAnswer> {
  const abort = new AbortController();
  let timedOut: S3TimeoutError | undefined;
  const { arm, clear } = boundTimer((error) => {
    timedOut = error;
    abort.abort(error);
  });
  const onAbort = () => abort.abort(request.signal?.reason);
  request.signal?.addEventListener("abort", onAbort, { once: true });
  const source = request.body;
  const body =
    source === null
      ? null
      : new ReadableStream<Uint8Array>(
          {
            async pull(controller) {
              // The connection took what came before: waiting for the caller is not S3's time.
              clear();
              const piece = await source.next();
              if (piece === null) {
                controller.close();
                arm("first byte", timeouts.firstByteMs);
              } else {
                controller.enqueue(piece);
                arm("idle", timeouts.idleMs);
              }
            },
            cancel: (reason) => source.cancel(reason),
          },
          { highWaterMark: 0 },
        );
  if (body === null) arm("first byte", timeouts.connectMs + timeouts.firstByteMs);
  else arm("connect", timeouts.connectMs);
  try {
    request.signal?.throwIfAborted();
    const init: RequestInit & { duplex?: "half" } = {
      method: request.method,
      headers: request.headers,
      body,
      signal: abort.signal,
      duplex: "half",
    };
    const res = await send(url, init);
    arm("idle", timeouts.idleMs);
    const text = await res.text();
    return { status: res.status, headers: res.headers, text };
  } catch (e) {
    if (timedOut) throw timedOut;
    if (request.signal?.aborted) throw request.signal.reason;
    throw e;
  } finally {
    clear();
    request.signal?.removeEventListener("abort", onAbort);
  }
}
