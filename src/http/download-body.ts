/**
 * @module http/download-body
 * The body of a `/download` response, chosen so that it goes out with `Content-Length`
 * (complement §5) without buffering the file.
 *
 * Bun.serve (1.4.5) sends a response with `Content-Length` only when its body is in memory or is
 * one file-backed `Blob` (then by sendfile, no copy); it drops the handler's `Content-Length` on
 * every stream body and frames it chunked (oven-sh/bun#10507), sends a `Blob` of several file
 * slices as `Content-Length: 0` with no body, and answers an `S3Client` file with a redirect
 * (`docs/repro/bun-content-length.ts`). So when the requested bytes lie in one chunk object of a
 * file-backed store (the disk store: single-chunk files, and ranges within one chunk) and are at
 * most `fileBodyLimit(header timeout)`, the body is that object's byte range as a file `Blob`.
 * Otherwise a body of at most 1 MiB is read into memory and sent with its length; a larger one
 * (across chunks; a larger chunk; any S3 object) is the store's stream, which Bun frames chunked:
 * see docs/internals.md "Downloads and Content-Length".
 */
import { type Download, primed } from "../files/files.service.ts";
import { BlobNotFoundError, BlobReadError, type BlobStore, isFileBacked } from "../storage/blob-store.ts";
import { chunkKey } from "../storage/layout.ts";
import { fileBodyTimer, idleTimedStream } from "./response-timer.ts";

/**
 * Slowest client, bytes per second, for which a file-backed body is guaranteed to arrive whole.
 * Bun sends a file under the server's `idleTimeout` (the header timeout), restarted only when the
 * socket takes more bytes (docs/repro/bun-sendfile-timer.ts): a body that can leave within one
 * timeout at this rate is never cut, however the socket buffers drain. Larger bodies are streamed
 * with a timer re-armed per piece (255 s).
 */
export const FILE_BODY_MIN_BYTES_PER_SECOND = 140_000;

/**
 * Largest file-backed body, bytes, under a header timeout of `headerTimeoutSeconds`: what leaves
 * within that time at `FILE_BODY_MIN_BYTES_PER_SECOND` (30 s: 4.2 MB; 255 s: 35.7 MB).
 */
export function fileBodyLimit(headerTimeoutSeconds: number): number {
  return headerTimeoutSeconds * FILE_BODY_MIN_BYTES_PER_SECOND;
}

/**
 * Largest body read into memory to be sent with `Content-Length` when no file-backed Blob can
 * carry it (a range across chunks, any S3 object), bytes: a bounded buffer per response, never a
 * whole large file.
 */
export const MAX_BUFFERED_BODY_BYTES = 1024 * 1024;

/** Reads `stream` whole into one buffer of `length` bytes (the caller knows its exact length). */
async function readAll(stream: ReadableStream<Uint8Array>, length: number): Promise<Uint8Array<ArrayBuffer>> {
  const out = new Uint8Array(length);
  let off = 0;
  for await (const piece of stream) {
    if (off + piece.byteLength > length) throw new Error(`download body longer than ${length} bytes`);
    out.set(piece, off);
    off += piece.byteLength;
  }
  if (off !== length) throw new Error(`download body of ${off} bytes, expected ${length}`);
  return out;
}

/**
 * The body for download `d` of `request` from `blobs`: a file-backed `Blob` of `[d.start, d.end)`
 * when those bytes are in one chunk object of a file-backed store and number at most
 * `maxFileBodyBytes` (see `fileBodyLimit`; `d.body` is then cancelled); else, up to `MAX_BUFFERED_BODY_BYTES`, the bytes read into memory; else `d.body`
 * itself, re-arming the connection's idle timer at every piece (src/http/response-timer.ts).
 * The response must give its status explicitly (Bun answers a sliced file without one as 206).
 */
export async function downloadBody(
  blobs: BlobStore,
  d: Download,
  request: Request,
  maxFileBodyBytes: number,
): Promise<Blob | Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array>> {
  if (isFileBacked(blobs) && d.end > d.start && d.end - d.start <= maxFileBodyBytes) {
    const chunkSize = d.row.chunkSize;
    const index = Math.floor(d.start / chunkSize);
    const gen = (JSON.parse(d.row.chunkGens) as string[])[index];
    if (Math.floor((d.end - 1) / chunkSize) === index && gen !== undefined) {
      const base = index * chunkSize;
      // The stream already proved the object is there (it read its first piece); it is not needed.
      await d.body.cancel().catch(() => {});
      fileBodyTimer(request);
      return blobs.fileRange(chunkKey(d.row.blobId, index, gen), {
        start: d.start - base,
        end: d.end - base,
      });
    }
  }
  return d.end - d.start <= MAX_BUFFERED_BODY_BYTES
    ? readAll(d.body, d.end - d.start)
    : idleTimedStream(request, d.body);
}

/**
 * The body of bytes `[start, end)` (`start < end`) of the one object `key` (a file share's blob,
 * docs/sharing.md), sent with `Content-Length` where Bun can: a file-backed `Blob` of the range on a
 * file-backed store up to `maxFileBodyBytes`; else up to `MAX_BUFFERED_BODY_BYTES` read into
 * memory; else the store's stream with the idle timer re-armed per piece.
 * @throws BlobNotFoundError when the object is missing; BlobReadError when the store cannot be read.
 */
export async function objectBody(
  blobs: BlobStore,
  key: string,
  start: number,
  end: number,
  request: Request,
  maxFileBodyBytes: number,
): Promise<Blob | Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array>> {
  if (isFileBacked(blobs) && end - start <= maxFileBodyBytes) {
    let size: number | null;
    try {
      size = await blobs.size(key);
    } catch (e) {
      throw new BlobReadError(e);
    }
    if (size === null) throw new BlobNotFoundError(key);
    fileBodyTimer(request);
    return blobs.fileRange(key, { start, end });
  }
  let body: ReadableStream<Uint8Array>;
  try {
    body = await primed(await blobs.get(key, { start, end }));
  } catch (e) {
    if (e instanceof BlobNotFoundError) throw e;
    throw new BlobReadError(e);
  }
  return end - start <= MAX_BUFFERED_BODY_BYTES ? readAll(body, end - start) : idleTimedStream(request, body);
}
