/**
 * @module cli/mnemonic-seal
 * The mnemonic file encrypted with a passphrase (`esync init --passphrase`,
 * `esync passphrase set`). The file is then one JSON document instead of the words:
 *
 * ```json
 * {"esync_sealed_mnemonic": 1, "kdf": "argon2id", "m_kib": 19456, "t": 2, "p": 1,
 *  "salt": "<32 hex>", "cipher": "xchacha20poly1305", "nonce": "<48 hex>", "ciphertext": "<hex>"}
 * ```
 *
 * - Key: Argon2id (RFC 9106, `@noble/hashes`) of the UTF-8 passphrase (NFC) with a random
 *   16-byte salt, 32 bytes out; memory `m_kib` KiB, `t` passes, `p` lanes. The defaults,
 *   19 MiB / 2 passes / 1 lane, are OWASP's recommended Argon2id minimum: about 0.7 s in this
 *   JavaScript implementation, paid once per command. They are stored in the file, so a file
 *   sealed with other parameters still opens.
 * - Cipher: XChaCha20-Poly1305 (`@noble/ciphers`) with a random 24-byte nonce; the associated
 *   data is the header `esync_sealed_mnemonic=1;argon2id;m_kib;t;p;salt` so that no parameter
 *   can be changed without the tag failing.
 * - A wrong passphrase and a tampered file are the same error: the tag does not verify.
 */

import { fromHex, toHex, utf8 } from "@esync/client/hash.ts";
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { argon2id } from "@noble/hashes/argon2.js";

/** Argon2id cost of a sealed mnemonic. */
export interface SealParams {
  /** Memory in KiB. */
  mKib: number;
  /** Passes. */
  t: number;
  /** Lanes. */
  p: number;
}

/** Default cost: OWASP's Argon2id minimum (19 MiB, 2 passes, 1 lane). */
export const DEFAULT_SEAL_PARAMS: SealParams = { mKib: 19_456, t: 2, p: 1 };

/** The passphrase is wrong or the sealed file was altered (the Poly1305 tag does not verify). */
export class WrongPassphraseError extends Error {
  constructor(path: string) {
    super(`wrong passphrase for ${path} (or the file was altered)`);
    this.name = "WrongPassphraseError";
  }
}

interface SealedFile {
  esync_sealed_mnemonic: 1;
  kdf: "argon2id";
  m_kib: number;
  t: number;
  p: number;
  salt: string;
  cipher: "xchacha20poly1305";
  nonce: string;
  ciphertext: string;
}

function header(f: Pick<SealedFile, "m_kib" | "t" | "p" | "salt">): Uint8Array {
  return utf8(`esync_sealed_mnemonic=1;argon2id;${f.m_kib};${f.t};${f.p};${f.salt}`);
}

function deriveKey(
  passphrase: string,
  salt: Uint8Array,
  f: Pick<SealedFile, "m_kib" | "t" | "p">,
): Uint8Array {
  return argon2id(utf8(passphrase.normalize("NFC")), salt, {
    m: f.m_kib,
    t: f.t,
    p: f.p,
    dkLen: 32,
    maxmem: 2 ** 31,
  });
}

/** True when `text` (a mnemonic file's content) is a sealed mnemonic rather than the words. */
export function isSealed(text: string): boolean {
  return text.trimStart().startsWith("{") && text.includes('"esync_sealed_mnemonic"');
}

/** Encrypts `mnemonic` under `passphrase`; returns the file's text (JSON and a newline). */
export function sealMnemonic(
  mnemonic: string,
  passphrase: string,
  params: SealParams = DEFAULT_SEAL_PARAMS,
): string {
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const nonce = crypto.getRandomValues(new Uint8Array(24));
  const head = { m_kib: params.mKib, t: params.t, p: params.p, salt: toHex(salt) };
  const key = deriveKey(passphrase, salt, head);
  const ciphertext = xchacha20poly1305(key, nonce, header(head)).encrypt(utf8(mnemonic));
  const file: SealedFile = {
    esync_sealed_mnemonic: 1,
    kdf: "argon2id",
    ...head,
    cipher: "xchacha20poly1305",
    nonce: toHex(nonce),
    ciphertext: toHex(ciphertext),
  };
  return `${JSON.stringify(file)}\n`;
}

/**
 * Decrypts a sealed mnemonic file's `text`. Throws `WrongPassphraseError` (naming `path`) when
 * the passphrase is wrong or the file was altered, `Error` when it is not a sealed file.
 */
export function openMnemonic(text: string, passphrase: string, path: string): string {
  let f: SealedFile;
  try {
    f = JSON.parse(text) as SealedFile;
  } catch {
    throw new Error(`${path} is neither a mnemonic nor a sealed mnemonic`);
  }
  if (f.esync_sealed_mnemonic !== 1 || f.kdf !== "argon2id" || f.cipher !== "xchacha20poly1305")
    throw new Error(`${path}: unknown sealed mnemonic format`);
  const key = deriveKey(passphrase, fromHex(f.salt), f);
  try {
    const plain = xchacha20poly1305(key, fromHex(f.nonce), header(f)).decrypt(fromHex(f.ciphertext));
    return new TextDecoder().decode(plain);
  } catch {
    throw new WrongPassphraseError(path);
  }
}
