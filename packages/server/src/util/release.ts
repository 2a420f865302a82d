/**
 * @module server/util/release
 * Returning the memory of a stream's pieces as soon as their reader is done with them.
 *
 * Every piece a Bun stream hands to its reader (a request body, a file read back) is a fresh
 * `ArrayBuffer` that only the garbage collector frees. Under a steady upload of hundreds of MB/s
 * dead pieces pile up between collections, and the process's resident size follows them
 * (docs/benchmarks.md, "Memory of the chunk PUT path"). So a producer whose pieces are fresh and
 * shared with nobody marks its stream (`ownPieces`), and a reader of such a stream that has
 * finished with a piece (written it, hashed it) frees it at once (`releasePiece`: the standard
 * `ArrayBuffer.prototype.transfer(0)` detaches the buffer and frees its bytes). Pieces of an
 * unmarked stream belong to whoever made them and are never touched.
 */

/** Streams whose pieces each belong to their reader alone. */
const owned = new WeakSet<ReadableStream<Uint8Array>>();

/**
 * Marks `stream` as handing every piece to its reader alone (a fresh buffer nothing else keeps),
 * so that the reader may free a piece once done with it. Returns `stream`.
 */
export function ownPieces<S extends ReadableStream<Uint8Array>>(stream: S): S {
  owned.add(stream);
  return stream;
}

/** True when the reader of `stream` owns its pieces (see `ownPieces`). */
export function piecesOwned(stream: ReadableStream<Uint8Array>): boolean {
  return owned.has(stream);
}

/**
 * Frees the bytes of `piece`, read from a stream marked by `ownPieces`, now rather than at the
 * next garbage collection; a piece whose buffer holds more than the piece, or cannot be
 * detached, is left to the collector.
 * Afterwards `piece` has length 0: call it only once nothing reads the piece any more (never on
 * bytes still queued for an asynchronous write or send).
 */
export function releasePiece(piece: Uint8Array): void {
  const buffer = piece.buffer;
  if (!(buffer instanceof ArrayBuffer) || buffer.detached) return;
  if (piece.byteOffset !== 0 || buffer.byteLength !== piece.byteLength) return;
  try {
    buffer.transfer(0);
  } catch {
    // A buffer the engine will not detach (pinned) is left to the garbage collector.
  }
}
