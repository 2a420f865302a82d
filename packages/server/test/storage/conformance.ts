/**
 * The one `BlobStore` conformance suite: every backend runs it unchanged (see
 * `disk.test.ts`, `s3.test.ts`) and must pass all of it. It checks the contract written in
 * `src/storage/blob-store.ts`. Each test works under a key prefix of its own, so one store
 * serves the whole suite.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import {
  BlobLengthError,
  BlobNotFoundError,
  type BlobStore,
  isComposable,
} from "../../src/storage/blob-store.ts";

/** A store under test and how to dispose of it. */
export interface StoreUnderTest {
  store: BlobStore;
  cleanup: () => Promise<void>;
}

const MiB = 1024 * 1024;

/** Time allowed for building a store, in ms: it may install and start a real S3 server. */
export const SETUP_TIMEOUT_MS = 10 * 60_000;

/** Deterministic pseudo-random bytes (xorshift), different for each `seed`. */
export function pattern(size: number, seed = 1): Uint8Array {
  const out = new Uint8Array(size);
  let x = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** A stream yielding `bytes` in pieces of `pieceSize` bytes, then `extra` pieces as given. */
export function bodyOf(
  bytes: Uint8Array,
  pieceSize = 64 * 1024,
  extra: Uint8Array[] = [],
): ReadableStream<Uint8Array> {
  const pieces: Uint8Array[] = [];
  for (let i = 0; i < bytes.byteLength; i += pieceSize) pieces.push(bytes.subarray(i, i + pieceSize));
  pieces.push(...extra);
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(c) {
      const p = pieces[i++];
      if (p === undefined) c.close();
      else c.enqueue(p);
    },
  });
}

/** A stream of `size` pattern bytes generated piece by piece (never held whole in memory). */
export function generatedBody(
  size: number,
  seed: number,
  pieceSize = 256 * 1024,
): ReadableStream<Uint8Array> {
  const piece = pattern(pieceSize, seed);
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(c) {
      if (sent >= size) return c.close();
      const n = Math.min(pieceSize, size - sent);
      // A fresh copy each time: the store may keep a piece after enqueue.
      c.enqueue(piece.slice(0, n));
      sent += n;
    },
  });
}

/** SHA-256 (hex) of what `generatedBody(size, seed, pieceSize)` yields. */
export function generatedDigest(size: number, seed: number, pieceSize = 256 * 1024): string {
  const piece = pattern(pieceSize, seed);
  const h = createHash("sha256");
  for (let sent = 0; sent < size; sent += pieceSize)
    h.update(piece.subarray(0, Math.min(pieceSize, size - sent)));
  return h.digest("hex");
}

/** Reads a stream to its end. */
export async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** Streams through a stream, returning its length and SHA-256 (hex) without keeping it. */
export async function digestOf(
  stream: ReadableStream<Uint8Array>,
): Promise<{ size: number; sha256: string }> {
  const h = createHash("sha256");
  let size = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    h.update(value);
    size += value.byteLength;
  }
  return { size, sha256: h.digest("hex") };
}

/** Waits for `promise` to reject and returns the reason (fails the test if it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new Error("expected a rejection, but the promise resolved");
}

/**
 * Registers the conformance tests of one backend. `make` builds a ready store (it is called
 * once, before the tests); if it throws, every test fails with its error.
 */
export function blobStoreConformance(name: string, make: () => Promise<StoreUnderTest>): void {
  describe(`BlobStore conformance: ${name}`, () => {
    let ctx: StoreUnderTest | undefined;
    let setupError: unknown;
    const run = Math.random().toString(36).slice(2, 8);
    let n = 0;

    beforeAll(async () => {
      try {
        ctx = await make();
      } catch (e) {
        setupError = e;
      }
    }, SETUP_TIMEOUT_MS);
    afterAll(async () => {
      await ctx?.cleanup();
    }, 60_000);

    /** The store, or the setup failure thrown in the test that asked for it. */
    const store = (): BlobStore => {
      if (!ctx) throw setupError ?? new Error(`store ${name} was not built`);
      return ctx.store;
    };
    /** A key prefix no other test uses (ends in `/`). */
    const fresh = (): string => `conf-${run}/t${++n}/`;

    test("put then get returns exactly the bytes stored", async () => {
      const s = store();
      const p = fresh();
      for (const size of [1, 100, 64 * 1024 + 7, 300 * 1024]) {
        const data = pattern(size, size);
        await s.put(`${p}${size}`, bodyOf(data, 10_000), size);
        expect(await readAll(await s.get(`${p}${size}`))).toEqual(data);
      }
    });

    test("put over an existing key replaces the object whole", async () => {
      const s = store();
      const key = `${fresh()}obj`;
      await s.put(key, bodyOf(pattern(5000, 1)), 5000);
      const second = pattern(1234, 2);
      await s.put(key, bodyOf(second), 1234);
      expect(await s.size(key)).toBe(1234);
      expect(await readAll(await s.get(key))).toEqual(second);
    });

    test("get with a range returns bytes [start, end) of the object", async () => {
      const s = store();
      const key = `${fresh()}obj`;
      const data = pattern(100_000, 3);
      await s.put(key, bodyOf(data), data.byteLength);
      for (const [start, end] of [
        [0, 1],
        [0, 100_000],
        [1, 2],
        [12_345, 67_890],
        [99_999, 100_000],
      ] as const) {
        expect(await readAll(await s.get(key, { start, end }))).toEqual(data.subarray(start, end));
      }
    });

    test("get clamps a range end past the object size to the size", async () => {
      const s = store();
      const key = `${fresh()}obj`;
      const data = pattern(1000, 4);
      await s.put(key, bodyOf(data), 1000);
      expect(await readAll(await s.get(key, { start: 990, end: 5000 }))).toEqual(data.subarray(990));
      expect(await readAll(await s.get(key, { start: 0, end: Number.MAX_SAFE_INTEGER }))).toEqual(data);
    });

    test("get of an empty range, or one starting at or past the end, yields no bytes", async () => {
      const s = store();
      const key = `${fresh()}obj`;
      await s.put(key, bodyOf(pattern(1000, 5)), 1000);
      for (const [start, end] of [
        [10, 10],
        [500, 400],
        [1000, 1001],
        [1000, 1000],
        [5000, 6000],
      ] as const) {
        expect((await readAll(await s.get(key, { start, end }))).byteLength).toBe(0);
      }
    });

    test("a 0-byte object can be stored, sized, listed, read whole and by range", async () => {
      const s = store();
      const p = fresh();
      const key = `${p}empty`;
      await s.put(key, bodyOf(new Uint8Array(0)), 0);
      expect(await s.size(key)).toBe(0);
      expect(await s.list(p)).toEqual([key]);
      expect((await readAll(await s.get(key))).byteLength).toBe(0);
      expect((await readAll(await s.get(key, { start: 0, end: 10 }))).byteLength).toBe(0);
    });

    test("size returns the byte count of an object and null for a missing one", async () => {
      const s = store();
      const p = fresh();
      await s.put(`${p}a`, bodyOf(pattern(777, 6)), 777);
      expect(await s.size(`${p}a`)).toBe(777);
      expect(await s.size(`${p}missing`)).toBeNull();
    });

    test("list returns exactly the keys that start with the prefix, nested ones included", async () => {
      const s = store();
      const p = fresh();
      const keys = [`${p}b/0`, `${p}b/1`, `${p}b/sub/2`, `${p}bc/0`, `${p}c/0`];
      for (const k of keys) await s.put(k, bodyOf(pattern(10, 7)), 10);
      expect((await s.list(`${p}b/`)).sort()).toEqual([`${p}b/0`, `${p}b/1`, `${p}b/sub/2`]);
      expect((await s.list(`${p}b`)).sort()).toEqual([`${p}b/0`, `${p}b/1`, `${p}b/sub/2`, `${p}bc/0`]);
      expect((await s.list(p)).sort()).toEqual([...keys].sort());
      expect(await s.list(`${p}nothing/`)).toEqual([]);
    });

    test("delete removes the given objects, leaves the others, and ignores missing keys", async () => {
      const s = store();
      const p = fresh();
      for (const k of ["a", "b", "c"]) await s.put(`${p}${k}`, bodyOf(pattern(10, 8)), 10);
      await s.delete([`${p}a`, `${p}c`, `${p}never-existed`]);
      expect(await s.list(p)).toEqual([`${p}b`]);
      await s.delete([`${p}a`, `${p}c`]);
      await s.delete([]);
      expect(await s.size(`${p}b`)).toBe(10);
    });

    test("delete of more than 1000 keys removes them all", async () => {
      const s = store();
      const p = fresh();
      const keys = Array.from({ length: 1005 }, (_, i) => `${p}${i}`);
      await s.put(keys[0]!, bodyOf(pattern(3, 9)), 3);
      await s.put(keys[1004]!, bodyOf(pattern(3, 9)), 3);
      await s.delete(keys);
      expect(await s.list(p)).toEqual([]);
    });

    test("deletePrefix removes everything under the prefix, nothing else, and can be repeated", async () => {
      const s = store();
      const p = fresh();
      for (const k of [`${p}x/0`, `${p}x/1`, `${p}x/deep/2`, `${p}xy/0`])
        await s.put(k, bodyOf(pattern(5, 10)), 5);
      await s.deletePrefix(`${p}x/`);
      expect(await s.list(p)).toEqual([`${p}xy/0`]);
      await s.deletePrefix(`${p}x/`);
      await s.deletePrefix(`${p}never-existed/`);
      expect(await s.list(p)).toEqual([`${p}xy/0`]);
    });

    test("objects directly in a folder and prefixes of objects beside them are stored and deleted independently", async () => {
      // The blob layout's shard: one-object blobs `b/xx/o<id>` beside chunked blobs `b/xx/<id>/<i>.<gen>`.
      const s = store();
      const p = fresh();
      await s.put(`${p}a1/0.g`, bodyOf(pattern(5, 12)), 5);
      await s.put(`${p}oa1`, bodyOf(pattern(6, 12)), 6, { fresh: true, durable: true });
      await s.put(`${p}oa2`, bodyOf(pattern(7, 12)), 7, { fresh: true, durable: true });
      expect((await s.list(p)).sort()).toEqual([`${p}a1/0.g`, `${p}oa1`, `${p}oa2`]);
      expect(await s.size(`${p}oa2`)).toBe(7);
      await s.deletePrefix(`${p}a1/`);
      expect((await s.list(p)).sort()).toEqual([`${p}oa1`, `${p}oa2`]);
      await s.delete([`${p}oa1`]);
      expect(await s.list(p)).toEqual([`${p}oa2`]);
      expect(await readAll(await s.get(`${p}oa2`))).toEqual(pattern(7, 12));
      await s.delete([`${p}oa2`]);
      expect(await s.list(p)).toEqual([]);
      await s.put(`${p}oa3`, bodyOf(pattern(2, 12)), 2, { fresh: true });
      expect(await s.size(`${p}oa3`)).toBe(2);
    });

    test("deletePrefix rejects a prefix that does not end in /", async () => {
      expect(await rejection(store().deletePrefix(`${fresh()}x`))).toBeInstanceOf(Error);
    });

    test("get of a missing key throws BlobNotFoundError, with or without a range", async () => {
      const s = store();
      const key = `${fresh()}missing`;
      const whole = await rejection(s.get(key));
      expect(whole).toBeInstanceOf(BlobNotFoundError);
      expect((whole as BlobNotFoundError).key).toBe(key);
      expect(await rejection(s.get(key, { start: 0, end: 10 }))).toBeInstanceOf(BlobNotFoundError);
      expect(await rejection(s.get(key, { start: 5, end: 5 }))).toBeInstanceOf(BlobNotFoundError);
    });

    test("get of a deleted key throws BlobNotFoundError", async () => {
      const s = store();
      const key = `${fresh()}gone`;
      await s.put(key, bodyOf(pattern(10, 11)), 10);
      await s.delete([key]);
      expect(await rejection(s.get(key))).toBeInstanceOf(BlobNotFoundError);
    });

    test("keys outside [A-Za-z0-9._-] segments are rejected", async () => {
      const s = store();
      const p = fresh();
      for (const bad of [`${p}../x`, `${p}a//b`, `${p}sp ace`, `/${p}a`, `${p}a/`]) {
        expect(await rejection(s.put(bad, bodyOf(pattern(1, 1)), 1))).toBeInstanceOf(Error);
      }
    });

    test("a short body makes put throw BlobLengthError and stores nothing", async () => {
      const s = store();
      const p = fresh();
      const err = await rejection(s.put(`${p}short`, bodyOf(pattern(999, 12)), 1000));
      expect(err).toBeInstanceOf(BlobLengthError);
      expect((err as BlobLengthError).expected).toBe(1000);
      expect((err as BlobLengthError).received).toBe(999);
      expect(await s.size(`${p}short`)).toBeNull();
      expect(await s.list(p)).toEqual([]);
    });

    test("an empty body for a non-empty object makes put throw BlobLengthError and stores nothing", async () => {
      const s = store();
      const p = fresh();
      expect(await rejection(s.put(`${p}k`, bodyOf(new Uint8Array(0)), 10))).toBeInstanceOf(BlobLengthError);
      expect(await s.list(p)).toEqual([]);
    });

    test("a long body makes put throw BlobLengthError and stores nothing", async () => {
      const s = store();
      const p = fresh();
      // Excess inside the last piece, and excess arriving as a separate piece after exactly `length` bytes.
      const inPiece = await rejection(s.put(`${p}a`, bodyOf(pattern(1001, 13)), 1000));
      expect(inPiece).toBeInstanceOf(BlobLengthError);
      const late = await rejection(
        s.put(`${p}b`, bodyOf(pattern(1000, 13), 1000, [new Uint8Array(1)]), 1000),
      );
      expect(late).toBeInstanceOf(BlobLengthError);
      const zero = await rejection(s.put(`${p}c`, bodyOf(new Uint8Array(1)), 0));
      expect(zero).toBeInstanceOf(BlobLengthError);
      expect(await s.list(p)).toEqual([]);
    });

    test("a put that fails on length leaves the previous object under the key unchanged", async () => {
      const s = store();
      const key = `${fresh()}obj`;
      const original = pattern(4096, 14);
      await s.put(key, bodyOf(original), 4096);
      const short = await rejection(s.put(key, bodyOf(pattern(4000, 15)), 4096));
      expect(short).toBeInstanceOf(BlobLengthError);
      const long = await rejection(s.put(key, bodyOf(pattern(4096, 15), 4096, [new Uint8Array(7)]), 4096));
      expect(long).toBeInstanceOf(BlobLengthError);
      expect(await readAll(await s.get(key))).toEqual(original);
    });

    test("a body stream that errors makes put reject with that error and store nothing", async () => {
      const s = store();
      const p = fresh();
      const boom = new Error("client went away");
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(c) {
          if (sent >= 3) return c.error(boom);
          c.enqueue(pattern(64 * 1024, sent++));
        },
      });
      expect(await rejection(s.put(`${p}k`, body, 1 * MiB))).toBe(boom);
      expect(await s.list(p)).toEqual([]);
    });

    test("aborting the signal makes put reject and store nothing", async () => {
      const s = store();
      const p = fresh();
      const ac = new AbortController();
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(c) {
          if (sent === 4) {
            ac.abort(new Error("aborted by test"));
            await Bun.sleep(50);
          }
          c.enqueue(pattern(64 * 1024, sent++));
        },
      });
      const err = await rejection(s.put(`${p}k`, body, 1 * MiB, { signal: ac.signal }));
      expect(err).toBeInstanceOf(Error);
      expect(await s.list(p)).toEqual([]);
    });

    test("concurrent puts to one key leave exactly one of the bodies, whole", async () => {
      const s = store();
      const key = `${fresh()}race`;
      const size = 256 * 1024 + 3;
      const bodies = [1, 2, 3, 4].map((seed) => pattern(size, 100 + seed));
      await Promise.all(bodies.map((b) => s.put(key, bodyOf(b, 16 * 1024), size)));
      const got = await readAll(await s.get(key));
      expect(got.byteLength).toBe(size);
      expect(bodies.some((b) => Buffer.compare(b, got) === 0)).toBe(true);
    });

    test("onData sees every byte of the body, in order", async () => {
      const s = store();
      const key = `${fresh()}obj`;
      const data = pattern(200_000, 16);
      const seen: Uint8Array[] = [];
      await s.put(key, bodyOf(data, 7000), data.byteLength, { onData: (piece) => seen.push(piece.slice()) });
      expect(Buffer.concat(seen)).toEqual(Buffer.from(data));
    });

    test("a 16 MiB object streams in and out intact, whole and by range", async () => {
      const s = store();
      const key = `${fresh()}big`;
      const size = 16 * MiB;
      await s.put(key, generatedBody(size, 17), size);
      expect(await s.size(key)).toBe(size);
      expect(await digestOf(await s.get(key))).toEqual({ size, sha256: generatedDigest(size, 17) });
      const tail = await readAll(await s.get(key, { start: size - 10, end: size + 10 }));
      expect(tail).toEqual(pattern(256 * 1024, 17).subarray(256 * 1024 - 10));
    });

    // Composable (`compose`): every backend of this project has it.
    test("compose stores the sources one after the other as a new object and leaves them unchanged", async () => {
      const s = store();
      if (!isComposable(s)) throw new Error(`${name} is not Composable`);
      const p = fresh();
      // Parts of 5 MiB and more take the server-side copy on S3; smaller ones the streamed copy.
      for (const sizes of [[5 * MiB, 5 * MiB, 1000], [1000, 70_000, 1], [12_345]]) {
        const parts = sizes.map((size, i) => pattern(size, i + 3));
        const keys = sizes.map((_, i) => `${p}${sizes.length}-${sizes[0]}/${i}.g`);
        for (const [i, key] of keys.entries()) await s.put(key, bodyOf(parts[i]!, 1 << 20), sizes[i]!);
        const target = `${p}${sizes.length}-${sizes[0]}-all`;
        await s.compose(
          target,
          keys.map((key, i) => ({ key, length: sizes[i]! })),
        );
        const whole = Buffer.concat(parts);
        expect(await s.size(target)).toBe(whole.length);
        expect(Buffer.from(await readAll(await s.get(target))).equals(whole)).toBe(true);
        const mid = Math.floor(whole.length / 2);
        const range = await readAll(await s.get(target, { start: mid - 3, end: mid + 5 }));
        expect(Buffer.from(range).equals(whole.subarray(mid - 3, mid + 5))).toBe(true);
        for (const [i, key] of keys.entries()) expect(await s.size(key)).toBe(sizes[i]!);
      }
    });

    test("compose with a missing source throws BlobNotFoundError and stores nothing", async () => {
      const s = store();
      if (!isComposable(s)) throw new Error(`${name} is not Composable`);
      const p = fresh();
      await s.put(`${p}0`, bodyOf(pattern(6 * MiB, 1)), 6 * MiB);
      for (const length of [6 * MiB, 10]) {
        const e = await rejection(
          s.compose(`${p}all-${length}`, [
            { key: `${p}0`, length: 6 * MiB },
            { key: `${p}gone`, length },
          ]),
        );
        expect(e).toBeInstanceOf(BlobNotFoundError);
        expect(await s.size(`${p}all-${length}`)).toBeNull();
      }
    });

    test("compose whose source is not its declared length throws BlobLengthError and stores nothing", async () => {
      const s = store();
      if (!isComposable(s)) throw new Error(`${name} is not Composable`);
      const p = fresh();
      await s.put(`${p}0`, bodyOf(pattern(1000, 1)), 1000);
      await s.put(`${p}1`, bodyOf(pattern(999, 2)), 999);
      const e = await rejection(
        s.compose(`${p}all`, [
          { key: `${p}0`, length: 1000 },
          { key: `${p}1`, length: 1000 },
        ]),
      );
      expect(e).toBeInstanceOf(BlobLengthError);
      expect(await s.size(`${p}all`)).toBeNull();
    });
  });
}
