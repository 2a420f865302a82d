import { describe, expect, test } from "bun:test";
import { AppError } from "@esync/protocol/errors.ts";
import { ChunkSlots, type Slot, type SlotPolicy } from "../../src/sessions/inflight.ts";

/** A manual millisecond clock. */
function clock() {
  const c = { t: 0, now: () => c.t };
  return c;
}

const POLICY: SlotPolicy = {
  maxPerAccount: 32,
  maxTotal: 8,
  fairFloor: 1,
  graceMs: 5000,
  minBytesPerSecond: 1024,
};

/** A holder whose byte count the test sets, recording its eviction. */
class Holder {
  bytes = 0;
  evicted: AppError | null = null;
  received = () => this.bytes;
  evict = (e: AppError) => {
    this.evicted = e;
  };
}

function take(slots: ChunkSlots, account: string, address = "10.0.0.1"): { slot: Slot; h: Holder } {
  const slot = slots.acquire(account, address);
  const h = new Holder();
  slot.attach(h);
  return { slot, h };
}

function codeOf(f: () => unknown): string | null {
  try {
    f();
    return null;
  } catch (e) {
    return e instanceof AppError ? `${e.status} ${e.code}` : String(e);
  }
}

describe("ChunkSlots", () => {
  test("refuses an account past ESYNC_MAX_INFLIGHT_CHUNKS_PER_USER with 429 and Retry-After 1, and admits again after a release", () => {
    const slots = new ChunkSlots({ ...POLICY, maxPerAccount: 2 }, clock().now);
    const a = take(slots, "a");
    take(slots, "a");
    let err: AppError | null = null;
    try {
      slots.acquire("a", "10.0.0.1");
    } catch (e) {
      err = e as AppError;
    }
    expect(err?.code).toBe("too_many_requests");
    expect(err?.status).toBe(429);
    expect(err?.extra.retryAfter).toBe(1);
    a.slot.release();
    a.slot.release(); // idempotent
    expect(slots.inflight("a")).toBe(1);
    expect(codeOf(() => take(slots, "a"))).toBeNull();
  });

  test("returns 429 at the global cap when every holder is within its share and moving bytes (a real overload)", () => {
    const c = clock();
    const slots = new ChunkSlots({ ...POLICY, maxTotal: 4, fairFloor: 1 }, c.now);
    const held = ["a", "b", "c", "d"].map((k) => take(slots, k));
    c.t = 10_000;
    for (const h of held) h.h.bytes = 1_000_000;
    expect(codeOf(() => slots.acquire("e", "10.0.0.1"))).toBe("429 too_many_requests");
    expect(held.every((h) => h.h.evicted === null)).toBe(true);
  });

  test("at the global cap, a newcomer evicts the slowest holder of an account over its fair share (408 request_timeout)", () => {
    const c = clock();
    const slots = new ChunkSlots({ ...POLICY, maxTotal: 8, fairFloor: 1 }, c.now);
    // Two accounts fill the cap, 4 slots each (share 4 while they are alone).
    const a = [0, 1, 2, 3].map(() => take(slots, "a"));
    const b = [0, 1, 2, 3].map(() => take(slots, "b"));
    c.t = 1000;
    a.forEach((x, i) => {
      x.h.bytes = 10_000 * (i + 1);
    });
    b.forEach((x, i) => {
      x.h.bytes = 100 * (i + 1);
    });
    // A third account: share floor(8 / 3) = 2; both are over it, b's first holder is slowest.
    const s = slots.acquire("c", "10.0.0.1");
    expect(b[0]!.h.evicted?.code).toBe("request_timeout");
    expect(b[0]!.h.evicted?.status).toBe(408);
    expect([...a, ...b.slice(1)].every((x) => x.h.evicted === null)).toBe(true);
    expect(slots.inflight()).toBe(8);
    expect(slots.inflight("b")).toBe(3);
    // The evicted holder's own release later changes nothing.
    b[0]!.slot.release();
    expect(slots.inflight()).toBe(8);
    s.release();
  });

  test("an account at its fair share is refused while others hold slots, and admitted again as they leave", () => {
    const c = clock();
    const slots = new ChunkSlots({ ...POLICY, maxTotal: 8, fairFloor: 1 }, c.now);
    const others = ["a", "b", "c"].map((k) => take(slots, k));
    // Four active accounts: share 2.
    take(slots, "d");
    take(slots, "d");
    expect(codeOf(() => slots.acquire("d", "10.0.0.1"))).toBe("429 too_many_requests");
    for (const o of others) o.slot.release();
    expect(codeOf(() => take(slots, "d"))).toBeNull();
  });

  test("the fair share never drops below ESYNC_INFLIGHT_CHUNKS_FAIR_FLOOR", () => {
    const slots = new ChunkSlots({ ...POLICY, maxTotal: 8, fairFloor: 3 }, clock().now);
    for (const k of ["a", "b", "c", "d", "e"]) take(slots, k);
    // Six accounts would share 8 as 1 each; the floor lets "a" hold 3.
    take(slots, "a");
    take(slots, "a");
    expect(slots.inflight("a")).toBe(3);
    expect(codeOf(() => slots.acquire("a", "10.0.0.1"))).toBe("429 too_many_requests");
  });

  test("a holder below the minimum rate past the grace is evicted even within its share; not before the grace", () => {
    const c = clock();
    const slots = new ChunkSlots({ ...POLICY, maxTotal: 2, fairFloor: 4 }, c.now);
    const slow = take(slots, "a");
    const fast = take(slots, "b");
    c.t = 4000;
    fast.h.bytes = 1_000_000;
    slow.h.bytes = 10;
    expect(codeOf(() => slots.acquire("c", "10.0.0.1"))).toBe("429 too_many_requests");
    c.t = 5000;
    fast.h.bytes = 2_000_000;
    expect(codeOf(() => take(slots, "c"))).toBeNull();
    expect(slow.h.evicted?.code).toBe("request_timeout");
    expect(fast.h.evicted).toBeNull();
  });

  test("a slot whose body is not attached yet is never evicted", () => {
    const c = clock();
    const slots = new ChunkSlots({ ...POLICY, maxTotal: 1, fairFloor: 1 }, c.now);
    slots.acquire("a", "10.0.0.1");
    c.t = 60_000;
    expect(codeOf(() => slots.acquire("b", "10.0.0.1"))).toBe("429 too_many_requests");
  });

  test("client addresses share the cap: an address over its share loses its slowest holder to another address", () => {
    const c = clock();
    const slots = new ChunkSlots({ ...POLICY, maxTotal: 4, fairFloor: 1 }, c.now);
    // Four accounts on one address fill the cap (one address alone is not limited by its share).
    const flood = ["a", "b", "c", "d"].map((k) => take(slots, k, "10.0.0.66"));
    c.t = 1000;
    flood.forEach((x, i) => {
      x.h.bytes = 1000 * (i + 1) ** 2;
    });
    // Another address: share 2 each; 10.0.0.66 holds 4, over it.
    expect(codeOf(() => take(slots, "z", "10.0.0.7"))).toBeNull();
    expect(flood[0]!.h.evicted?.code).toBe("request_timeout");
    // The flooding address, now at 3 with two addresses active, is refused.
    expect(codeOf(() => slots.acquire("e", "10.0.0.66"))).toBe("429 too_many_requests");
  });

  describe("byte budget (ESYNC_MAX_INFLIGHT_CHUNK_BYTES)", () => {
    const MiB = 1024 * 1024;
    const byBytes = (c = clock()) =>
      new ChunkSlots({ ...POLICY, maxTotal: 1000, fairFloor: 1, maxBytes: 64 * MiB }, c.now);
    const takeBytes = (slots: ChunkSlots, account: string, bytes: number) => {
      const slot = slots.acquire(account, "10.0.0.1", bytes);
      const h = new Holder();
      slot.attach(h);
      return { slot, h };
    };

    test("counts the chunks' lengths: a chunk that does not fit is 429 with Retry-After 1 when no holder may be evicted, and fits once bytes are released", () => {
      const slots = byBytes();
      const held = [0, 1, 2, 3].map(() => takeBytes(slots, "a", 16 * MiB));
      expect(slots.bytesInFlight()).toBe(64 * MiB);
      // "a" alone is within its share (the whole budget): nobody is over it, nobody is slow.
      let err: unknown;
      try {
        slots.acquire("a", "10.0.0.1", 16 * MiB);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).status).toBe(429);
      expect((err as AppError).extra.retryAfter).toBe(1);
      held[0]!.slot.release();
      expect(slots.bytesInFlight()).toBe(48 * MiB);
      expect(codeOf(() => slots.acquire("a", "10.0.0.1", 16 * MiB))).toBeNull();
    });

    test("a newcomer within its share evicts (408) the slowest holder of an account over its byte share; one over its own share gets 429 instead", () => {
      const c = clock();
      const slots = byBytes(c);
      const held = [0, 1, 2, 3].map(() => takeBytes(slots, "hog", 16 * MiB));
      held.forEach((x, i) => {
        x.h.bytes = (i + 1) * 1000;
      });
      c.t = 1000;
      // "new" holds nothing: its share is 32 MiB of the 64 (two accounts); "hog" holds 64.
      const fresh = takeBytes(slots, "new", 16 * MiB);
      expect(held[0]!.h.evicted?.status).toBe(408);
      expect(held.slice(1).every((x) => x.h.evicted === null)).toBe(true);
      expect(slots.bytesInFlight()).toBe(64 * MiB);
      // "hog" is over its share: its newcomer does not evict anyone.
      expect(codeOf(() => slots.acquire("hog", "10.0.0.1", 16 * MiB))).toBe("429 too_many_requests");
      expect(fresh.h.evicted).toBeNull();
    });
  });
});
