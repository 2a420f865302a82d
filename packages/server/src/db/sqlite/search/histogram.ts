/**
 * @module server/db/sqlite/search/histogram
 * Exact counts and deep-offset seeks over one column of an owner's files without walking them,
 * from the `search_stats` buckets (see `buckets.ts`): whole buckets are summed; only the parts of
 * the (at most two) finest buckets that a bound cuts are counted in the index, and of those the
 * smaller side (the cut part, or the rest of the bucket subtracted from its total).
 */
import { type BucketLevel, GRID, HISTOGRAMS, type HistogramColumn } from "./buckets.ts";
import type { Cond, SearchRepository } from "./repository.ts";

/** A run of values `[lo, hi]` holding `n` rows, whole bucket of `level` or (level = levels) a cut part. */
interface Piece {
  lo: number;
  hi: number;
  n: number;
  level: number;
}

/** Where a walk in sort order starts to reach a position: at `from`, skipping `skip` rows. */
export interface Seek {
  /** Ascending: walk from `col >= from`; descending: from `col <= from`. */
  from: number;
  skip: number;
}

/** Counts and seeks on one column of one owner's files, optionally only those with given extensions. */
export class Histogram {
  private readonly levels: readonly BucketLevel[];

  /**
   * @param exts extensions the counted files have (null = every file).
   */
  constructor(
    private readonly repo: SearchRepository,
    private readonly oid: number,
    readonly col: HistogramColumn,
    private readonly exts: readonly string[] | null,
  ) {
    this.levels = HISTOGRAMS[col];
  }

  /** Rows with `lo <= col <= hi`, exactly. */
  count(lo: number, hi: number): number {
    return this.countAt(0, lo, hi);
  }

  /**
   * The start of a walk (in the column's sort index, `[lo, hi]` ∩ the returned bound) that
   * reaches the row at 0-based position `pos` of the rows with `lo <= col <= hi` in ascending
   * (or descending) order after skipping `skip` rows; `skip` is below one finest bucket.
   * Null when there are at most `pos` rows.
   */
  seek(lo: number, hi: number, pos: number, descending: boolean): Seek | null {
    let pieces = this.piecesIn(0, lo, hi);
    let before = 0;
    for (;;) {
      const ordered = descending ? [...pieces].reverse() : pieces;
      const hit = ordered.find((p) => {
        if (before + p.n > pos) return true;
        before += p.n;
        return false;
      });
      if (!hit) return null;
      if (hit.level >= this.levels.length - 1)
        return { from: descending ? hit.hi : hit.lo, skip: pos - before };
      pieces = this.piecesIn(hit.level + 1, hit.lo, hit.hi);
    }
  }

  private scan(lo: number, hi: number): number {
    if (lo > hi) return 0;
    const conds = [{ kind: "range" as const, col: this.col, lo, hi }];
    return this.repo.count(
      this.oid,
      this.col,
      this.exts ? [...conds, { kind: "exts", exts: this.exts }] : conds,
    );
  }

  /** Rows in `[lo, hi]`, which lies inside the bucket `[a, z]` of `level - 1` holding `n` rows. */
  private within(level: number, lo: number, hi: number, n: number, a: number, z: number): number {
    if (lo === a && hi === z) return n;
    if (level < this.levels.length) return this.countAt(level, lo, hi);
    const share = (hi - lo + 1) / (z - a + 1);
    return share > 0.5 ? n - this.scan(a, lo - 1) - this.scan(hi + 1, z) : this.scan(lo, hi);
  }

  private countAt(level: number, lo: number, hi: number): number {
    if (lo > hi) return 0;
    if (level === this.levels.length) return this.scan(lo, hi);
    const lv = this.levels[level]!;
    const bl = lv.of(lo);
    const bh = lv.of(hi);
    const s = this.repo.cellSums(this.oid, lv.dim, this.exts, bl, bh);
    const edge = (b: number, n: number) => {
      if (n === 0) return 0;
      const [a, z] = lv.range(b);
      return this.within(level + 1, Math.max(a, lo), Math.min(z, hi), n, a, z);
    };
    return bl === bh ? edge(bl, s.first) : s.inner + edge(bl, s.first) + edge(bh, s.last);
  }

  /** Non-empty pieces covering `[lo, hi]` in ascending order: whole buckets of `level`, or cut parts. */
  private piecesIn(level: number, lo: number, hi: number): Piece[] {
    if (lo > hi) return [];
    if (level === this.levels.length) {
      const n = this.scan(lo, hi);
      return n > 0 ? [{ lo, hi, n, level }] : [];
    }
    const lv = this.levels[level]!;
    const out: Piece[] = [];
    for (const c of this.repo.cells(this.oid, lv.dim, this.exts, lv.of(lo), lv.of(hi))) {
      const [a, z] = lv.range(c.bucket);
      if (a >= lo && z <= hi) {
        out.push({ lo: a, hi: z, n: c.n, level });
      } else if (level + 1 === this.levels.length) {
        const l = Math.max(a, lo);
        const h = Math.min(z, hi);
        const n = this.within(level + 1, l, h, c.n, a, z);
        if (n > 0) out.push({ lo: l, hi: h, n, level: level + 1 });
      } else {
        out.push(...this.piecesIn(level + 1, Math.max(a, lo), Math.min(z, hi)));
      }
    }
    return out;
  }
}

/** The whole buckets of a level inside `[lo, hi]`: their numbers and the values they span. */
interface Inner {
  bLo: number;
  bHi: number;
  vLo: number;
  vHi: number;
}

/** Whole buckets of `lv` inside `[lo, hi]`, or null when the bounds cut every bucket they touch. */
function innerBuckets(lv: BucketLevel, lo: number, hi: number): Inner | null {
  const [a, firstEnd] = lv.range(lv.of(lo));
  const [lastStart, z] = lv.range(lv.of(hi));
  const vLo = a === lo ? lo : firstEnd + 1;
  const vHi = z === hi ? hi : lastStart - 1;
  return vLo > vHi ? null : { bLo: lv.of(vLo), bHi: lv.of(vHi), vLo, vHi };
}

/** `[lo, hi]` minus `[inner.vLo, inner.vHi]` (all of it when `inner` is null): at most two runs. */
function edges(lo: number, hi: number, inner: Inner | null): [number, number][] {
  if (!inner) return [[lo, hi]];
  return (
    [
      [lo, inner.vLo - 1],
      [inner.vHi + 1, hi],
    ] as [number, number][]
  ).filter(([l, h]) => l <= h);
}

/**
 * Rows of one owner (with one of `exts`, or any) with `size.lo <= size_bytes <= size.hi` and
 * `date.lo <= created_at <= date.hi`, exactly, from the size × date grid (`GRID`):
 * - the cells inside both ranges are summed;
 * - the rows with a date in whole date buckets and a size in the (at most two) size buckets the
 *   size bounds cut are counted in the size_bytes index;
 * - a date bucket the date bounds cut is counted in the created_at index, on the smaller side:
 *   the cut part itself, or (when it holds most of the bucket's rows, by the created_at
 *   histogram) the whole bucket from the grid minus the rest of it. A burst of files with one
 *   date (a bulk import) then costs a scan only when a bound falls inside it.
 */
export function gridCount(
  repo: SearchRepository,
  oid: number,
  exts: readonly string[] | null,
  size: { lo: number; hi: number },
  date: { lo: number; hi: number },
): number {
  if (size.lo > size.hi || date.lo > date.hi) return 0;
  const sIn = innerBuckets(GRID.size, size.lo, size.hi);
  const extConds: Cond[] = exts ? [{ kind: "exts", exts }] : [];
  const sizeCond: Cond = { kind: "range", col: "size_bytes", lo: size.lo, hi: size.hi };
  /** Rows with a size in range and a date in the whole date buckets `[b1, b2]`. */
  const wholeDates = (b1: number, b2: number): number => {
    let n = sIn ? repo.gridSum(oid, exts, b1, b2, sIn.bLo, sIn.bHi) : 0;
    const dLo = GRID.date.range(b1)[0];
    const dHi = GRID.date.range(b2)[1];
    for (const [lo, hi] of edges(size.lo, size.hi, sIn)) {
      n += repo.count(oid, "size_bytes", [
        { kind: "range", col: "size_bytes", lo, hi },
        { kind: "range", col: "created_at", lo: dLo, hi: dHi },
        ...extConds,
      ]);
    }
    return n;
  };
  /** Rows with a size in range and a date in `[lo, hi]`, scanned in the created_at index. */
  const scanDates = (lo: number, hi: number): number =>
    lo > hi
      ? 0
      : repo.count(oid, "created_at", [{ kind: "range", col: "created_at", lo, hi }, sizeCond, ...extConds]);
  const dates = new Histogram(repo, oid, "created_at", exts);
  /** Rows with a size in range and a date in `[lo, hi]`, which lies inside date bucket `b`. */
  const partial = (b: number, lo: number, hi: number): number => {
    const [a, z] = GRID.date.range(b);
    if (lo === a && hi === z) return wholeDates(b, b);
    const cut = dates.count(lo, hi);
    const rest = dates.count(a, z) - cut;
    return cut <= rest ? scanDates(lo, hi) : wholeDates(b, b) - scanDates(a, lo - 1) - scanDates(hi + 1, z);
  };
  const b1 = GRID.date.of(date.lo);
  const b2 = GRID.date.of(date.hi);
  if (b1 === b2) return partial(b1, date.lo, date.hi);
  return (
    partial(b1, date.lo, GRID.date.range(b1)[1]) +
    (b2 - b1 > 1 ? wholeDates(b1 + 1, b2 - 1) : 0) +
    partial(b2, GRID.date.range(b2)[0], date.hi)
  );
}
