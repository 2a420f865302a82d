/**
 * @module protocol/rename
 * The signed rename declaration of `POST /rename_files` (docs/protocol.md#rename-files, a wire fact): the
 * entries sorted by `old_path_hash` (ascending byte order), each written
 * `<hex old_path_hash>:<hex new_path_hash>`, joined by single commas, after a fixed prefix that
 * ends with a colon and one space. Ed25519 over its UTF-8 bytes.
 */
import { ed25519Valid } from "./ed25519.ts";
import { toHex } from "./ids.ts";

/** The exact prefix of the rename declaration (ends with ": "). */
export const RENAME_DECLARATION_PREFIX =
  "I hereby declare that I am renaming the following files on HCFS with the understanding that I have read and agree to the Terms of Service: ";

/** One signed pair: 32-byte path hashes. */
export interface RenamePair {
  oldPathHash: Uint8Array;
  newPathHash: Uint8Array;
}

/** The declaration text for `pairs` (in any order; sorted here by `oldPathHash`). */
export function renameDeclaration(pairs: readonly RenamePair[]): string {
  const entries = pairs
    .map((p) => [toHex(p.oldPathHash), toHex(p.newPathHash)] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([o, n]) => `${o}:${n}`);
  return RENAME_DECLARATION_PREFIX + entries.join(",");
}

/** True when `signature` (64 bytes) verifies the declaration of `pairs` under `signingKey` (32 bytes). */
export function verifyRenameSignature(
  pairs: readonly RenamePair[],
  signature: Uint8Array,
  signingKey: Uint8Array,
): boolean {
  return ed25519Valid(new TextEncoder().encode(renameDeclaration(pairs)), signature, signingKey);
}
