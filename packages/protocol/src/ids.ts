/** @module protocol/ids  Random identifiers and byte/hex helpers. */
import { randomBytes } from "node:crypto";

/** `n` random bytes as lowercase hex (2n characters). */
export function randomHex(n: number): string {
  return randomBytes(n).toString("hex");
}

/** `n` random bytes as unpadded base64url. */
export function randomToken(n: number): string {
  return randomBytes(n).toString("base64url");
}

/** Lowercase hex of `bytes`. */
export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

/** Bytes as the JSON array of integers used on the wire (docs/protocol.md#conventions). */
export function toIntArray(bytes: Uint8Array | null): number[] | null {
  return bytes === null ? null : Array.from(bytes);
}
