/**
 * BLAKE3 backends (src/util/blake3.ts): the native binding when it loads; otherwise the pure-JS
 * fallback, never silently: the start-up warning names the 30x slowdown.
 */
import { describe, expect, test } from "bun:test";
import { blake3 as nobleBlake3 } from "@noble/hashes/blake3.js";
import { blake3Backend, blake3FallbackWarning, blake3Hex, loadNative } from "../src/blake3.ts";

describe("BLAKE3 backend", () => {
  test("the native binding is in use on this machine, and no warning is given", () => {
    expect(blake3Backend()).toBe("native");
    expect(blake3FallbackWarning()).toBeNull();
  });

  test("a binding that fails to load is reported with its reason instead of throwing", async () => {
    const r = await loadNative(() =>
      Promise.reject(new Error("Cannot find module 'blake-hash.linux-x64-gnu.node'")),
    );
    expect(r.ctor).toBeNull();
    expect(r.error).toContain("Cannot find module");
  });

  test("a module without Blake3Hasher counts as missing", async () => {
    const r = await loadNative(() => Promise.resolve({}));
    expect(r.ctor).toBeNull();
    expect(r.error).toBe("no Blake3Hasher export");
  });

  test("the fallback warning is loud: it names the fallback, the 30x slowdown and the reason", () => {
    const w = blake3FallbackWarning("fallback", "Cannot find module");
    expect(w).toContain("30x slower");
    expect(w).toContain("@noble/hashes");
    expect(w).toContain("Cannot find module");
  });

  test("native and fallback digests agree", () => {
    const data = new Uint8Array(100_000).map((_, i) => i * 7);
    expect(blake3Hex(data)).toBe(Buffer.from(nobleBlake3(data)).toString("hex"));
  });
});
