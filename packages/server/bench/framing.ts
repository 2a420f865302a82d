/**
 * The plaintext size a bench declares for ciphertext of `bytes` bytes: manifests must hold to the
 * client's framing (docs/framing.md), so a bench that sends random ciphertext of a chosen length
 * declares the plaintext that encrypts to exactly that length.
 * @throws Error when no plaintext encrypts to `bytes` bytes (docs/framing.md).
 */
import { plaintextSizeFor } from "@esync/protocol/framing.ts";

export function plaintextSizeOf(bytes: number): number {
  const plain = plaintextSizeFor(bytes);
  if (plain === null) throw new Error(`no plaintext encrypts to exactly ${bytes} bytes (docs/framing.md)`);
  return plain;
}
