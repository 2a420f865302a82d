/**
 * @module client/share-crypto
 * The cryptography and link formats of share links (docs/sharing.md, "Links and keys"), with no
 * dependency on Bun or Node: the recipient page bundles this module for the browser.
 *
 * - Share key `K`: 32 random bytes per file share. The file is the framed blob of `frame.ts`
 *   under `K`; the file name is one XChaCha20-Poly1305 message under `K` (24-byte random nonce,
 *   empty associated data, ciphertext with its 16-byte tag).
 * - Password wrap `W` (89 bytes): `0x01 ‖ salt 16 ‖ nonce 24 ‖ XChaCha20-Poly1305(Argon2id(password,
 *   salt; 19,456 KiB, 2 passes, 1 lane, version 0x13, 32 bytes), nonce, K)`. Passwords have at
 *   least 8 characters.
 * - Links: `{origin}/share/{token}#k={base64url(K)}` or `#p={base64url(W)}`, and
 *   `{origin}/share/folder/{token}#k=…` / `#p=…` for a folder share (the drive's file key).
 *   base64url without padding; the fragment never reaches a server.
 *
 * Libraries: `@noble/ciphers` (XChaCha20-Poly1305), `@noble/hashes` (Argon2id).
 */
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { argon2id, argon2idAsync } from "@noble/hashes/argon2.js";

/** Bytes of a share key (and of a drive's file key). */
export const SHARE_KEY_SIZE = 32;
/** Bytes of a password wrap: version, salt, nonce, sealed key with tag. */
export const SHARE_WRAP_SIZE = 89;
/** Version byte that starts a password wrap. */
export const SHARE_WRAP_VERSION = 0x01;
/** Minimum share password length, in characters (a client rule). */
export const SHARE_PASSWORD_MIN_LENGTH = 8;
/** Argon2id parameters of the password wrap: memory in KiB, passes, lanes, version, output bytes. */
export const SHARE_ARGON2 = { m: 19_456, t: 2, p: 1, version: 0x13, dkLen: 32 } as const;
/** Bytes of an XChaCha20-Poly1305 nonce. */
const NONCE_SIZE = 24;
/** Bytes of the password wrap's salt. */
const SALT_SIZE = 16;
/** A share or folder-share token: one base64url segment. */
export const SHARE_TOKEN_RE = /^[A-Za-z0-9_-]+$/;

/** A link's fragment secret could not be opened: a wrong password or a damaged `#p=` value. */
export class ShareSecretError extends Error {
  constructor(message = "the password does not open this link") {
    super(message);
    this.name = "ShareSecretError";
  }
}

/** A string that is not a share link of either kind. */
export class ShareLinkError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ShareLinkError";
  }
}

/** base64url without padding. */
export function base64url(bytes: Uint8Array): string {
  return base64(bytes).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** Bytes of a base64url string (padding optional); throws `ShareLinkError` on other characters. */
export function fromBase64url(text: string): Uint8Array {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new ShareLinkError("not base64url");
  return fromBase64(text.replace(/-/g, "+").replace(/_/g, "/"));
}

/** Standard base64 with padding. */
export function base64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.byteLength; i += 0x8000)
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** Bytes of a standard base64 string (padding optional); throws `ShareLinkError` when malformed. */
export function fromBase64(text: string): Uint8Array {
  const padded = text + "=".repeat((4 - (text.length % 4)) % 4);
  let raw: string;
  try {
    raw = atob(padded);
  } catch {
    throw new ShareLinkError("not base64");
  }
  const out = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out;
}

/** A fresh 32-byte share key from the CSPRNG. */
export function generateShareKey(): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(SHARE_KEY_SIZE));
}

function checkKey(key: Uint8Array): void {
  if (key.byteLength !== SHARE_KEY_SIZE)
    throw new RangeError(`share key must be ${SHARE_KEY_SIZE} bytes, got ${key.byteLength}`);
}

/** The encrypted file name: `ciphertext` (with tag) and its 24-byte `nonce` (random unless given). */
export function encryptFileName(
  name: string,
  key: Uint8Array,
  nonce: Uint8Array = crypto.getRandomValues(new Uint8Array(NONCE_SIZE)),
): { ciphertext: Uint8Array; nonce: Uint8Array } {
  checkKey(key);
  if (nonce.byteLength !== NONCE_SIZE) throw new RangeError(`nonce must be ${NONCE_SIZE} bytes`);
  return { ciphertext: xchacha20poly1305(key, nonce).encrypt(new TextEncoder().encode(name)), nonce };
}

/** The file name of `encryptFileName`; throws `ShareSecretError` when the key does not open it. */
export function decryptFileName(ciphertext: Uint8Array, nonce: Uint8Array, key: Uint8Array): string {
  checkKey(key);
  if (nonce.byteLength !== NONCE_SIZE) throw new ShareSecretError("the file name's nonce is malformed");
  let plain: Uint8Array;
  try {
    plain = xchacha20poly1305(key, nonce).decrypt(ciphertext);
  } catch {
    throw new ShareSecretError("the link's key does not open this share");
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(plain);
  } catch {
    throw new ShareSecretError("the file name is not UTF-8");
  }
}

/** Throws `RangeError` for a password shorter than 8 characters (code points). */
export function checkSharePassword(password: string): void {
  if ([...password].length < SHARE_PASSWORD_MIN_LENGTH)
    throw new RangeError(`a share password needs at least ${SHARE_PASSWORD_MIN_LENGTH} characters`);
}

const argonOptions = {
  t: SHARE_ARGON2.t,
  m: SHARE_ARGON2.m,
  p: SHARE_ARGON2.p,
  dkLen: SHARE_ARGON2.dkLen,
  version: SHARE_ARGON2.version,
};

/** The 32-byte Argon2id key of `password` and a 16-byte salt (synchronous; about a second of CPU). */
export function sharePasswordKey(password: string, salt: Uint8Array): Uint8Array {
  return argon2id(new TextEncoder().encode(password), salt, argonOptions);
}

/** `sharePasswordKey` that yields to the event loop while it works. */
export function sharePasswordKeyAsync(password: string, salt: Uint8Array): Promise<Uint8Array> {
  return argon2idAsync(new TextEncoder().encode(password), salt, argonOptions);
}

/**
 * The 89-byte password wrap of `key`. Salt and nonce are random unless given (tests pin them).
 * Throws `RangeError` for a short password or a key that is not 32 bytes.
 */
export async function wrapShareKey(
  password: string,
  key: Uint8Array,
  fixed: { salt?: Uint8Array; nonce?: Uint8Array } = {},
): Promise<Uint8Array> {
  checkSharePassword(password);
  checkKey(key);
  const salt = fixed.salt ?? crypto.getRandomValues(new Uint8Array(SALT_SIZE));
  const nonce = fixed.nonce ?? crypto.getRandomValues(new Uint8Array(NONCE_SIZE));
  if (salt.byteLength !== SALT_SIZE || nonce.byteLength !== NONCE_SIZE)
    throw new RangeError(`salt must be ${SALT_SIZE} bytes and nonce ${NONCE_SIZE}`);
  const wrapKey = await sharePasswordKeyAsync(password, salt);
  const out = new Uint8Array(SHARE_WRAP_SIZE);
  out[0] = SHARE_WRAP_VERSION;
  out.set(salt, 1);
  out.set(nonce, 1 + SALT_SIZE);
  out.set(xchacha20poly1305(wrapKey, nonce).encrypt(key), 1 + SALT_SIZE + NONCE_SIZE);
  return out;
}

/** Salt of a password wrap (what the Argon2id step needs); throws `ShareSecretError` when malformed. */
export function shareWrapSalt(wrap: Uint8Array): Uint8Array {
  if (wrap.byteLength !== SHARE_WRAP_SIZE || wrap[0] !== SHARE_WRAP_VERSION) throw new ShareSecretError();
  return wrap.slice(1, 1 + SALT_SIZE);
}

/**
 * The key inside a password wrap, given the Argon2id key of its salt (`sharePasswordKey`). A wrong
 * password and a damaged wrap both throw `ShareSecretError`.
 */
export function openShareWrap(wrap: Uint8Array, wrapKey: Uint8Array): Uint8Array {
  shareWrapSalt(wrap);
  const nonce = wrap.subarray(1 + SALT_SIZE, 1 + SALT_SIZE + NONCE_SIZE);
  try {
    return xchacha20poly1305(wrapKey, nonce).decrypt(wrap.subarray(1 + SALT_SIZE + NONCE_SIZE));
  } catch {
    throw new ShareSecretError();
  }
}

/** The key inside a password wrap; throws `ShareSecretError` for a wrong password. */
export async function unwrapShareKey(password: string, wrap: Uint8Array): Promise<Uint8Array> {
  return openShareWrap(wrap, await sharePasswordKeyAsync(password, shareWrapSalt(wrap)));
}

/** The secret a link's fragment carries: the key (`#k=`) or its password wrap (`#p=`). */
export interface ShareSecret {
  /** True for `#p=`: `material` is an 89-byte password wrap. */
  readonly password: boolean;
  /** 32-byte key, or 89-byte wrap. */
  readonly material: Uint8Array;
}

/** A share link split into its parts. */
export interface ParsedShareLink {
  /** Origin the link points at, e.g. `https://console.hippius.com`. */
  readonly origin: string;
  /** True for `/share/folder/{token}`. */
  readonly folder: boolean;
  readonly token: string;
  /** Null when the link has no fragment (a bare token URL, e.g. for `unshare`). */
  readonly secret: ShareSecret | null;
}

/** The fragment secret of `#k=…` or `#p=…` (a leading `#` is optional); throws `ShareLinkError`. */
export function parseShareFragment(fragment: string): ShareSecret {
  const f = fragment.startsWith("#") ? fragment.slice(1) : fragment;
  const kind = f.slice(0, 2);
  if (kind !== "k=" && kind !== "p=") throw new ShareLinkError("the link has no #k= or #p= part");
  const material = fromBase64url(f.slice(2));
  const password = kind === "p=";
  const want = password ? SHARE_WRAP_SIZE : SHARE_KEY_SIZE;
  if (material.byteLength !== want)
    throw new ShareLinkError(`the link's #${kind} part holds ${material.byteLength} bytes, not ${want}`);
  return { password, material };
}

/** `#k=…` or `#p=…` of a secret. */
export function shareFragment(secret: ShareSecret): string {
  const want = secret.password ? SHARE_WRAP_SIZE : SHARE_KEY_SIZE;
  if (secret.material.byteLength !== want)
    throw new RangeError(`a ${secret.password ? "password wrap" : "key"} is ${want} bytes`);
  return `${secret.password ? "p" : "k"}=${base64url(secret.material)}`;
}

/**
 * The recipient link: `{origin}/share/{token}#…` or `{origin}/share/folder/{token}#…`. A trailing
 * `/` of the origin is dropped. Throws `ShareLinkError` for a token that is not one base64url segment.
 */
export function shareLink(origin: string, token: string, secret: ShareSecret, folder: boolean): string {
  if (!SHARE_TOKEN_RE.test(token)) throw new ShareLinkError("a share token is one base64url segment");
  const base = origin.replace(/\/+$/, "");
  return `${base}/share/${folder ? "folder/" : ""}${token}#${shareFragment(secret)}`;
}

/**
 * Splits a share link (`http(s)://host/share/{token}` or `/share/folder/{token}`, with or without
 * a fragment). Throws `ShareLinkError` for anything else.
 */
export function parseShareLink(link: string): ParsedShareLink {
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    throw new ShareLinkError(`not a URL: ${link}`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw new ShareLinkError("a share link is an http(s) URL");
  const parts = url.pathname.split("/").filter((p) => p !== "");
  let folder: boolean;
  let token: string | undefined;
  if (parts.length === 2 && parts[0] === "share") {
    folder = false;
    token = parts[1];
  } else if (parts.length === 3 && parts[0] === "share" && parts[1] === "folder") {
    folder = true;
    token = parts[2];
  } else throw new ShareLinkError("a share link's path is /share/{token} or /share/folder/{token}");
  if (!token || !SHARE_TOKEN_RE.test(token))
    throw new ShareLinkError("a share token is one base64url segment");
  return { origin: url.origin, folder, token, secret: url.hash ? parseShareFragment(url.hash) : null };
}
