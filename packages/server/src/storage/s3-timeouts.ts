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

/**
 * A transport for the minio client (its `transport` option) that sends every request through
 * `base` and destroys it with `S3TimeoutError` when a bound of `timeouts` runs out.
 */
export function timedTransport(base: RequestModule, timeouts: S3Timeouts): RequestModule {
  return {
    request(options, callback) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      let response: IncomingMessage | undefined;
      let connected = false;
      let pendingWrites = 0;
      let done = false;
      const clear = () => {
        clearTimeout(timer);
        timer = undefined;
      };
      const arm = (phase: S3TimeoutPhase, ms: number) => {
        clearTimeout(timer);
        if (done) return;
        timer = setTimeout(() => {
          timer = undefined;
          const error = new S3TimeoutError(phase, ms);
          if (response) response.destroy(error);
          else req.destroy(error);
        }, ms);
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
