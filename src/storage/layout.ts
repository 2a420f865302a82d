/**
 * @module storage/layout
 * How a stored file maps onto blob objects. A file's ciphertext is the blob `blob_id`: chunk i
 * (bytes `[i × chunk_size, min((i+1) × chunk_size, ciphertext_size))`) is the object
 * `b/<blob_id[0..2]>/<blob_id>/<i>.<gen>`, where `gen` is unique per chunk upload so that a
 * re-upload or a PUT racing a finalize never changes bytes a finalize already verified.
 * Deleting the blob = deleting the prefix `b/<blob_id[0..2]>/<blob_id>/`.
 */
import { type Blake3, createBlake3 } from "../util/blake3.ts";
import { BlobNotFoundError, type BlobStore } from "./blob-store.ts";

/** Where a blob's chunks are: sizes in bytes. */
export interface BlobLayout {
  blobId: string;
  chunkSize: number;
  chunkCount: number;
  /** Total ciphertext bytes. */
  size: number;
  /** Object generation of each chunk index (length `chunkCount`). */
  gens: string[];
}

/** Key prefix (ending in `/`) of every object of blob `blobId`. */
export function blobPrefix(blobId: string): string {
  return `b/${blobId.slice(0, 2)}/${blobId}/`;
}

/** Object key of chunk `index`, generation `gen`, of blob `blobId`. */
export function chunkKey(blobId: string, index: number, gen: string): string {
  return `${blobPrefix(blobId)}${index}.${gen}`;
}

/** Exact byte length of chunk `index` of a blob of `size` bytes in `chunkSize` chunks. */
export function chunkLength(size: number, chunkSize: number, index: number): number {
  return Math.max(0, Math.min(chunkSize, size - index * chunkSize));
}

/** `ceil(size / chunkSize)`: the chunk count a layout must declare (complement §4). */
export function expectedChunkCount(size: number, chunkSize: number): number {
  return Math.ceil(size / chunkSize);
}

/**
 * Streams bytes `[start, end)` of the blob, chunk object by chunk object, opening the next
 * object while the current one is read. Memory stays bounded by the stores' stream buffers.
 * @throws (through the stream) BlobNotFoundError when a chunk object is missing.
 */
export function readBlobRange(
  store: BlobStore,
  layout: BlobLayout,
  start: number,
  end: number,
): ReadableStream<Uint8Array> {
  const first = Math.floor(start / layout.chunkSize);
  const last = end > start ? Math.floor((end - 1) / layout.chunkSize) : first - 1;
  const open = (i: number) => {
    const base = i * layout.chunkSize;
    const s = Math.max(start, base) - base;
    const e = Math.min(end, base + layout.chunkSize) - base;
    return store.get(chunkKey(layout.blobId, i, layout.gens[i]!), { start: s, end: e });
  };
  let index = first;
  let next: Promise<ReadableStream<Uint8Array>> | null = index <= last ? open(index) : null;
  let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  next?.catch(() => {});
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        for (;;) {
          if (!reader) {
            if (!next) {
              controller.close();
              return;
            }
            reader = (await next).getReader();
            index++;
            next = index <= last ? open(index) : null;
            next?.catch(() => {});
          }
          const { done, value } = await reader.read();
          if (!done) {
            controller.enqueue(value);
            return;
          }
          reader = null;
        }
      },
      async cancel(reason) {
        await reader?.cancel(reason);
        if (next) (await next.catch(() => null))?.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

/**
 * BLAKE3 of the whole blob, reading the chunk objects in index order with one pass and the next
 * object prefetched. Returns lowercase hex. With `fromChunk`, `hasher` already holds chunks
 * `0..fromChunk-1` and only the rest is read.
 * @throws BlobNotFoundError when a chunk object is missing; other store errors propagate.
 */
export async function hashBlob(
  store: BlobStore,
  layout: BlobLayout,
  hasher: Blake3 = createBlake3(),
  fromChunk = 0,
): Promise<string> {
  const start = Math.min(fromChunk * layout.chunkSize, layout.size);
  const reader = readBlobRange(store, layout, start, layout.size).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    hasher.update(value);
  }
  return hasher.digestHex();
}

/**
 * Checks that every chunk object of the blob exists with its exact length (`size` calls, 16 at a
 * time). Finalize runs it because chunks hashed while they streamed in are not read again.
 * @throws BlobNotFoundError for a missing object; Error for an object of the wrong size; other
 *   store errors propagate.
 */
export async function checkChunks(store: BlobStore, layout: BlobLayout): Promise<void> {
  for (let i = 0; i < layout.chunkCount; i += 16) {
    const batch = layout.gens.slice(i, i + 16).map(async (gen, j) => {
      const index = i + j;
      const key = chunkKey(layout.blobId, index, gen);
      const size = await store.size(key);
      if (size === null) throw new BlobNotFoundError(key);
      const expected = chunkLength(layout.size, layout.chunkSize, index);
      if (size !== expected) throw new Error(`chunk object ${key} has ${size} bytes, expected ${expected}`);
    });
    await Promise.all(batch);
  }
}
