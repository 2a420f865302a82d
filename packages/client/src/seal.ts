/**
 * @module client/seal
 * One encryption pass over a file that yields everything an upload needs: the blob
 * (docs/protocol.md#ciphertext), its BLAKE3 `ciphertext_hash`, and the `salted_hash` of the plaintext
 * (docs/protocol.md#client-keys), all computed while the bytes stream.
 *
 * Where the blob goes: a plaintext of at most 1 MiB is read in one piece and encrypted in
 * memory. A blob of at most `memoryLimit` bytes (8 MiB, the single-shot limit) stays in memory.
 * `sealFile` writes a larger one to a spill file (mode 0600) as it is produced (shares use it).
 * Uploads use `sealFileStreaming` instead: the manifest needs `ciphertext_hash` before the
 * session opens, so one pass encrypts and hashes without keeping anything, and each chunk is
 * encrypted again from the file when it is sent (`SealedBlob.read`), under the same base nonce,
 * which gives the same bytes (docs/framing.md, "Streaming uploads"). No disk space is used
 * besides the file itself; memory stays at a few frames per chunk in flight.
 */
import { readFileSync, statSync } from "node:fs";
import { mkdir, open, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import {
  ciphertextSizeFor,
  FRAME_OVERHEAD_BYTES,
  FRAME_PLAINTEXT_BYTES,
  frameCountFor,
  HEADER_BYTES,
} from "@esync/protocol/framing.ts";
import { bodyBytes, forEachChunk, tapStream } from "./byte-stream.ts";
import {
  encodeHeader,
  encryptBytes,
  encryptFrame,
  encryptStream,
  type FrameEncryptor,
  randomBaseNonce,
} from "./frame.ts";
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
  /** Path of the spill file, or null when the blob is in memory or streamed. */
  readonly spillPath: string | null;
  /**
   * The source file's identity when the blob is streamed (re-encrypted from it on `read`), else
   * null.
   */
  readonly source: FileIdentity | null;
  /**
   * Bytes [start, end) of the blob; file-backed (not read yet) when spilled. Throws for a
   * streamed blob, whose bytes only `read` gives.
   */
  slice(start?: number, end?: number): Blob;
  /**
   * Bytes [start, end) of the blob, whatever its kind: a streamed blob encrypts them from the
   * source file now. Throws `FileChangedError` when the file no longer matches `source`.
   */
  read(start: number, end: number): Promise<Blob>;
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

/** What identifies a local file between two runs: bytes, mtime (ms) and inode number. */
export interface FileIdentity {
  path: string;
  size: number;
  mtimeMs: number;
  ino: number;
}

type BlobMeta = Omit<SealedBlob, "slice" | "read" | "dispose" | "spillPath" | "source">;

function memoryBlob(meta: BlobMeta, bytes: Uint8Array): SealedBlob {
  const slice = (start = 0, end = bytes.byteLength) => new Blob([bodyBytes(bytes.subarray(start, end))]);
  return {
    ...meta,
    spillPath: null,
    source: null,
    slice,
    read: async (start, end) => slice(start, end),
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

function fileBlob(meta: BlobMeta, path: string): SealedBlob {
  const slice = (start = 0, end = meta.ciphertextSize) => Bun.file(path).slice(start, end);
  return {
    ...meta,
    spillPath: path,
    source: null,
    slice,
    read: async (start, end) => slice(start, end),
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

/**
 * Like `sealFile`, but a blob over `memoryLimit` is not kept: one pass encrypts the file to hash
 * it, and the blob returned re-encrypts each range from the file when it is `read` (same base
 * nonce, same bytes). Its `source` is the file's identity then; a read after the file changed
 * throws `FileChangedError`.
 */
export async function sealFileStreaming(
  path: string,
  options: Omit<SealOptions, "spillPath">,
): Promise<SealedBlob> {
  const limit = options.memoryLimit ?? DEFAULT_MEMORY_LIMIT;
  if (options.before && ciphertextSizeFor(options.before.size) <= limit) return sealFile(path, options);
  const before = await stat(path);
  if (ciphertextSizeFor(before.size) <= limit) return sealFile(path, options);
  const baseNonce = options.baseNonce ?? randomBaseNonce();
  const plaintextSize = before.size;
  const salted = new SaltedHasher(options.ss58Address);
  const ctHash = new Blake3();
  let done = 0;
  const plain = tapStream(Bun.file(path).stream(), (chunk) => {
    salted.update(chunk);
    done += chunk.byteLength;
    options.onProgress?.(done, plaintextSize);
  });
  await forEachChunk(
    encryptStream(options.key, plain, plaintextSize, { baseNonce, pool: options.pool }),
    async (chunk) => {
      options.signal?.throwIfAborted();
      ctHash.update(chunk);
    },
  );
  const after = await stat(path);
  if (after.size !== before.size || after.mtimeMs !== before.mtimeMs || after.ino !== before.ino)
    throw new FileChangedError(path);
  return streamedBlob(
    {
      baseNonce,
      plaintextSize,
      ciphertextSize: ciphertextSizeFor(plaintextSize),
      ciphertextHash: ctHash.digestHex(),
      saltedHash: salted.digest(),
    },
    { path, size: before.size, mtimeMs: before.mtimeMs, ino: before.ino },
    options.key,
    options.pool,
  );
}

function streamedBlob(
  meta: BlobMeta,
  source: FileIdentity,
  key: Uint8Array,
  pool?: FrameEncryptor,
): SealedBlob {
  return {
    ...meta,
    spillPath: null,
    source,
    slice: () => {
      throw new Error("a streamed blob is read with read(start, end)");
    },
    read: async (start, end) =>
      new Blob([bodyBytes(await encryptRange(source, key, meta.baseNonce, start, end, pool))]),
    dispose: async () => {},
  };
}

/**
 * Bytes [start, end) of the blob of the file `source` under `key` and `baseNonce`: the header
 * part, then every frame the range touches, encrypted from the plaintext read now (offsets per
 * docs/framing.md). Throws `FileChangedError` when the file no longer matches `source` (size,
 * mtime, inode) or is shorter than it.
 */
export async function encryptRange(
  source: FileIdentity,
  key: Uint8Array,
  baseNonce: Uint8Array,
  start: number,
  end: number,
  pool?: FrameEncryptor,
): Promise<Uint8Array> {
  const size = source.size;
  const frames = frameCountFor(size);
  if (!(Number.isSafeInteger(start) && Number.isSafeInteger(end) && start >= 0 && start <= end))
    throw new RangeError(`bad range ${start}..${end}`);
  if (end > ciphertextSizeFor(size)) throw new RangeError(`range end ${end} is past the blob`);
  const out = new Uint8Array(end - start);
  if (start < HEADER_BYTES)
    out.set(encodeHeader(baseNonce, frames).subarray(start, Math.min(end, HEADER_BYTES)), 0);
  if (end <= HEADER_BYTES) return out;
  const encoded = FRAME_PLAINTEXT_BYTES + FRAME_OVERHEAD_BYTES;
  const first = Math.floor(Math.max(0, start - HEADER_BYTES) / encoded);
  const last = Math.min(frames - 1, Math.floor((end - 1 - HEADER_BYTES) / encoded));
  const plainStart = first * FRAME_PLAINTEXT_BYTES;
  const plain = new Uint8Array(Math.min(size, (last + 1) * FRAME_PLAINTEXT_BYTES) - plainStart);
  const fh = await open(source.path, "r");
  try {
    let got = 0;
    while (got < plain.byteLength) {
      const { bytesRead } = await fh.read(plain, got, plain.byteLength - got, plainStart + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    const st = await fh.stat();
    if (
      got !== plain.byteLength ||
      st.size !== size ||
      st.mtimeMs !== source.mtimeMs ||
      st.ino !== source.ino
    )
      throw new FileChangedError(source.path);
  } finally {
    await fh.close();
  }
  const bodies = await Promise.all(
    Array.from({ length: last - first + 1 }, (_, k) => {
      const pt = plain.subarray(k * FRAME_PLAINTEXT_BYTES, (k + 1) * FRAME_PLAINTEXT_BYTES);
      return pool
        ? pool.encryptFrame(key, baseNonce, first + k, pt)
        : encryptFrame(key, baseNonce, first + k, pt);
    }),
  );
  bodies.forEach((body, k) => {
    const at = HEADER_BYTES + (first + k) * encoded;
    const from = Math.max(start, at);
    const to = Math.min(end, at + body.byteLength);
    if (to > from) out.set(body.subarray(from - at, to - at), from - start);
  });
  return out;
}

/**
 * What is remembered of a spilled or streamed blob to reuse it later (e.g. in an upload state
 * file): the spill file's path, or the source file's identity for a streamed one.
 */
export interface SealedFileRecord {
  spillPath: string | null;
  /** The source file of a streamed blob (no spill file). */
  source?: FileIdentity;
  /** 48 hex. */
  baseNonceHex: string;
  plaintextSize: number;
  ciphertextHash: string;
  /** 64 hex. */
  saltedHashHex: string;
}

/** The record of a spilled or streamed blob, for `openSealedFile`; null for one in memory. */
export function sealedFileRecord(blob: SealedBlob): SealedFileRecord | null {
  if (!blob.spillPath && !blob.source) return null;
  return {
    spillPath: blob.spillPath,
    ...(blob.source ? { source: blob.source } : {}),
    baseNonceHex: toHex(blob.baseNonce),
    plaintextSize: blob.plaintextSize,
    ciphertextHash: blob.ciphertextHash,
    saltedHashHex: toHex(blob.saltedHash),
  };
}

/**
 * Reopens a blob from its record. A spill file is checked against the record's size and BLAKE3
 * (native, several GB/s). A streamed blob needs `key` (and may use `pool`) and is reopened when
 * its source file still has the recorded size, mtime and inode; its bytes are not hashed again
 * (a file changed behind an unchanged identity fails at finalize, docs/framing.md). Null when
 * the blob cannot be reopened.
 */
export async function openSealedFile(
  record: SealedFileRecord,
  streamed?: { key: Uint8Array; pool?: FrameEncryptor },
): Promise<SealedBlob | null> {
  const size = ciphertextSizeFor(record.plaintextSize);
  const meta = {
    baseNonce: fromHex(record.baseNonceHex),
    plaintextSize: record.plaintextSize,
    ciphertextSize: size,
    ciphertextHash: record.ciphertextHash,
    saltedHash: fromHex(record.saltedHashHex),
  };
  if (record.source) {
    if (!streamed) return null;
    const src = record.source;
    const st = await stat(src.path).catch(() => null);
    if (!st || st.size !== src.size || st.mtimeMs !== src.mtimeMs || st.ino !== src.ino) return null;
    if (src.size !== record.plaintextSize) return null;
    return streamedBlob(meta, src, streamed.key, streamed.pool);
  }
  if (!record.spillPath) return null;
  const file = Bun.file(record.spillPath);
  if (!(await file.exists()) || file.size !== size) return null;
  if ((await blake3FileHex(record.spillPath)) !== record.ciphertextHash) return null;
  return fileBlob(meta, record.spillPath);
}
