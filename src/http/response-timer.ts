/**
 * @module http/response-timer
 * Bun.serve's connection timer (`idleTimeout`, re-armed by `server.timeout(request, s)`) is not
 * reset by the bytes of a response as they go out: a download slower than the timer is cut
 * mid-body (measured on Bun 1.4.5). The server switches the timer off while a handler runs and
 * registers here how to re-arm it; a download body re-arms it as it streams (an idle timer on the
 * response: a client that stops reading is closed after `idleSeconds`), and every other response
 * leaves it to the server, which re-arms it once for the response and the keep-alive idle after it.
 */

/** How to set the connection timer of one request, in seconds (0 = off; Bun caps it at 255). */
interface Timer {
  set(seconds: number): void;
  idleSeconds: number;
  /** True once a response body took charge of the timer. */
  claimed: boolean;
}

const timers = new WeakMap<Request, Timer>();

/** Registers how to set the connection timer of `request` (the server does, per request). */
export function registerTimer(request: Request, set: (seconds: number) => void, idleSeconds: number): void {
  timers.set(request, { set, idleSeconds, claimed: false });
}

/** True when a response body of `request` took charge of its timer (the server then leaves it). */
export function timerClaimed(request: Request): boolean {
  return timers.get(request)?.claimed ?? false;
}

/** Longest timer Bun accepts, seconds. */
export const MAX_TIMER_SECONDS = 255;

/**
 * `body` re-arming the connection timer of `request` at every piece it passes on, so the timer
 * measures silence, not the length of the download. Unchanged when no timer is registered.
 */
export function idleTimedStream(
  request: Request,
  body: ReadableStream<Uint8Array>,
): ReadableStream<Uint8Array> {
  const t = timers.get(request);
  if (!t) return body;
  t.claimed = true;
  t.set(t.idleSeconds);
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const r = await reader.read();
        t.set(t.idleSeconds);
        if (r.done) controller.close();
        else controller.enqueue(r.value);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}

/**
 * Sets the connection timer of `request` for a file-backed body Bun sends by itself (no pieces
 * to watch): the longest timer Bun allows, so the body has that long to go out.
 */
export function fileBodyTimer(request: Request): void {
  const t = timers.get(request);
  if (!t) return;
  t.claimed = true;
  t.set(MAX_TIMER_SECONDS);
}
