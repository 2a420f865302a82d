/**
 * @module search/postgres-grid
 * The size x date grid of the PostgreSQL search index (`search_grid`, drizzle/postgres/0008): files
 * per owner, extension, size bucket and `created_at` bucket, at two size levels, kept by a trigger
 * on `files` in the transaction of every write. Size buckets are those of the size histogram
 * (postgres-histogram.ts: level 1 the fine bucket, 32 per power of two; level 0 the power of two);
 * a created bucket is 2^20 s (`created_at >> 20`, about 12 days).
 *
 * `countSizeDate` gives the exact number of an owner's files in a size range and a date range
 * (and of some extensions) by splitting the rectangle into:
 * - the date edges: the files of the range's first and last created buckets (the part inside the
 *   range), counted in the `created_at` b-tree, which carries size and extension;
 * - between them, the size edges: the files of the size range's first and last fine size buckets,
 *   counted in the `size_bytes` b-tree, which carries `created_at` and extension;
 * - the cells inside both: fine cells in the range's first and last powers of two, coarse cells
 *   for the powers of two between, each looked up per size bucket over the created buckets.
 * So the rows counted one by one are at most two created buckets and two fine size buckets of files.
 */
import type { SQL } from "bun";
import { fineBucket, fineLo } from "./postgres-histogram.ts";

/** The created bucket of Unix time `t` (seconds). */
export function createdBucket(t: number): number {
  return Math.floor(t / 2 ** 20);
}

/** Fine size buckets per coarse one (a power of two). */
const FINE_PER_COARSE = 32;

/** Integers `a … b` (inclusive; empty when `a > b`). */
function span(a: number, b: number): number[] {
  const out: number[] = [];
  for (let i = a; i <= b; i++) out.push(i);
  return out;
}

/**
 * The exact number of `owner`'s files with an extension in `exts` (null = any, files without one
 * included), `size_bytes` in `size` and `created_at` in `created` (inclusive bounds, low <= high),
 * in `tx`'s snapshot; null when the date range does not span a whole created bucket (then there is
 * no cell inside it, and the caller counts the rows: at most two created buckets of files).
 */
export async function countSizeDate(
  tx: Pick<SQL, "unsafe">,
  owner: string,
  exts: readonly string[] | null,
  size: readonly [number, number],
  created: readonly [number, number],
): Promise<number | null> {
  const ta = createdBucket(created[0]);
  const tb = createdBucket(created[1]);
  if (tb - ta < 2) return null;
  const params: unknown[] = [owner];
  const p = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const [slo, shi] = size;
  // Inside: whole created buckets ta + 1 … tb - 1.
  const inLo = (ta + 1) * 2 ** 20;
  const inHi = tb * 2 ** 20 - 1;
  const extList = exts ? exts.map((e) => p(e)).join(", ") : null;
  const extRows = extList === null ? "" : ` AND f.ext IN (${extList})`;
  // On the grid, a filter rather than an index condition: PostgreSQL 15 would descend the b-tree
  // once per listed extension.
  const extCells = extList === null ? "" : ` AND (ext IN (${extList})) IS TRUE`;
  const rows = (sLo: number, sHi: number, cLo: number, cHi: number) =>
    `(SELECT count(*) FROM files AS f WHERE f.owner = $1 AND f.size_bytes BETWEEN ${p(sLo)} AND ${p(sHi)}
      AND f.created_at BETWEEN ${p(cLo)} AND ${p(cHi)}${extRows})`;
  const cells = (level: number, buckets: number[]) =>
    `(SELECT coalesce(sum(n), 0) FROM search_grid WHERE owner = $1 AND level = ${level}
      AND sb = ANY(${p(`{${buckets.join(",")}}`)}::bigint[]) AND tb BETWEEN ${p(ta + 1)} AND ${p(tb - 1)}${extCells})`;
  // The date edges, over the whole size range.
  const parts = [rows(slo, shi, created[0], inLo - 1), rows(slo, shi, inHi + 1, created[1])];
  const fa = fineBucket("size_bytes", slo);
  const fb = fineBucket("size_bytes", shi);
  if (fa === fb) parts.push(rows(slo, shi, inLo, inHi));
  else {
    // The size edges, then the cells between them.
    parts.push(
      rows(slo, fineLo("size_bytes", fa + 1) - 1, inLo, inHi),
      rows(fineLo("size_bytes", fb), shi, inLo, inHi),
    );
    const ca = Math.floor(fa / FINE_PER_COARSE);
    const cb = Math.floor(fb / FINE_PER_COARSE);
    const fine =
      ca === cb
        ? span(fa + 1, fb - 1)
        : [...span(fa + 1, (ca + 1) * FINE_PER_COARSE - 1), ...span(cb * FINE_PER_COARSE, fb - 1)];
    if (fine.length > 0) parts.push(cells(1, fine));
    if (cb > ca + 1) parts.push(cells(0, span(ca + 1, cb - 1)));
  }
  const [row] = (await tx.unsafe(`SELECT (${parts.join(" + ")})::float8 AS n`, params)) as { n: number }[];
  return Number(row?.n ?? 0);
}
