/**
 * @module server/db/postgres/search/histogram
 * The histograms of the PostgreSQL search index (`search_hist`, drizzle/postgres/0004): files per
 * owner, extension and bucket of `size_bytes`, `created_at` and `updated_at`, at two levels,
 * kept by a trigger on `files` in the transaction of every write. From them, without reading
 * more than two buckets of rows:
 * - `countRange`: the exact number of an owner's files (of some extensions) whose key lies in
 *   `[lo, hi]`: the coarse and fine buckets wholly inside the range from the counters, the two
 *   boundary fine buckets counted in the key's b-tree (index-only: the b-trees carry `ext`);
 * - `locate`: where the file at position `p` of a sort order on the key is: the fine bucket that
 *   holds it and how many of that bucket's files precede it, so that a deep page is read by
 *   skipping at most one bucket of index entries instead of `p`.
 *
 * Buckets (the same formulas as the SQL of the migration, which the trigger uses):
 * - size: fine bucket of `s` bytes = `s` below 32, else `(L - 6) * 32 + (s >> (L - 6))` with
 *   `L` the bit length of `s` (32 buckets per power of two); coarse = fine >> 5.
 * - times (Unix seconds): fine = `t >> 10` (1,024 s), coarse = fine >> 10 (2^20 s, ~12 days).
 * Values are JavaScript numbers (sizes and times within ±2^53, as everywhere in esync).
 */
import type { SQL } from "bun";

/** A sort key with a histogram (a `files` column). */
export type HistKey = "size_bytes" | "created_at" | "updated_at";

/** The histogram of each key: its id in `search_hist.key` and the coarse level's shift. */
const KEYS: Record<HistKey, { id: number; shift: number }> = {
  size_bytes: { id: 1, shift: 5 },
  created_at: { id: 2, shift: 10 },
  updated_at: { id: 3, shift: 10 },
};

/** The smallest and largest key value a query bound can take. */
const MIN = -Number.MAX_SAFE_INTEGER;
const MAX = Number.MAX_SAFE_INTEGER;

/** The fine bucket of value `v` of `key` (see the module comment). */
export function fineBucket(key: HistKey, v: number): number {
  if (key !== "size_bytes") return Math.floor(v / 1024);
  if (v < 32) return v;
  const e = v.toString(2).length - 6;
  return e * 32 + Math.floor(v / 2 ** e);
}

/** The smallest value of `key` in fine bucket `b`. */
export function fineLo(key: HistKey, b: number): number {
  if (key !== "size_bytes") return b * 1024;
  if (b < 64) return b;
  const e = Math.floor(b / 32) - 1;
  return (b - 32 * e) * 2 ** e;
}

/** The coarse bucket of fine bucket `f`. */
function coarseOf(key: HistKey, f: number): number {
  return Math.floor(f / 2 ** KEYS[key].shift);
}

/** The first fine bucket of coarse bucket `c`. */
function firstFine(key: HistKey, c: number): number {
  return c * 2 ** KEYS[key].shift;
}

/**
 * An extension test ` AND ext IN (…)` on the counter tables as a filter rather than an index
 * condition: PostgreSQL 15 would descend their b-tree once per listed extension.
 */
function extFilter(extIn: string): string {
  return extIn === "" ? "" : ` AND (${extIn.slice(5)}) IS TRUE`;
}

/** A transaction (or connection) to query in. */
type Tx = Pick<SQL, "unsafe">;

/** SQL parameters `$n…`, numbered from `start`. */
class Params {
  readonly values: unknown[];
  constructor(values: unknown[]) {
    this.values = [...values];
  }
  add(v: unknown): string {
    this.values.push(v);
    return `$${this.values.length}`;
  }
}

/**
 * The exact number of `owner`'s files with an extension in `exts` (null = any, files without one
 * included) whose `key` lies in `[lo, hi]` (inclusive; `lo <= hi`), in `tx`'s snapshot.
 */
export async function countRange(
  tx: Tx,
  owner: string,
  key: HistKey,
  exts: readonly string[] | null,
  lo: number,
  hi: number,
): Promise<number> {
  const p = new Params([owner]);
  const id = KEYS[key].id;
  const extIn = exts ? ` AND ext IN (${exts.map((e) => p.add(e)).join(", ")})` : "";
  const exact = (a: number, b: number) =>
    `(SELECT count(*) FROM files AS f WHERE f.owner = $1 AND f.${key} BETWEEN ${p.add(a)} AND ${p.add(b)}${extIn})`;
  const sum = (level: number, cond: string) =>
    `(SELECT coalesce(sum(n), 0) FROM search_hist WHERE owner = $1 AND key = ${id} AND level = ${level} AND ${cond}${extFilter(extIn)})`;
  const fa = fineBucket(key, lo);
  const fb = fineBucket(key, hi);
  const parts: string[] = [];
  if (fa === fb) parts.push(exact(lo, hi));
  else {
    parts.push(exact(lo, fineLo(key, fa + 1) - 1), exact(fineLo(key, fb), hi));
    const ca = coarseOf(key, fa);
    const cb = coarseOf(key, fb);
    if (ca === cb) {
      if (fb > fa + 1) parts.push(sum(1, `bucket > ${p.add(fa)} AND bucket < ${p.add(fb)}`));
    } else {
      parts.push(
        sum(
          1,
          `((bucket > ${p.add(fa)} AND bucket < ${p.add(firstFine(key, ca + 1))}) OR (bucket >= ${p.add(firstFine(key, cb))} AND bucket < ${p.add(fb)}))`,
        ),
      );
      if (cb > ca + 1) parts.push(sum(0, `bucket > ${p.add(ca)} AND bucket < ${p.add(cb)}`));
    }
  }
  const [row] = (await tx.unsafe(`SELECT (${parts.join(" + ")})::float8 AS n`, p.values)) as { n: number }[];
  return Number(row?.n ?? 0);
}

/** Files of `key` below `v` (`descending`: above `v`), as `countRange`. */
export function countBeyond(
  tx: Tx,
  owner: string,
  key: HistKey,
  exts: readonly string[] | null,
  v: number,
  descending: boolean,
): Promise<number> {
  if (descending) return v >= MAX ? Promise.resolve(0) : countRange(tx, owner, key, exts, v + 1, MAX);
  return v <= MIN ? Promise.resolve(0) : countRange(tx, owner, key, exts, MIN, v - 1);
}

/** Where a position of a sort order on a histogram key starts (see `locate`). */
export interface Located {
  /** Ascending: the first value of the fine bucket; descending: its last value. */
  from: number;
  /** Files of that bucket (of the extensions) that precede the position in the sort order. */
  skip: number;
}

/**
 * The fine bucket holding position `pos` (0-based) of `owner`'s files with an extension in
 * `exts` (null = any) sorted by `key` (then `path_hash`), ascending or `descending`; null when
 * there are not more than `pos` such files. The page at `pos` is then read from `from` (`key >=
 * from`, or `key <= from` descending), skipping `skip` entries.
 */
export async function locate(
  tx: Tx,
  owner: string,
  key: HistKey,
  exts: readonly string[] | null,
  pos: number,
  descending: boolean,
): Promise<Located | null> {
  const p = new Params([owner]);
  const id = KEYS[key].id;
  const extIn = extFilter(exts ? ` AND ext IN (${exts.map((e) => p.add(e)).join(", ")})` : "");
  const dir = descending ? "DESC" : "ASC";
  const buckets = async (level: number, cond: string) =>
    (await tx.unsafe(
      `SELECT bucket::float8 AS b, sum(n)::float8 AS n FROM search_hist
       WHERE owner = $1 AND key = ${id} AND level = ${level}${cond}${extIn}
       GROUP BY bucket HAVING sum(n) > 0 ORDER BY bucket ${dir}`,
      p.values,
    )) as { b: number; n: number }[];
  /** The first of `rows` whose running sum from `before` passes `pos`. */
  const find = (rows: { b: number; n: number }[], before: number) => {
    let acc = before;
    for (const r of rows) {
      if (acc + r.n > pos) return { b: r.b, before: acc };
      acc += r.n;
    }
    return null;
  };
  const coarse = find(await buckets(0, ""), 0);
  if (!coarse) return null;
  const first = firstFine(key, coarse.b);
  const last = firstFine(key, coarse.b + 1) - 1;
  const fine = find(
    await buckets(1, ` AND bucket BETWEEN ${p.add(first)} AND ${p.add(last)}`),
    coarse.before,
  );
  if (!fine)
    throw new Error(`search_hist: the fine buckets of ${key} disagree with coarse bucket ${coarse.b}`);
  return {
    from: descending ? fineLo(key, fine.b + 1) - 1 : fineLo(key, fine.b),
    skip: pos - fine.before,
  };
}
