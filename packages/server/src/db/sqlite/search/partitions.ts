/**
 * @module server/db/sqlite/search/partitions
 * The layout of `search_entries.id`, which is also the FTS rowid (drizzle/sqlite/0008_search_partitions.sql):
 *
 *     id = ((oid << 16 | class << 13 | date bucket) << 23) + sequence
 *
 * so that the rows of one owner, one file_type category ("class") and a run of date buckets are
 * one id range, and the FTS index counts `q` among just those rows by a rowid range. The SQL in
 * the migration computes the same class and bucket as the functions here;
 * `test/search/partitions.test.ts` checks that on the real triggers.
 *
 * Ids are 63-bit: beyond 2^53 they are not exact as JS numbers, so they are only ever computed in
 * SQL (`PartitionRange` carries the small parts: owner id, class, buckets).
 */

import { FILE_TYPE_CATEGORIES } from "../../../search/file-types.ts";
import { MAX_VALUE, MIN_VALUE } from "./buckets.ts";

/** Constants of the id layout and the date buckets. */
export const PARTITION = {
  /** Bits of the per-partition sequence: 2^23 rows per (owner, class, date bucket). */
  seqBits: 23,
  /** Classes: 0 (other) and the 7 categories of docs/protocol.md#search. */
  classes: 8,
  /** Owner ids must stay below this (24 bits). */
  maxOwners: 2 ** 24,
  /** Unix seconds where bucket 1 starts: 2000-01-01T00:00:00Z. */
  epoch: 946_684_800,
  /** Width of a date bucket, seconds (2^18, about 3 days). */
  bucketSeconds: 2 ** 18,
  /** The last ordinary bucket (everything from its start on). */
  lastBucket: 8190,
  /** The spill bucket of each class: rows whose own bucket is full, in no date order. */
  spillBucket: 8191,
} as const;

/** Class of each extension of a category: 1..7 in `FILE_TYPE_CATEGORIES` order (0 = any other). */
export const EXT_CLASSES: ReadonlyMap<string, number> = new Map(
  Object.values(FILE_TYPE_CATEGORIES).flatMap((exts, i) => exts.map((e): [string, number] => [e, i + 1])),
);

/** Every class, 0..7. */
export const ALL_CLASSES: readonly number[] = Array.from({ length: PARTITION.classes }, (_, c) => c);

/** Class of a row's ext (lower-case with the dot, or null): 0 when it is in no category. */
export function classOf(ext: string | null): number {
  return (ext !== null && EXT_CLASSES.get(ext)) || 0;
}

/** Date bucket (0..8190) of a created_at (Unix seconds). */
export function dateBucket(createdAt: number): number {
  if (createdAt < PARTITION.epoch) return 0;
  return Math.min(
    Math.floor((createdAt - PARTITION.epoch) / PARTITION.bucketSeconds) + 1,
    PARTITION.lastBucket,
  );
}

/** Inclusive created_at range of an ordinary bucket (0..8190); open ends are `MIN_VALUE`/`MAX_VALUE`. */
export function bucketSpan(b: number): [number, number] {
  const start = (k: number) => PARTITION.epoch + (k - 1) * PARTITION.bucketSeconds;
  return [b === 0 ? MIN_VALUE : start(b), b === PARTITION.lastBucket ? MAX_VALUE : start(b + 1) - 1];
}

/**
 * The classes whose extensions together are exactly `exts` (a parsed `file_type`, see
 * `parseFileType`); every class for null (no filter). Null when `exts` is not a union of whole
 * categories (an explicit extension outside them, or part of a category).
 */
export function classesOf(exts: readonly string[] | null): number[] | null {
  if (exts === null) return [...ALL_CLASSES];
  const wanted = new Set(exts);
  const out: number[] = [];
  Object.values(FILE_TYPE_CATEGORIES).forEach((catExts, i) => {
    if (catExts.every((e) => wanted.has(e))) {
      out.push(i + 1);
      for (const e of catExts) wanted.delete(e);
    }
  });
  return wanted.size === 0 ? out : null;
}

/** An id range of one owner and class: the date buckets `bLo..bHi` (8191 = the spill bucket). */
export interface PartitionRange {
  oid: number;
  cls: number;
  bLo: number;
  bHi: number;
}

/**
 * How a created_at window `[lo, hi]` (inclusive, Unix seconds) splits on the date buckets:
 * - `buckets`: the run of ordinary buckets inside it, or null when it holds no whole bucket.
 *   When the run is every bucket (an open window), it includes the spill bucket (`all`).
 * - `edges`: the at most two created_at ranges of the window outside those buckets (all of the
 *   window when `buckets` is null), to be counted another way.
 * - `spill`: the created_at range of `buckets` (null when `all`): spilled rows in it must be
 *   checked row by row, since they are not in those buckets' id ranges.
 */
export function splitWindow(
  lo: number,
  hi: number,
): {
  buckets: { bLo: number; bHi: number } | null;
  all: boolean;
  edges: [number, number][];
  spill: [number, number] | null;
} {
  let bLo = dateBucket(lo);
  if (bucketSpan(bLo)[0] < lo) bLo += 1;
  let bHi = dateBucket(hi);
  if (bucketSpan(bHi)[1] > hi) bHi -= 1;
  if (bLo > bHi) return { buckets: null, all: false, edges: [[lo, hi]], spill: null };
  const [from] = bucketSpan(bLo);
  const [, to] = bucketSpan(bHi);
  const edges: [number, number][] = [];
  if (lo < from) edges.push([lo, from - 1]);
  if (to < hi) edges.push([to + 1, hi]);
  const all = bLo === 0 && bHi === PARTITION.lastBucket;
  return {
    buckets: all ? { bLo, bHi: PARTITION.spillBucket } : { bLo, bHi },
    all,
    edges,
    spill: all ? null : [from, to],
  };
}
