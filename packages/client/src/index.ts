/**
 * @module client
 * The esync client library: keys from a BIP39 mnemonic, `sig1.` tokens, the framed
 * XChaCha20-Poly1305 ciphertext, signed manifests, a typed API client and a resumable
 * uploader. Each module cites the docs/protocol.md section its rules come from.
 */

export { blake3Hex } from "@esync/protocol/blake3.ts";
export {
  ciphertextSizeFor,
  FRAME_OVERHEAD_BYTES,
  FRAME_PLAINTEXT_BYTES,
  frameCountFor,
  HEADER_BYTES,
  plaintextSizeFor,
} from "@esync/protocol/framing.ts";
export { signedSentence, verifyWireManifestSignature, type WireManifest } from "@esync/protocol/manifest.ts";
export { RENAME_DECLARATION_PREFIX, renameDeclaration } from "@esync/protocol/rename.ts";
export * from "./api.ts";
export * from "./api-error.ts";
export type * from "./api-types.ts";
export * from "./batch.ts";
export * from "./byte-stream.ts";
export * from "./downloader.ts";
export * from "./encrypt-pool.ts";
export * from "./frame.ts";
export * from "./hash.ts";
export * from "./keys.ts";
export * from "./manifest.ts";
export * from "./retry.ts";
export * from "./seal.ts";
export * from "./share-crypto.ts";
export type * from "./share-types.ts";
export * from "./shares.ts";
export * from "./token.ts";
export * from "./upload-state.ts";
export * from "./uploader.ts";
