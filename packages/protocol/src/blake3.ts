/**
 * @module protocol/blake3
 * Incremental BLAKE3: the native `@napi-rs/blake-hash` (about 4.5 GB/s here), or, where its
 * prebuilt binary is missing, `@noble/hashes` (pure JS, about 150 MB/s: some 30x slower, so every
 * upload's hashing costs 30x the CPU). The fallback is never silent: `blake3Backend()` names it,
 * and the server logs a warning at start-up (`blake3FallbackWarning`).
 */
import { blake3 as nobleBlake3 } from "@noble/hashes/blake3.js";

/** An incremental BLAKE3 hasher. */
export interface Blake3 {
  update(data: Uint8Array): void;
  /** The 32-byte digest as 64 lowercase hex characters. */
  digestHex(): string;
}

type NativeCtor = new () => { update(d: Uint8Array): unknown; digest(fmt?: string): string };

/** Which implementation hashes: `native` or the pure-JS `fallback`. */
export type Blake3Backend = "native" | "fallback";

/**
 * Loads the native hasher through `load`, or returns null (with the reason) when it cannot be
 * loaded. Exported for the test that simulates a missing binary.
 */
export async function loadNative(
  load: () => Promise<unknown> = () => import("@napi-rs/blake-hash"),
): Promise<{ ctor: NativeCtor | null; error?: string }> {
  try {
    const mod = (await load()) as { Blake3Hasher?: NativeCtor };
    if (typeof mod.Blake3Hasher !== "function") return { ctor: null, error: "no Blake3Hasher export" };
    return { ctor: mod.Blake3Hasher };
  } catch (e) {
    return { ctor: null, error: (e as Error).message };
  }
}

const loaded = await loadNative();
const Native: NativeCtor | null = loaded.ctor;

/** The implementation in use in this process. */
export function blake3Backend(): Blake3Backend {
  return Native ? "native" : "fallback";
}

/**
 * The start-up warning for `backend`, or null when the native hasher is in use. It names the
 * slowdown so an operator sees why uploads cost 30x the CPU.
 */
export function blake3FallbackWarning(
  backend: Blake3Backend = blake3Backend(),
  reason: string | undefined = loaded.error,
): string | null {
  if (backend === "native") return null;
  return (
    "The native BLAKE3 (@napi-rs/blake-hash) could not be loaded" +
    (reason ? ` (${reason})` : "") +
    "; hashing falls back to pure JavaScript (@noble/hashes), about 30x slower (about 150 MB/s instead " +
    "of 4.5 GB/s): every upload costs 30x the CPU. Install the prebuilt binary for this platform."
  );
}

/** Bytes given to every hasher of this process so far (read by the metrics). */
let hashedBytes = 0;

/** Total bytes hashed by every `createBlake3` hasher of this process. */
export function blake3BytesHashed(): number {
  return hashedBytes;
}

/** A new incremental hasher. */
export function createBlake3(): Blake3 {
  if (Native) {
    const h = new Native();
    return {
      update: (d) => {
        hashedBytes += d.byteLength;
        h.update(d);
      },
      digestHex: () => h.digest("hex"),
    };
  }
  const h = nobleBlake3.create();
  return {
    update: (d) => {
      hashedBytes += d.byteLength;
      h.update(d);
    },
    digestHex: () => Buffer.from(h.digest()).toString("hex"),
  };
}

/** One-shot BLAKE3 of `data` (a string is hashed as its UTF-8 bytes) as 64 lowercase hex characters. */
export function blake3Hex(data: Uint8Array | string): string {
  const h = createBlake3();
  h.update(typeof data === "string" ? new TextEncoder().encode(data) : data);
  return h.digestHex();
}
