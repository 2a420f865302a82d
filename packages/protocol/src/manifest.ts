/**
 * @module protocol/manifest
 * Parsing and validation of the signed file manifest (docs/protocol.md#upload-sessions, #manifest). Every field is
 * checked for type and size; the Ed25519 signature over the fixed ToS sentence is verified.
 * Fields are also checked against each other: `path_hash` must be
 * `BLAKE3(utf8(NFC(relative_path)))` when `relative_path` is given, `relative_path` must be a
 * clean relative path, and (once the ciphertext size is known) `size_bytes` must be exactly the
 * plaintext size of that ciphertext under its framing (`checkFraming`, docs/framing.md). Any failure is 400 `invalid_manifest` with a
 * message naming the field.
 */

import { blake3Hex } from "./blake3.ts";
import { ed25519Valid } from "./ed25519.ts";
import { fail } from "./errors.ts";
import { ciphertextSizeFor } from "./framing.ts";
import { isSs58 } from "./ss58.ts";

/** A validated manifest. Byte fields are `Uint8Array`; sizes in bytes; times Unix seconds. */
export interface Manifest {
  ss58Address: string;
  folderHash: string;
  /** 64 lowercase hex: BLAKE3 of the whole ciphertext. */
  ciphertextHash: string;
  /** Plaintext size in bytes. */
  sizeBytes: number;
  timestamp: number;
  signature: Uint8Array;
  signingKey: Uint8Array;
  pathHash: Uint8Array;
  saltedHash: Uint8Array;
  revisionSeq: number;
  baseRevisionId: Uint8Array | null;
  encryptedPath: Uint8Array;
  fileName: string | null;
  relativePath: string | null;
  source: string | null;
  /** Opaque client-encrypted file attributes (mode, mtime, link), stored and returned unchanged; null when absent. */
  attributes: Uint8Array | null;
}

/** Longest `encrypted_path` accepted, bytes. */
export const MAX_ENCRYPTED_PATH_BYTES = 8192;
/** Longest `file_name` / `relative_path` accepted, characters. */
export const MAX_NAME_CHARS = 4096;
/** Longest `attributes` accepted, bytes (an esync extension outside the signed sentence; docs/user-guide.md#file-attributes). */
export const MAX_ATTRIBUTES_BYTES = 4096;

/** The exact sentence a client signs (docs/protocol.md#manifest; its spelling is part of the wire format). */
export function signedSentence(ciphertextHash: string): string {
  return `I here by declare that the file with hash ${ciphertextHash} that i am uploading is in par with the ToS of the provider`;
}

/**
 * The manifest as it travels in JSON (docs/protocol.md, "The signed manifest"): byte fields are
 * arrays of integers (0–255), sizes in bytes, `timestamp` in client Unix seconds. `parseManifest`
 * turns it into a `Manifest`; clients build it with their library's manifest builder.
 */
export interface WireManifest {
  ss58_address: string;
  /** 16 lowercase hex. */
  folder_hash: string;
  /** 64 lowercase hex: BLAKE3 of the whole ciphertext. */
  ciphertext_hash: string;
  /** Plaintext bytes. */
  size_bytes: number;
  /** Client Unix seconds. */
  timestamp: number;
  /** 64 bytes: Ed25519 by `signing_key` over the UTF-8 bytes of `signedSentence(ciphertext_hash)`. */
  signature: number[];
  /** 32 bytes: the folder's Ed25519 public key. */
  signing_key: number[];
  /** 32 bytes: BLAKE3(utf8(NFC(relative_path))). */
  path_hash: number[];
  /** 32 bytes: BLAKE3(utf8(ss58_address) ‖ plaintext). */
  salted_hash: number[];
  /** 1 for a new file, else one more than the current revision's. */
  revision_seq: number;
  /** 32 bytes, or null for a new file. */
  base_revision_id: number[] | null;
  encrypted_path: number[];
  file_name: string | null;
  relative_path: string | null;
  source?: string | null;
  /** esync extension: opaque client-encrypted attributes (docs/attributes.md); absent when not sent. */
  attributes?: number[];
}

/**
 * True when `m.signature` is a valid Ed25519 signature by `m.signing_key` of the declaration
 * sentence over `m.ciphertext_hash` (the check the server makes on every manifest).
 */
export function verifyWireManifestSignature(m: WireManifest): boolean {
  if (m.signature.length !== 64 || m.signing_key.length !== 32) return false;
  return ed25519Valid(
    new TextEncoder().encode(signedSentence(m.ciphertext_hash)),
    Uint8Array.from(m.signature),
    Uint8Array.from(m.signing_key),
  );
}

const HEX16 = /^[0-9a-f]{16}$/;
const HEX64 = /^[0-9a-f]{64}$/;

/** True for a `folder_hash`: exactly 16 lowercase hex characters (docs/protocol.md#conventions, #limits). */
export function isFolderHash(s: unknown): s is string {
  return typeof s === "string" && HEX16.test(s);
}

function bad(field: string, why: string): never {
  throw fail("invalid_manifest", `manifest.${field} ${why}`);
}

/** Reads a JSON array of byte integers; `len` = exact length, or `[min,max]`. */
export function readBytes(v: unknown, field: string, len: number | [number, number]): Uint8Array {
  if (!Array.isArray(v)) bad(field, "must be an array of byte integers");
  const [min, max] = typeof len === "number" ? [len, len] : len;
  if (v.length < min || v.length > max) {
    bad(
      field,
      min === max
        ? `must be ${min} bytes, got ${v.length}`
        : `must be ${min} to ${max} bytes, got ${v.length}`,
    );
  }
  const out = new Uint8Array(v.length);
  for (let i = 0; i < v.length; i++) {
    const b = v[i];
    if (typeof b !== "number" || !Number.isInteger(b) || b < 0 || b > 255)
      bad(field, `[${i}] is not a byte (0..255)`);
    out[i] = b;
  }
  return out;
}

function readUint(v: unknown, field: string): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0)
    bad(field, "must be a non-negative integer below 2^53");
  return v;
}

function readInt(v: unknown, field: string): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v)) bad(field, "must be an integer within ±2^53");
  return v;
}

/**
 * Why `path` is not a clean relative path (null when it is): absolute, an empty, `.` or `..`
 * segment, a backslash, NUL or another control character (C0, DEL, C1).
 */
export function relativePathProblem(path: string): string | null {
  if (path.length === 0) return "must not be empty";
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f-\u009f]/.test(path)) return "must not contain NUL or control characters";
  if (path.includes("\\")) return "must use / as separator, not backslashes";
  if (path.startsWith("/")) return "must be relative (no leading /)";
  for (const seg of path.split("/")) {
    if (seg === "") return "must not contain empty segments (// or a trailing /)";
    if (seg === "." || seg === "..") return "must not contain . or .. segments";
  }
  return null;
}

/** The field of a path write that breaks the path rule (`pathRuleViolation`), and why. */
export interface PathRuleViolation {
  field: "relative_path" | "path_hash" | "file_name";
  why: string;
}

/**
 * The rule every write of a plaintext path obeys, on upload, rename and path back-fill
 * (docs/paths.md): `relativePath` is a clean relative path (`relativePathProblem`) of at most
 * `MAX_NAME_CHARS` characters, `pathHash` (32 bytes) is `BLAKE3(utf8(NFC(relativePath)))` (so one
 * path has one row, whatever its Unicode form), and `fileName`, when not null, is its last
 * segment (compared in NFC).
 * @returns the first violation, or null when the write obeys the rule.
 */
export function pathRuleViolation(
  relativePath: string,
  pathHash: Uint8Array,
  fileName: string | null,
): PathRuleViolation | null {
  if (relativePath.length > MAX_NAME_CHARS)
    return { field: "relative_path", why: `must be at most ${MAX_NAME_CHARS} characters` };
  const problem = relativePathProblem(relativePath);
  if (problem) return { field: "relative_path", why: problem };
  const nfc = relativePath.normalize("NFC");
  if (Buffer.from(pathHash).toString("hex") !== blake3Hex(new TextEncoder().encode(nfc)))
    return { field: "path_hash", why: "must be BLAKE3(utf8(NFC(relative_path)))" };
  if (fileName !== null && fileName.normalize("NFC") !== nfc.slice(nfc.lastIndexOf("/") + 1))
    return { field: "file_name", why: "must be the last segment of relative_path" };
  return null;
}

/**
 * Holds `size_bytes` to the framing of the ciphertext format (docs/framing.md): a plaintext of
 * `size_bytes` bytes encrypts to exactly `ciphertextSizeFor(size_bytes)` bytes, so the quota,
 * which counts `size_bytes`, counts what is stored. `ciphertextBytes` is the ciphertext's size
 * in bytes (received, or declared as `field`).
 * @throws AppError `invalid_manifest` naming `field` and both sizes when they disagree.
 */
export function checkFraming(m: Manifest, ciphertextBytes: number, field = "the ciphertext part"): void {
  const expected = ciphertextSizeFor(m.sizeBytes);
  if (expected !== ciphertextBytes) {
    throw fail(
      "invalid_manifest",
      `${field} is ${ciphertextBytes} bytes but manifest.size_bytes ${m.sizeBytes} encrypts to exactly ${expected} bytes (28 + 20 × frames + size_bytes, 256 KiB frames)`,
    );
  }
}

function readOptString(v: unknown, field: string): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== "string") bad(field, "must be a string or null");
  if (v.length > MAX_NAME_CHARS) bad(field, `must be at most ${MAX_NAME_CHARS} characters`);
  // No database keeps U+0000 the same way (PostgreSQL cannot store it): refused on every one.
  if (v.includes("\u0000")) bad(field, "must not contain the character U+0000");
  return v;
}

/**
 * Validates a parsed JSON manifest (unknown keys ignored) and verifies its signature.
 * @throws AppError `invalid_manifest` naming the first bad field, or a bad signature.
 */
export function parseManifest(raw: unknown): Manifest {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw fail("invalid_manifest", "manifest must be a JSON object");
  const m = raw as Record<string, unknown>;
  const addr = m.ss58_address ?? m.user_id;
  if (addr === undefined || addr === null) bad("ss58_address", "is required (alias user_id)");
  if (typeof addr !== "string" || !isSs58(addr)) bad("ss58_address", "is not a valid SS58 address");
  if (!isFolderHash(m.folder_hash)) bad("folder_hash", "must be 16 lowercase hex characters");
  if (typeof m.ciphertext_hash !== "string" || !HEX64.test(m.ciphertext_hash)) {
    bad("ciphertext_hash", "must be 64 lowercase hex characters (BLAKE3)");
  }
  const manifest: Manifest = {
    ss58Address: addr,
    folderHash: m.folder_hash,
    ciphertextHash: m.ciphertext_hash,
    sizeBytes: readUint(m.size_bytes, "size_bytes"),
    timestamp: readInt(m.timestamp, "timestamp"),
    signature: readBytes(m.signature, "signature", 64),
    signingKey: readBytes(m.signing_key, "signing_key", 32),
    pathHash: readBytes(m.path_hash, "path_hash", 32),
    saltedHash: readBytes(m.salted_hash, "salted_hash", 32),
    revisionSeq: readUint(m.revision_seq, "revision_seq"),
    baseRevisionId:
      m.base_revision_id === undefined || m.base_revision_id === null
        ? null
        : readBytes(m.base_revision_id, "base_revision_id", 32),
    encryptedPath:
      m.encrypted_path === undefined || m.encrypted_path === null
        ? new Uint8Array(0)
        : readBytes(m.encrypted_path, "encrypted_path", [0, MAX_ENCRYPTED_PATH_BYTES]),
    // The path first: a name taken from it then fails naming the path, not the name.
    relativePath: readOptString(m.relative_path, "relative_path"),
    fileName: readOptString(m.file_name, "file_name"),
    source: readOptString(m.source, "source"),
    attributes:
      m.attributes === undefined || m.attributes === null
        ? null
        : readBytes(m.attributes, "attributes", [1, MAX_ATTRIBUTES_BYTES]),
  };
  if (manifest.relativePath !== null) {
    const v = pathRuleViolation(manifest.relativePath, manifest.pathHash, manifest.fileName);
    if (v) bad(v.field, v.why);
  }
  const ok = ed25519Valid(
    new TextEncoder().encode(signedSentence(manifest.ciphertextHash)),
    manifest.signature,
    manifest.signingKey,
  );
  if (!ok) throw fail("invalid_manifest", "manifest.signature does not verify against signing_key");
  return manifest;
}
