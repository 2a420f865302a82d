/**
 * @module client/seal
 * One encryption pass over a file that yields everything an upload needs: the blob
 * (docs/protocol.md#ciphertext), its BLAKE3 `ciphertext_hash`, and the `salted_hash` of the plaintext
 * (docs/protocol.md#client-keys), all computed while the bytes stream.
 *
 * Where the blob goes (our decision): the manifest needs `ciphertext_hash` before the first
 * byte is sent, and the random base nonce makes every encryption different, so the blob is
 * kept rather than re-encrypted for sending. A plaintext of at most 1 MiB is read in one piece
 * and encrypted in memory. A blob of at most `memoryLimit` bytes (8 MiB, the
 * single-shot limit) stays in memory; a larger one is written to a spill file (mode 0600) as it
 * is produced, and uploaded chunks are file-backed slices of it, read only as they are sent.
 * Encryption, at roughly 70–130 MB/s in pure JS, is the costly step, so doing it once and
 * writing the blob to disk is cheaper than a second encryption pass; the spill file also lets
 * an interrupted upload resume without encrypting again (`openSealedFile`). Memory stays at a
 * few frames whatever the file size.
 */
import { readFileSync, statSync } from "node:fs";
import { mkdir, open, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import { ciphertextSizeFor } from "@esync/protocol/framing.ts";
import { bodyBytes, forEachChunk, tapStream } from "./byte-stream.ts";
import { encryptBytes, encryptStream, type FrameEncryptor, randomBaseNonce } from "./frame.ts";
import { Blake3, blake3FileHex, fromHex, toHex } from "./hash.ts";
import { SaltedHasher, saltedHash } from "./manifest.ts";

/** Ciphertexts up to this size stay in memory unless told otherwise: 8 MiB. */
export const DEFAULT_MEMORY_LIMIT = 8 * 1024 * 1024;

/** An encrypted file ready to upload. */
export interface SealedBlob {
  /** 24 bytes; keep it to reproduce the identical blob from the same plaintext. */
  readonly baseNonce: Uint8Array;
  readonly plaintextSize: number;
  /** `28 + 20 × frames + plaintextSize`. */
  readonly ciphertextSize: number;
  /** 64 lowercase hex: BLAKE3 of the whole blob. */
  readonly ciphertextHash: string;
  /** 32 bytes: BLAKE3(utf8(ss58) ‖ plaintext). */
  readonly saltedHash: Uint8Array;
  /** Path of the spill file, or null when the blob is in memory. */
  readonly spillPath: string | null;
  /** Bytes [start, end) of the blob; file-backed (not read yet) when spilled. */
  slice(start?: number, end?: number): Blob;
  /** Deletes the spill file, if any. Safe to call twice. */
  dispose(): Promise<void>;
}

/** The source file changed while it was being encrypted. */
export class FileChangedError extends Error {
  constructor(path: string) {
    super(`${path} changed while it was being encrypted; try again once it is stable`);
    this.name = "FileChangedError";
  }
}

/** Options of `sealFile` / `sealBytes`. */
export interface SealOptions {
  /** 32-byte folder key. */
  key: Uint8Array;
  /** Account address, salt of `salted_hash`. */
  ss58Address: string;
  /** Default random; pass a saved one to reproduce a blob (resume). */
  baseNonce?: Uint8Array;
  /** Blobs up to this many bytes stay in memory; default 8 MiB. */
  memoryLimit?: number;
  /** Spill file for larger blobs; default a new file in the OS temp directory. */
  spillPath?: string;
  /** Called after each plaintext frame with plaintext bytes done so far. */
  onProgress?: (plaintextDone: number, plaintextSize: number) => void;
  /** Stops sealing (the spill file is removed). */
  signal?: AbortSignal;
  /** Encrypt on worker threads (`EncryptPool`); default this thread. */
  pool?: FrameEncryptor;
  /**
   * The file's size and mtime as the caller last saw them (e.g. from a scan). A small file that
   * still matches them is read without a stat of its own first; one that changed since is sealed
   * as it is now.
   */
  before?: { size: number; mtimeMs: number };
}

function memoryBlob(
  meta: Omit<SealedBlob, "slice" | "dispose" | "spillPath">,
  bytes: Uint8Array,
): SealedBlob {
  return {
    ...meta,
    spillPath: null,
    slice: (start = 0, end = bytes.byteLength) => new Blob([bodyBytes(bytes.subarray(start, end))]),
    dispose: async () => {},
  };
}

/** The in-memory blob of `plaintext` encrypted whole into `bytes` under `baseNonce`. */
function sealedInMemory(
  plaintext: Uint8Array,
  bytes: Uint8Array,
  baseNonce: Uint8Array,
  ss58Address: string,
): SealedBlob {
  return memoryBlob(
    {
      baseNonce,
      plaintextSize: plaintext.byteLength,
      ciphertextSize: bytes.byteLength,
      ciphertextHash: blake3Hex(bytes),
      saltedHash: saltedHash(ss58Address, plaintext),
    },
    bytes,
  );
}

function fileBlob(meta: Omit<SealedBlob, "slice" | "dispose" | "spillPath">, path: string): SealedBlob {
  return {
    ...meta,
    spillPath: path,
    slice: (start = 0, end = meta.ciphertextSize) => Bun.file(path).slice(start, end),
    dispose: () => rm(path, { force: true }),
  };
}

/** Plaintexts up to this size are read in one piece and encrypted in memory: 1 MiB. */
export const WHOLE_READ_BYTES = 1024 * 1024;

/** Encrypts a file once, hashing as it goes; see the module note for where the blob is kept. */
export async function sealFile(path: string, options: SealOptions): Promise<SealedBlob> {
  const baseNonce = options.baseNonce ?? randomBaseNonce();
  const small = (n: number) =>
    n <= WHOLE_READ_BYTES && ciphertextSizeFor(n) <= (options.memoryLimit ?? DEFAULT_MEMORY_LIMIT);
  if (options.before && small(options.before.size)) {
    const sealed = sealSmallFile(path, options.before, baseNonce, options);
    if (sealed) return sealed;
  }
  const before = await stat(path);
  const plaintextSize = before.size;
  const size = ciphertextSizeFor(plaintextSize);
  if (small(plaintextSize)) {
    const sealed = sealSmallFile(path, before, baseNonce, options);
    if (!sealed) throw new FileChangedError(path);
    return sealed;
  }
  const salted = new SaltedHasher(options.ss58Address);
  let done = 0;
  const plain = tapStream(Bun.file(path).stream(), (chunk) => {
    salted.update(chunk);
    done += chunk.byteLength;
    options.onProgress?.(done, plaintextSize);
  });
  const cipher = encryptStream(options.key, plain, plaintextSize, { baseNonce, pool: options.pool });
  const ctHash = new Blake3();
  const inMemory = size <= (options.memoryLimit ?? DEFAULT_MEMORY_LIMIT);
  const spillPath = inMemory
    ? null
    : (options.spillPath ?? join(tmpdir(), `esync-${toHex(crypto.getRandomValues(new Uint8Array(8)))}.blob`));
  const buffer = inMemory ? new Uint8Array(size) : null;
  if (spillPath) await mkdir(dirname(spillPath), { recursive: true });
  const fh = spillPath ? await open(spillPath, "w", 0o600) : null;
  let at = 0;
  try {
    await forEachChunk(cipher, async (chunk) => {
      options.signal?.throwIfAborted();
      ctHash.update(chunk);
      if (buffer) buffer.set(chunk, at);
      else await fh?.write(chunk);
      at += chunk.byteLength;
    });
    await fh?.sync();
  } catch (e) {
    await fh?.close();
    if (spillPath) await rm(spillPath, { force: true });
    throw e;
  }
  await fh?.close();
  const after = await stat(path);
  if (after.size !== before.size || after.mtimeMs !== before.mtimeMs) {
    if (spillPath) await rm(spillPath, { force: true });
    throw new FileChangedError(path);
  }
  const meta = {
    baseNonce,
    plaintextSize,
    ciphertextSize: size,
    ciphertextHash: ctHash.digestHex(),
    saltedHash: salted.digest(),
  };
  return buffer ? memoryBlob(meta, buffer) : fileBlob(meta, spillPath as string);
}

/**
 * `sealFile` of a small file: one read of the whole plaintext, encrypted and hashed in memory
 * (the same blob the streaming path gives for the same base nonce). Null when the file does not
 * match `before` (size and mtime) once read.
 */
function sealSmallFile(
  path: string,
  before: { size: number; mtimeMs: number },
  baseNonce: Uint8Array,
  options: SealOptions,
): SealedBlob | null {
  options.signal?.throwIfAborted();
  // Synchronous: for a file this small, cheaper than a round trip through the I/O threads.
  const plaintext = readFileSync(path);
  const after = statSync(path);
  if (plaintext.byteLength !== before.size || after.size !== before.size || after.mtimeMs !== before.mtimeMs)
    return null;
  const bytes = encryptBytes(options.key, plaintext, { baseNonce });
  options.onProgress?.(plaintext.byteLength, plaintext.byteLength);
  return sealedInMemory(plaintext, bytes, baseNonce, options.ss58Address);
}

/** Encrypts an in-memory plaintext (kept in memory whatever its size). */
export async function sealBytes(
  plaintext: Uint8Array,
  options: Omit<SealOptions, "memoryLimit" | "spillPath">,
) {
  const blob = new Blob([bodyBytes(plaintext)]);
  const baseNonce = options.baseNonce ?? randomBaseNonce();
  const bytes = new Uint8Array(
    await new Response(
      encryptStream(options.key, blob.stream(), plaintext.byteLength, { baseNonce }),
    ).arrayBuffer(),
  );
  return sealedInMemory(plaintext, bytes, baseNonce, options.ss58Address);
}

/** What is remembered of a spilled blob to reuse it later (e.g. in an upload state file). */
export interface SealedFileRecord {
  spillPath: string;
  /** 48 hex. */
  baseNonceHex: string;
  plaintextSize: number;
  ciphertextHash: string;
  /** 64 hex. */
  saltedHashHex: string;
}

/** The record of a spilled blob, for `openSealedFile`. */
export function sealedFileRecord(blob: SealedBlob): SealedFileRecord | null {
  if (!blob.spillPath) return null;
  return {
    spillPath: blob.spillPath,
    baseNonceHex: toHex(blob.baseNonce),
    plaintextSize: blob.plaintextSize,
    ciphertextHash: blob.ciphertextHash,
    saltedHashHex: toHex(blob.saltedHash),
  };
}

/**
 * Reopens a spill file left by an earlier `sealFile`, after checking its size and BLAKE3
 * (native, several GB/s) against the record. Null when it is missing or differs.
 */
export async function openSealedFile(record: SealedFileRecord): Promise<SealedBlob | null> {
  const file = Bun.file(record.spillPath);
  const size = ciphertextSizeFor(record.plaintextSize);
  if (!(await file.exists()) || file.size !== size) return null;
  if ((await blake3FileHex(record.spillPath)) !== record.ciphertextHash) return null;
  return fileBlob(
    {
      baseNonce: fromHex(record.baseNonceHex),
      plaintextSize: record.plaintextSize,
      ciphertextSize: size,
      ciphertextHash: record.ciphertextHash,
      saltedHash: fromHex(record.saltedHashHex),
    },
    record.spillPath,
  );
}
