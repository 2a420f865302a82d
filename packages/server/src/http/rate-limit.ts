/**
 * @module server/http/rate-limit
 * Per-client request limits of the anonymous routes (docs/sharing.md): a fixed one-minute window
 * per client address, `ESYNC_SHARE_RATE_LIMIT` requests in it, 429 `too_many_requests` with
 * `Retry-After` (seconds to the window's end) beyond. In memory, per process.
 */
import { fail } from "@esync/protocol/errors.ts";
import type { Clock } from "../util/clock.ts";

/** Length of a window, seconds. */
const WINDOW_SECONDS = 60;
/** Most addresses tracked; past it, windows that ended are dropped (then, if need be, all). */
const MAX_TRACKED = 100_000;

/** Fixed-window request counter per key. */
export class RateLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  /** `perMinute` requests per key and window; 0 = no limit. */
  constructor(
    private readonly perMinute: number,
    private readonly clock: Clock,
  ) {}

  /**
   * Counts one request of `key`.
   * @throws AppError `too_many_requests` (429, `Retry-After`) past the limit.
   */
  take(key: string): void {
    if (this.perMinute <= 0) return;
    const now = this.clock.now();
    let w = this.windows.get(key);
    if (!w || now - w.start >= WINDOW_SECONDS) {
      if (!w && this.windows.size >= MAX_TRACKED) this.prune(now);
      w = { start: now, count: 0 };
      this.windows.set(key, w);
    }
    w.count++;
    if (w.count > this.perMinute)
      throw fail("too_many_requests", "Too many requests from this address; retry later", {
        retryAfter: Math.max(1, w.start + WINDOW_SECONDS - now),
      });
  }

  /** Drops the windows that ended; all of them when none had. */
  private prune(now: number): void {
    for (const [k, w] of this.windows) if (now - w.start >= WINDOW_SECONDS) this.windows.delete(k);
    if (this.windows.size >= MAX_TRACKED) this.windows.clear();
  }
}
