/**
 * @module server/storage/layout
 * How a stored file maps onto blob objects. A file's ciphertext is the blob `blob_id`, in one of
 * two forms, told apart by the id alone:
 * - a chunked blob (id: 32 lowercase hex digits; upload sessions, and every blob stored before
 *   one-object blobs existed): chunk i (bytes `[i × chunk_size, min((i+1) × chunk_size,
 *   ciphertext_size))`) is the object `b/<blob_id[0..2]>/<blob_id>/<i>.<gen>`, where `gen` is
 *   unique per chunk upload so that a re-upload or a PUT racing a finalize never changes bytes a
 *   finalize already verified. Deleting the blob = deleting the prefix `b/<blob_id[0..2]>/<blob_id>/`.
 * - a one-object blob (id: `o` then 32 lowercase hex digits; a single-shot `/upload`, and a
 *   multi-chunk session assembled at finalize): its only object `b/<blob_id[1..3]>/<blob_id>`
 *   holds every chunk at its offset (chunk i at `i × chunk_size`), beside the chunked blobs'
 *   directories of the same shard, so that storing it creates no directory of its own. It is
 *   written once, under a new id, so it needs no generation (its row's `chunk_gens` is `[""]`).
 *   Deleting the blob = deleting that object. A download of any byte range of it is one range
 *   of one object (docs/design.md#storage-layout).
 * `blobTarget` names either form's objects for the deletion queue and the write intents.
 */
import { type Blake3, createBlake3 } from "@esync/protocol/blake3.ts";
import { randomHex } from "@esync/protocol/ids.ts";
import { BlobNotFoundError, type BlobStore, isComposable } from "./blob-store.ts";

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

/**
 * The one-object blob that the multipart upload of an upload session with chunked blob id
 * `blobId` completes into: `o<blobId>` (docs/design.md#storage-layout).
 */
export function multipartBlobId(blobId: string): string {
  return `${ONE_OBJECT_MARK}${blobId}`;
}

/** Suffix of a deletion-queue target that names multipart uploads instead of an object. */
const UPLOADS_SUFFIX = "?uploads";

/**
 * The deletion-queue target that aborts every multipart upload in progress of object `key`
 * (`<key>?uploads`: not an object key, and no prefix).
 */
export function multipartTarget(key: string): string {
  return `${key}${UPLOADS_SUFFIX}`;
}

/** The object key of a `multipartTarget`, or null when `target` is an object key or prefix. */
export function multipartTargetKey(target: string): string | null {
  return target.endsWith(UPLOADS_SUFFIX) ? target.slice(0, -UPLOADS_SUFFIX.length) : null;
}

/** Deletes every object of blob `blobId` from `store` (idempotent). */
export function deleteBlob(store: BlobStore, blobId: string): Promise<void> {
  return isOneObjectBlob(blobId)
    ? store.delete([blobTarget(blobId)])
    : store.deletePrefix(blobPrefix(blobId));
}

/**
 * Object key of chunk `index`, generation `gen`, of the chunked blob `blobId`; for a one-object
 * blob, its one object whatever the index (`gen` is ignored), which holds chunk `index` at offset
 * `index × chunk_size`.
 */
export function chunkKey(blobId: string, index: number, gen: string): string {
  if (isOneObjectBlob(blobId)) return `${shardOf(blobId)}${blobId}`;
  return `${blobPrefix(blobId)}${index}.${gen}`;
}

/** One stored object of a blob: its key and the blob bytes `[start, end)` it holds. */
export interface BlobObject {
  key: string;
  start: number;
  end: number;
}

/**
 * The objects of a blob in byte order: one per chunk of a chunked blob, the one object of a
 * one-object blob (`gens` are ignored for it).
 */
export function blobObjects(
  layout: Pick<BlobLayout, "blobId" | "chunkSize" | "chunkCount" | "size" | "gens">,
): BlobObject[] {
  if (isOneObjectBlob(layout.blobId))
    return [{ key: chunkKey(layout.blobId, 0, ""), start: 0, end: layout.size }];
  const out: BlobObject[] = [];
  for (let i = 0; i < layout.chunkCount; i++) {
    const start = Math.min(i * layout.chunkSize, layout.size);
    out.push({
      key: chunkKey(layout.blobId, i, layout.gens[i] ?? ""),
      start,
      end: start + chunkLength(layout.size, layout.chunkSize, i),
    });
  }
  return out;
}

/** The object of the blob that holds byte `offset` (`0 <= offset < size`). */
export function objectAt(layout: BlobLayout, offset: number): BlobObject {
  if (isOneObjectBlob(layout.blobId))
    return { key: chunkKey(layout.blobId, 0, ""), start: 0, end: layout.size };
  const i = Math.floor(offset / layout.chunkSize);
  const start = i * layout.chunkSize;
  return {
    key: chunkKey(layout.blobId, i, layout.gens[i] ?? ""),
    start,
    end: start + chunkLength(layout.size, layout.chunkSize, i),
  };
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

/** `ceil(size / chunkSize)`: the chunk count a layout must declare (docs/protocol.md#open-rules). */
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
  let at = start;
  const open = (): Promise<ReadableStream<Uint8Array>> | null => {
    if (at >= end) return null;
    const o = objectAt(layout, at);
    const s = at - o.start;
    const e = Math.min(end, o.end) - o.start;
    at = o.start + e;
    return store.get(o.key, { start: s, end: e });
  };
  let next = open();
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
            next = open();
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
 * Checks that every object of the blob exists with its exact length (`size` calls, 16 at a
 * time). Finalize runs it because chunks hashed while they streamed in are not read again.
 * @throws BlobNotFoundError for a missing object; Error for an object of the wrong size; other
 *   store errors propagate.
 */
export async function checkChunks(store: BlobStore, layout: BlobLayout): Promise<void> {
  const objects = blobObjects(layout);
  for (let i = 0; i < objects.length; i += 16) {
    const batch = objects.slice(i, i + 16).map(async (o) => {
      const size = await store.size(o.key);
      if (size === null) throw new BlobNotFoundError(o.key);
      const expected = o.end - o.start;
      if (size !== expected) throw new Error(`object ${o.key} has ${size} bytes, expected ${expected}`);
    });
    await Promise.all(batch);
  }
}

/**
 * Stores the bytes of blob `layout` (its objects, in order) as the one object `target` of a new
 * one-object blob, with exactly `layout.size` bytes: through the store's `Composable` ability when
 * it has one (no byte through JavaScript on S3, one copy per byte on disk), else as one `put` of
 * the blob read back. `target` must be a fresh key (`PutOptions.fresh`). A failure leaves no object.
 * @throws BlobNotFoundError when an object of the blob is missing; BlobLengthError when the
 *   objects do not add up to `layout.size`; other store errors propagate.
 */
export async function assembleBlob(
  store: BlobStore,
  layout: BlobLayout,
  target: string,
  opts: { durable?: boolean } = {},
): Promise<void> {
  const objects = blobObjects(layout);
  if (isComposable(store))
    return store.compose(
      target,
      objects.map((o) => ({ key: o.key, length: o.end - o.start })),
      opts,
    );
  await store.put(target, readBlobRange(store, layout, 0, layout.size), layout.size, {
    fresh: true,
    durable: opts.durable,
  });
}
