/**
 * @module server/db/sqlite/search/buckets
 * The histogram buckets of `search_stats` (drizzle/sqlite/0002_search_index.sql): for each owner, ext and
 * bucket, how many files there are. Search sums whole buckets for `total_count` and for jumping
 * to a deep offset, and scans the index only inside the (at most two) buckets a bound cuts.
 *
 * Each sortable/filterable column has two levels, coarse and fine; every fine bucket lies inside
 * one coarse bucket, and bucket numbers grow with the value (monotone), so a value range maps to
 * a contiguous run of buckets. The SQL expressions in the migration compute the same numbers as
 * the functions here; `test/search/buckets.test.ts` checks that on the real triggers.
 */

/** One level of a column's histogram. */
export interface BucketLevel {
  /** `search_stats.dim` of this level. */
  dim: number;
  /** Bucket of a value (any integer). */
  of(v: number): number;
  /** Smallest and largest value of a bucket, inclusive. */
  range(b: number): [number, number];
}

/** Smallest value a bound can take (sizes and times are integers of at most 53 bits here). */
export const MIN_VALUE = -Number.MAX_SAFE_INTEGER;
/** Largest value a bound can take. */
export const MAX_VALUE = Number.MAX_SAFE_INTEGER;

/** Buckets of `2^shift` consecutive values: `floor(v / 2^shift)` (SQL `v >> shift`). */
function shiftLevel(dim: number, shift: number): BucketLevel {
  const w = 2 ** shift;
  return {
    dim,
    of: (v) => Math.floor(v / w),
    range: (b) => [b * w, b * w + w - 1],
  };
}

/** Decimal digits of a non-negative integer (SQL `length(v)`); negative values count as 0 digits. */
function digits(v: number): number {
  return v < 0 ? 0 : String(v).length;
}

/**
 * Size, coarse: the number of decimal digits (`length(size_bytes)`): 0–9 bytes, 10–99, 100–999, …
 */
const sizeCoarse: BucketLevel = {
  dim: 1,
  of: digits,
  range: (b) =>
    b <= 1 ? [b < 1 ? MIN_VALUE : 0, b < 1 ? -1 : 9] : [10 ** (b - 1), Math.min(10 ** b - 1, MAX_VALUE)],
};

/**
 * Size, fine: digits × 100 + the first two digits, so about 90 buckets per power of ten
 * (100 + v for single-digit sizes). SQL:
 * `CASE WHEN v < 10 THEN 100 + v ELSE length(v) * 100 + CAST(substr(v, 1, 2) AS INTEGER) END`.
 */
const sizeFine: BucketLevel = {
  dim: 2,
  of: (v) => (v < 10 ? 100 + v : digits(v) * 100 + Number(String(v).slice(0, 2))),
  range: (b) => {
    const len = Math.floor(b / 100);
    const lead = b % 100;
    if (len <= 1) return [b - 100, b - 100];
    const unit = 10 ** (len - 2);
    return [lead * unit, Math.min((lead + 1) * unit - 1, MAX_VALUE)];
  },
};

/** The histogram-backed columns and their levels, coarse first. */
export const HISTOGRAMS = {
  size_bytes: [sizeCoarse, sizeFine],
  /** About 3 days and about 68 minutes. */
  created_at: [shiftLevel(3, 18), shiftLevel(4, 12)],
  updated_at: [shiftLevel(5, 18), shiftLevel(6, 12)],
} as const satisfies Record<string, readonly BucketLevel[]>;

/** A column with a histogram. */
export type HistogramColumn = keyof typeof HISTOGRAMS;

/** `search_stats.dim` of the per-ext total (bucket 0). */
export const TOTAL_DIM = 0;

/** `search_stats.ext` key of the all-extensions histogram. */
export const ALL_EXTS = "*";
/** `search_stats.ext` key of files without an extension (and of files without a name). */
export const NO_EXT = "";

/**
 * The size × creation-time grid (`search_stats` dim 7, drizzle/sqlite/0003_search_grid.sql): cells of
 * one size fine bucket (dim 2) by 2^21 seconds (about 24 days) of `created_at`, numbered
 * date-major: `(created_at >> 21) * 4096 + sizeFine(size_bytes)`. Fine size buckets are below
 * 1700, so the low 12 bits of a cell are its size bucket and the rest its date bucket (bucket
 * numbers of any integer, negative dates included: `Math.floor(cell / 4096)`, `cell & 4095`).
 */
export const GRID = {
  dim: 7,
  /** Level of the size axis (its `of`/`range`). */
  size: sizeFine,
  /** Level of the date axis. */
  date: shiftLevel(7, 21),
  /** Cell numbers per date bucket: the size bucket is the cell number modulo this (`& 4095`). */
  sizeSlots: 4096,
  /** Cell number of a (size, created_at) pair. */
  cell(size: number, created: number): number {
    return GRID.date.of(created) * GRID.sizeSlots + sizeFine.of(size);
  },
} as const;
