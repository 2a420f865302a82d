/**
 * @module server/db/postgres/search/grid
 * The size x date grid of the PostgreSQL search index (`search_grid`, drizzle/postgres/0008): files
 * per owner, extension, size bucket and `created_at` bucket at 3 x 2 resolutions, kept by a trigger
 * on `files` in the transaction of every write.
 * - Size levels (`sl`): 0 the fine size bucket of the size histogram (histogram.ts, 32 per
 *   power of two), 1 the power of two (fine >> 5).
 * - Time levels (`tl`): 0 `created_at >> 10` (1,024 s), 1 `>> 15` (32,768 s), 2 `>> 20` (~12 days).
 *
 * `countSizeDate` gives the exact number of an owner's files in a size range and a date range
 * (and of some extensions). Each range is cut into its edges (the parts of its first and last
 * level-0 buckets that it does not cover whole) and pieces: runs of whole buckets, as coarse as
 * fit (at most 31 buckets at each end of each finer level). The total is then
 * - the date edges over the whole size range, counted in the `created_at` b-tree (which carries
 *   size and extension): at most two 1,024 s buckets of files;
 * - the size edges over the rest of the date range, counted in the `size_bytes` b-tree (which
 *   carries `created_at` and extension): at most two fine size buckets of files;
 * - for every pair of a date piece and a size piece, the grid cells at those two levels.
 */
import type { SQL } from "bun";
import { fineBucket, fineLo } from "./histogram.ts";

/** Buckets of one level per bucket of the next, in both dimensions. */
const BRANCH = 32;
/** Time levels: bits of `created_at` dropped by a level-0 bucket; levels above it. */
const TIME_SHIFT = 10;
const TIME_LEVELS = 3;
const SIZE_LEVELS = 2;

/** One dimension of the grid: its level-0 bucket of a value, and that bucket's smallest value. */
export interface Axis {
  bucket(v: number): number;
  lo(b: number): number;
  levels: number;
}

const TIME: Axis = {
  bucket: (t) => Math.floor(t / 2 ** TIME_SHIFT),
  lo: (b) => b * 2 ** TIME_SHIFT,
  levels: TIME_LEVELS,
};
const SIZE: Axis = {
  bucket: (s) => fineBucket("size_bytes", s),
  lo: (b) => fineLo("size_bytes", b),
  levels: SIZE_LEVELS,
};

/** The two axes of the grid (exported for tests). */
export const GRID_AXES = { size: SIZE, created: TIME } as const;

/** A run of whole buckets `a … b` of one level. */
export interface Piece {
  level: number;
  a: number;
  b: number;
}

/** A range `[lo, hi]` cut into its edges (value ranges) and whole-bucket pieces covering the rest. */
export interface Cut {
  edges: [number, number][];
  pieces: Piece[];
  /** The values the pieces cover (null: none), one contiguous range. */
  inner: [number, number] | null;
}

/**
 * `[lo, hi]` (`lo <= hi`) on `axis`: the parts of its end level-0 buckets it does not cover whole
 * are edges; the whole level-0 buckets between are grouped into the coarsest buckets that fit.
 */
export function cutRange(axis: Axis, lo: number, hi: number): Cut {
  const fa = axis.bucket(lo);
  const fb = axis.bucket(hi);
  const edges: [number, number][] = [];
  let a = axis.lo(fa) === lo ? fa : fa + 1;
  let b = axis.lo(fb + 1) - 1 === hi ? fb : fb - 1;
  if (fa === fb && a > b) return { edges: [[lo, hi]], pieces: [], inner: null };
  if (a > fa) edges.push([lo, axis.lo(fa + 1) - 1]);
  if (b < fb) edges.push([axis.lo(fb), hi]);
  if (a > b) return { edges, pieces: [], inner: null };
  const inner: [number, number] = [axis.lo(a), axis.lo(b + 1) - 1];
  const pieces: Piece[] = [];
  for (let level = 0; level < axis.levels; level++) {
    const top = level === axis.levels - 1;
    // The whole parent buckets inside a … b.
    const pa = Math.ceil(a / BRANCH);
    const pb = Math.floor((b + 1) / BRANCH) - 1;
    if (top || pa > pb) {
      pieces.push({ level, a, b });
      break;
    }
    if (a < pa * BRANCH) pieces.push({ level, a, b: pa * BRANCH - 1 });
    if ((pb + 1) * BRANCH <= b) pieces.push({ level, a: (pb + 1) * BRANCH, b });
    a = pa;
    b = pb;
  }
  return { edges, pieces, inner };
}

/** Integers `a … b`. */
function span(a: number, b: number): number[] {
  const out: number[] = [];
  for (let i = a; i <= b; i++) out.push(i);
  return out;
}

/**
 * The exact number of `owner`'s files with an extension in `exts` (null = any, files without one
 * included), `size_bytes` in `size` and `created_at` in `created` (inclusive bounds, low <= high),
 * in `tx`'s snapshot.
 */
export async function countSizeDate(
  tx: Pick<SQL, "unsafe">,
  owner: string,
  exts: readonly string[] | null,
  size: readonly [number, number],
  created: readonly [number, number],
): Promise<number> {
  const params: unknown[] = [owner];
  const p = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const extList = exts ? exts.map((e) => p(e)).join(", ") : null;
  const extRows = extList === null ? "" : ` AND f.ext IN (${extList})`;
  // On the grid, a filter rather than an index condition: PostgreSQL 15 would descend the b-tree
  // once per listed extension.
  const extCells = extList === null ? "" : ` AND (ext IN (${extList})) IS TRUE`;
  const rows = (s: readonly [number, number], c: readonly [number, number]) =>
    `(SELECT count(*) FROM files AS f WHERE f.owner = $1 AND f.size_bytes BETWEEN ${p(s[0])} AND ${p(s[1])}
      AND f.created_at BETWEEN ${p(c[0])} AND ${p(c[1])}${extRows})`;
  const t = cutRange(TIME, created[0], created[1]);
  const parts = t.edges.map((e) => rows(size, e));
  if (t.inner !== null) {
    const s = cutRange(SIZE, size[0], size[1]);
    for (const e of s.edges) parts.push(rows(e, t.inner));
    // One b-tree descent per size bucket, each reading the cells of the time piece.
    for (const tp of t.pieces)
      for (const sp of s.pieces)
        parts.push(
          `(SELECT coalesce(sum(n), 0) FROM search_grid WHERE owner = $1 AND tl = ${tp.level} AND sl = ${sp.level}
            AND sb = ANY(${p(`{${span(sp.a, sp.b).join(",")}}`)}::bigint[]) AND tb BETWEEN ${p(tp.a)} AND ${p(tp.b)}${extCells})`,
        );
  }
  const [row] = (await tx.unsafe(`SELECT (${parts.join(" + ")})::float8 AS n`, params)) as { n: number }[];
  return Number(row?.n ?? 0);
}
