/**
 * @module client/keys
 * Identity and per-folder keys, all derived from one BIP39 master mnemonic.
 *
 * - **Account** (our decision, issue 5): the sr25519 key of the mnemonic with standard
 *   Substrate derivation (`mnemonicToMiniSecret`, optional `//hard/soft` path), shown as an SS58
 *   address (prefix 42 unless told otherwise). It signs `sig1.` tokens (docs/protocol.md#authentication).
 * - **Folder keys** (wire fact, docs/protocol.md#client-keys):
 *   `folder_mnemonic = BIP39_mnemonic_from_entropy(SHA-256(BIP39_seed(master, "")[0..32] ‖ utf8(label)))`,
 *   folder key = `BIP39_seed(folder_mnemonic, "")[0..32]`, which is both the XChaCha20-Poly1305
 *   key and the Ed25519 seed whose public key is the manifest's `signing_key`.
 * - `folderHash(label)` = first 16 hex of SHA-256(utf8 label) (docs/protocol.md#manifest, #conventions).
 *
 * Libraries: `@scure/bip39` (mnemonics and BIP39 seeds), `@polkadot/keyring` +
 * `@polkadot/util-crypto` (sr25519, SS58), `node:crypto` (Ed25519), `Bun.CryptoHasher` (SHA-256).
 *
 * @example
 * ```ts
 * const id = await identityFromMnemonic(mnemonic);
 * const folder = id.folder("photos"); // { folderHash, key, signingKey, sign }
 * ```
 */

import { createPrivateKey, createPublicKey, sign } from "node:crypto";
import { Keyring } from "@polkadot/keyring";
import { cryptoWaitReady, encodeAddress } from "@polkadot/util-crypto";
import {
  generateMnemonic as bip39Generate,
  validateMnemonic as bip39Validate,
  entropyToMnemonic,
  mnemonicToSeedSync,
  mnemonicToSeedWebcrypto,
} from "@scure/bip39";
import { wordlist } from "@scure/bip39/wordlists/english.js";
import { concatBytes, sha256, toHex, utf8 } from "./hash.ts";

/** SS58 prefix used when none is given (generic Substrate, as the real clients use). */
export const DEFAULT_SS58_PREFIX = 42;

/** Thrown for a mnemonic that is not a valid English BIP39 phrase. */
export class InvalidMnemonicError extends Error {
  constructor(message = "not a valid English BIP39 mnemonic (check the words and their count)") {
    super(message);
    this.name = "InvalidMnemonicError";
  }
}

let cryptoReady: Promise<boolean> | null = null;
/** Loads the WASM crypto of `@polkadot/util-crypto` once; every async factory here awaits it. */
export function keysReady(): Promise<boolean> {
  cryptoReady ??= cryptoWaitReady();
  return cryptoReady;
}

/** Trims and collapses whitespace and lowercases a mnemonic (BIP39 itself NFKD-normalises). */
export function normalizeMnemonic(mnemonic: string): string {
  return mnemonic.trim().toLowerCase().split(/\s+/).join(" ");
}

/** True when `mnemonic` is a valid English BIP39 phrase (after `normalizeMnemonic`). */
export function validateMnemonic(mnemonic: string): boolean {
  return bip39Validate(normalizeMnemonic(mnemonic), wordlist);
}

/** A new random English mnemonic: 24 words (256 bits) by default, or 12 (128 bits). */
export function generateMnemonic(words: 12 | 24 = 24): string {
  return bip39Generate(wordlist, words === 24 ? 256 : 128);
}

/** `BIP39_seed(mnemonic, "")`: 64 bytes (PBKDF2-HMAC-SHA512, 2048 rounds). Throws `InvalidMnemonicError`. */
export function bip39Seed(mnemonic: string): Uint8Array {
  const m = normalizeMnemonic(mnemonic);
  if (!bip39Validate(m, wordlist)) throw new InvalidMnemonicError();
  return mnemonicToSeedSync(m, "");
}

/**
 * `bip39Seed` computed by the runtime's native PBKDF2 (WebCrypto, through `@scure/bip39`):
 * the same 64 bytes, without the pure-JS PBKDF2's tens of milliseconds. Throws
 * `InvalidMnemonicError`.
 */
export async function bip39SeedAsync(mnemonic: string): Promise<Uint8Array> {
  const m = normalizeMnemonic(mnemonic);
  if (!bip39Validate(m, wordlist)) throw new InvalidMnemonicError();
  return mnemonicToSeedWebcrypto(m, "");
}

/** `hex(SHA-256(utf8(label)))[0..16]`: the 16 lowercase hex characters naming a folder (docs/protocol.md#manifest). */
export function folderHash(label: string): string {
  return toHex(sha256(label)).slice(0, 16);
}

/**
 * The 24-word folder mnemonic of `label` (docs/protocol.md#client-keys), from the master seed's first 32
 * bytes (pass the 64-byte `bip39Seed(master)` to skip recomputing it).
 */
export function folderMnemonic(master: string | Uint8Array, label: string): string {
  const seed = typeof master === "string" ? bip39Seed(master) : master;
  const entropy = sha256(concatBytes(seed.subarray(0, 32), utf8(label)));
  return entropyToMnemonic(entropy, wordlist);
}

/** Keys of one sync folder (docs/protocol.md#client-keys). */
export interface FolderKeys {
  /** The folder label the keys were derived from. */
  readonly label: string;
  /** `folderHash(label)`: 16 lowercase hex characters. */
  readonly folderHash: string;
  /** The folder's 24-word mnemonic. */
  readonly mnemonic: string;
  /** 32 bytes: the XChaCha20-Poly1305 key and the Ed25519 seed. */
  readonly key: Uint8Array;
  /** 32 bytes: the Ed25519 public key (the manifest's `signing_key`). */
  readonly signingKey: Uint8Array;
  /** Ed25519 signature (64 bytes) of `message` with the folder key. */
  sign(message: Uint8Array): Uint8Array;
  /**
   * SS58 address of the folder's Ed25519 public key: the identity the real desktop client
   * uses for a folder. Not our account (ours is the sr25519 key of the master mnemonic).
   */
  ed25519Address(prefix?: number): string;
}

/** An Ed25519 signer from a 32-byte seed. */
export interface Ed25519Signer {
  /** 32-byte public key. */
  readonly publicKey: Uint8Array;
  /** 64-byte signature of `message`. */
  sign(message: Uint8Array): Uint8Array;
}

/** DER prefix of an Ed25519 PKCS#8 private key (RFC 8410); the 32-byte seed follows. */
const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

/**
 * Ed25519 key pair of a 32-byte seed (RFC 8032 key generation), signing with the runtime's
 * native crypto (`node:crypto`). Ed25519 signatures are deterministic: the same as any other
 * RFC 8032 implementation gives.
 */
export function ed25519FromSeed(seed: Uint8Array): Ed25519Signer {
  if (seed.byteLength !== 32) throw new RangeError(`Ed25519 seed must be 32 bytes, got ${seed.byteLength}`);
  const key = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: "der", type: "pkcs8" });
  const spki = createPublicKey(key).export({ format: "der", type: "spki" });
  return {
    publicKey: new Uint8Array(spki.subarray(spki.byteLength - 32)),
    sign: (message) => new Uint8Array(sign(null, message, key)),
  };
}

/**
 * Folder keys of `label` for a master mnemonic (or its 64-byte BIP39 seed).
 */
export function deriveFolderKeys(master: string | Uint8Array, label: string): FolderKeys {
  const mnemonic = folderMnemonic(master, label);
  return folderKeysOf(label, mnemonic, mnemonicToSeedSync(mnemonic, "").slice(0, 32));
}

/** `deriveFolderKeys` with the native PBKDF2 (`bip39SeedAsync`): the same keys, sooner. */
export async function deriveFolderKeysAsync(master: string | Uint8Array, label: string): Promise<FolderKeys> {
  const seed = typeof master === "string" ? await bip39SeedAsync(master) : master;
  const mnemonic = folderMnemonic(seed, label);
  return folderKeysOf(label, mnemonic, (await mnemonicToSeedWebcrypto(mnemonic, "")).slice(0, 32));
}

/**
 * Folder keys from a folder mnemonic received from its owner (a shared drive's, `drive-keys.ts`);
 * `hash` is the owner's folder hash (default `folderHash(label)`). Throws `InvalidMnemonicError`.
 */
export function folderKeysFromMnemonic(
  label: string,
  mnemonic: string,
  hash = folderHash(label),
): FolderKeys {
  return folderKeysOf(label, mnemonic, bip39Seed(mnemonic).slice(0, 32), hash);
}

function folderKeysOf(
  label: string,
  mnemonic: string,
  key: Uint8Array,
  hash = folderHash(label),
): FolderKeys {
  const signer = ed25519FromSeed(key);
  return {
    label,
    folderHash: hash,
    mnemonic,
    key,
    signingKey: signer.publicKey,
    sign: signer.sign,
    ed25519Address: (prefix = DEFAULT_SS58_PREFIX) => encodeAddress(signer.publicKey, prefix),
  };
}

/** Something that signs as an SS58 account (what `sig1.` tokens need). */
export interface AccountSigner {
  /** SS58 address of the account. */
  readonly address: string;
  /** Signature of `message` by the account key (sr25519: 64 bytes). */
  sign(message: Uint8Array): Uint8Array;
}

/** The user's identity: the sr25519 account plus per-folder keys, all from one master mnemonic. */
export interface Identity extends AccountSigner {
  /** The normalised master mnemonic. */
  readonly mnemonic: string;
  /** 32-byte sr25519 public key. */
  readonly publicKey: Uint8Array;
  /** SS58 prefix the address is encoded with. */
  readonly ss58Prefix: number;
  /** Folder keys of `label` (cached per label). */
  folder(label: string): FolderKeys;
  /** `folder(label)` derived with the native PBKDF2 (`deriveFolderKeysAsync`); same cache. */
  folderKeys(label: string): Promise<FolderKeys>;
}

/** Options of `identityFromMnemonic`. */
export interface IdentityOptions {
  /** SS58 prefix of the address; default 42. */
  ss58Prefix?: number;
  /** Substrate derivation path appended to the mnemonic, e.g. `//esync` (default none). */
  derivationPath?: string;
}

/**
 * The identity of a master mnemonic. The account is the sr25519 pair of
 * `mnemonicToMiniSecret(mnemonic)` (what `Keyring.addFromUri(mnemonic)` and polkadot-js wallets
 * give), optionally derived further by `derivationPath`. Throws `InvalidMnemonicError`.
 */
export async function identityFromMnemonic(
  mnemonic: string,
  options: IdentityOptions = {},
): Promise<Identity> {
  await keysReady();
  const normalized = normalizeMnemonic(mnemonic);
  const seed = await bip39SeedAsync(normalized);
  const ss58Prefix = options.ss58Prefix ?? DEFAULT_SS58_PREFIX;
  const path = options.derivationPath ?? "";
  if (path !== "" && !path.startsWith("/"))
    throw new RangeError(`derivation path must start with "/": ${path}`);
  const pair = new Keyring({ type: "sr25519", ss58Format: ss58Prefix }).addFromUri(`${normalized}${path}`);
  const folders = new Map<string, FolderKeys>();
  return {
    mnemonic: normalized,
    address: pair.address,
    publicKey: pair.publicKey,
    ss58Prefix,
    sign: (message) => pair.sign(message),
    folder(label) {
      let keys = folders.get(label);
      if (!keys) {
        keys = deriveFolderKeys(seed, label);
        folders.set(label, keys);
      }
      return keys;
    },
    async folderKeys(label) {
      const cached = folders.get(label);
      if (cached) return cached;
      const keys = await deriveFolderKeysAsync(seed, label);
      // A `folder(label)` call while this one awaited may have cached it first: keep one object.
      const first = folders.get(label) ?? keys;
      folders.set(label, first);
      return first;
    },
  };
}
