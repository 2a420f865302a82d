/**
 * @module protocol/framing
 * The size arithmetic of the ciphertext format, written once for the server's checks and the
 * client's encryptor (docs/framing.md). A blob is a 28-byte header (24-byte base nonce and a
 * u32 frame count) then `frame_count` frames, each its plaintext (at most 256 KiB, every frame
 * but the last exactly 256 KiB) plus a 4-byte length and a 16-byte tag:
 *
 * ```text
 * frame_count     = max(1, ceil(plaintext_size / 256 KiB))
 * ciphertext_size = 28 + 20 × frame_count + plaintext_size
 * ```
 *
 * A zero-byte plaintext is one empty frame: 48 bytes.
 */

/** Plaintext bytes per frame (every frame but the last holds exactly this many): 256 KiB. */
export const FRAME_PLAINTEXT_BYTES = 256 * 1024;
/** Bytes of the blob header: the 24-byte base nonce and the u32 frame count. */
export const HEADER_BYTES = 28;
/** Bytes each frame adds to its plaintext: the u32 length and the 16-byte tag. */
export const FRAME_OVERHEAD_BYTES = 20;

function checkSize(n: number, what: string): void {
  if (!Number.isSafeInteger(n) || n < 0)
    throw new RangeError(`${what} must be a non-negative integer, got ${n}`);
}

/**
 * Frames of a plaintext of `plaintextBytes` bytes: `max(1, ceil(plaintextBytes / 256 KiB))`.
 * @throws RangeError when `plaintextBytes` is not a non-negative safe integer.
 */
export function frameCountFor(plaintextBytes: number): number {
  checkSize(plaintextBytes, "plaintext size");
  return Math.max(1, Math.ceil(plaintextBytes / FRAME_PLAINTEXT_BYTES));
}

/**
 * Bytes of the ciphertext of a plaintext of `plaintextBytes` bytes:
 * `28 + 20 × frame_count + plaintextBytes`.
 * @throws RangeError when `plaintextBytes` is not a non-negative safe integer.
 */
export function ciphertextSizeFor(plaintextBytes: number): number {
  return HEADER_BYTES + FRAME_OVERHEAD_BYTES * frameCountFor(plaintextBytes) + plaintextBytes;
}

/**
 * The plaintext size whose ciphertext is exactly `ciphertextBytes` bytes, or null when no
 * plaintext encrypts to that size (under 48 bytes, or a last frame of 0 bytes after full ones,
 * or one longer than 256 KiB).
 * @throws RangeError when `ciphertextBytes` is not a non-negative safe integer.
 */
export function plaintextSizeFor(ciphertextBytes: number): number | null {
  checkSize(ciphertextBytes, "ciphertext size");
  const body = ciphertextBytes - HEADER_BYTES;
  const frames = Math.max(
    1,
    Math.ceil((body - FRAME_OVERHEAD_BYTES) / (FRAME_PLAINTEXT_BYTES + FRAME_OVERHEAD_BYTES)),
  );
  const plain = body - FRAME_OVERHEAD_BYTES * frames;
  return plain >= 0 && ciphertextSizeFor(plain) === ciphertextBytes ? plain : null;
}
