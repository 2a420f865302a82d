/**
 * @module storage/layout
 * How a stored file maps onto blob objects. A file's ciphertext is the blob `blob_id`, in one of
 * two forms, told apart by the id alone:
 * - a chunked blob (id: 32 lowercase hex digits; upload sessions, and every blob stored before
 *   one-object blobs existed): chunk i (bytes `[i × chunk_size, min((i+1) × chunk_size,
 *   ciphertext_size))`) is the object `b/<blob_id[0..2]>/<blob_id>/<i>.<gen>`, where `gen` is
 *   unique per chunk upload so that a re-upload or a PUT racing a finalize never changes bytes a
 *   finalize already verified. Deleting the blob = deleting the prefix `b/<blob_id[0..2]>/<blob_id>/`.
 * - a one-object blob (id: `o` then 32 lowercase hex digits; single-shot `/upload`): its only
 *   object, chunk 0, is `b/<blob_id[1..3]>/<blob_id>`, beside the chunked blobs' directories of
 *   the same shard, so that storing it creates no directory of its own. It is written once,
 *   under a new id, so it needs no generation (its row's `chunk_gens` is `[""]`). Deleting the
 *   blob = deleting that object.
 * `blobTarget` names either form's objects for the deletion queue and the write intents.
 */
import { type Blake3, createBlake3 } from "../util/blake3.ts";
import { randomHex } from "../util/ids.ts";
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

/** First character of a one-object blob's id (not a hex digit, so no chunked blob's id has it). */
const ONE_OBJECT_MARK = "o";

/** A new one-object blob's id (a single-shot upload's blob). */
export function newOneObjectBlobId(): string {
  return `${ONE_OBJECT_MARK}${randomHex(16)}`;
}

/** True when `blobId` names a one-object blob (see the module comment). */
export function isOneObjectBlob(blobId: string): boolean {
  return blobId.startsWith(ONE_OBJECT_MARK);
}

/** The `b/<shard>/` directory of blob `blobId`: the first two hex digits of its id. */
function shardOf(blobId: string): string {
  return isOneObjectBlob(blobId) ? `b/${blobId.slice(1, 3)}/` : `b/${blobId.slice(0, 2)}/`;
}

/**
 * Key prefix (ending in `/`) of every object of the chunked blob `blobId`.
 * @throws Error for a one-object blob, whose object is no prefix (use `blobTarget`).
 */
export function blobPrefix(blobId: string): string {
  if (isOneObjectBlob(blobId)) throw new Error(`one-object blob ${blobId} has no prefix`);
  return `${shardOf(blobId)}${blobId}/`;
}

/**
 * What deletes every object of blob `blobId`, as the deletion queue takes it: the prefix of a
 * chunked blob (ending in `/`), or the one object key of a one-object blob.
 */
export function blobTarget(blobId: string): string {
  return isOneObjectBlob(blobId) ? `${shardOf(blobId)}${blobId}` : blobPrefix(blobId);
}

/** Deletes every object of blob `blobId` from `store` (idempotent). */
export function deleteBlob(store: BlobStore, blobId: string): Promise<void> {
  return isOneObjectBlob(blobId)
    ? store.delete([blobTarget(blobId)])
    : store.deletePrefix(blobPrefix(blobId));
}

/**
 * Object key of chunk `index`, generation `gen`, of blob `blobId`. A one-object blob has chunk 0
 * only, without generation (`gen` is ignored); its other indexes name keys nothing writes, so a
 * row that claims them has missing objects (fsck reports them).
 */
export function chunkKey(blobId: string, index: number, gen: string): string {
  if (isOneObjectBlob(blobId)) return `${shardOf(blobId)}${blobId}${index === 0 ? "" : `.${index}`}`;
  return `${blobPrefix(blobId)}${index}.${gen}`;
}

/**
 * The blob id of object `key`: `b/xx/<blob id>/…` (a chunked blob's object) or `b/xx/<blob id>`
 * (a one-object blob's), or null for another key.
 */
export function blobIdOfKey(key: string): string | null {
  const parts = key.split("/");
  if (parts[0] !== "b" || !parts[2]) return null;
  if (parts.length >= 4) return parts[2];
  if (parts.length === 3) {
    const name = parts[2];
    const dot = name.indexOf(".");
    const id = dot < 0 ? name : name.slice(0, dot);
    return isOneObjectBlob(id) ? id : null;
  }
  return null;
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
