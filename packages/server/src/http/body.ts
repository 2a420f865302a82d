/**
 * @module server/http/body
 * Request bodies read under the service's limits, enforced while the bytes stream in (issue 10):
 * - a byte limit: reading stops at the first piece past it and the body fails with the error the
 *   caller names (413 `payload_too_large`, or 400 `invalid_manifest` for a chunk's exact length);
 * - an idle timeout: no byte for `idleMs` fails the body with 408 `request_timeout`;
 * - a minimum rate: once `rateGraceMs` have passed since the body started, fewer than
 *   `minBytesPerSecond` on average over the last `rateWindowMs` (or since the start, when it is
 *   shorter) fails it with 408 `request_timeout` too, so a body trickled just fast enough never
 *   to be idle cannot hold its connection (docs/operator-guide.md#chunk-upload-slots).
 * Both clocks run only while the reader waits for the client's bytes: time the consumer spends
 * elsewhere (writing to a slow store) does not count against the client.
 *
 * The server (`src/server.ts`) closes the connection of every error response whose request body
 * was not read to its end (`bodyFinished`), after sending the answer and draining the rest of the
 * body for a bounded time and byte count, or cancelling it and holding the connection for a
 * bounded time (`answerThenDrain`).
 */
import { type AppError, fail } from "@esync/protocol/errors.ts";
import { ownPieces, releasePiece } from "../util/release.ts";

/** Timing rules of body reads; see the module comment. */
export interface BodyPolicy {
  /** Longest silence between two pieces of a body, milliseconds. */
  idleMs: number;
  /** Slowest rate accepted after `rateGraceMs`, bytes per second (0: none). */
  minBytesPerSecond: number;
  /** Time from the start of a body before its rate is checked, milliseconds. */
  rateGraceMs: number;
  /** Span over which the rate is measured, milliseconds. */
  rateWindowMs: number;
}

let policy: BodyPolicy = { idleMs: 30_000, minBytesPerSecond: 1024, rateGraceMs: 5000, rateWindowMs: 10_000 };

/** Sets the process-wide body policy (the server does, from `Config`). */
export function setBodyPolicy(p: BodyPolicy): void {
  policy = { ...p };
}

/** The body policy in force. */
export function bodyPolicy(): BodyPolicy {
  return policy;
}

/** The failure of each guarded body that failed: the client's stream error, or a limit/timeout. */
const failures = new WeakMap<ReadableStream<Uint8Array>, unknown>();

/**
 * Why a stream from `guardedBody` failed (the client's connection broke, or an `AppError` for a
 * limit or timeout), or undefined when it did not. Tells a failing body apart from a failing
 * store that read it.
 */
export function bodyFailure(stream: ReadableStream<Uint8Array>): { error: unknown } | undefined {
  return failures.has(stream) ? { error: failures.get(stream) } : undefined;
}

/** Requests whose body was read to its end (or failed by its own client). */
const finished = new WeakSet<Request>();

/** Requests whose body failed a limit or timeout: their connection is closed after the answer. */
const refused = new WeakSet<Request>();

/**
 * True when the connection of `request` must close after its response: its body broke a limit
 * or timeout, or (for an error response) was not read to its end.
 */
export function mustClose(request: Request): boolean {
  return refused.has(request) || !bodyFinished(request);
}

/**
 * True when `request` carries no body, or its body was read to its end: answering it leaves no
 * unread bytes on the connection.
 */
export function bodyFinished(request: Request): boolean {
  if (finished.has(request)) return true;
  const h = request.headers;
  if (h.has("transfer-encoding")) return false;
  const cl = h.get("content-length");
  return cl === null || cl.trim() === "0";
}

/**
 * Most milliseconds, and bytes, of a body read and discarded after its error answer was sent, and
 * longest wait for the next piece (a silent client leaves nothing unread, so closing then does not
 * reset the connection).
 */
export const DRAIN_MS = 2000;
export const DRAIN_IDLE_MS = 500;
export const DRAIN_BYTES = 16 * 1024 * 1024;
/**
 * Least milliseconds between the start of a drain and the close, for a client that is still
 * sending: once `DRAIN_BYTES` were discarded the server stops reading (TCP back-pressure holds the
 * client, at no cost to the server) until this much time has passed, so that a client slow to
 * read its answer still reads it before the reset.
 */
export const DRAIN_HOLD_MS = 1000;
/** Most connections draining at once; past it an error answer's connection is held (`MAX_HOLDING`). */
export const MAX_DRAINING = 32;
/**
 * Most connections held at once past `MAX_DRAINING`: the answer is sent, the body is cancelled
 * (Bun discards what still comes without buffering it or handing it to JavaScript) and the
 * connection closes `DRAIN_MS` later, so the client has that long to end its body or read its
 * answer before the close. Past this too, an error answer closes its connection at once.
 */
export const MAX_HOLDING = 256;
/**
 * Declared length (`Content-Length`) past which a refused body is held as past `MAX_DRAINING`
 * instead of drained: reading megabytes into JavaScript to discard them costs the server memory
 * and time that Bun's own discarding does not.
 */
export const HOLD_ABOVE_BYTES = 1024 * 1024;

/** Readers of bodies failed by a limit or timeout, or given up by their consumer, left to drain. */
const unread = new WeakMap<Request, ReadableStreamDefaultReader<Uint8Array>>();
let draining = 0;
let holding = 0;

/**
 * Cancels what is left of the body of `request` when it was given up but the answer is not an
 * error to drain after (the consumer stopped early and the request still succeeded).
 */
export function dropUnread(request: Request): void {
  unread
    .get(request)
    ?.cancel()
    .catch(() => {});
  unread.delete(request);
}

/**
 * Reads and discards what is left of a body for at most `DRAIN_MS` and `DRAIN_BYTES`, or until
 * no piece came for `DRAIN_IDLE_MS`; past `DRAIN_BYTES` it waits, reading nothing, until
 * `DRAIN_HOLD_MS` from the start; then
 * cancels it (not awaited: with a read pending on a silent client, Bun settles a cancel only when
 * more bytes come).
 */
async function drain(reader: ReadableStreamDefaultReader<Uint8Array>, request: Request): Promise<void> {
  const start = performance.now();
  const deadline = start + DRAIN_MS;
  let n = 0;
  try {
    while (n < DRAIN_BYTES) {
      const left = Math.min(deadline - performance.now(), DRAIN_IDLE_MS);
      if (left <= 0) break;
      const r = await Promise.race([reader.read(), Bun.sleep(left).then(() => null)]);
      if (r === null) break;
      if (r.done) {
        finished.add(request);
        return;
      }
      n += r.value.byteLength;
      // Discarded unseen: its memory goes back now, not at the next collection.
      releasePiece(r.value);
    }
  } catch {
    finished.add(request);
    return;
  }
  // Still sending past the byte bound: hold the connection, unread, until the hold time passed.
  if (n >= DRAIN_BYTES) await Bun.sleep(Math.max(0, start + DRAIN_HOLD_MS - performance.now()));
  reader.cancel().catch(() => {});
}

/**
 * The error answer `response` to `request`, whose body was not read to its end, sent at once and
 * followed by a bounded drain (a lingering close, as web servers do): the answer goes out as the
 * first piece of its body, the rest of the request body is read and discarded for at most
 * `DRAIN_MS` and `DRAIN_BYTES`, then the answer ends and the connection closes
 * (`Connection: close`). Closing a connection with unread bytes makes TCP send a reset, which
 * destroys an answer the client has not read yet; the drain gives a client that is still sending
 * the time to read it, and lets a body that ends meanwhile end cleanly. With `MAX_DRAINING`
 * connections already draining, or for a body declared longer than `HOLD_ABOVE_BYTES`, the body
 * is instead cancelled and the connection held open for `DRAIN_MS` after the answer (at
 * most `MAX_HOLDING` at once); past both, or with nothing left to read, the answer
 * is sent with `Connection: close` and no drain. `onDrained` is called when the drain or hold
 * ended (at once without one).
 */
export async function answerThenDrain(
  request: Request,
  response: Response,
  onDrained: () => void = () => {},
): Promise<Response> {
  const headers = new Headers(response.headers);
  headers.set("connection", "close");
  let reader = unread.get(request);
  unread.delete(request);
  const body = request.body;
  if (!reader && body && !body.locked && !bodyFinished(request)) reader = body.getReader();
  const answer = new Uint8Array(await response.arrayBuffer());
  // Counted in the same turn as the decision, so answers refused at once do not all see room.
  const declared = Number(request.headers.get("content-length") ?? 0);
  const hold = draining >= MAX_DRAINING || declared > HOLD_ABOVE_BYTES;
  if (!reader || (hold && holding >= MAX_HOLDING)) {
    reader?.cancel().catch(() => {});
    onDrained();
    return new Response(answer, { status: response.status, headers });
  }
  headers.delete("content-length");
  if (hold) holding++;
  else draining++;
  const out = new ReadableStream<Uint8Array>({
    async start(c) {
      c.enqueue(answer);
      try {
        if (hold) {
          // Cancelled at once: Bun then discards the rest of the body as it comes, without
          // buffering it or handing it to JavaScript.
          reader.cancel().catch(() => {});
          await Bun.sleep(DRAIN_MS);
        } else await drain(reader, request);
      } finally {
        if (hold) holding--;
        else draining--;
        onDrained();
        c.close();
      }
    },
  });
  return new Response(out, { status: response.status, headers });
}

/** Options of `guardedBody`. */
export interface GuardOptions {
  /** Most bytes read; one more fails the body with `tooLarge()`. */
  limit: number;
  /** The error of a body longer than `limit`. */
  tooLarge: () => AppError;
}

/**
 * The body of `request` as a stream that enforces `opts.limit` and the body policy. A failure of
 * the client's own stream (the connection broke) is passed on as it came; a limit or timeout
 * failure is an `AppError` and also cancels the client's stream. Reading stops on either.
 * An absent body yields an empty stream.
 */
export function guardedBody(request: Request, opts: GuardOptions): ReadableStream<Uint8Array> {
  return guardBody(request, opts).stream;
}

/** A guarded body (`guardBody`) and its controls. */
export interface GuardedBody {
  /** The body, as `guardedBody` gives it. */
  stream: ReadableStream<Uint8Array>;
  /** Bytes received from the client so far. */
  received(): number;
  /**
   * Fails the body with `error` as a limit or timeout does (the stream errors, the client's
   * stream is cancelled, the connection closes after the answer); nothing once the body ended.
   */
  abort(error: AppError): void;
}

/** `guardedBody`, with its progress and a way to fail it from outside (an evicted chunk PUT). */
export function guardBody(request: Request, opts: GuardOptions): GuardedBody {
  const body = request.body;
  if (!body) {
    finished.add(request);
    return {
      stream: new ReadableStream<Uint8Array>({ start: (c) => c.close() }),
      received: () => 0,
      abort: () => {},
    };
  }
  const reader = body.getReader();
  const { idleMs, minBytesPerSecond, rateGraceMs, rateWindowMs } = policy;
  // The clocks of the timeouts run only while a read of the client's stream is pending: time the
  // consumer spends elsewhere (a slow store) is not the client's.
  let waited = 0;
  let pendingSince: number | null = null;
  const waitedAt = (now: number) => waited + (pendingSince === null ? 0 : now - pendingSince);
  /** (waited time, bytes seen) at each check within the last `rateWindowMs`, oldest first. */
  const samples: { w: number; seen: number }[] = [{ w: 0, seen: 0 }];
  let last = performance.now();
  let seen = 0;
  let done = false;
  let controllerRef: ReadableStreamDefaultController<Uint8Array> | null = null;
  let timer: ReturnType<typeof setInterval> | null = null;
  const stop = () => {
    done = true;
    if (timer) clearInterval(timer);
    timer = null;
  };
  const abort = (e: AppError) => {
    if (done) return;
    stop();
    refused.add(request);
    failures.set(out, e);
    try {
      controllerRef?.error(e);
    } catch {}
    // The rest is drained after the answer (`answerThenDrain`).
    unread.set(request, reader);
  };
  const check = () => {
    const now = performance.now();
    if (pendingSince !== null && now - Math.max(last, pendingSince) >= idleMs) {
      abort(fail("request_timeout", `No request body byte for ${Math.round(idleMs / 1000)} s`));
      return;
    }
    const w = waitedAt(now);
    samples.push({ w, seen });
    while (samples.length > 2 && samples[1]!.w <= w - rateWindowMs) samples.shift();
    const from = samples[0]!;
    if (minBytesPerSecond > 0 && w >= rateGraceMs && w > from.w) {
      const rate = ((seen - from.seen) * 1000) / (w - from.w);
      if (rate < minBytesPerSecond)
        abort(
          fail(
            "request_timeout",
            `The request body arrives at ${Math.round(rate)} bytes/s, below the minimum of ${minBytesPerSecond}`,
          ),
        );
    }
  };
  const out: ReadableStream<Uint8Array> = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        controllerRef = controller;
        timer = setInterval(check, Math.max(50, Math.min(1000, idleMs / 4, rateGraceMs / 4)));
      },
      async pull(controller) {
        let r: Awaited<ReturnType<typeof reader.read>>;
        pendingSince = performance.now();
        try {
          r = await reader.read();
        } catch (e) {
          waited += performance.now() - pendingSince;
          pendingSince = null;
          // The client's connection broke: nothing is left unread that could be drained.
          finished.add(request);
          stop();
          failures.set(out, e);
          throw e;
        }
        waited += performance.now() - pendingSince;
        pendingSince = null;
        if (done) return; // failed by a limit or timeout meanwhile
        if (r.done) {
          finished.add(request);
          stop();
          controller.close();
          return;
        }
        seen += r.value.byteLength;
        last = performance.now();
        if (seen > opts.limit) {
          abort(opts.tooLarge());
          return;
        }
        controller.enqueue(r.value);
      },
      cancel() {
        // The consumer gave up (e.g. a multipart part over its cap): the rest is drained after
        // the answer, as for a limit.
        stop();
        unread.set(request, reader);
      },
    },
    { highWaterMark: 0 },
  );
  // Bun gives each piece of a request body in a fresh buffer, and this stream passes it on as is.
  return { stream: ownPieces(out), received: () => seen, abort };
}
