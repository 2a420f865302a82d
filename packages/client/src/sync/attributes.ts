/**
 * @module client/sync/attributes
 * File attributes carried in the manifest's optional `attributes` field (an esync extension;
 * docs/user-guide.md#file-attributes): what a file is (regular file or symbolic link), its permission
 * bits and its modification time, so that a restore is faithful.
 *
 * Wire form (opaque to the server, which stores and returns it unchanged):
 * `nonce (24) ‖ XChaCha20-Poly1305(k, nonce, json, aad)` where
 * - `k = HKDF-SHA256(folder key, salt = "", info = "esync attributes v1")`, 32 bytes;
 * - `aad = utf8("esync-attributes-v2:") ‖ salted_hash`, binding the attributes to the content
 *   they describe (the server cannot move them onto other content; the hash is in every
 *   `/get_state` entry). They stay valid when `/rename_files` moves the row (docs/protocol.md#rename-files);
 * - `json = {"v":2,"type":"file"|"symlink"|"dir","mode":<permission bits>,"mtime_ms":<ms>}`.
 * Version 1 (written before renames existed) also bound the path:
 * `aad = utf8("esync-attributes-v1:") ‖ path_hash ‖ salted_hash`, `"v":1`; it is still read, and
 * reported as `pathBound` because a rename of the row makes it unreadable.
 *
 * The manifest signature (docs/protocol.md#manifest) covers only `ciphertext_hash`, so this field lies
 * outside what the server verifies; its integrity comes from the AEAD tag above. A symbolic
 * link's content (the blob) is its target path, encrypted like any file content.
 */
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { hkdf } from "@noble/hashes/hkdf.js";
import { sha256 } from "@noble/hashes/sha2.js";

/**
 * What a path holds. `dir` is an empty directory, stored as a zero-byte marker file
 * `DIR/.esync-dir` (`DIR_MARKER`) until the server has folder entries (docs/protocol.md#folder-entries).
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
  /** Set when read from version 1 attributes, which a `/rename_files` move makes unreadable. */
  pathBound?: boolean;
}

const NONCE = 24;
const INFO = new TextEncoder().encode("esync attributes v1");

/** Attribute keys derived so far, by folder key object (a folder's keys are one object). */
const derived = new WeakMap<Uint8Array, { folderKey: Uint8Array; key: Uint8Array }>();

function attributesKey(folderKey: Uint8Array): Uint8Array {
  const hit = derived.get(folderKey);
  // The copy kept beside it notices a caller that changed the key's bytes in place.
  if (hit && hit.folderKey.length === folderKey.length && hit.folderKey.every((b, i) => b === folderKey[i]))
    return hit.key;
  const key = hkdf(sha256, folderKey, new Uint8Array(0), INFO, 32);
  derived.set(folderKey, { folderKey: folderKey.slice(), key });
  return key;
}

/** What the attributes of one revision are bound to: its `path_hash` and `salted_hash` (32 bytes each). */
export interface AttributesBinding {
  pathHash: Uint8Array | readonly number[];
  saltedHash: Uint8Array | readonly number[];
}

/** Associated data of version `v`: v2 binds the content, v1 the path and the content. */
function aad(b: AttributesBinding, v: 1 | 2): Uint8Array {
  const prefix = new TextEncoder().encode(`esync-attributes-v${v}:`);
  const parts = v === 1 ? [b.pathHash, b.saltedHash] : [b.saltedHash];
  const out = new Uint8Array(prefix.length + 32 * parts.length);
  out.set(prefix, 0);
  parts.forEach((p, i) => {
    out.set(Uint8Array.from(p), prefix.length + 32 * i);
  });
  return out;
}

/** Encrypts `attrs` of the revision `binding` under the folder key (32 bytes); about 90 bytes. */
export function sealAttributes(
  folderKey: Uint8Array,
  binding: AttributesBinding,
  attrs: FileAttributes,
): Uint8Array {
  const json = JSON.stringify({
    v: 2,
    type: attrs.type,
    mode: attrs.mode & 0o7777,
    mtime_ms: attrs.mtimeMs,
  });
  return seal(folderKey, aad(binding, 2), json);
}

/** `nonce (24) ‖ XChaCha20-Poly1305(attributes key, nonce, json, associated)`, a fresh nonce each time. */
function seal(folderKey: Uint8Array, associated: Uint8Array, json: string): Uint8Array {
  const nonce = crypto.getRandomValues(new Uint8Array(NONCE));
  const sealed = xchacha20poly1305(attributesKey(folderKey), nonce, associated).encrypt(
    new TextEncoder().encode(json),
  );
  const out = new Uint8Array(NONCE + sealed.length);
  out.set(nonce, 0);
  out.set(sealed, NONCE);
  return out;
}

/**
 * Decrypts attributes sealed by `sealAttributes` for `binding` (or version 1 attributes, then
 * `pathBound`); null when they are absent, were made for other content or key (version 1:
 * another path too), were tampered with, or are of an unknown version.
 */
export function openAttributes(
  folderKey: Uint8Array,
  binding: AttributesBinding,
  sealed: Uint8Array | readonly number[] | undefined | null,
): FileAttributes | null {
  if (!sealed || sealed.length <= NONCE + 16) return null;
  const bytes = Uint8Array.from(sealed);
  const key = attributesKey(folderKey);
  for (const v of [2, 1] as const) {
    let plain: Uint8Array;
    try {
      plain = xchacha20poly1305(key, bytes.subarray(0, NONCE), aad(binding, v)).decrypt(
        bytes.subarray(NONCE),
      );
    } catch {
      continue;
    }
    try {
      const j = JSON.parse(new TextDecoder().decode(plain)) as Record<string, unknown>;
      if (j.v !== v || (j.type !== "file" && j.type !== "symlink" && j.type !== "dir")) return null;
      if (typeof j.mode !== "number" || typeof j.mtime_ms !== "number") return null;
      return {
        type: j.type,
        mode: j.mode & 0o7777,
        mtimeMs: j.mtime_ms,
        ...(v === 1 ? { pathBound: true } : {}),
      };
    } catch {
      return null;
    }
  }
  return null;
}

/** Decoded attributes of one directory (a folder entry's, docs/attributes.md#directory-modification-times). */
export interface DirAttributes {
  /** Modification time, Unix milliseconds. */
  mtimeMs: number;
}

/** Associated data of a directory's attributes: they belong to that path (NFC) and no other. */
function dirAad(path: string): Uint8Array {
  return new TextEncoder().encode(`esync-dir-attributes-v1:${path}`);
}

/**
 * Encrypts the attributes of directory `path` (folder-relative, NFC) under the folder key (32
 * bytes), for a folder entry (docs/protocol.md#folder-entry-attributes): `nonce (24) ‖
 * XChaCha20-Poly1305(k, nonce, json, aad)` with the key of `sealAttributes`,
 * `aad = utf8("esync-dir-attributes-v1:" ‖ path)` and `json = {"v":1,"type":"dir","mtime_ms":<ms>}`;
 * about 80 bytes.
 */
export function sealDirAttributes(folderKey: Uint8Array, path: string, attrs: DirAttributes): Uint8Array {
  return seal(folderKey, dirAad(path), JSON.stringify({ v: 1, type: "dir", mtime_ms: attrs.mtimeMs }));
}

/**
 * Decrypts what `sealDirAttributes` sealed for `path`; null when absent, made for another path or
 * key, tampered with, or of an unknown version.
 */
export function openDirAttributes(
  folderKey: Uint8Array,
  path: string,
  sealed: Uint8Array | readonly number[] | undefined | null,
): DirAttributes | null {
  if (!sealed || sealed.length <= NONCE + 16) return null;
  const bytes = Uint8Array.from(sealed);
  try {
    const plain = xchacha20poly1305(attributesKey(folderKey), bytes.subarray(0, NONCE), dirAad(path)).decrypt(
      bytes.subarray(NONCE),
    );
    const j = JSON.parse(new TextDecoder().decode(plain)) as Record<string, unknown>;
    if (j.v !== 1 || j.type !== "dir" || typeof j.mtime_ms !== "number" || !Number.isFinite(j.mtime_ms))
      return null;
    return { mtimeMs: j.mtime_ms };
  } catch {
    return null;
  }
}
