/**
 * @module server/shares/share-rules
 * The fixed rules of shares (docs/sharing.md): tokens, their hashes, lifetimes, the chunk size
 * and the size formula of the framed ciphertext, and where a file share's objects live in the
 * blob store. Sizes are bytes, times Unix seconds.
 */
import { blake3Hex } from "@esync/protocol/blake3.ts";
import { randomToken } from "@esync/protocol/ids.ts";
import { SHARE_TOKEN_PATTERN, type SHARE_TTLS } from "@esync/protocol/schemas.ts";

/** Bytes of every chunk of a chunked share but the last; also the single-request cap. */
export const SHARE_CHUNK_BYTES = 8 * 1024 * 1024;
/** Largest plaintext a share may declare (413 above). */
export const MAX_SHARE_PLAINTEXT_BYTES = 5_000_000_000;
/** Plaintext bytes per frame of the framed cipher format. */
export const FRAME_PLAINTEXT_BYTES = 256 * 1024;
/** Header bytes of the framed format (24-byte nonce, 4-byte frame count), and tag+length per frame. */
const HEADER_BYTES = 28;
const FRAME_OVERHEAD_BYTES = 20;
/** Seconds an uploading share may stay idle (no init, chunk or complete) before it is reaped. */
export const SHARE_UPLOAD_IDLE_SECONDS = 3600;

/** Seconds between two reaper passes over revoked, expired and idle shares. */
export const SHARE_REAP_INTERVAL_SECONDS = 300;

/** A share lifetime keyword. */
export type ShareTtl = (typeof SHARE_TTLS)[number];

/** Seconds of each lifetime; null = never expires. */
const TTL_SECONDS: Record<ShareTtl, number | null> = {
  "24h": 86_400,
  "7d": 7 * 86_400,
  "30d": 30 * 86_400,
  never: null,
};

/** `expires_at` of a share given `ttl` (default `24h`) at `now`; null = never. */
export function expiryOf(ttl: ShareTtl | undefined, now: number): number | null {
  const s = TTL_SECONDS[ttl ?? "24h"];
  return s === null ? null : now + s;
}

/** The ciphertext size of `plaintextSize` bytes in the framed format (at least one frame). */
export function framedSize(plaintextSize: number): number {
  const frames = Math.max(1, Math.ceil(plaintextSize / FRAME_PLAINTEXT_BYTES));
  return HEADER_BYTES + FRAME_OVERHEAD_BYTES * frames + plaintextSize;
}

/** The chunk count of a chunked share of `ciphertextSize` bytes: max(1, ceil(size / 8 MiB)). */
export function shareChunkCount(ciphertextSize: number): number {
  return Math.max(1, Math.ceil(ciphertextSize / SHARE_CHUNK_BYTES));
}

/** Exact length of chunk `index` of a share of `ciphertextSize` bytes. */
export function shareChunkLength(ciphertextSize: number, index: number): number {
  return Math.max(0, Math.min(SHARE_CHUNK_BYTES, ciphertextSize - index * SHARE_CHUNK_BYTES));
}

/** A new share or folder-share token: 32 random bytes, base64url without padding (43 characters). */
export function newShareToken(): string {
  return randomToken(32);
}

const TOKEN_RE = new RegExp(SHARE_TOKEN_PATTERN);

/** True when `token` has the form of a token (a base64url segment); others match no share. */
export function isTokenShaped(token: string): boolean {
  return TOKEN_RE.test(token);
}

/** The stored form of a folder-share token: lowercase hex BLAKE3 of its UTF-8 bytes. */
export function tokenHash(token: string): string {
  return blake3Hex(new TextEncoder().encode(token));
}

/** Unix seconds as RFC 3339 in UTC without fractions (`2026-11-28T01:30:43Z`); null stays null. */
export function rfc3339(seconds: number | null): string | null {
  return seconds === null ? null : new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** Key prefix of every object of file share `shareId` (chunks and the whole blob). */
export function shareObjectPrefix(shareId: string): string {
  return `s/${shareId}/`;
}

/** Object key of chunk `index`, generation `gen`, of an uploading share. */
export function shareChunkKey(shareId: string, index: number, gen: string): string {
  return `${shareObjectPrefix(shareId)}c${index}.${gen}`;
}

/**
 * Object key of a complete share's whole blob (one object), generation `gen`: unique per write,
 * so that a failed write's cleanup never deletes another write's object.
 */
export function shareBlobKey(shareId: string, gen: string): string {
  return `${shareObjectPrefix(shareId)}b.${gen}`;
}

/** The share id of object `key` (`s/<id>/…`), or null for a key outside the share space. */
export function shareIdOfKey(key: string): string | null {
  const m = /^s\/([0-9a-f]{32})\//.exec(key);
  return m ? (m[1] ?? null) : null;
}
