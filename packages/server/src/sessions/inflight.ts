/**
 * @module server/sessions/inflight
 * Admission of chunk PUTs (docs/operator-guide.md#chunk-upload-slots). Every chunk PUT holds a
 * connection and a file descriptor (or an S3 connection) for as long as its body streams, so the
 * slots are capped per account and over all accounts, and they go to clients that move bytes:
 * - an account may hold at most `min(maxPerAccount, fair share)` slots, the fair share being
 *   `max(fairFloor, floor(maxTotal / active accounts))` (the newcomer's account counted);
 * - when several client addresses hold slots, an address may hold at most its fair share too,
 *   computed the same way over active addresses (one address alone, e.g. every client behind one
 *   proxy, is not limited by it);
 * - when all `maxTotal` slots are taken, a newcomer within its shares evicts the slowest holder
 *   that is over its account's or address's share, or that moves fewer than
 *   `minBytesPerSecond` on average after `graceMs`: the evicted PUT is answered 408
 *   `request_timeout`. With no such holder the newcomer gets 429 `too_many_requests` with
 *   `Retry-After: 1` (a real overload).
 * - the bytes held count as well as the requests: the chunk bodies streaming at once may declare
 *   at most `maxBytes` together, since the server buffers part of every body it reads whatever
 *   its size. A newcomer that does not fit, and whose account is within its fair share of
 *   `maxBytes` (at least one chunk), evicts as above a slow holder or one whose account is over
 *   that share; otherwise, or with no such holder, 429.
 */
import { type AppError, fail } from "@esync/protocol/errors.ts";

/** Settings of `ChunkSlots`. */
export interface SlotPolicy {
  /** Most slots one account may hold (`ESYNC_MAX_INFLIGHT_CHUNKS_PER_USER`). */
  maxPerAccount: number;
  /** Most slots over all accounts (`ESYNC_MAX_INFLIGHT_CHUNKS`). */
  maxTotal: number;
  /** Smallest fair share of an account or address, slots (`ESYNC_INFLIGHT_CHUNKS_FAIR_FLOOR`). */
  fairFloor: number;
  /** Time a holder may move no bytes before it counts as slow, milliseconds. */
  graceMs: number;
  /** Below this average rate, bytes per second, a holder past `graceMs` is slow (0: never). */
  minBytesPerSecond: number;
  /**
   * Most body bytes, by the chunks' lengths, streaming at once over all accounts
   * (`ESYNC_MAX_INFLIGHT_CHUNK_BYTES`); unset: no byte budget.
   */
  maxBytes?: number;
}

/** What a slot's holder exposes once its body is open: its progress, and how to stop it. */
export interface SlotHolder {
  /** Body bytes received so far. */
  received(): number;
  /** Fails the body with `error` (the request is then answered with it). */
  evict(error: AppError): void;
}

/** One slot taken by `ChunkSlots.acquire`. */
export interface Slot {
  /** Makes the slot evictable: before this, it is never chosen. */
  attach(holder: SlotHolder): void;
  /** Gives the slot back; idempotent (an evicted slot is already given back). */
  release(): void;
}

interface Held {
  account: string;
  address: string;
  /** The chunk's length, bytes. */
  bytes: number;
  /** Milliseconds (the limiter's clock) when the slot was taken. */
  since: number;
  holder: SlotHolder | null;
}

function add(m: Map<string, number>, k: string, d: number): void {
  const n = (m.get(k) ?? 0) + d;
  if (n <= 0) m.delete(k);
  else m.set(k, n);
}

/** Chunk PUT slots per account, per address and in total; see the module comment. */
export class ChunkSlots {
  private readonly held = new Set<Held>();
  private readonly perAccount = new Map<string, number>();
  private readonly perAddress = new Map<string, number>();
  private readonly bytesPerAccount = new Map<string, number>();
  private heldBytes = 0;

  /**
   * @param policy the caps and the slowness rule.
   * @param nowMs the clock, milliseconds (tests pass a manual one).
   */
  constructor(
    private readonly policy: SlotPolicy,
    private readonly nowMs: () => number = () => performance.now(),
  ) {}

  /** Fair share of one of `active` accounts or addresses, slots. */
  private share(active: number): number {
    return Math.max(this.policy.fairFloor, Math.floor(this.policy.maxTotal / Math.max(1, active)));
  }

  /**
   * Takes a slot for a chunk of `bytes` bytes for `account` connecting from `address`, evicting
   * a slow or over-share holder when every slot is taken or the byte budget is spent.
   * @throws AppError `too_many_requests` (429, `Retry-After: 1`) when `account` or `address` is
   *   at its cap, or every slot is taken (or the byte budget spent) and no holder may be evicted.
   */
  acquire(account: string, address: string, bytes = 0): Slot {
    const p = this.policy;
    const accounts = this.perAccount.size + (this.perAccount.has(account) ? 0 : 1);
    const accountShare = this.share(accounts);
    const accountCap = Math.min(p.maxPerAccount, accountShare);
    if ((this.perAccount.get(account) ?? 0) >= accountCap)
      throw fail(
        "too_many_requests",
        `At most ${accountCap} chunk uploads in flight per user while ${accounts} users upload`,
        { retryAfter: 1 },
      );
    const addresses = this.perAddress.size + (this.perAddress.has(address) ? 0 : 1);
    const addressShare = addresses > 1 ? this.share(addresses) : Number.POSITIVE_INFINITY;
    if ((this.perAddress.get(address) ?? 0) >= addressShare)
      throw fail(
        "too_many_requests",
        `At most ${addressShare} chunk uploads in flight per client address while ${addresses} addresses upload`,
        { retryAfter: 1 },
      );
    if (this.held.size >= p.maxTotal) this.evictFor(accountShare, addressShare, null);
    if (p.maxBytes !== undefined) {
      // An account may always stream one chunk; beyond that, its share of the byte budget.
      const byteShare = Math.max(bytes, Math.floor(p.maxBytes / accounts));
      if (this.heldBytes + bytes > p.maxBytes) {
        // Only a newcomer within its own share takes bytes from others.
        if ((this.bytesPerAccount.get(account) ?? 0) + bytes > byteShare)
          throw fail("too_many_requests", "The server has too many chunk bytes in flight; retry", {
            retryAfter: 1,
          });
        while (this.heldBytes + bytes > p.maxBytes && this.held.size > 0)
          this.evictFor(accountShare, addressShare, byteShare);
      }
    }
    const h: Held = { account, address, bytes, since: this.nowMs(), holder: null };
    this.held.add(h);
    this.heldBytes += bytes;
    add(this.bytesPerAccount, account, bytes);
    add(this.perAccount, account, 1);
    add(this.perAddress, address, 1);
    return {
      attach: (holder) => {
        h.holder = holder;
      },
      release: () => this.drop(h),
    };
  }

  /**
   * Evicts the slowest evictable holder (408 to its request).
   * @throws AppError `too_many_requests` when there is none.
   */
  private evictFor(accountShare: number, addressShare: number, byteShare: number | null): void {
    const victim = this.slowestEvictable(accountShare, addressShare, byteShare);
    if (!victim)
      throw fail("too_many_requests", "The server has too many chunk uploads in flight; retry", {
        retryAfter: 1,
      });
    const rate = Math.round(this.rate(victim));
    this.drop(victim);
    victim.holder?.evict(
      fail(
        "request_timeout",
        `The chunk body arrived at ${rate} bytes/s and its upload slot went to another client; retry faster`,
      ),
    );
  }

  /** Average rate of a holder since its slot was taken, bytes per second (elapsed at least 1 s). */
  private rate(h: Held): number {
    const elapsed = Math.max(1000, this.nowMs() - h.since);
    return ((h.holder?.received() ?? 0) * 1000) / elapsed;
  }

  /** The evictable holder with the lowest rate (the oldest among equals), or null. */
  private slowestEvictable(
    accountShare: number,
    addressShare: number,
    byteShare: number | null,
  ): Held | null {
    const p = this.policy;
    const now = this.nowMs();
    let best: Held | null = null;
    let bestRate = Number.POSITIVE_INFINITY;
    for (const h of this.held) {
      if (!h.holder) continue;
      const rate = this.rate(h);
      const over =
        (this.perAccount.get(h.account) ?? 0) > accountShare ||
        (this.perAddress.get(h.address) ?? 0) > addressShare ||
        (byteShare !== null && (this.bytesPerAccount.get(h.account) ?? 0) > byteShare);
      const slow = p.minBytesPerSecond > 0 && now - h.since >= p.graceMs && rate < p.minBytesPerSecond;
      if (!over && !slow) continue;
      if (rate < bestRate || (rate === bestRate && best && h.since < best.since)) {
        best = h;
        bestRate = rate;
      }
    }
    return best;
  }

  private drop(h: Held): void {
    if (!this.held.delete(h)) return;
    add(this.perAccount, h.account, -1);
    add(this.perAddress, h.address, -1);
    add(this.bytesPerAccount, h.account, -h.bytes);
    this.heldBytes -= h.bytes;
  }

  /** Chunk bytes (by their lengths) of the slots held now. */
  bytesInFlight(): number {
    return this.heldBytes;
  }

  /** Slots held by `account` (all accounts when omitted). */
  inflight(account?: string): number {
    return account === undefined ? this.held.size : (this.perAccount.get(account) ?? 0);
  }
}
