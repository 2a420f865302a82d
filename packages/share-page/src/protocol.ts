/**
 * @module share-page/protocol
 * Messages between the recipient page, its service worker and its Argon2id worker, and the
 * paths the page is served at (docs/sharing.md, "The recipient page").
 */

/** Path prefix of the page and scope of its service worker. */
export const SHARE_SCOPE = "/share/";
/** Path of the service worker script (inside the scope it controls). */
export const SERVICE_WORKER_PATH = "/share/sw.js";
/** Path prefix of the page's static files. */
export const ASSETS_PATH = "/share/assets";
/** Path prefix the service worker answers with a decrypted download: `/share/dl/{id}`. */
export const DOWNLOAD_PATH = "/share/dl/";
/**
 * Largest file the page decrypts into memory when no service worker can stream it: 256 MiB.
 * Above it the page says so instead of trying.
 */
export const IN_MEMORY_LIMIT = 256 * 1024 * 1024;

/** A download the page hands to the service worker before it opens `/share/dl/{id}`. */
export interface DownloadJob {
  type: "download";
  id: string;
  /** Same-origin URL of the ciphertext (`/v1/shares/{token}/blob`, or a folder share's blob). */
  url: string;
  /** The 32-byte key. */
  key: Uint8Array;
  /** File name offered to the browser. */
  name: string;
  mime: string;
  /** Plaintext bytes the blob must decrypt to. */
  size: number;
}

/** What the service worker reports about a download, on the job's message port. */
export type DownloadEvent =
  | { type: "ready" }
  | { type: "progress"; bytes: number }
  | { type: "done"; bytes: number }
  /**
   * `status` is the server's HTTP status when it refused the blob, and `reason` then the `reason`
   * of its error body (`download_limit`, `expired`, ...) or `http`; without `status`, `reason` is
   * a decryption failure (`authentication_failed`, ...), `network` or `cancelled`.
   */
  | { type: "error"; status?: number; reason: string; message: string };

/** Request to the Argon2id worker: the password and the wrap's 16-byte salt. */
export interface Argon2Request {
  password: string;
  salt: Uint8Array;
}

/** Answer of the Argon2id worker: the 32-byte key that opens the wrap. */
export interface Argon2Response {
  key: Uint8Array;
}
