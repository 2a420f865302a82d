/**
 * The in-order ingest hasher (src/sessions/ingest-hash.ts): what it hashes, when it gives up, and
 * that finalize never trusts it for a chunk generation it did not hash.
 */
import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import { IngestHashes, type RecordedChunks } from "../../src/sessions/ingest-hash.ts";
import { ownPieces } from "../../src/util/release.ts";

/** A fake store of recorded chunks: index → [gen, bytes]. */
function chunksOf(map: Map<number, [string, Uint8Array]>): RecordedChunks {
  return {
    recordedGen: async (i) => map.get(i)?.[0] ?? null,
    open: async (i, gen) => {
      const e = map.get(i);
      if (!e || e[0] !== gen) throw new Error(`no object ${i}.${gen}`);
      return new Blob([new Uint8Array(e[1])]).stream() as ReadableStream<Uint8Array>;
    },
  };
}

/** `chunksOf(map)` that also records the index of every chunk read back from the "store". */
function countingChunksOf(map: Map<number, [string, Uint8Array]>): {
  chunks: RecordedChunks;
  reads: number[];
} {
  const reads: number[] = [];
  const base = chunksOf(map);
  return {
    reads,
    chunks: {
      ...base,
      open: (i, gen) => {
        reads.push(i);
        return base.open!(i, gen);
      },
    },
  };
}

function concat(parts: Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(parts));
}

describe("IngestHashes", () => {
  test("a tapped in-order upload is fully hashed without reading anything back", async () => {
    const h = new IngestHashes();
    const parts = [randomBytes(1000), randomBytes(1000), randomBytes(500)];
    const recorded = new Map<number, [string, Uint8Array]>();
    const { chunks: counting, reads } = countingChunksOf(recorded);
    for (const [i, p] of parts.entries()) {
      const tap = h.tap("s", i);
      expect(tap).not.toBeNull();
      tap!.update(p.subarray(0, 10));
      tap!.update(p.subarray(10));
      recorded.set(i, [`g${i}`, p]);
      tap!.done(`g${i}`);
      h.recorded("s", i, `g${i}`, counting);
    }
    const pre = await h.take("s", ["g0", "g1", "g2"]);
    expect(pre?.from).toBe(3);
    expect(pre?.hasher.digestHex()).toBe(blake3Hex(concat(parts)));
    expect(reads).toEqual([]);
    expect(h.size).toBe(0);
  });

  test("chunks recorded out of order are caught up from the store once the prefix is complete", async () => {
    const h = new IngestHashes();
    const parts = [randomBytes(300), randomBytes(300), randomBytes(300), randomBytes(10)];
    const recorded = new Map<number, [string, Uint8Array]>();
    const chunks = chunksOf(recorded);
    for (const i of [2, 3, 1]) {
      expect(h.tap("s", i)).toBeNull(); // not the next index: no tap
      recorded.set(i, [`g${i}`, parts[i]!]);
      h.recorded("s", i, `g${i}`, chunks);
    }
    recorded.set(0, ["g0", parts[0]!]);
    h.recorded("s", 0, "g0", chunks);
    const pre = await h.take("s", ["g0", "g1", "g2", "g3"]);
    expect(pre?.from).toBe(4);
    expect(pre?.hasher.digestHex()).toBe(blake3Hex(concat(parts)));
  });

  test("re-uploading a hashed index with another generation drops the running hash", async () => {
    const h = new IngestHashes();
    const recorded = new Map<number, [string, Uint8Array]>([[0, ["a", randomBytes(100)]]]);
    const tap = h.tap("s", 0)!;
    tap.update(recorded.get(0)![1]);
    tap.done("a");
    h.recorded("s", 0, "a", chunksOf(recorded));
    recorded.set(0, ["b", randomBytes(100)]);
    h.recorded("s", 0, "b", chunksOf(recorded));
    expect(await h.take("s", ["b"])).toBeNull();
  });

  test("finalize gets nothing when the hashed generations differ from its snapshot", async () => {
    const h = new IngestHashes();
    const recorded = new Map<number, [string, Uint8Array]>([[0, ["a", randomBytes(100)]]]);
    h.recorded("s", 0, "a", chunksOf(recorded));
    expect(await h.take("s", ["z"])).toBeNull();
  });

  test("a failed tap drops the partial hash, and a later catch-up starts from scratch", async () => {
    const h = new IngestHashes();
    const good = randomBytes(200);
    const tap = h.tap("s", 0)!;
    tap.update(randomBytes(50)); // the body broke off after 50 bytes
    tap.fail();
    expect(h.size).toBe(0);
    const recorded = new Map<number, [string, Uint8Array]>([[0, ["g", good]]]);
    h.recorded("s", 0, "g", chunksOf(recorded));
    const pre = await h.take("s", ["g"]);
    expect(pre?.from).toBe(1);
    expect(pre?.hasher.digestHex()).toBe(blake3Hex(good));
  });

  test("a tap still feeding at finalize time makes finalize do a full pass", async () => {
    const h = new IngestHashes();
    h.tap("s", 0)!.update(randomBytes(10));
    expect(await h.take("s", ["g"])).toBeNull();
  });

  test("a store error during catch-up drops the state instead of hashing wrong bytes", async () => {
    const h = new IngestHashes();
    const broken: RecordedChunks = {
      recordedGen: async () => "g",
      open: async () => Promise.reject(new Error("EIO")),
    };
    h.recorded("s", 0, "g", broken);
    expect(await h.take("s", ["g"])).toBeNull();
  });

  test("only one tap feeds at a time, and only for the next index", () => {
    const h = new IngestHashes();
    expect(h.tap("s", 1)).toBeNull();
    const first = h.tap("s", 0);
    expect(first).not.toBeNull();
    expect(h.tap("s", 0)).toBeNull();
  });

  test("keeps at most maxSessions idle sessions, evicting the oldest", () => {
    const h = new IngestHashes(2);
    for (const id of ["a", "b", "c"]) h.tap(id, 5);
    expect(h.size).toBe(2);
    h.forget("b");
    h.forget("c");
    expect(h.size).toBe(0);
  });
});

describe("IngestHashes look-ahead", () => {
  test("out-of-order chunks are held in memory and hashed without reading them back", async () => {
    const h = new IngestHashes(10, 1 << 20);
    const parts = [randomBytes(400), randomBytes(400), randomBytes(400)];
    const recorded = new Map<number, [string, Uint8Array]>();
    const { chunks, reads } = countingChunksOf(recorded);
    for (const i of [2, 1, 0]) {
      const tap = h.tap("s", i, 400)!;
      expect(tap).not.toBeNull();
      tap.update(parts[i]!);
      recorded.set(i, [`g${i}`, parts[i]!]);
      tap.done(`g${i}`);
      h.recorded("s", i, `g${i}`, chunks);
    }
    const pre = await h.take("s", ["g0", "g1", "g2"]);
    expect(pre?.from).toBe(3);
    expect(pre?.hasher.digestHex()).toBe(blake3Hex(concat(parts)));
    expect(reads).toEqual([]);
    expect(h.lookaheadInUse).toBe(0);
  });

  // Both kinds of piece the HTTP engines hand out: `Buffer#slice` is a view, not a copy.
  for (const kind of ["Uint8Array", "Buffer"] as const) {
    test(`held bytes are a copy: the HTTP layer reusing its buffer does not change the hash (${kind} pieces)`, async () => {
      const h = new IngestHashes(10, 1 << 20);
      const part1 = randomBytes(100);
      // The "request body buffer".
      const buffer = kind === "Buffer" ? Buffer.from(part1) : new Uint8Array(part1);
      const recorded = new Map<number, [string, Uint8Array]>([[1, ["g1", part1]]]);
      const tap = h.tap("s", 1, 100)!;
      tap.update(buffer);
      tap.done("g1");
      buffer.fill(0); // reused for the next request
      const part0 = randomBytes(100);
      recorded.set(0, ["g0", part0]);
      h.recorded("s", 1, "g1", chunksOf(recorded));
      h.recorded("s", 0, "g0", chunksOf(recorded));
      const pre = await h.take("s", ["g0", "g1"]);
      expect(pre?.hasher.digestHex()).toBe(blake3Hex(concat([part0, part1])));
    });
  }

  test("a held chunk replaced by a later upload of the same index is read back, not hashed stale", async () => {
    const h = new IngestHashes(10, 1 << 20);
    const stale = randomBytes(50);
    const fresh = randomBytes(50);
    const tap = h.tap("s", 1, 50)!;
    tap.update(stale);
    tap.done("old");
    const part0 = randomBytes(50);
    const recorded = new Map<number, [string, Uint8Array]>([
      [0, ["g0", part0]],
      [1, ["new", fresh]],
    ]);
    h.recorded("s", 0, "g0", chunksOf(recorded));
    const pre = await h.take("s", ["g0", "new"]);
    expect(pre?.hasher.digestHex()).toBe(blake3Hex(concat([part0, fresh])));
  });

  test("the look-ahead budget is never exceeded, and a failed or forgotten hold releases it", () => {
    const h = new IngestHashes(10, 1000);
    const a = h.tap("s", 1, 600);
    expect(a).not.toBeNull();
    expect(h.tap("s", 2, 600)).toBeNull(); // over budget: read back later instead
    expect(h.lookaheadInUse).toBe(600);
    a!.fail();
    expect(h.lookaheadInUse).toBe(0);
    const b = h.tap("s", 3, 500)!;
    b.update(randomBytes(500));
    b.done("g3");
    expect(h.lookaheadInUse).toBe(500);
    h.forget("s");
    expect(h.lookaheadInUse).toBe(0);
  });

  test("a held body longer or shorter than declared is not kept: its chunk is read back, and the hash is right", async () => {
    for (const actual of [399, 401]) {
      const h = new IngestHashes(10, 1 << 20);
      const parts = [randomBytes(400), randomBytes(400)];
      const recorded = new Map<number, [string, Uint8Array]>();
      const { chunks, reads } = countingChunksOf(recorded);
      const tap = h.tap("s", 1, 400)!;
      tap.update(randomBytes(actual).subarray(0, 200));
      tap.update(randomBytes(actual - 200));
      tap.done("g1");
      expect(h.lookaheadInUse).toBe(0);
      // The store's own length check decides what is recorded; here the right bytes are.
      recorded.set(1, ["g1", parts[1]!]);
      recorded.set(0, ["g0", parts[0]!]);
      h.recorded("s", 1, "g1", chunks);
      h.recorded("s", 0, "g0", chunks);
      const pre = await h.take("s", ["g0", "g1"]);
      expect(pre?.hasher.digestHex()).toBe(blake3Hex(concat(parts)));
      expect(reads).toEqual([0, 1]);
    }
  });

  test("look-ahead buffers are reused: many held chunks in turn keep hashing right", async () => {
    const h = new IngestHashes(10, 2000);
    const parts = Array.from({ length: 12 }, () => randomBytes(500));
    const recorded = new Map<number, [string, Uint8Array]>();
    const chunks = chunksOf(recorded);
    // Pairs in reverse order: each odd index is held, then hashed when its even one arrives.
    for (let i = 0; i < parts.length; i += 2) {
      for (const j of [i + 1, i]) {
        const tap = h.tap("s", j, 500);
        tap?.update(parts[j]!);
        recorded.set(j, [`g${j}`, parts[j]!]);
        tap?.done(`g${j}`);
        h.recorded("s", j, `g${j}`, chunks);
        await Promise.resolve();
      }
    }
    const pre = await h.take(
      "s",
      parts.map((_, j) => `g${j}`),
    );
    expect(pre?.from).toBe(parts.length);
    expect(pre?.hasher.digestHex()).toBe(blake3Hex(concat(parts)));
    expect(h.lookaheadInUse).toBe(0);
  });

  test("a catch-up hashes every piece read back from a stream that owns its pieces, then frees each", async () => {
    const h = new IngestHashes();
    const parts = [randomBytes(3000), randomBytes(2000)];
    const handed: Uint8Array[] = [];
    const chunks: RecordedChunks = {
      recordedGen: async (i) => (i < parts.length ? `g${i}` : null),
      open: async (i) => {
        const halves = [parts[i]!.subarray(0, 1000), parts[i]!.subarray(1000)].map((p) => new Uint8Array(p));
        handed.push(...halves);
        let k = 0;
        return ownPieces(
          new ReadableStream<Uint8Array>({
            pull(c) {
              const p = halves[k++];
              if (p) c.enqueue(p);
              else c.close();
            },
          }),
        );
      },
    };
    h.recorded("s", 1, "g1", chunks);
    const pre = await h.take("s", ["g0", "g1"]);
    expect(pre?.from).toBe(2);
    expect(pre?.hasher.digestHex()).toBe(blake3Hex(concat(parts)));
    expect(handed.length).toBe(4);
    expect(handed.every((p) => p.byteLength === 0)).toBe(true);
  });
});
