/**
 * Test fixtures: users with sr25519 keys and `sig1.` tokens, signed manifests (Ed25519 over the
 * docs/protocol.md#manifest sentence), random ciphertext with its BLAKE3.
 */
import { randomBytes } from "node:crypto";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import { plaintextSizeFor } from "@esync/protocol/framing.ts";
import { signedSentence } from "@esync/protocol/manifest.ts";
import { u8aToHex } from "@polkadot/util";
import {
  cryptoWaitReady,
  ed25519PairFromSeed,
  ed25519Sign,
  encodeAddress,
  sr25519PairFromSeed,
  sr25519Sign,
} from "@polkadot/util-crypto";

await cryptoWaitReady();

/** A test user: SS58 address and a way to mint wallet tokens. */
export interface TestUser {
  address: string;
  /** A valid `sig1.` token expiring `ttl` seconds after `now`. */
  token(now?: number, ttl?: number): string;
  /** `Authorization` header value. */
  auth: string;
}

/** A fresh user with a random sr25519 key. */
export function newUser(): TestUser {
  const pair = sr25519PairFromSeed(randomBytes(32));
  const address = encodeAddress(pair.publicKey, 42);
  const token = (now = Math.floor(Date.now() / 1000), ttl = 3600) => {
    const exp = now + ttl;
    const sig = sr25519Sign(new TextEncoder().encode(`hcfs-auth:${address}:${exp}`), pair);
    return `sig1.${address}.${exp}.${u8aToHex(sig, -1, false)}`;
  };
  return { address, token, auth: `Bearer ${token()}` };
}

/** A folder key pair (Ed25519) used to sign manifests. */
export const folderKey = ed25519PairFromSeed(new Uint8Array(32).fill(7));

/**
 * Random bytes as a Buffer. A ciphertext of a manifest must have a size the framing gives some
 * plaintext (docs/framing.md): 48 bytes or more, and not 1 to 20 bytes past a whole number of
 * full frames; `makeManifest` then declares that plaintext size.
 */
export function randomCiphertext(n: number): Buffer {
  return randomBytes(n);
}

/** Options of `makeManifest`. */
export interface ManifestOpts {
  owner: string;
  ciphertext: Uint8Array;
  folderHash?: string;
  path?: string;
  fileName?: string | null;
  relativePath?: string | null;
  sizeBytes?: number;
  revisionSeq?: number;
  baseRevisionId?: number[] | null;
  ciphertextHash?: string;
  /** The esync `attributes` extension field; omitted when undefined. */
  attributes?: number[];
}

/** 32-byte path hash of a relative path (docs/protocol.md#manifest: BLAKE3 of the NFC UTF-8 path). */
export function pathHashOf(path: string): number[] {
  return Array.from(Buffer.from(blake3Hex(new TextEncoder().encode(path.normalize("NFC"))), "hex"));
}

/** A signed manifest JSON object for `ciphertext`. */
export function makeManifest(o: ManifestOpts): Record<string, unknown> {
  const path = o.path ?? o.relativePath ?? "docs/file.bin";
  const hash = o.ciphertextHash ?? blake3Hex(o.ciphertext);
  const sig = ed25519Sign(new TextEncoder().encode(signedSentence(hash)), folderKey);
  return {
    ss58_address: o.owner,
    folder_hash: o.folderHash ?? "37a8eec1ce19687d",
    ciphertext_hash: hash,
    size_bytes: o.sizeBytes ?? plaintextSizeFor(o.ciphertext.length) ?? 0,
    timestamp: Math.floor(Date.now() / 1000),
    signature: Array.from(sig),
    signing_key: Array.from(folderKey.publicKey),
    path_hash: pathHashOf(path),
    salted_hash: Array.from(randomBytes(32)),
    revision_seq: o.revisionSeq ?? 1,
    base_revision_id: o.baseRevisionId ?? null,
    encrypted_path: Array.from(randomBytes(24)),
    file_name: o.fileName === undefined ? path.split("/").pop()! : o.fileName,
    relative_path: o.relativePath === undefined ? path : o.relativePath,
    ...(o.attributes === undefined ? {} : { attributes: o.attributes }),
  };
}
