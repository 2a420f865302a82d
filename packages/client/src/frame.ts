/**
 * @module client/frame
 * The ciphertext format (wire fact, docs/protocol.md#ciphertext), streaming in both directions.
 *
 * XChaCha20-Poly1305 (`@noble/ciphers`), empty AAD, 256 KiB plaintext frames:
 *
 * ```text
 * [base_nonce 24][frame_count u32 LE]
 * frame i: [len u32 LE = ct_len + 16][ct][tag 16]
 * nonce_i = (base_nonce[0..8] XOR u64_le(i)) ‖ base_nonce[8..24]
 * frame_count = max(1, ceil(plaintext / 256 KiB)); ciphertext_size = 28 + 20 × frame_count + plaintext
 * ```
 *
 * A zero-byte file is one empty frame (48 bytes). Every frame but the last holds exactly
 * 256 KiB of plaintext; the decryptor insists on that, on the frame count of the header, on
 * each frame's nonce index (so swapped frames fail authentication) and on nothing following the
 * last frame. Note the header's `frame_count` itself is not authenticated by the format:
 * pass `expectedPlaintextSize` (from the signed listing, `X-Size-Bytes`) to detect a blob cut
 * at a frame boundary with a rewritten count, and compare `salted_hash` after decryption.
 *
 * Neither direction ever holds more than a frame or two in memory.
 */

import {
  ciphertextSizeFor,
  FRAME_PLAINTEXT_BYTES,
  frameCountFor,
  HEADER_BYTES,
  plaintextSizeFor,
} from "@esync/protocol/framing.ts";
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { ExactReader } from "./byte-stream.ts";

/** Bytes of the base nonce at the start of the blob. */
export const BASE_NONCE_SIZE = 24;
/** Bytes of the Poly1305 tag ending each frame. */
export const TAG_SIZE = 16;
/** Bytes of the XChaCha20-Poly1305 key. */
export const KEY_SIZE = 32;

/** Why a ciphertext was rejected. */
export type CiphertextErrorReason =
  | "bad_header"
  | "bad_frame_length"
  | "truncated"
  | "trailing_bytes"
  | "authentication_failed"
  | "size_mismatch";

/** A ciphertext that is not a valid blob of the format, or not one of this key. */
export class CiphertextError extends Error {
  constructor(
    readonly reason: CiphertextErrorReason,
    message: string,
  ) {
    super(message);
    this.name = "CiphertextError";
  }
}

/** Plaintext that does not match the size the caller declared for it. */
export class PlaintextSizeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PlaintextSizeError";
  }
}

function checkSize(n: number, what: string): void {
  if (!Number.isSafeInteger(n) || n < 0)
    throw new RangeError(`${what} must be a non-negative integer, got ${n}`);
}

/** The plaintext size of a blob of `size` bytes; throws `CiphertextError` when no plaintext gives it. */
export function plaintextSizeOf(size: number): number {
  const plain = plaintextSizeFor(size);
  if (plain === null) throw new CiphertextError("size_mismatch", `no plaintext encrypts to ${size} bytes`);
  return plain;
}

/** 24 random bytes from the system CSPRNG. */
export function randomBaseNonce(): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(BASE_NONCE_SIZE));
}

/** Nonce of frame `index`: `base[0..8] XOR u64_le(index)` then `base[8..24]`. */
export function frameNonce(baseNonce: Uint8Array, index: number): Uint8Array {
  const nonce = Uint8Array.from(baseNonce);
  const view = new DataView(nonce.buffer);
  view.setBigUint64(0, view.getBigUint64(0, true) ^ BigInt(index), true);
  return nonce;
}

/** The 28-byte header. */
export function encodeHeader(baseNonce: Uint8Array, frames: number): Uint8Array {
  checkNonce(baseNonce);
  const header = new Uint8Array(HEADER_BYTES);
  header.set(baseNonce, 0);
  new DataView(header.buffer).setUint32(BASE_NONCE_SIZE, frames, true);
  return header;
}

function checkNonce(baseNonce: Uint8Array): void {
  if (baseNonce.byteLength !== BASE_NONCE_SIZE) {
    throw new RangeError(`base nonce must be ${BASE_NONCE_SIZE} bytes, got ${baseNonce.byteLength}`);
  }
}

function checkKeyAndNonce(key: Uint8Array, baseNonce: Uint8Array): void {
  if (key.byteLength !== KEY_SIZE)
    throw new RangeError(`key must be ${KEY_SIZE} bytes, got ${key.byteLength}`);
  checkNonce(baseNonce);
}

/** One encoded frame: `[len u32 LE][ct][tag]` of `plaintext` (at most 256 KiB) at `index`. */
export function encryptFrame(
  key: Uint8Array,
  baseNonce: Uint8Array,
  index: number,
  plaintext: Uint8Array,
): Uint8Array {
  if (plaintext.byteLength > FRAME_PLAINTEXT_BYTES) {
    throw new RangeError(`a frame holds at most ${FRAME_PLAINTEXT_BYTES} bytes, got ${plaintext.byteLength}`);
  }
  const out = new Uint8Array(4 + plaintext.byteLength + TAG_SIZE);
  new DataView(out.buffer).setUint32(0, plaintext.byteLength + TAG_SIZE, true);
  xchacha20poly1305(key, frameNonce(baseNonce, index)).encrypt(plaintext, out.subarray(4));
  return out;
}

/** Plaintext of frame `index` from its `ct ‖ tag` body; throws `CiphertextError` on a bad tag. */
export function decryptFrame(
  key: Uint8Array,
  baseNonce: Uint8Array,
  index: number,
  body: Uint8Array,
): Uint8Array {
  try {
    return xchacha20poly1305(key, frameNonce(baseNonce, index)).decrypt(body);
  } catch {
    throw new CiphertextError(
      "authentication_failed",
      `frame ${index} failed authentication: the ciphertext was altered, frames were reordered, or the key is wrong`,
    );
  }
}

/** Options of the encryptors. */
/** Encrypts frames elsewhere (worker threads: `EncryptPool`), several at once. */
export interface FrameEncryptor {
  /** Frames worth keeping in flight per slot is 2; `size` is the number of slots. */
  readonly size: number;
  /** Same result as `encryptFrame`; must not keep or modify `plaintext` after it returns. */
  encryptFrame(
    key: Uint8Array,
    baseNonce: Uint8Array,
    index: number,
    plaintext: Uint8Array,
  ): Promise<Uint8Array>;
}

/** Options of the encryptors. */
export interface EncryptOptions {
  /** 24-byte base nonce; random by default. Reuse one only to reproduce the same blob of the same plaintext. */
  baseNonce?: Uint8Array;
  /** Encrypt frames on these workers, `2 × size` frames ahead, instead of on this thread. */
  pool?: FrameEncryptor;
}

/**
 * Encrypts a plaintext stream of exactly `plaintextSize` bytes into the blob, frame by frame
 * as it is read (pull-driven, bounded memory: one frame, or `2 × pool.size` with a pool). The
 * returned stream errors with `PlaintextSizeError` when the source is shorter or longer than
 * declared.
 */
export function encryptStream(
  key: Uint8Array,
  plaintext: ReadableStream<Uint8Array>,
  plaintextSize: number,
  options: EncryptOptions = {},
): ReadableStream<Uint8Array> {
  const baseNonce = options.baseNonce ?? randomBaseNonce();
  checkKeyAndNonce(key, baseNonce);
  const frames = frameCountFor(plaintextSize);
  const reader = new ExactReader(plaintext);
  const pool = options.pool;
  const depth = pool ? 2 * pool.size : 1;
  const inflight: Promise<Uint8Array>[] = [];
  let headerSent = false;
  let read = 0; // frames read from the source
  let remaining = plaintextSize;

  const readFrame = async (): Promise<Uint8Array> => {
    const want = Math.min(FRAME_PLAINTEXT_BYTES, remaining);
    const chunk = await reader.read(want);
    if (chunk.byteLength < want) {
      const got = plaintextSize - remaining + chunk.byteLength;
      throw new PlaintextSizeError(`plaintext ended after ${got} of the declared ${plaintextSize} bytes`);
    }
    remaining -= want;
    return chunk;
  };

  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (!headerSent) {
          controller.enqueue(encodeHeader(baseNonce, frames));
          headerSent = true;
          return;
        }
        while (inflight.length < depth && read < frames) {
          const chunk = await readFrame();
          const frame = pool
            ? pool.encryptFrame(key, baseNonce, read, chunk)
            : Promise.resolve(encryptFrame(key, baseNonce, read, chunk));
          frame.catch(() => {}); // awaited below, in order; this only silences early rejections
          inflight.push(frame);
          read++;
        }
        const next = inflight.shift();
        if (next) {
          controller.enqueue(await next);
          return;
        }
        if (!(await reader.atEnd())) {
          await reader.cancel();
          throw new PlaintextSizeError(`plaintext is longer than the declared ${plaintextSize} bytes`);
        }
        controller.close();
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 1 },
  );
}

/** The blob of a file, streamed: its size is read from the file system when called. */
export function encryptFileStream(
  key: Uint8Array,
  path: string,
  options: EncryptOptions = {},
): { stream: ReadableStream<Uint8Array>; plaintextSize: number; ciphertextSize: number } {
  const file = Bun.file(path);
  const plaintextSize = file.size;
  return {
    stream: encryptStream(key, file.stream(), plaintextSize, options),
    plaintextSize,
    ciphertextSize: ciphertextSizeFor(plaintextSize),
  };
}

/** Encrypts a whole in-memory plaintext (small payloads). */
export function encryptBytes(
  key: Uint8Array,
  plaintext: Uint8Array,
  options: EncryptOptions = {},
): Uint8Array {
  const baseNonce = options.baseNonce ?? randomBaseNonce();
  checkKeyAndNonce(key, baseNonce);
  const frames = frameCountFor(plaintext.byteLength);
  const out = new Uint8Array(ciphertextSizeFor(plaintext.byteLength));
  out.set(encodeHeader(baseNonce, frames), 0);
  let at = HEADER_BYTES;
  for (let i = 0; i < frames; i++) {
    const frame = encryptFrame(
      key,
      baseNonce,
      i,
      plaintext.subarray(i * FRAME_PLAINTEXT_BYTES, (i + 1) * FRAME_PLAINTEXT_BYTES),
    );
    out.set(frame, at);
    at += frame.byteLength;
  }
  return out;
}

/** Options of the decryptors. */
export interface DecryptOptions {
  /** When known (listing's `size_bytes`, `X-Size-Bytes`), the blob must decrypt to exactly this many bytes. */
  expectedPlaintextSize?: number;
}

/**
 * Decrypts a blob stream into its plaintext, frame by frame as it is read. The returned stream
 * errors with a `CiphertextError` on a malformed header, a frame length out of place, a bad tag
 * (tampering, reordering, wrong key), truncation, bytes after the last frame, or a plaintext
 * size other than `expectedPlaintextSize`. Frames already emitted were authenticated, but the
 * output is only complete and trustworthy once the stream closes without error.
 */
export function decryptStream(
  key: Uint8Array,
  ciphertext: ReadableStream<Uint8Array>,
  options: DecryptOptions = {},
): ReadableStream<Uint8Array> {
  if (key.byteLength !== KEY_SIZE)
    throw new RangeError(`key must be ${KEY_SIZE} bytes, got ${key.byteLength}`);
  const expected = options.expectedPlaintextSize;
  if (expected !== undefined) checkSize(expected, "expected plaintext size");
  const reader = new ExactReader(ciphertext);
  let baseNonce: Uint8Array | null = null;
  let frames = 0;
  let index = 0;
  let produced = 0;

  const fail = async (reason: CiphertextErrorReason, message: string): Promise<never> => {
    await reader.cancel().catch(() => {});
    throw new CiphertextError(reason, message);
  };

  /** Reads the header or one frame; true once it enqueued plaintext or closed the stream. */
  const step = async (controller: ReadableStreamDefaultController<Uint8Array>): Promise<boolean> => {
    if (baseNonce === null) {
      const header = await reader.read(HEADER_BYTES);
      if (header.byteLength < HEADER_BYTES) {
        return fail(
          "truncated",
          `ciphertext is ${header.byteLength} bytes, shorter than its ${HEADER_BYTES}-byte header`,
        );
      }
      frames = new DataView(header.buffer, header.byteOffset, HEADER_BYTES).getUint32(BASE_NONCE_SIZE, true);
      if (frames === 0) return fail("bad_header", "header declares 0 frames; every blob has at least one");
      if (expected !== undefined && frames !== frameCountFor(expected)) {
        return fail(
          "size_mismatch",
          `header declares ${frames} frames but a ${expected}-byte plaintext has ${frameCountFor(expected)}`,
        );
      }
      baseNonce = header.slice(0, BASE_NONCE_SIZE);
    }
    if (index === frames) {
      if (!(await reader.atEnd())) {
        return fail("trailing_bytes", `unexpected bytes after the last of ${frames} frames`);
      }
      if (expected !== undefined && produced !== expected) {
        return fail("size_mismatch", `decrypted ${produced} bytes, expected ${expected}`);
      }
      controller.close();
      return true;
    }
    const lenBytes = await reader.read(4);
    if (lenBytes.byteLength < 4) {
      return fail("truncated", `ciphertext ends before frame ${index} of ${frames}`);
    }
    const len = new DataView(lenBytes.buffer, lenBytes.byteOffset, 4).getUint32(0, true);
    const last = index === frames - 1;
    const full = FRAME_PLAINTEXT_BYTES + TAG_SIZE;
    if (len < TAG_SIZE || len > full) {
      return fail(
        "bad_frame_length",
        `frame ${index} declares ${len} bytes; a frame holds ${TAG_SIZE}..${full}`,
      );
    }
    if (!last && len !== full) {
      return fail(
        "bad_frame_length",
        `frame ${index} of ${frames} is short (${len} bytes); only the last may be`,
      );
    }
    if (last && frames > 1 && len === TAG_SIZE) {
      return fail(
        "bad_frame_length",
        `last frame ${index} is empty; only a zero-byte plaintext has an empty frame`,
      );
    }
    const body = await reader.read(len);
    if (body.byteLength < len) {
      return fail("truncated", `ciphertext ends inside frame ${index} of ${frames}`);
    }
    let plain: Uint8Array;
    try {
      plain = decryptFrame(key, baseNonce, index, body);
    } catch (e) {
      await reader.cancel().catch(() => {});
      throw e;
    }
    index++;
    produced += plain.byteLength;
    if (plain.byteLength === 0) return false; // the empty frame of a zero-byte file
    controller.enqueue(plain);
    return true;
  };

  return new ReadableStream<Uint8Array>(
    {
      // A pull must enqueue or close, or the stream stalls: loop over empty steps.
      async pull(controller) {
        while (!(await step(controller))) {}
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 1 },
  );
}

/** Decrypts a whole in-memory blob (small payloads); throws `CiphertextError` like `decryptStream`. */
export async function decryptBytes(
  key: Uint8Array,
  blob: Uint8Array,
  options: DecryptOptions = {},
): Promise<Uint8Array> {
  const stream = decryptStream(
    key,
    new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(blob);
        c.close();
      },
    }),
    options,
  );
  return new Uint8Array(await new Response(stream).arrayBuffer());
}
