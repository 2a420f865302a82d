import { describe, expect, test } from "bun:test";
import { jsonDepthOver, MAX_JSON_DEPTH } from "../../src/util/json-depth.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const objects = (n: number) => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`;
const arrays = (n: number) => `${"[".repeat(n)}1${"]".repeat(n)}`;

describe("jsonDepthOver", () => {
  test("accepts nesting up to the limit and refuses one level more (objects and arrays)", () => {
    expect(jsonDepthOver(enc(objects(MAX_JSON_DEPTH)))).toBe(false);
    expect(jsonDepthOver(enc(objects(MAX_JSON_DEPTH + 1)))).toBe(true);
    expect(jsonDepthOver(enc(arrays(MAX_JSON_DEPTH)))).toBe(false);
    expect(jsonDepthOver(enc(arrays(MAX_JSON_DEPTH + 1)))).toBe(true);
    expect(jsonDepthOver(enc(`{"x":${arrays(3)}}`), 3)).toBe(true);
    expect(jsonDepthOver(enc(`{"x":${arrays(2)}}`), 3)).toBe(false);
  });

  test("does not count brackets inside strings, including after escaped quotes and backslashes", () => {
    const inString = `{"s":"${"[{".repeat(1000)}"}`;
    expect(jsonDepthOver(enc(inString), 2)).toBe(false);
    // An escaped quote does not end the string; an escaped backslash does not escape the quote after it.
    expect(jsonDepthOver(enc(`{"s":"\\"[[[[[[["}`), 2)).toBe(false);
    expect(jsonDepthOver(enc(`{"s":"\\\\",  "t":[[[1]]]}`), 2)).toBe(true);
    expect(jsonDepthOver(enc(`{"s":"é✓😀[[[["}`), 2)).toBe(false);
  });

  test("counts siblings at their own depth, not cumulatively", () => {
    const wide = `[${Array(10_000).fill("[1]").join(",")}]`;
    expect(jsonDepthOver(enc(wide), 2)).toBe(false);
  });

  test("scans a 50,000-deep body and a 1 MiB body in well under 100 ms each", () => {
    const deep = enc(objects(50_000));
    const big = enc(`[${Array(200_000).fill('"abc"').join(",")}]`);
    expect(big.byteLength).toBeGreaterThan(1_000_000);
    let t0 = performance.now();
    expect(jsonDepthOver(deep)).toBe(true);
    expect(performance.now() - t0).toBeLessThan(100);
    t0 = performance.now();
    expect(jsonDepthOver(big)).toBe(false);
    expect(performance.now() - t0).toBeLessThan(100);
  });
});
