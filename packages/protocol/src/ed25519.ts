/**
 * @module protocol/ed25519
 * Ed25519 signature checks of the server (manifests, docs/protocol.md#manifest; rename declarations,
 * docs/protocol.md#rename-files) on the runtime's native crypto (`node:crypto`, BoringSSL in Bun). The public
 * key object of each signing key is built once and kept (a folder's key signs every file of the
 * folder), at most `KEY_CACHE_SIZE` of them, the least recently used dropped first.
 */
import { createPublicKey, type KeyObject, verify } from "node:crypto";

/** DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410); the 32 key bytes follow. */
const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

/** Signing keys whose key object is kept. */
export const KEY_CACHE_SIZE = 4096;

const keys = new Map<string, KeyObject>();

function keyObject(publicKey: Uint8Array): KeyObject {
  const id = Buffer.from(publicKey).toString("hex");
  const hit = keys.get(id);
  if (hit) {
    keys.delete(id);
    keys.set(id, hit);
    return hit;
  }
  const key = createPublicKey({
    key: Buffer.concat([SPKI_PREFIX, publicKey]),
    format: "der",
    type: "spki",
  });
  if (keys.size >= KEY_CACHE_SIZE) {
    const oldest = keys.keys().next();
    if (!oldest.done) keys.delete(oldest.value);
  }
  keys.set(id, key);
  return key;
}

/**
 * True when `signature` (64 bytes) is a valid Ed25519 signature of `message` by `publicKey`
 * (32 bytes); false for a wrong length, a key that is not a curve point, or a bad signature.
 */
export function ed25519Valid(message: Uint8Array, signature: Uint8Array, publicKey: Uint8Array): boolean {
  if (signature.byteLength !== 64 || publicKey.byteLength !== 32) return false;
  try {
    return verify(null, message, keyObject(publicKey), signature);
  } catch {
    return false;
  }
}
