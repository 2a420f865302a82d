/**
 * @module client/downloader
 * Downloads one file of a folder listing, decrypts it while it streams (docs/protocol.md#ciphertext) and
 * writes it atomically: to a temporary file beside the destination (mode 0600), fsynced, then
 * renamed over it. Before the rename the plaintext is checked against the listing: its size
 * (`size_bytes`, which also catches a blob cut at a frame boundary) and its `salted_hash`
 * (`BLAKE3(utf8(ss58) ‖ plaintext)`, docs/protocol.md#client-keys). Nothing is left at the destination when
 * any check fails.
 *
 * A download whose connection breaks resumes where it stopped with `Range: bytes=<received>-`
 * and `If-Range: <ETag>` (up to `maxResumes` times), so the bytes that follow belong to the same
 * revision. When the file was replaced meanwhile the server answers 200 with the new revision,
 * and the download fails with `RevisionChangedError` instead of splicing two revisions.
 */
import { mkdir, open, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
import type { EsyncApi } from "./api.ts";
import type { DownloadResult, RemoteFileEntry } from "./api-types.ts";
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

/** The file was replaced on the server while it was being downloaded; list it again and retry. */
export class RevisionChangedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RevisionChangedError";
  }
}

/** Default `maxResumes`. */
export const DEFAULT_MAX_RESUMES = 5;

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
  /** Times a broken connection is resumed with Range + If-Range (default 5; 0 = never). */
  maxResumes?: number;
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
  /** Times the download was resumed after a broken connection. */
  resumes: number;
}

/**
 * Downloads, decrypts and verifies `entry` into `destPath` atomically. Throws `ApiError`
 * (HTTP), `CiphertextError` (tampered, truncated, wrong key), `IntegrityError`, or
 * `RevisionChangedError` (the server answers with another revision than `entry`'s, or it was
 * replaced while a broken download was resumed).
 */
export async function downloadFile(o: DownloadFileOptions): Promise<DownloadOutcome> {
  const id = toHex(o.entry.path_hash);
  const label = o.entry.relative_path ?? o.entry.file_name ?? undefined;
  const res = await o.api.download(o.ss58Address, o.folder.folderHash, id, { signal: o.signal, label });
  if (res.revisionSeq !== null && res.revisionSeq !== o.entry.revision_seq) {
    await res.body.cancel().catch(() => {});
    throw new RevisionChangedError(
      `${o.entry.relative_path ?? id}: replaced on the server after it was listed (revision ${o.entry.revision_seq}, now ${res.revisionSeq}); list it again`,
    );
  }
  let received = 0;
  const total = res.contentLength ?? res.contentRange?.total ?? null;
  const resumable = resumingBody(o, id, res);
  const counted = tapStream(resumable.body, (chunk) => {
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
  return {
    bytes: written,
    ciphertextBytes: received,
    revisionSeq: res.revisionSeq,
    resumes: resumable.resumes(),
  };
}

/**
 * The ciphertext of `first` (a 200 of the whole file), resumed after a broken connection with
 * `Range: bytes=<bytes delivered>-` and `If-Range: <ETag>` while resumes remain. A body that ends
 * before its Content-Length counts as broken too.
 */
function resumingBody(
  o: DownloadFileOptions,
  id: string,
  first: DownloadResult,
): { body: ReadableStream<Uint8Array>; resumes: () => number } {
  let delivered = 0;
  const received = () => delivered;
  const max = first.etag === null ? 0 : (o.maxResumes ?? DEFAULT_MAX_RESUMES);
  const total = first.contentLength;
  let resumes = 0;
  let reader = first.body.getReader();
  const resume = async (cause: unknown): Promise<void> => {
    if (resumes >= max || o.signal?.aborted) throw cause;
    resumes++;
    reader.cancel().catch(() => {});
    const at = received();
    const next = await o.api.download(o.ss58Address, o.folder.folderHash, id, {
      range: { start: at },
      ifRange: first.etag as string,
      signal: o.signal,
      label: o.entry.relative_path ?? o.entry.file_name ?? undefined,
    });
    if (next.status !== 206 || next.contentRange?.start !== at) {
      next.body.cancel().catch(() => {});
      throw new RevisionChangedError(
        `${o.entry.relative_path ?? id}: replaced on the server during the download (now revision ${next.revisionSeq ?? "?"}); list it again`,
      );
    }
    reader = next.body.getReader();
  };
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        for (;;) {
          let r: Awaited<ReturnType<typeof reader.read>>;
          try {
            r = await reader.read();
          } catch (e) {
            await resume(e);
            continue;
          }
          if (!r.done) {
            delivered += r.value.byteLength;
            return controller.enqueue(r.value);
          }
          if (total !== null && received() < total) {
            await resume(new Error(`connection closed after ${received()} of ${total} bytes`));
            continue;
          }
          return controller.close();
        }
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
  return { body, resumes: () => resumes };
}
