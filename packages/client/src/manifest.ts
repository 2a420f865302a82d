/**
 * @module client/manifest
 * The signed upload manifest (wire fact, docs/protocol.md#manifest) and the hashes it carries.
 *
 * - `path_hash = BLAKE3(utf8(NFC(relative_path)))` (docs/protocol.md#client-keys), the file's identity in a
 *   folder; its 64-hex form is the `file_id` of URLs (docs/protocol.md#sync-endpoints).
 * - `salted_hash = BLAKE3(utf8(ss58) ‖ plaintext)` (docs/protocol.md#client-keys), computed streaming by
 *   `SaltedHasher`.
 * - `signature` = Ed25519 (folder key) over the UTF-8 bytes of the fixed sentence of
 *   `signedSentence` (the protocol package), misspellings included; `signing_key` = the folder's public key.
 * - Byte fields are JSON arrays of integers; `base_revision_id` is null for a new file.
 * - `encrypted_path` is sent empty, as the real clients do (it is opaque to the server and
 *   the plaintext `relative_path` is sent anyway).
 */
import { signedSentence, type WireManifest } from "@esync/protocol/manifest.ts";
import { Blake3, blake3, toHex, utf8 } from "./hash.ts";

/** Name this library puts in `source`. */
export const MANIFEST_SOURCE = "esync";

/** A path that cannot name a file inside a folder. */
export class InvalidRelativePathError extends Error {
  constructor(path: string, why: string) {
    super(`invalid relative path ${JSON.stringify(path)}: ${why}`);
    this.name = "InvalidRelativePathError";
  }
}

/**
 * The canonical form of a path inside a folder: NFC, `/` separators, no leading `./` or `/`,
 * no empty, `.` or `..` segments. Throws `InvalidRelativePathError`.
 */
export function normalizeRelativePath(path: string): string {
  const segments = path.normalize("NFC").replaceAll("\\", "/").split("/");
  while (segments[0] === "" || segments[0] === ".") segments.shift();
  if (segments.length === 0) throw new InvalidRelativePathError(path, "empty");
  for (const s of segments) {
    if (s === "" || s === "." || s === "..")
      throw new InvalidRelativePathError(path, `segment "${s}" not allowed`);
  }
  return segments.join("/");
}

/** `BLAKE3(utf8(NFC(relativePath)))`, 32 bytes. The path is hashed as given after NFC only. */
export function pathHash(relativePath: string): Uint8Array {
  return blake3(relativePath.normalize("NFC"));
}

/** `file_id` of URLs: 64 lowercase hex of `path_hash`. */
export function fileId(pathHashBytes: Uint8Array | readonly number[]): string {
  return toHex(pathHashBytes);
}

/** Incremental `salted_hash`: `BLAKE3(utf8(ss58) ‖ plaintext)`; feed plaintext chunks in order. */
export class SaltedHasher {
  private readonly h = new Blake3();
  constructor(ss58Address: string) {
    this.h.update(utf8(ss58Address));
  }
  update(plaintext: Uint8Array): this {
    this.h.update(plaintext);
    return this;
  }
  /** 32 bytes. */
  digest(): Uint8Array {
    return this.h.digest();
  }
}

/** Plaintexts up to this size are salted-hashed by one native call on a copy: 64 KiB. */
const ONE_SHOT_BYTES = 64 * 1024;

/** `salted_hash` of an in-memory plaintext, 32 bytes. */
export function saltedHash(ss58Address: string, plaintext: Uint8Array): Uint8Array {
  if (plaintext.byteLength > ONE_SHOT_BYTES) return new SaltedHasher(ss58Address).update(plaintext).digest();
  const salt = utf8(ss58Address);
  const input = new Uint8Array(salt.byteLength + plaintext.byteLength);
  input.set(salt, 0);
  input.set(plaintext, salt.byteLength);
  return blake3(input);
}

/** Revision fields of a write (docs/protocol.md#manifest "Revisions"). */
export interface RevisionInfo {
  /** 1 for a new file, else current + 1 (at least). */
  revisionSeq: number;
  /** null for a new file; else the current `revision_id` (32 bytes). */
  baseRevisionId: Uint8Array | readonly number[] | null;
}

/** Revision of a new file: seq 1, no base. */
export const NEW_FILE: RevisionInfo = { revisionSeq: 1, baseRevisionId: null };

/**
 * Revision that replaces `current` (a listing entry, or the Conflict envelope's values);
 * a new file when `current` is null/undefined.
 */
export function nextRevision(
  current?: { revision_seq: number; revision_id: Uint8Array | readonly number[] } | null,
): RevisionInfo {
  if (!current) return NEW_FILE;
  return { revisionSeq: current.revision_seq + 1, baseRevisionId: current.revision_id };
}

/** The Ed25519 key that signs manifests: a folder's keys (`FolderKeys` fits). */
export interface ManifestSigner {
  /** 32-byte public key. */
  readonly signingKey: Uint8Array;
  sign(message: Uint8Array): Uint8Array;
}

/** What a manifest is built from. */
export interface ManifestInput {
  ss58Address: string;
  folderHash: string;
  /** 64 lowercase hex. */
  ciphertextHash: string;
  /** Plaintext bytes. */
  sizeBytes: number;
  /** 32 bytes. */
  saltedHash: Uint8Array;
  /** Path inside the folder; normalised by `normalizeRelativePath`. */
  relativePath: string;
  revision?: RevisionInfo;
  /** Unix seconds; default now. */
  timestamp?: number;
  /** Default empty. */
  encryptedPath?: Uint8Array;
  /** Default `esync`; null to send null. */
  source?: string | null;
  /** Sealed attributes (`sync/attributes.ts`), 1..4096 bytes; omitted when undefined. */
  attributes?: Uint8Array;
}

function bytesField(b: Uint8Array | readonly number[], length: number | null, name: string): number[] {
  const arr = Array.from(b);
  if (length !== null && arr.length !== length)
    throw new RangeError(`${name} must be ${length} bytes, got ${arr.length}`);
  return arr;
}

/** Builds and signs a manifest. Throws `RangeError`/`InvalidRelativePathError` on bad input. */
export function buildManifest(input: ManifestInput, signer: ManifestSigner): WireManifest {
  if (!/^[0-9a-f]{64}$/.test(input.ciphertextHash))
    throw new RangeError("ciphertext_hash must be 64 lowercase hex");
  if (!/^[0-9a-f]{16}$/.test(input.folderHash)) throw new RangeError("folder_hash must be 16 lowercase hex");
  if (!Number.isSafeInteger(input.sizeBytes) || input.sizeBytes < 0)
    throw new RangeError("size_bytes must be a u64");
  const rel = normalizeRelativePath(input.relativePath);
  const revision = input.revision ?? NEW_FILE;
  if (!Number.isSafeInteger(revision.revisionSeq) || revision.revisionSeq < 1) {
    throw new RangeError("revision_seq must be a positive integer");
  }
  const signature = signer.sign(utf8(signedSentence(input.ciphertextHash)));
  return {
    ss58_address: input.ss58Address,
    folder_hash: input.folderHash,
    ciphertext_hash: input.ciphertextHash,
    size_bytes: input.sizeBytes,
    timestamp: input.timestamp ?? Math.floor(Date.now() / 1000),
    signature: bytesField(signature, 64, "signature"),
    signing_key: bytesField(signer.signingKey, 32, "signing_key"),
    path_hash: Array.from(pathHash(rel)),
    salted_hash: bytesField(input.saltedHash, 32, "salted_hash"),
    revision_seq: revision.revisionSeq,
    base_revision_id:
      revision.baseRevisionId === null ? null : bytesField(revision.baseRevisionId, 32, "base_revision_id"),
    encrypted_path: Array.from(input.encryptedPath ?? []),
    file_name: rel.split("/").at(-1) ?? null,
    relative_path: rel,
    source: input.source === undefined ? MANIFEST_SOURCE : input.source,
    ...(input.attributes === undefined ? {} : { attributes: Array.from(input.attributes) }),
  };
}

/**
 * The same manifest moved onto another base revision (after a 409 Conflict envelope): seq
 * current + 1 on the current revision, or a new file (seq 1, no base) when none exists. The
 * signature covers only `ciphertext_hash`, so it stays valid and is not redone.
 */
export function rebaseManifest(
  manifest: WireManifest,
  current: { currentRevisionId: Uint8Array | readonly number[] | null; currentRevisionSeq: number },
): WireManifest {
  if (current.currentRevisionId === null) return { ...manifest, revision_seq: 1, base_revision_id: null };
  return {
    ...manifest,
    revision_seq: current.currentRevisionSeq + 1,
    base_revision_id: bytesField(current.currentRevisionId, 32, "current_revision_id"),
  };
}
