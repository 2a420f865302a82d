/**
 * The histogram buckets: monotone, nested (every fine bucket inside one coarse bucket), `range`
 * inverts `of`, and the migration's SQL bucket expressions (run by the triggers) give the same
 * numbers as the functions of buckets.ts.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { HISTOGRAMS } from "../../src/db/sqlite/search/buckets.ts";
import { makeTestApp } from "../support/app.ts";
import { newUser } from "../support/fixtures.ts";
import { expectIndexConsistent, insertFiles } from "./support.ts";

const sizes = [
  ...Array.from({ length: 250 }, (_, i) => i),
  ...Array.from({ length: 16 }, (_, i) => [
    10 ** i - 1,
    10 ** i,
    10 ** i + 1,
    2 * 10 ** i - 1,
    2 ** (i * 3),
  ]).flat(),
  2 ** 31,
  2 ** 32 + 7,
  123_456_789_012,
  Number.MAX_SAFE_INTEGER,
  ...Array.from({ length: 300 }, () => Math.floor(Math.random() * 2 ** (Math.random() * 45))),
].filter((v) => v >= 0 && v <= Number.MAX_SAFE_INTEGER);
const times = [
  -86400,
  -1,
  0,
  1,
  4095,
  4096,
  262143,
  262144,
  1_700_000_000,
  2 ** 31 - 1,
  2 ** 31,
  4_102_444_800,
  946_684_799,
  946_684_800,
  946_684_800 + 262_144,
  3_093_382_015,
  3_093_382_016,
  ...Array.from({ length: 300 }, () => Math.floor(Math.random() * 2 ** 32) - 2 ** 30),
];

describe("bucket functions", () => {
  for (const [col, levels] of Object.entries(HISTOGRAMS)) {
    const values = [...new Set(col === "size_bytes" ? sizes : times)].sort((a, b) => a - b);
    test(`${col}: buckets grow with the value and each value lies in its bucket's range`, () => {
      for (const lv of levels) {
        let last = Number.NEGATIVE_INFINITY;
        for (const v of values) {
          const b = lv.of(v);
          expect(b).toBeGreaterThanOrEqual(last);
          last = b;
          const [lo, hi] = lv.range(b);
          expect({ v, inside: lo <= v && v <= hi }).toEqual({ v, inside: true });
          expect(lv.of(lo)).toBe(b);
          expect(lv.of(hi)).toBe(b);
        }
      }
    });

    test(`${col}: every fine bucket lies inside one coarse bucket`, () => {
      const [coarse, fine] = levels;
      for (const v of values) {
        const [lo, hi] = fine.range(fine.of(v));
        expect(coarse.of(lo)).toBe(coarse.of(v));
        expect(coarse.of(hi)).toBe(coarse.of(v));
      }
    });
  }
});

describe("SQL bucket expressions of the migration", () => {
  const t = makeTestApp();
  afterAll(() => t.close());

  test("the triggers file every row in the buckets the functions compute", () => {
    const user = newUser();
    insertFiles(
      t,
      user.address,
      sizes.map((size, i) => ({
        // One directory per huge size, so that directory byte sums stay exact in JS numbers.
        path: `${size > 2 ** 40 ? `big${i}` : `d${i % 7}`}/f${i}.${["png", "PDF", "x"][i % 3]}`,
        size,
        created: times[i % times.length]!,
        updated: times[(i * 7) % times.length]!,
      })),
    );
    expectIndexConsistent(t.db);
  });
});

describe("gram table of the migration", () => {
  const t = makeTestApp();
  afterAll(() => t.close());

  test("the triggers count each distinct 3- and 4-character substring once per name and class, astral characters included", () => {
    const user = newUser();
    const names = [
      "😀ab😀cd😀",
      "Ärger Ärger.txt",
      "議事録議事録.pdf",
      "ΟΔΟΣ",
      "aaaa",
      "ab",
      "x",
      "a\u0301bc.é",
    ];
    insertFiles(
      t,
      user.address,
      names.map((n, i) => ({ path: `d${i}/${n}`, size: i, created: i, updated: i })),
    );
    expectIndexConsistent(t.db);
  });
});
