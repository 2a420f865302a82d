/**
 * @module sessions/inflight
 * Caps on chunk PUTs in flight, per user and over all users (issue 10, defect 2): every chunk
 * PUT holds a connection and a file descriptor (or an S3 connection) for as long as its body
 * streams, so without a cap one user, or a flood of self-made keys, could take them all.
 */
import { fail } from "../errors/errors.ts";

/** Counts in-flight work per key and in total, refusing what is over either cap. */
export class InflightLimiter {
  private readonly perKey = new Map<string, number>();
  private total = 0;

  /**
   * @param maxPerKey most in flight for one key (user address).
   * @param maxTotal most in flight over all keys.
   */
  constructor(
    private readonly maxPerKey: number,
    private readonly maxTotal: number,
  ) {}

  /**
   * Takes a slot for `key`; call the returned function exactly once when the work ends.
   * @throws AppError `too_many_requests` (429, `Retry-After: 1`) when `key` or the process is at
   *   its cap.
   */
  acquire(key: string): () => void {
    const n = this.perKey.get(key) ?? 0;
    if (n >= this.maxPerKey)
      throw fail("too_many_requests", `At most ${this.maxPerKey} chunk uploads in flight per user`, {
        retryAfter: 1,
      });
    if (this.total >= this.maxTotal)
      throw fail("too_many_requests", "The server has too many chunk uploads in flight; retry", {
        retryAfter: 1,
      });
    this.perKey.set(key, n + 1);
    this.total++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const left = (this.perKey.get(key) ?? 1) - 1;
      if (left === 0) this.perKey.delete(key);
      else this.perKey.set(key, left);
    };
  }

  /** Work in flight for `key` (all keys when omitted). */
  inflight(key?: string): number {
    return key === undefined ? this.total : (this.perKey.get(key) ?? 0);
  }
}
