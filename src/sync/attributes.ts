/**
 * @module sync/attributes
 * File attributes carried in the manifest's optional `attributes` field (an esync extension;
 * README "File attributes"): what a file is (regular file or symbolic link), its permission
 * bits and its modification time, so that a restore is faithful.
 *
 * Wire form (opaque to the server, which stores and returns it unchanged):
 * `nonce (24) ‖ XChaCha20-Poly1305(k, nonce, json, aad)` where
 * - `k = HKDF-SHA256(folder key, salt = "", info = "esync attributes v1")`, 32 bytes;
 * - `aad = utf8("esync-attributes-v1:") ‖ path_hash ‖ salted_hash`, binding the attributes to
 *   the path and content they describe (the server cannot move them onto another file or
 *   content; both hashes are in every `/get_state` entry);
 * - `json = {"v":1,"type":"file"|"symlink"|"dir","mode":<permission bits>,"mtime_ms":<ms>}`.
 *
 * The manifest signature (complement §1) covers only `ciphertext_hash`, so this field lies
 * outside what the server verifies; its integrity comes from the AEAD tag above. A symbolic
 * link's content (the blob) is its target path, encrypted like any file content.
 */
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { hkdf } from "@noble/hashes/hkdf.js";
import { sha256 } from "@noble/hashes/sha2.js";

/**
 * What a path holds. `dir` is an empty directory, stored as a zero-byte marker file
 * `DIR/.esync-dir` (`DIR_MARKER`) until the server has folder entries (extensions §1.5).
 */
export type EntryKind = "file" | "symlink" | "dir";

/** Name of the marker file that stands for an empty directory on the server. */
export const DIR_MARKER = ".esync-dir";

/** The directory a marker path stands for (`a/b/.esync-dir` → `a/b`), or null when `rel` is no marker path. */
export function markerDir(rel: string): string | null {
  if (rel === DIR_MARKER) return null;
  return rel.endsWith(`/${DIR_MARKER}`) ? rel.slice(0, -DIR_MARKER.length - 1) : null;
}

/** Decoded attributes of one file revision. */
export interface FileAttributes {
  type: EntryKind;
  /** Permission bits (`mode & 0o7777`). */
  mode: number;
  /** Modification time, Unix milliseconds. */
  mtimeMs: number;
}

const NONCE = 24;
const INFO = new TextEncoder().encode("esync attributes v1");

function attributesKey(folderKey: Uint8Array): Uint8Array {
  return hkdf(sha256, folderKey, new Uint8Array(0), INFO, 32);
}

/** What the attributes of one revision are bound to: its `path_hash` and `salted_hash` (32 bytes each). */
export interface AttributesBinding {
  pathHash: Uint8Array | readonly number[];
  saltedHash: Uint8Array | readonly number[];
}

function aad(b: AttributesBinding): Uint8Array {
  const prefix = new TextEncoder().encode("esync-attributes-v1:");
  const out = new Uint8Array(prefix.length + 64);
  out.set(prefix, 0);
  out.set(Uint8Array.from(b.pathHash), prefix.length);
  out.set(Uint8Array.from(b.saltedHash), prefix.length + 32);
  return out;
}

/** Encrypts `attrs` of the revision `binding` under the folder key (32 bytes); about 90 bytes. */
export function sealAttributes(
  folderKey: Uint8Array,
  binding: AttributesBinding,
  attrs: FileAttributes,
): Uint8Array {
  const json = JSON.stringify({
    v: 1,
    type: attrs.type,
    mode: attrs.mode & 0o7777,
    mtime_ms: attrs.mtimeMs,
  });
  const nonce = crypto.getRandomValues(new Uint8Array(NONCE));
  const sealed = xchacha20poly1305(attributesKey(folderKey), nonce, aad(binding)).encrypt(
    new TextEncoder().encode(json),
  );
  const out = new Uint8Array(NONCE + sealed.length);
  out.set(nonce, 0);
  out.set(sealed, NONCE);
  return out;
}

/**
 * Decrypts attributes sealed by `sealAttributes` for `binding`; null when they are absent, were
 * made for another path, content or key, were tampered with, or are of an unknown version.
 */
export function openAttributes(
  folderKey: Uint8Array,
  binding: AttributesBinding,
  sealed: Uint8Array | readonly number[] | undefined | null,
): FileAttributes | null {
  if (!sealed || sealed.length <= NONCE + 16) return null;
  const bytes = Uint8Array.from(sealed);
  try {
    const plain = xchacha20poly1305(attributesKey(folderKey), bytes.subarray(0, NONCE), aad(binding)).decrypt(
      bytes.subarray(NONCE),
    );
    const j = JSON.parse(new TextDecoder().decode(plain)) as Record<string, unknown>;
    if (j.v !== 1 || (j.type !== "file" && j.type !== "symlink" && j.type !== "dir")) return null;
    if (typeof j.mode !== "number" || typeof j.mtime_ms !== "number") return null;
    return { type: j.type, mode: j.mode & 0o7777, mtimeMs: j.mtime_ms };
  } catch {
    return null;
  }
}
