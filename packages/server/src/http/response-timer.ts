/**
 * @module server/http/response-timer
 * Bun.serve's connection timer (`idleTimeout`, re-armed by `server.timeout(request, s)`) is not
 * reset by the bytes of a response as they go out: a download slower than the timer is cut
 * mid-body (measured on Bun 1.4.5). The server switches the timer off while a handler runs and
 * registers here how to re-arm it; a download body takes charge of it (a stream re-arms it at
 * every piece, a file body is kept alive by `fileBodyTimer`), and every other response leaves it
 * to the server, which re-arms it once (the header timeout) for the response and the keep-alive
 * idle after it. See docs/design.md#downloads-and-content-length.
 */

/** How the server lets a response body drive the connection timer of one request. */
export interface TimerControl {
  /** Sets the connection timer, seconds (0 = off; Bun caps it at 255): `server.timeout(request, s)`. */
  set(seconds: number): void;
  /**
   * False once the response is fully handed to the socket or the connection is gone
   * (`server.requestIP(request)` is then null).
   */
  live(): boolean;
  /** The header timeout, seconds (`ESYNC_HEADER_TIMEOUT_SECONDS`): Bun.serve's `idleTimeout`. */
  headerTimeoutSeconds: number;
  /**
   * Slowest average rate a file body is kept alive for, bytes per second
   * (`ESYNC_BODY_MIN_BYTES_PER_SECOND`; 0 = for as long as it is being sent).
   */
  minBytesPerSecond: number;
}

interface Timer extends TimerControl {
  /** True once a response body took charge of the timer. */
  claimed: boolean;
}

const timers = new WeakMap<Request, Timer>();

/** Registers how to drive the connection timer of `request` (the server does, per request). */
export function registerTimer(request: Request, control: TimerControl): void {
  timers.set(request, { ...control, claimed: false });
}

/** True when a response body of `request` took charge of its timer (the server then leaves it). */
export function timerClaimed(request: Request): boolean {
  return timers.get(request)?.claimed ?? false;
}

/** Longest timer Bun accepts, seconds. */
export const MAX_TIMER_SECONDS = 255;

/**
 * `body` re-arming the connection timer of `request` (to 255 s) at every piece it passes on, so
 * the timer measures a stalled client, not the length of the download. Unchanged when no timer
 * is registered.
 */
export function idleTimedStream(
  request: Request,
  body: ReadableStream<Uint8Array>,
): ReadableStream<Uint8Array> {
  const t = timers.get(request);
  if (!t) return body;
  t.claimed = true;
  t.set(MAX_TIMER_SECONDS);
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const r = await reader.read();
        t.set(MAX_TIMER_SECONDS);
        if (r.done) controller.close();
        else controller.enqueue(r.value);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}

/** How often a file body's keeper re-arms the connection timer, milliseconds. */
export const FILE_BODY_KEEPER_MS = 500;

/**
 * Takes the timer of `request` for a file-backed body of `bytes` bytes (sent by sendfile). Bun
 * sends a file under the server's `idleTimeout` (the header timeout), re-armed only when the
 * socket becomes writable again, which for a slow reader can be longer than that timeout
 * (the kernel reports a full send buffer writable only once about a third of it drained):
 * a slow but steady reader would be cut mid-body. So a keeper re-arms the timer to Bun's longest
 * (255 s) every `FILE_BODY_KEEPER_MS` (`server.timeout`) until the response is handed to the
 * socket whole or the connection is gone (`live`), or until the time the body takes at
 * `minBytesPerSecond` (plus one header timeout) has passed; then it sets the header timeout once
 * and stops, so a client that stopped reading is closed about one header timeout later.
 * Unchanged when no timer is registered.
 */
export function fileBodyTimer(request: Request, bytes: number): void {
  const t = timers.get(request);
  if (!t) return;
  t.claimed = true;
  const started = Date.now();
  const budgetMs =
    t.minBytesPerSecond > 0
      ? (t.headerTimeoutSeconds + bytes / t.minBytesPerSecond) * 1000
      : Number.POSITIVE_INFINITY;
  t.set(MAX_TIMER_SECONDS);
  const keeper = setInterval(() => {
    if (!t.live()) {
      clearInterval(keeper);
      return;
    }
    if (Date.now() - started > budgetMs) {
      clearInterval(keeper);
      t.set(t.headerTimeoutSeconds);
      return;
    }
    t.set(MAX_TIMER_SECONDS);
  }, FILE_BODY_KEEPER_MS);
  // The keeper must not hold the process open on its own (shutdown waits for requests instead).
  keeper.unref();
}
