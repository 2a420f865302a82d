/**
 * @module http/response-timer
 * Bun.serve's connection timer (`idleTimeout`, re-armed by `server.timeout(request, s)`) is not
 * reset by the bytes of a response as they go out: a download slower than the timer is cut
 * mid-body (measured on Bun 1.4.5). The server switches the timer off while a handler runs and
 * registers here how to re-arm it; a download body re-arms it to Bun's longest timer (255 s) each
 * time Bun pulls a piece, and every other response leaves it to the server, which re-arms it once
 * (the header timeout) for the response and the keep-alive idle after it. Bun pulls a piece only
 * when its send buffer has room, so a pull measures the client draining that buffer, not each
 * byte: hence the longest timer. A client that stops reading a download is closed within about
 * 255 s.
 */

/** How to set the connection timer of one request, in seconds (0 = off; Bun caps it at 255). */
interface Timer {
  set(seconds: number): void;
  /** True once a response body took charge of the timer. */
  claimed: boolean;
}

const timers = new WeakMap<Request, Timer>();

/** Registers how to set the connection timer of `request` (the server does, per request). */
export function registerTimer(request: Request, set: (seconds: number) => void): void {
  timers.set(request, { set, claimed: false });
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

/**
 * Marks the timer of `request` as taken by a file-backed body. Bun sends a file under the
 * server's own `idleTimeout` (the header timeout) whatever the request's timer says, restarting
 * it whenever the socket takes more bytes: a client that takes nothing for that long is closed
 * (docs/repro/bun-sendfile-timer.ts; docs/design.md#downloads-and-content-length).
 */
export function fileBodyTimer(request: Request): void {
  const t = timers.get(request);
  if (!t) return;
  t.claimed = true;
}
