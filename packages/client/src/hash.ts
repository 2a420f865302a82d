/**
 * @module client/hash
 * Hash and byte helpers of the client: BLAKE3 (native, `@napi-rs/blake-hash`), SHA-256
 * (`Bun.CryptoHasher`), hex conversion. BLAKE3 is the hash of `ciphertext_hash`, `path_hash`
 * and `salted_hash` (docs/protocol.md#manifest, #ciphertext, #client-keys); SHA-256 is used for `folder_hash` and the
 * folder key derivation (docs/protocol.md#manifest, #client-keys).
 */
import { Blake3Hasher, blake3 as blake3OneShot } from "@napi-rs/blake-hash";
import { blake3 as nobleBlake3 } from "@noble/hashes/blake3.js";
import { forEachChunk } from "./byte-stream.ts";

/** Incremental BLAKE3 (32-byte output). Feed it with `update`, read it once with `digest*`. */
export class Blake3 {
  private readonly hasher = new Blake3Hasher();

  /** Adds bytes (or the UTF-8 bytes of a string) to the hash. Returns `this`. */
  update(data: Uint8Array | string): this {
    this.hasher.update(typeof data === "string" ? utf8(data) : data);
    return this;
  }

  /** The 32-byte digest. */
  digest(): Uint8Array {
    return new Uint8Array(this.hasher.digestBuffer());
  }

  /** The digest as 64 lowercase hex characters. */
  digestHex(): string {
    return this.hasher.digest("hex");
  }
}

/**
 * BLAKE3 of `data` (strings are hashed as UTF-8), 32 bytes. One native call: for the short
 * inputs of a sync (paths, small files) several times cheaper than a `Blake3` hasher object.
 */
export function blake3(data: Uint8Array | string): Uint8Array {
  return new Uint8Array(blake3OneShot(typeof data === "string" ? utf8(data) : data));
}

/** BLAKE3 of a whole file, read as a stream (bounded memory); 64 lowercase hex characters. */
export async function blake3FileHex(path: string): Promise<string> {
  const h = new Blake3();
  await forEachChunk(Bun.file(path).stream(), (chunk) => {
    h.update(chunk);
  });
  return h.digestHex();
}

/**
 * BLAKE3 in key-derivation mode (`derive_key(context, material)`), 32 bytes, by `@noble/hashes`
 * (the native binding has no derive mode). Used for the owner-wrap key (docs/sharing.md).
 */
export function blake3DeriveKey(context: string, material: Uint8Array): Uint8Array {
  return nobleBlake3(material, { context: utf8(context) });
}

/** SHA-256 of `data` (strings as UTF-8), 32 bytes. */
export function sha256(data: Uint8Array | string): Uint8Array {
  return new Uint8Array(new Bun.CryptoHasher("sha256").update(data).digest());
}

/** UTF-8 bytes of `s`. */
export function utf8(s: string): Uint8Array {
  return new TextEncoder().encode(s);
}

/** Lowercase hex of `bytes` (no `0x`). */
export function toHex(bytes: Uint8Array | readonly number[]): string {
  const u8 = bytes instanceof Uint8Array ? bytes : Uint8Array.from(bytes);
  return Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength).toString("hex");
}

/** Bytes of a hex string (an optional `0x` prefix is accepted). Throws `TypeError` on bad hex. */
export function fromHex(hex: string): Uint8Array {
  const h = hex.startsWith("0x") || hex.startsWith("0X") ? hex.slice(2) : hex;
  if (h.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(h)) throw new TypeError(`not a hex string: ${hex}`);
  return new Uint8Array(Buffer.from(h, "hex"));
}

/** Concatenation of byte arrays. */
export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/** Constant-shape equality of two byte arrays. */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  let diff = 0;
  for (let i = 0; i < a.byteLength; i++) diff |= (a[i] as number) ^ (b[i] as number);
  return diff === 0;
}
