/**
 * @module server/http/download-body
 * The body of a `/download` response, chosen so that it goes out with `Content-Length`
 * (docs/protocol.md#sync-endpoints) without buffering the file.
 *
 * Bun.serve (1.4.5) sends a response with `Content-Length` only when its body is in memory or is
 * one file-backed `Blob` (then by sendfile, no copy); it drops the handler's `Content-Length` on
 * every stream body and frames it chunked, sends a `Blob` of several file slices as
 * `Content-Length: 0` with no body, and answers an `S3Client` file with a redirect
 * (`docs/repro/bun-content-length.ts`). So when the requested bytes lie in one object of a
 * file-backed store (the disk store: every file finalized into one object, single-chunk files,
 * ranges within one chunk of an older multi-chunk file), the body is that object's byte range as
 * a file `Blob`, at any size, its connection timer kept armed while it is sent
 * (`fileBodyTimer`). Otherwise a body of at most 1 MiB is read into memory and sent with its
 * length; a larger one (across chunks of an older file; any S3 object) is the store's stream,
 * which Bun frames chunked, unless the S3 store is set to redirect such downloads
 * (`downloadRedirect`): see docs/design.md#downloads-and-content-length.
 */
import { type Download, primed } from "../files/files.service.ts";
import {
  BlobNotFoundError,
  BlobReadError,
  type BlobStore,
  isFileBacked,
  isPresignable,
} from "../storage/blob-store.ts";
import { type BlobLayout, objectAt } from "../storage/layout.ts";
import { fileBodyTimer, idleTimedStream } from "./response-timer.ts";

/**
 * Largest body read into memory to be sent with `Content-Length` when no file-backed Blob can
 * carry it (a range across chunks, any S3 object), bytes: a bounded buffer per response, never a
 * whole large file.
 */
export const MAX_BUFFERED_BODY_BYTES = 1024 * 1024;

/**
 * Where a download of bytes `[start, end)` of `layout` is redirected, or null to answer it here:
 * a presigned GET URL (valid `seconds`) of the object holding the whole file, when `seconds` is
 * above 0, the store is `Presignable` (S3), the body is larger than `MAX_BUFFERED_BODY_BYTES`
 * (smaller ones go out with their length from memory) and one object is the whole file (a file
 * finalized into one object, or of one chunk), so that the client's `Range` applies to it as is.
 */
export async function downloadRedirect(
  blobs: BlobStore,
  layout: BlobLayout,
  start: number,
  end: number,
  seconds: number,
): Promise<string | null> {
  if (seconds <= 0 || !isPresignable(blobs) || end - start <= MAX_BUFFERED_BODY_BYTES) return null;
  const object = objectAt(layout, start);
  if (object.start !== 0 || object.end !== layout.size) return null;
  return blobs.presignGet(object.key, seconds);
}

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
 * when those bytes are in one object of a file-backed store, whatever their size (`d.body` is
 * then cancelled; the connection timer is kept armed while Bun sends it: `fileBodyTimer`); else,
 * up to `MAX_BUFFERED_BODY_BYTES`, the bytes read into memory; else `d.body` itself, re-arming
 * the connection's idle timer at every piece (src/http/response-timer.ts).
 * The response must give its status explicitly (Bun answers a sliced file without one as 206).
 */
export async function downloadBody(
  blobs: BlobStore,
  d: Download,
  request: Request,
): Promise<Blob | Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array>> {
  if (isFileBacked(blobs) && d.end > d.start) {
    const object = objectAt(d.layout, d.start);
    if (d.end <= object.end) {
      // The stream already proved the object is there (it read its first piece); it is not needed.
      await d.body.cancel().catch(() => {});
      fileBodyTimer(request, d.end - d.start);
      return blobs.fileRange(object.key, { start: d.start - object.start, end: d.end - object.start });
    }
  }
  return d.end - d.start <= MAX_BUFFERED_BODY_BYTES
    ? readAll(d.body, d.end - d.start)
    : idleTimedStream(request, d.body);
}

/**
 * The body of bytes `[start, end)` (`start < end`) of the one object `key` (a file share's blob,
 * docs/sharing.md), sent with `Content-Length` where Bun can: a file-backed `Blob` of the range on a
 * file-backed store, at any size (its timer kept armed as `downloadBody` does); else up to
 * `MAX_BUFFERED_BODY_BYTES` read into memory; else the store's stream with the idle timer
 * re-armed per piece.
 * @throws BlobNotFoundError when the object is missing; BlobReadError when the store cannot be read.
 */
export async function objectBody(
  blobs: BlobStore,
  key: string,
  start: number,
  end: number,
  request: Request,
): Promise<Blob | Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array>> {
  if (isFileBacked(blobs)) {
    let size: number | null;
    try {
      size = await blobs.size(key);
    } catch (e) {
      throw new BlobReadError(e);
    }
    if (size === null) throw new BlobNotFoundError(key);
    fileBodyTimer(request, end - start);
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
