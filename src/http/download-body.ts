/**
 * @module http/download-body
 * The body of a `/download` response, chosen so that it goes out with `Content-Length`
 * (complement §5) without buffering the file.
 *
 * Bun.serve drops a handler's `Content-Length` on every `ReadableStream` body and sends it
 * chunked (oven-sh/bun#10507, open; Bun 1.4.5 measured); a multi-part `Blob` of file slices is sent
 * as `Content-Length: 0` with no body; only a single file-backed `Blob` is sent with its length
 * (by sendfile). So when the requested bytes lie in one chunk object of a file-backed store (the
 * disk store: every single-chunk file up to 4 MiB, and every range of up to 4 MiB within one
 * chunk), the body
 * is that object's byte range as a file `Blob`. Otherwise a body of at most 1 MiB is read into
 * memory and sent with its length; a larger one (across chunks; a larger single-chunk file; S3)
 * is the store's stream, which Bun frames chunked: see README "Downloads and Content-Length".
 */
import type { Download } from "../files/files.service.ts";
import { type BlobStore, isFileBacked } from "../storage/blob-store.ts";
import { chunkKey } from "../storage/layout.ts";
import { fileBodyTimer, idleTimedStream } from "./response-timer.ts";

/**
 * Largest file-backed body, bytes. While Bun sends a file it applies the server's `idleTimeout`
 * (the header timeout, `ESYNC_HEADER_TIMEOUT_SECONDS`) to the whole send and ignores a per-request
 * timer (measured on Bun 1.4.5), so such a body must leave within that time: 4 MiB in the default
 * 30 s needs about 140 KB/s. Longer ones are streamed, with a timer re-armed per piece.
 */
export const MAX_FILE_BODY_BYTES = 4 * 1024 * 1024;

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
 * when those bytes (at most `MAX_FILE_BODY_BYTES`) are in one chunk object of a file-backed
 * store (and `d.body` is then cancelled); else, up to `MAX_BUFFERED_BODY_BYTES`, the bytes read
 * into memory; else `d.body` itself, re-arming the connection's idle timer at every piece
 * (src/http/response-timer.ts). The response must give its status
 * explicitly (Bun answers a sliced file without one as 206).
 */
export async function downloadBody(
  blobs: BlobStore,
  d: Download,
  request: Request,
): Promise<Blob | Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array>> {
  const streamed = async () =>
    d.end - d.start <= MAX_BUFFERED_BODY_BYTES
      ? readAll(d.body, d.end - d.start)
      : idleTimedStream(request, d.body);
  if (!isFileBacked(blobs) || d.end <= d.start || d.end - d.start > MAX_FILE_BODY_BYTES) return streamed();
  const chunkSize = d.row.chunkSize;
  const index = Math.floor(d.start / chunkSize);
  if (Math.floor((d.end - 1) / chunkSize) !== index) return streamed();
  const gens = JSON.parse(d.row.chunkGens) as string[];
  const gen = gens[index];
  if (gen === undefined) return streamed();
  const base = index * chunkSize;
  // The stream already proved the object is there (it read its first piece); it is not needed.
  await d.body.cancel().catch(() => {});
  fileBodyTimer(request);
  return blobs.fileRange(chunkKey(d.row.blobId, index, gen), { start: d.start - base, end: d.end - base });
}
