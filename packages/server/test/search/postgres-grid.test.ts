/**
 * How the PostgreSQL size x date grid cuts a range (src/search/postgres-grid.ts): the edges and
 * the pieces cover the range exactly once, the edges lie in its first and last level-0 buckets,
 * and no level but the top has more than 62 buckets of pieces.
 */
import { expect, test } from "bun:test";
import fc from "fast-check";
import { cutRange, GRID_AXES } from "../../src/db/postgres/search/grid.ts";

/** The value range of bucket `b` at `level` of an axis (`lo` of level-0 buckets, 32 per level). */
function valuesOf(axis: (typeof GRID_AXES)["size"], level: number, a: number, b: number): [number, number] {
  const first = a * 32 ** level;
  const last = (b + 1) * 32 ** level;
  return [axis.lo(first), axis.lo(last) - 1];
}

for (const [name, axis, value] of [
  ["size", GRID_AXES.size, fc.oneof(fc.integer({ min: 0, max: 4096 }), fc.integer({ min: 0, max: 2 ** 45 }))],
  [
    "created_at",
    GRID_AXES.created,
    fc.oneof(
      fc.integer({ min: 1_700_000_000 - 5_000_000, max: 1_700_000_000 + 5_000_000 }),
      fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
    ),
  ],
] as const) {
  test(`a ${name} range is covered exactly once by its edges and pieces, the edges within one level-0 bucket of each end`, () => {
    fc.assert(
      fc.property(value, value, (x, y) => {
        const [lo, hi] = x <= y ? [x, y] : [y, x];
        const cut = cutRange(axis, lo, hi);
        const spans = [...cut.edges, ...cut.pieces.map((p) => valuesOf(axis, p.level, p.a, p.b))].sort(
          (a, b) => a[0] - b[0],
        );
        // Contiguous from lo to hi, without overlap.
        expect(spans[0]![0]).toBe(lo);
        expect(spans.at(-1)![1]).toBe(hi);
        for (let i = 1; i < spans.length; i++) expect(spans[i]![0]).toBe(spans[i - 1]![1] + 1);
        for (const [a, b] of cut.edges) expect(axis.bucket(a)).toBe(axis.bucket(b));
        expect(cut.edges.length).toBeLessThanOrEqual(2);
        for (const p of cut.pieces)
          if (p.level < axis.levels - 1) expect(p.b - p.a + 1).toBeLessThanOrEqual(62);
        if (cut.inner !== null) {
          const covered = cut.pieces.map((p) => valuesOf(axis, p.level, p.a, p.b));
          expect(Math.min(...covered.map((c) => c[0]))).toBe(cut.inner[0]);
          expect(Math.max(...covered.map((c) => c[1]))).toBe(cut.inner[1]);
        }
      }),
      { numRuns: 2000 },
    );
  });
}
