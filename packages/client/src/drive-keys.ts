/**
 * @module client/drive-keys
 * The client-side keys of shared drives (docs/drives.md, "Client"): the server only ever sees
 * opaque values.
 *
 * - **Drive key** `E`: the 32-byte entropy of the owner's folder mnemonic
 *   (`SHA-256(BIP39_seed(master)[0..32] ‖ label)`, see `keys.ts`). Whoever holds it derives the
 *   folder's XChaCha20-Poly1305 key and Ed25519 signing key.
 * - **Invite link** `{server}/invite/{token}#k={base64url(E), no padding}`: the fragment carries
 *   the drive key and never reaches a server.
 * - **Invite id** = lowercase hex BLAKE3 of the UTF-8 token.
 * - **Sealed token** (parked for the owner's and managers' other devices): key =
 *   HKDF-SHA256(E, salt = invite id, info `hippius-drive-invite-token-v1`, 32 bytes);
 *   XChaCha20-Poly1305 with a random 24-byte nonce and the invite id as associated data over
 *   the token; `{"v":1,"nonce":…,"ciphertext":…}` (standard base64, no spaces), then standard
 *   base64 of those JSON bytes.
 * - **Grant blob** (sealed by the member at accept, opened on any of its devices): passphrase =
 *   lowercase hex of HKDF-SHA256(member's 64-byte BIP39 seed, salt = member SS58, info
 *   `hippius-drive-grant-v1`, 32 bytes); Argon2id (128 MiB, 3 passes, 1 lane, 16-byte salt)
 *   of the passphrase is the XChaCha20-Poly1305 key over the owner's folder mnemonic, with the
 *   member SS58 as associated data; JSON `{ciphertext, salt, nonce, aad, kdf}` in standard
 *   base64, then standard padded base64 of the JSON bytes.
 *
 * Libraries: `@noble/hashes` (HKDF, SHA-256), `@noble/ciphers` (XChaCha20-Poly1305),
 * `@node-rs/argon2` (Argon2id), `@scure/bip39`.
 */
import { randomBytes } from "node:crypto";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { hkdf } from "@noble/hashes/hkdf.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { hashRaw } from "@node-rs/argon2";
import { entropyToMnemonic, mnemonicToEntropy } from "@scure/bip39";
import { wordlist } from "@scure/bip39/wordlists/english.js";
import { utf8 } from "./hash.ts";
import { bip39SeedAsync, type FolderKeys, folderKeysFromMnemonic } from "./keys.ts";

/** Thrown for an invite link, sealed token or grant blob that is malformed or does not open. */
export class DriveKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DriveKeyError";
  }
}

/** The 32-byte drive key `E` of a folder: the entropy of its folder mnemonic. */
export function driveKey(keys: FolderKeys): Uint8Array {
  return mnemonicToEntropy(keys.mnemonic, wordlist);
}

/** Folder keys rebuilt from a drive key; `folderHash` is the owner's (the label may be a display name). */
export function folderKeysFromDriveKey(label: string, folderHash: string, key: Uint8Array): FolderKeys {
  if (key.byteLength !== 32) throw new DriveKeyError(`a drive key is 32 bytes, got ${key.byteLength}`);
  return folderKeysFromMnemonic(label, entropyToMnemonic(key, wordlist), folderHash);
}

/** `invite_id`: lowercase hex BLAKE3 of the UTF-8 token (64 characters). */
export function inviteIdOf(token: string): string {
  return blake3Hex(utf8(token));
}

/** The invite link `{base}/invite/{token}#k={base64url(key)}` (`base` without a trailing `/`). */
export function inviteLink(base: string, token: string, key: Uint8Array): string {
  return `${base.replace(/\/+$/, "")}/invite/${token}#k=${Buffer.from(key).toString("base64url")}`;
}

/** Token and drive key of an invite link. @throws DriveKeyError for anything else. */
export function parseInviteLink(link: string): { token: string; key: Uint8Array } {
  const m = /\/invite\/([A-Za-z0-9_-]+)#(?:.*&)?k=([A-Za-z0-9_-]+)(?:&|$)/.exec(link.trim());
  if (!m?.[1] || !m[2]) throw new DriveKeyError("not an invite link (expected …/invite/TOKEN#k=KEY)");
  const key = new Uint8Array(Buffer.from(m[2], "base64url"));
  if (key.byteLength !== 32)
    throw new DriveKeyError("the invite link's key is not 32 bytes: was it cut short?");
  return { token: m[1], key };
}

function tokenKey(key: Uint8Array, inviteId: string): Uint8Array {
  return hkdf(sha256, key, utf8(inviteId), utf8("hippius-drive-invite-token-v1"), 32);
}

/** The sealed token (standard base64) parked with `PUT …/sealed-token`. */
export function sealInviteToken(key: Uint8Array, token: string): string {
  const inviteId = inviteIdOf(token);
  const nonce = new Uint8Array(randomBytes(24));
  const ct = xchacha20poly1305(tokenKey(key, inviteId), nonce, utf8(inviteId)).encrypt(utf8(token));
  const json = JSON.stringify({
    v: 1,
    nonce: Buffer.from(nonce).toString("base64"),
    ciphertext: Buffer.from(ct).toString("base64"),
  });
  return Buffer.from(json).toString("base64");
}

/** Opens a sealed token of invite `inviteId`; checks BLAKE3(token) = `inviteId`. @throws DriveKeyError */
export function openInviteToken(key: Uint8Array, inviteId: string, sealed: string): string {
  try {
    const o = JSON.parse(Buffer.from(sealed, "base64").toString("utf8")) as {
      v?: number;
      nonce?: string;
      ciphertext?: string;
    };
    if (o.v !== 1 || typeof o.nonce !== "string" || typeof o.ciphertext !== "string")
      throw new Error("bad shape");
    const pt = xchacha20poly1305(
      tokenKey(key, inviteId),
      Buffer.from(o.nonce, "base64"),
      utf8(inviteId),
    ).decrypt(Buffer.from(o.ciphertext, "base64"));
    const token = new TextDecoder().decode(pt);
    if (inviteIdOf(token) !== inviteId) throw new Error("id mismatch");
    return token;
  } catch {
    throw new DriveKeyError(`the sealed token of invite ${inviteId} does not open with this drive key`);
  }
}

/** `Algorithm.Argon2id` and `Version.V0x13` of `@node-rs/argon2` (const enums, not importable as values). */
const ARGON2ID = 2;
const ARGON2_V13 = 1;

/** Argon2id parameters of a grant blob. */
export interface GrantKdf {
  algorithm: "argon2id";
  /** KiB. */
  memory_kib: number;
  time_cost: number;
  parallelism: number;
}

/** The parameters new grant blobs are sealed with. */
export const GRANT_KDF: GrantKdf = {
  algorithm: "argon2id",
  memory_kib: 131072,
  time_cost: 3,
  parallelism: 1,
};

async function grantKey(
  memberMnemonic: string,
  member: string,
  salt: Uint8Array,
  kdf: GrantKdf,
): Promise<Uint8Array> {
  if (
    kdf.algorithm !== "argon2id" ||
    !(kdf.memory_kib >= 8 && kdf.memory_kib <= 262144) ||
    !(kdf.time_cost >= 1 && kdf.time_cost <= 16) ||
    !(kdf.parallelism >= 1 && kdf.parallelism <= 8)
  )
    throw new DriveKeyError("the grant blob's key derivation parameters are refused");
  const seed = await bip39SeedAsync(memberMnemonic);
  const passphrase = Buffer.from(
    hkdf(sha256, seed, utf8(member), utf8("hippius-drive-grant-v1"), 32),
  ).toString("hex");
  const key = await hashRaw(passphrase, {
    salt,
    memoryCost: kdf.memory_kib,
    timeCost: kdf.time_cost,
    parallelism: kdf.parallelism,
    outputLen: 32,
    algorithm: ARGON2ID,
    version: ARGON2_V13,
  });
  return new Uint8Array(key);
}

/**
 * Seals the owner's folder mnemonic for member `member` (its SS58 and master mnemonic): the
 * `grant_blob` of the accept call, standard padded base64.
 */
export async function sealGrant(
  folderMnemonic: string,
  memberMnemonic: string,
  member: string,
): Promise<string> {
  const salt = new Uint8Array(randomBytes(16));
  const nonce = new Uint8Array(randomBytes(24));
  const key = await grantKey(memberMnemonic, member, salt, GRANT_KDF);
  const ct = xchacha20poly1305(key, nonce, utf8(member)).encrypt(utf8(folderMnemonic));
  const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64");
  const json = JSON.stringify({
    ciphertext: b64(ct),
    salt: b64(salt),
    nonce: b64(nonce),
    aad: b64(utf8(member)),
    kdf: GRANT_KDF,
  });
  return Buffer.from(json).toString("base64");
}

/** Opens a grant blob sealed by `sealGrant`: the owner's folder mnemonic. @throws DriveKeyError */
export async function openGrant(blob: string, memberMnemonic: string, member: string): Promise<string> {
  let o: { ciphertext?: string; salt?: string; nonce?: string; kdf?: GrantKdf };
  try {
    o = JSON.parse(Buffer.from(blob, "base64").toString("utf8"));
  } catch {
    throw new DriveKeyError("the grant blob is not base64 JSON");
  }
  if (typeof o.ciphertext !== "string" || typeof o.salt !== "string" || typeof o.nonce !== "string" || !o.kdf)
    throw new DriveKeyError("the grant blob lacks ciphertext, salt, nonce or kdf");
  const nonce = Buffer.from(o.nonce, "base64");
  const salt = Buffer.from(o.salt, "base64");
  if (nonce.byteLength !== 24 || salt.byteLength < 8)
    throw new DriveKeyError("the grant blob's nonce or salt is malformed");
  const key = await grantKey(memberMnemonic, member, salt, o.kdf);
  try {
    return new TextDecoder().decode(
      xchacha20poly1305(key, nonce, utf8(member)).decrypt(Buffer.from(o.ciphertext, "base64")),
    );
  } catch {
    throw new DriveKeyError(
      "the grant blob does not open for this account (sealed for another one, or altered)",
    );
  }
}
