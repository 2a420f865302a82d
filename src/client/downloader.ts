/**
 * @module client/downloader
 * Downloads one file of a folder listing, decrypts it while it streams (complement §2) and
 * writes it atomically: to a temporary file beside the destination (mode 0600), fsynced, then
 * renamed over it. Before the rename the plaintext is checked against the listing: its size
 * (`size_bytes`, which also catches a blob cut at a frame boundary) and its `salted_hash`
 * (`BLAKE3(utf8(ss58) ‖ plaintext)`, complement §6). Nothing is left at the destination when
 * any check fails.
 */
import { mkdir, open, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
import type { EsyncApi } from "./api.ts";
import type { RemoteFileEntry } from "./api-types.ts";
import { forEachChunk, tapStream } from "./byte-stream.ts";
import { decryptStream } from "./frame.ts";
import { bytesEqual, toHex } from "./hash.ts";
import { SaltedHasher } from "./manifest.ts";

/** The decrypted file does not match what the listing says of it. */
export class IntegrityError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "IntegrityError";
  }
}

/** Options of `downloadFile`. */
export interface DownloadFileOptions {
  api: EsyncApi;
  /** Account address: the path owner and the salt of `salted_hash`. */
  ss58Address: string;
  /** Folder keys (`FolderKeys` fits). */
  folder: { readonly folderHash: string; readonly key: Uint8Array };
  /** The file's entry from `/get_state`, `/browse` or `/search_files`. */
  entry: RemoteFileEntry;
  /** Where the plaintext goes; parent directories are created. */
  destPath: string;
  /** Check `salted_hash` (default true). */
  verifySaltedHash?: boolean;
  /** Called as ciphertext arrives: bytes so far and the blob's size when known. */
  onProgress?: (ciphertextBytes: number, ciphertextTotal: number | null) => void;
  signal?: AbortSignal;
}

/** What a download did. */
export interface DownloadOutcome {
  /** Plaintext bytes written. */
  bytes: number;
  /** Ciphertext bytes received. */
  ciphertextBytes: number;
  /** `X-Revision-Seq` of the blob served. */
  revisionSeq: number | null;
}

/**
 * Downloads, decrypts and verifies `entry` into `destPath` atomically. Throws `ApiError`
 * (HTTP), `CiphertextError` (tampered, truncated, wrong key) or `IntegrityError`.
 */
export async function downloadFile(o: DownloadFileOptions): Promise<DownloadOutcome> {
  const id = toHex(o.entry.path_hash);
  const res = await o.api.download(o.ss58Address, o.folder.folderHash, id, { signal: o.signal });
  let received = 0;
  const total = res.contentLength ?? res.contentRange?.total ?? null;
  const counted = tapStream(res.body, (chunk) => {
    received += chunk.byteLength;
    o.onProgress?.(received, total);
  });
  const salted = new SaltedHasher(o.ss58Address);
  let written = 0;
  const plain = tapStream(
    decryptStream(o.folder.key, counted, { expectedPlaintextSize: o.entry.size_bytes }),
    (c) => {
      salted.update(c);
    },
  );
  await mkdir(dirname(o.destPath), { recursive: true });
  const tmp = `${o.destPath}.esync-part-${toHex(crypto.getRandomValues(new Uint8Array(4)))}`;
  const fh = await open(tmp, "w", 0o600);
  try {
    await forEachChunk(plain, async (chunk) => {
      o.signal?.throwIfAborted();
      await fh.write(chunk);
      written += chunk.byteLength;
    });
    await fh.sync();
    await fh.close();
    if ((o.verifySaltedHash ?? true) && !bytesEqual(salted.digest(), Uint8Array.from(o.entry.salted_hash))) {
      throw new IntegrityError(`${o.entry.relative_path ?? id}: salted_hash differs from the listing`);
    }
    await rename(tmp, o.destPath);
  } catch (e) {
    await fh.close().catch(() => {});
    await rm(tmp, { force: true });
    throw e;
  }
  return { bytes: written, ciphertextBytes: received, revisionSeq: res.revisionSeq };
}
