/**
 * @module client/shares
 * Share links from the client's side (docs/sharing.md): minting a file share (a fresh key, the
 * file encrypted under it and uploaded whole or in 8 MiB chunks), minting a folder share (the
 * folder's own key in the link), listing both kinds with working links, and revoking.
 *
 * Owner wraps: the link's secret (and, for a folder share, its token, which the listing never
 * shows) is sealed for the owner and stored on the server, so that any device with the same
 * master mnemonic rebuilds the links. The wrap key is BLAKE3 `derive_key` with context
 * `hippius.hcfs.share-wrap.v1` over the first 32 bytes of the master's BIP39 seed; the
 * associated data is `utf8(ss58) ‖ 0x00 ‖ utf8(row key)`, the row key being the token of a file
 * share and the token's 64-hex BLAKE3 of a folder share; the plaintext is a flags byte (bit 0
 * password link, bit 1 token present) ‖ [token length ‖ token] ‖ secret (32-byte key or 89-byte
 * wrap); the wrap is `0x01 ‖ nonce 24 ‖ XChaCha20-Poly1305 ciphertext`.
 */
import { basename } from "node:path";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import type { EsyncApi } from "./api.ts";
import { ApiError } from "./api-error.ts";
import type { FrameEncryptor } from "./frame.ts";
import { blake3DeriveKey, concatBytes, utf8 } from "./hash.ts";
import { bip39SeedAsync, type Identity } from "./keys.ts";
import { sealFile } from "./seal.ts";
import {
  base64,
  encryptFileName,
  fromBase64,
  generateShareKey,
  parseShareLink,
  SHARE_TOKEN_RE,
  ShareLinkError,
  type ShareSecret,
  ShareSecretError,
  shareLink,
  wrapShareKey,
} from "./share-crypto.ts";
import type { FileShareSummary, FolderShareSummary, MintedShare, ShareTtl } from "./share-types.ts";

/** Ciphertext bytes of one share chunk, and the most a single-request share may carry: 8 MiB. */
export const SHARE_CHUNK_SIZE = 8 * 1024 * 1024;
/** The BLAKE3 `derive_key` context of the owner-wrap key. */
export const OWNER_WRAP_CONTEXT = "hippius.hcfs.share-wrap.v1";
/** The share lifetimes the server accepts. */
export const SHARE_TTLS: readonly ShareTtl[] = ["24h", "7d", "30d", "never"];

const WRAP_VERSION = 0x01;
const FLAG_PASSWORD = 0x01;
const FLAG_TOKEN = 0x02;

/** `max(1, ceil(ciphertextSize / 8 MiB))`: chunks of a chunked share upload. */
export function shareChunkCount(ciphertextSize: number): number {
  return Math.max(1, Math.ceil(ciphertextSize / SHARE_CHUNK_SIZE));
}

/** Lowercase hex BLAKE3 of the UTF-8 token: how the server and the listing name a folder share. */
export function folderShareTokenHash(token: string): string {
  return blake3Hex(token);
}

/** The 32-byte owner-wrap key of a master mnemonic's 64-byte BIP39 seed. */
export function ownerWrapKey(masterSeed: Uint8Array): Uint8Array {
  return blake3DeriveKey(OWNER_WRAP_CONTEXT, masterSeed.subarray(0, 32));
}

function ownerAad(ss58: string, rowKey: string): Uint8Array {
  return concatBytes(utf8(ss58), new Uint8Array([0]), utf8(rowKey));
}

/**
 * Seals a share's secret for its owner. `folderToken` is given for a folder share (the row key
 * is then its hash); `nonce` is random unless given (tests pin it).
 */
export function sealOwnerWrap(input: {
  key: Uint8Array;
  ss58: string;
  secret: ShareSecret;
  fileToken?: string;
  folderToken?: string;
  nonce?: Uint8Array;
}): Uint8Array {
  const { folderToken } = input;
  const rowKey = folderToken !== undefined ? folderShareTokenHash(folderToken) : input.fileToken;
  if (rowKey === undefined) throw new TypeError("sealOwnerWrap needs fileToken or folderToken");
  let flags = input.secret.password ? FLAG_PASSWORD : 0;
  let tokenPart: Uint8Array = new Uint8Array(0);
  if (folderToken !== undefined) {
    const bytes = utf8(folderToken);
    if (bytes.byteLength === 0 || bytes.byteLength > 64)
      throw new RangeError("folder token length out of range");
    flags |= FLAG_TOKEN;
    tokenPart = concatBytes(new Uint8Array([bytes.byteLength]), bytes);
  }
  const nonce = input.nonce ?? crypto.getRandomValues(new Uint8Array(24));
  const plain = concatBytes(new Uint8Array([flags]), tokenPart, input.secret.material);
  const sealed = xchacha20poly1305(input.key, nonce, ownerAad(input.ss58, rowKey)).encrypt(plain);
  return concatBytes(new Uint8Array([WRAP_VERSION]), nonce, sealed);
}

/**
 * Opens an owner wrap stored under `rowKey` (a file share's token, or a folder share's token
 * hash). Returns the secret and, for a folder share, the token. Throws `ShareSecretError` when it
 * does not open (another account or mnemonic, another row, a damaged wrap).
 */
export function openOwnerWrap(input: { key: Uint8Array; ss58: string; rowKey: string; wrap: Uint8Array }): {
  secret: ShareSecret;
  folderToken: string | null;
} {
  const bad = () => new ShareSecretError("the owner wrap does not open with this mnemonic");
  const { wrap } = input;
  if (wrap.byteLength < 1 + 24 + 16 || wrap[0] !== WRAP_VERSION) throw bad();
  let plain: Uint8Array;
  try {
    plain = xchacha20poly1305(input.key, wrap.subarray(1, 25), ownerAad(input.ss58, input.rowKey)).decrypt(
      wrap.subarray(25),
    );
  } catch {
    throw bad();
  }
  const flags = plain[0] ?? 0xff;
  if (flags & ~(FLAG_PASSWORD | FLAG_TOKEN)) throw bad();
  let rest = plain.subarray(1);
  let folderToken: string | null = null;
  if (flags & FLAG_TOKEN) {
    const len = rest[0] ?? 0;
    if (len === 0 || len > 64 || rest.byteLength < 1 + len) throw bad();
    folderToken = new TextDecoder().decode(rest.subarray(1, 1 + len));
    rest = rest.subarray(1 + len);
  }
  const password = (flags & FLAG_PASSWORD) !== 0;
  if (rest.byteLength !== (password ? 89 : 32)) throw bad();
  return { secret: { password, material: rest.slice() }, folderToken };
}

/** Who shares: the account and its master mnemonic (for owner wraps), and where links point. */
export interface ShareOwner {
  api: EsyncApi;
  identity: Identity;
  /** Origin of the links, e.g. `https://esync.example.org` (the server's public URL). */
  publicUrl: string;
}

async function ownerKey(owner: ShareOwner): Promise<Uint8Array> {
  return ownerWrapKey(await bip39SeedAsync(owner.identity.mnemonic));
}

/** True when the server answered "feature off" (404 with no JSON error body). */
function featureOff(e: unknown): boolean {
  return e instanceof ApiError && e.status === 404 && e.code === "http_404";
}

/** Options of `createFileShare`. */
export interface FileShareOptions {
  ttl?: ShareTtl;
  /** esync only: complete downloads the link allows (implies an access log). */
  maxDownloads?: number;
  /** esync only: keep an access log of the link for the owner. */
  accessLog?: boolean;
  /** Makes a `#p=` link; at least 8 characters. */
  password?: string;
  /** Name the recipient sees; default the file's base name. */
  name?: string;
  /** MIME type; default from the file name, else `application/octet-stream`. */
  mimeType?: string;
  /** Where a blob over 8 MiB is written while it is sent (deleted afterwards). */
  spillPath?: string;
  pool?: FrameEncryptor;
  /** Ciphertext bytes sent so far, of `total`. */
  onProgress?: (sent: number, total: number) => void;
  signal?: AbortSignal;
}

/** A share made by this client, with its link. */
export interface CreatedShare extends MintedShare {
  /** The recipient link (`#k=` or `#p=`). */
  link: string;
  /** False when the server keeps no owner wraps (the link then exists only here). */
  ownerWrapStored: boolean;
}

async function storeFileWrap(owner: ShareOwner, token: string, secret: ShareSecret): Promise<boolean> {
  const wrap = sealOwnerWrap({
    key: await ownerKey(owner),
    ss58: owner.identity.address,
    secret,
    fileToken: token,
  });
  try {
    await owner.api.putShareOwnerWraps([{ token, wrap: base64(wrap) }]);
    return true;
  } catch (e) {
    if (featureOff(e)) return false;
    throw e;
  }
}

/**
 * Shares one file: encrypts it under a fresh key (the framed format), uploads it in one request
 * up to 8 MiB of ciphertext and in 8 MiB chunks above, stores the owner wrap and returns the
 * link. Throws `ApiError` (402 over quota, 404 feature off, …) and `RangeError` for a short password.
 */
export async function createFileShare(
  owner: ShareOwner,
  path: string,
  options: FileShareOptions = {},
): Promise<CreatedShare> {
  const key = generateShareKey();
  const secret: ShareSecret = options.password
    ? { password: true, material: await wrapShareKey(options.password, key) }
    : { password: false, material: key };
  const name = options.name ?? basename(path);
  const mime = options.mimeType ?? (Bun.file(path).type.split(";")[0] || "application/octet-stream");
  const sealed = await sealFile(path, {
    key,
    ss58Address: owner.identity.address,
    memoryLimit: SHARE_CHUNK_SIZE,
    spillPath: options.spillPath,
    pool: options.pool,
    signal: options.signal,
  });
  try {
    const fileName = encryptFileName(name, key);
    const metadata = {
      ciphertext_size: sealed.ciphertextSize,
      plaintext_size: sealed.plaintextSize,
      filename_ct: base64(fileName.ciphertext),
      filename_nonce: base64(fileName.nonce),
      filename: name,
      mime_type: mime,
      ttl: options.ttl,
      ...(options.maxDownloads !== undefined ? { max_downloads: options.maxDownloads } : {}),
      ...(options.accessLog ? { access_log: true } : {}),
    };
    let minted: MintedShare;
    const total = sealed.ciphertextSize;
    if (total <= SHARE_CHUNK_SIZE) {
      minted = await owner.api.createShare(metadata, sealed.slice(), options.signal);
      options.onProgress?.(total, total);
    } else {
      const chunks = shareChunkCount(total);
      const init = await owner.api.initShare({ ...metadata, total_chunks: chunks });
      for (let i = 0; i < chunks; i++) {
        const end = Math.min(total, (i + 1) * SHARE_CHUNK_SIZE);
        await owner.api.putShareChunk(
          init.share_token,
          i,
          sealed.slice(i * SHARE_CHUNK_SIZE, end),
          options.signal,
        );
        options.onProgress?.(end, total);
      }
      minted = await owner.api.completeShare(init.share_token);
    }
    const ownerWrapStored = await storeFileWrap(owner, minted.share_token, secret);
    return {
      ...minted,
      link: shareLink(owner.publicUrl, minted.share_token, secret, false),
      ownerWrapStored,
    };
  } finally {
    await sealed.dispose();
  }
}

/** Options of `createFolderShare`. */
export interface FolderShareOptions {
  /** Directory inside the folder; "" (default) shares the whole folder. */
  pathPrefix?: string;
  /** Name shown to recipients; default the directory's last segment, or the label. */
  displayName?: string;
  ttl?: ShareTtl;
  password?: string;
}

/**
 * Shares a directory of the folder `label` (its live contents): the link carries the folder's
 * key (or its password wrap), and the owner wrap carries the token too. Throws `ApiError`
 * (404 `folder_not_found`, …).
 */
export async function createFolderShare(
  owner: ShareOwner,
  label: string,
  options: FolderShareOptions = {},
): Promise<CreatedShare> {
  const keys = await owner.identity.folderKeys(label);
  const pathPrefix = options.pathPrefix ?? "";
  const secret: ShareSecret = options.password
    ? { password: true, material: await wrapShareKey(options.password, keys.key) }
    : { password: false, material: keys.key };
  const minted = await owner.api.createFolderShare({
    folderHash: keys.folderHash,
    pathPrefix,
    displayName: options.displayName ?? (pathPrefix.split("/").pop() || label),
    ttl: options.ttl,
  });
  const token = minted.share_token;
  const wrap = sealOwnerWrap({
    key: await ownerKey(owner),
    ss58: owner.identity.address,
    secret,
    folderToken: token,
  });
  let ownerWrapStored = true;
  try {
    await owner.api.putFolderShareOwnerWraps([
      { token_hash: folderShareTokenHash(token), wrap: base64(wrap) },
    ]);
  } catch (e) {
    if (!featureOff(e)) throw e;
    ownerWrapStored = false;
  }
  return { ...minted, link: shareLink(owner.publicUrl, token, secret, true), ownerWrapStored };
}

/** A file share of the listing, with its link when the owner wrap opened. */
export interface ListedFileShare extends FileShareSummary {
  kind: "file";
  /** Null without an owner wrap, or one this mnemonic cannot open. */
  link: string | null;
}

/** A folder share of the listing, with its token and link when the owner wrap opened. */
export interface ListedFolderShare extends FolderShareSummary {
  kind: "folder";
  token: string | null;
  link: string | null;
  /** `active`, `expired` or `revoked` (the listing keeps dead rows until they are reaped). */
  state: "active" | "expired" | "revoked";
}

/** Both listings, links rebuilt from owner wraps. A server without folder shares gives `folder: []`. */
export async function listShares(
  owner: ShareOwner,
  now = Date.now(),
): Promise<{ files: ListedFileShare[]; folders: ListedFolderShare[] }> {
  const key = await ownerKey(owner);
  const ss58 = owner.identity.address;
  const open = (rowKey: string, wrap: string | null) => {
    if (!wrap) return null;
    try {
      return openOwnerWrap({ key, ss58, rowKey, wrap: fromBase64(wrap) });
    } catch {
      return null;
    }
  };
  const files = (await owner.api.listShares()).map((s): ListedFileShare => {
    const opened = open(s.share_token, s.owner_wrap);
    return {
      ...s,
      kind: "file",
      link: opened ? shareLink(owner.publicUrl, s.share_token, opened.secret, false) : null,
    };
  });
  let folderRows: FolderShareSummary[] = [];
  try {
    folderRows = await owner.api.listFolderShares();
  } catch (e) {
    if (!featureOff(e)) throw e;
  }
  const folders = folderRows.map((s): ListedFolderShare => {
    const opened = open(s.token_hash, s.owner_wrap);
    const token = opened?.folderToken ?? null;
    const state =
      s.revoked_at !== null
        ? "revoked"
        : s.expires_at !== null && Date.parse(s.expires_at) <= now
          ? "expired"
          : "active";
    return {
      ...s,
      kind: "folder",
      token,
      link: opened && token ? shareLink(owner.publicUrl, token, opened.secret, true) : null,
      state,
    };
  });
  return { files, folders };
}

/** What `revokeShareRef` revoked. */
export interface RevokedShare {
  kind: "file" | "folder";
  /** The token, or the folder share's token hash when only that was given. */
  ref: string;
}

/**
 * Revokes the share a link, a token or a folder share's 64-hex token hash names. A bare token
 * is tried as a file share first, then as a folder share. Throws `ShareLinkError` for a malformed
 * link and `ApiError` 404 when no share of the caller has that name (or it is already revoked).
 */
export async function revokeShareRef(api: EsyncApi, ref: string): Promise<RevokedShare> {
  if (/^[a-z]+:\/\//i.test(ref)) {
    const parsed = parseShareLink(ref);
    if (parsed.folder) await api.revokeFolderShare(parsed.token);
    else await api.revokeShare(parsed.token);
    return { kind: parsed.folder ? "folder" : "file", ref: parsed.token };
  }
  if (/^[0-9a-f]{64}$/.test(ref)) {
    await api.revokeFolderShare(ref, true);
    return { kind: "folder", ref };
  }
  if (!SHARE_TOKEN_RE.test(ref)) throw new ShareLinkError(`not a share link, token or token hash: ${ref}`);
  try {
    await api.revokeShare(ref);
    return { kind: "file", ref };
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 404) throw e;
  }
  await api.revokeFolderShare(ref);
  return { kind: "folder", ref };
}
