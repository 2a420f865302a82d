/**
 * @module util/blake3
 * Incremental BLAKE3: the native `@napi-rs/blake-hash` (about 4.5 GB/s here), or, where its
 * prebuilt binary is missing, `@noble/hashes` (pure JS, about 150 MB/s).
 */
import { blake3 as nobleBlake3 } from "@noble/hashes/blake3.js";

/** An incremental BLAKE3 hasher. */
export interface Blake3 {
  update(data: Uint8Array): void;
  /** The 32-byte digest as 64 lowercase hex characters. */
  digestHex(): string;
}

type NativeCtor = new () => { update(d: Uint8Array): unknown; digest(fmt?: string): string };
let Native: NativeCtor | null = null;
try {
  Native = (await import("@napi-rs/blake-hash")).Blake3Hasher as unknown as NativeCtor;
} catch {
  Native = null;
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

/** One-shot BLAKE3 of `data` as lowercase hex. */
export function blake3Hex(data: Uint8Array): string {
  const h = createBlake3();
  h.update(data);
  return h.digestHex();
}
