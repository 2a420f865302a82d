/**
 * @module client/share-types
 * Wire shapes of the share routes (`/v1/shares*`, `/v1/folder-shares*`; docs/sharing.md). These
 * routes answer without an envelope; times are RFC 3339 strings, `null` meaning "never"; opaque
 * bytes (`filename_ct`, `filename_nonce`, `wrap`) are standard base64.
 */

/** How long a share lives: `24h` (the server's default), `7d`, `30d` or `never`. */
export type ShareTtl = "24h" | "7d" | "30d" | "never";

/** The metadata of a file share, sent at mint (single request or chunked init). */
export interface FileShareMetadata {
  ciphertext_size: number;
  plaintext_size: number;
  /** base64 of the encrypted file name with its tag. */
  filename_ct: string;
  /** base64 of its 24-byte nonce. */
  filename_nonce: string;
  /** Plaintext name, shown only to the owner. */
  filename: string;
  mime_type: string;
  ttl?: ShareTtl;
  /** Chunked init only: `max(1, ceil(ciphertext_size / 8 MiB))`. */
  total_chunks?: number;
  /** esync only (capability `share_max_downloads`): complete downloads the link allows. */
  max_downloads?: number;
  /** esync only (capability `share_access_log`): keep an access log for the owner. */
  access_log?: boolean;
}

/** Answer of a share mint (and of a file share's PATCH). */
export interface MintedShare {
  share_token: string;
  /** RFC 3339, or null for never. */
  expires_at: string | null;
}

/** One of the caller's active file shares (`GET /v1/shares`). */
export interface FileShareSummary {
  share_token: string;
  filename: string;
  plaintext_size: number;
  ciphertext_size: number;
  mime_type: string;
  created_at: string;
  expires_at: string | null;
  /** base64 owner wrap, when one was stored. */
  owner_wrap: string | null;
  /** esync only: the link's download limit, when it has one. */
  max_downloads?: number;
  /** esync only: complete downloads so far (limited or logged shares). */
  download_count?: number;
  /** esync only: true when the share keeps an access log. */
  access_log?: boolean;
}

/** One row of a file share's access log (esync only; docs/sharing.md, "Access log"). */
export interface ShareAccess {
  /** Unix seconds when the answer started. */
  at: number;
  /** Ciphertext bytes handed over. */
  bytes_sent: number;
  /** The whole blob was sent (a counted download). */
  completed: boolean;
  /** Only when the server keeps addresses (`ESYNC_SHARE_LOG_ADDRESSES`). */
  client_address?: string;
}

/** `GET /v1/shares/{token}/accesses` (esync only). */
export interface ShareAccessLog {
  max_downloads: number | null;
  download_count: number;
  /** Newest first, at most 1,000. */
  accesses: ShareAccess[];
  truncated: boolean;
}

/** `GET /v1/shares/{token}/meta` (anonymous). */
export interface FileShareMeta {
  ciphertext_size: number;
  plaintext_size: number;
  filename_ct: string;
  filename_nonce: string;
  mime_type: string;
  expires_at: string | null;
}

/** One folder share the caller controls (`GET /v1/folder-shares`). */
export interface FolderShareSummary {
  /** 64 hex: BLAKE3 of the token (the listing never holds the token). */
  token_hash: string;
  folder_hash: string;
  path_prefix: string;
  display_name: string;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  owner_wrap: string | null;
  owner_ss58: string;
  minted_by_ss58: string;
  source?: string;
}

/** `GET /v1/folder-shares/{token}/meta` (anonymous). */
export interface FolderShareMeta {
  display_name: string;
  expires_at: string | null;
}

/** `GET /v1/folder-shares/{token}/browse` (anonymous): one page of a directory. */
export interface FolderSharePage {
  directories: { name: string; file_count: number; total_bytes: number; created_at: string | null }[];
  files: { name: string; path: string; size_bytes: number; uploaded_at: string }[];
  total_count: number;
  has_more: boolean;
  offset: number;
  limit: number;
}
