/**
 * @module server/storage/blob-store
 * The one narrow interface every blob backend implements (local disk, S3). A backend stores
 * opaque objects under string keys made of `[A-Za-z0-9._-]` segments joined by `/`; it knows
 * nothing of sessions or files. The object layout on top of it is in `src/storage/layout.ts`.
 *
 * Contract, checked by the conformance suite `test/storage/conformance.ts` for every backend:
 * - `put` is atomic: readers see the old object or the whole new one, never a part.
 * - `put` consumes exactly `length` bytes; a body that is shorter or longer makes `put` throw
 *   `BlobLengthError` and leaves no object (an existing object under the key is unchanged).
 * - `get` of a missing key throws `BlobNotFoundError`; every other backend failure propagates.
 * - `deletePrefix`/`delete` of missing keys succeed (idempotent).
 */

/** A byte range `[start, end)` within one object, in bytes. */
export interface ByteRange {
  start: number;
  end: number;
}

/** Options of `BlobStore.put`. */
export interface PutOptions {
  /**
   * Called with every piece of the body as it streams through (e.g. to hash it on the way in).
   * The piece is valid only during the call: a store may free its memory afterwards.
   */
  onData?: (piece: Uint8Array) => void;
  /** Aborts the write; `put` then rejects and leaves no object. */
  signal?: AbortSignal;
  /**
   * The object must be durable when `put` resolves, as if `Persistable.persist([key])` had been
   * called after it (the disk store syncs the file before its rename and its directory after it,
   * instead of a second open and sync later). Stores whose writes are always durable ignore it;
   * a disk store configured not to sync (`off`) syncs nothing.
   */
  durable?: boolean;
  /**
   * The caller guarantees that no object was ever stored under `key` and that nothing reads it
   * before `put` resolves (a new blob's key): a store may then write the object in place instead
   * of staging it and renaming it over the key (the disk store does; it then fails with `EEXIST`
   * instead of replacing an object that exists after all). A failed `put` still leaves no object.
   */
  fresh?: boolean;
}

/** Storage backend of ciphertext objects. */
export interface BlobStore {
  /** Backend name for logs and /health: `disk` or `s3`. */
  readonly kind: string;
  /**
   * Stores `body`, exactly `length` bytes, as object `key`, replacing any object there.
   * @throws BlobLengthError if the body is shorter or longer than `length` (nothing stored).
   */
  put(key: string, body: ReadableStream<Uint8Array>, length: number, opts?: PutOptions): Promise<void>;
  /**
   * Streams object `key`, or the byte range `range` of it (end clamped to the object size).
   * @throws BlobNotFoundError when there is no such object.
   */
  get(key: string, range?: ByteRange): Promise<ReadableStream<Uint8Array>>;
  /** Size in bytes of object `key`, or null when it does not exist. */
  size(key: string): Promise<number | null>;
  /** Keys of every object whose key starts with `prefix`, in no particular order. */
  list(prefix: string): Promise<string[]>;
  /** Deletes the objects `keys`; missing ones are ignored. */
  delete(keys: string[]): Promise<void>;
  /** Deletes every object whose key starts with `prefix` (which ends in `/`); idempotent. */
  deletePrefix(prefix: string): Promise<void>;
  /** Checks the backend is reachable (and, for S3, that the bucket exists). Throws otherwise. */
  check(): Promise<void>;
  /** Releases resources (open handles, agents). */
  close(): Promise<void>;
}

/**
 * Optional ability of a store whose `put` is not durable by itself (the disk store, unless it
 * fsyncs every object): `persist` makes the given objects durable. Finalize and single-shot upload
 * call it before the file row that references the objects is committed.
 */
export interface Persistable {
  /** Makes objects `keys` durable (disk: fsync each file and its directory). */
  persist(keys: string[]): Promise<void>;
}

/** True when `store` has the `Persistable` ability. */
export function isPersistable(store: BlobStore): store is BlobStore & Persistable {
  return typeof (store as Partial<Persistable>).persist === "function";
}

/**
 * Optional ability of a store whose objects are local files (the disk store): a byte range of
 * object `key` as a file-backed `Blob`, which an HTTP response sends with `Content-Length`
 * straight from the file (sendfile) instead of through a stream.
 */
export interface FileBacked {
  /** Bytes `[range.start, range.end)` of object `key` as a lazily read Blob (nothing is read now). */
  fileRange(key: string, range: ByteRange): Blob;
}

/** True when `store` has the `FileBacked` ability. */
export function isFileBacked(store: BlobStore): store is BlobStore & FileBacked {
  return typeof (store as Partial<FileBacked>).fileRange === "function";
}

/**
 * Optional ability of a store whose objects can be fetched straight from it by a client (S3): a
 * URL that GETs object `key` (with any `Range` the client adds) without other credentials.
 */
export interface Presignable {
  /** A presigned GET URL of object `key`, valid `seconds` seconds. Nothing is checked now. */
  presignGet(key: string, seconds: number): Promise<string>;
}

/** True when `store` has the `Presignable` ability. */
export function isPresignable(store: BlobStore): store is BlobStore & Presignable {
  return typeof (store as Partial<Presignable>).presignGet === "function";
}

/** One source object of `Composable.compose`: its key and its exact length in bytes. */
export interface ComposeSource {
  key: string;
  length: number;
}

/**
 * Optional ability of a store that can build one object from others without the bytes passing
 * through the caller (the disk store copies them file to file; the S3 store copies them server
 * side with a multipart upload when every source but the last is at least 5 MiB).
 */
export interface Composable {
  /**
   * Stores the concatenation of `sources`, in order, as object `target`, a fresh key
   * (`PutOptions.fresh`: nothing was ever stored or read there). Sources are unchanged. With
   * `durable`, the object is durable when this resolves (as `PutOptions.durable`). A failure
   * leaves no object at `target`.
   * @throws BlobNotFoundError when a source is missing; BlobLengthError when a source does not
   *   have its declared length (nothing stored).
   */
  compose(target: string, sources: ComposeSource[], opts?: { durable?: boolean }): Promise<void>;
}

/** True when `store` has the `Composable` ability. */
export function isComposable(store: BlobStore): store is BlobStore & Composable {
  return typeof (store as Partial<Composable>).compose === "function";
}

/** One part of a multipart upload, as `Multipart.completeMultipart` takes it. */
export interface UploadedPart {
  /** Part number, from 1. */
  partNumber: number;
  /** The ETag the store answered for the part's upload. */
  etag: string;
}

/** A multipart upload in progress (`Multipart.listMultipart`). */
export interface OpenUpload {
  key: string;
  uploadId: string;
}

/**
 * Optional ability of a store that builds one object from parts uploaded separately, in any order
 * and from any node, without copying them (S3 multipart uploads). The parts cannot be read before
 * `completeMultipart`; the object does not exist before it. Used by upload sessions whose chunks
 * are at least `minPartBytes` (docs/design.md#storage-layout).
 */
export interface Multipart {
  /** Smallest part but the last, bytes. */
  readonly minPartBytes: number;
  /** Most parts of one upload. */
  readonly maxParts: number;
  /** Opens a multipart upload whose object will be `key`; resolves with its upload id. */
  createMultipart(key: string): Promise<string>;
  /**
   * Streams `body`, exactly `length` bytes, as part `partNumber` (from 1) of upload `uploadId`,
   * replacing an earlier part of that number; resolves with the part's ETag. The length rules and
   * `onData`/`signal` are those of `BlobStore.put`; a failed upload leaves the earlier part, if any.
   * @throws BlobLengthError (body shorter or longer); MultipartGoneError when the upload was
   *   completed or aborted; other store errors propagate.
   */
  putPart(
    key: string,
    uploadId: string,
    partNumber: number,
    body: ReadableStream<Uint8Array>,
    length: number,
    opts?: Pick<PutOptions, "onData" | "signal">,
  ): Promise<string>;
  /**
   * Completes upload `uploadId`: object `key` becomes the parts `parts` (ascending part numbers)
   * concatenated. Fails, changing nothing, when a part's ETag is not the one stored.
   * @throws MultipartGoneError when the upload was completed or aborted; other errors propagate.
   */
  completeMultipart(key: string, uploadId: string, parts: UploadedPart[]): Promise<void>;
  /** Aborts every multipart upload in progress whose object is `key` (none: nothing to do). */
  abortMultipart(key: string): Promise<void>;
  /** The multipart uploads in progress whose object key starts with `prefix`. */
  listMultipart(prefix: string): AsyncIterable<OpenUpload>;
}

/** True when `store` has the `Multipart` ability. */
export function isMultipart(store: BlobStore): store is BlobStore & Multipart {
  return typeof (store as Partial<Multipart>).createMultipart === "function";
}

/** The multipart upload is no longer in progress (completed or aborted). */
export class MultipartGoneError extends Error {
  constructor(readonly key: string) {
    super(`no multipart upload in progress for ${key}`);
    this.name = "MultipartGoneError";
  }
}

/** The body given to `put` did not have the declared length; nothing was stored. */
export class BlobLengthError extends Error {
  constructor(
    readonly expected: number,
    readonly received: number,
  ) {
    super(`expected ${expected} bytes, received ${received}${received > expected ? " or more" : ""}`);
    this.name = "BlobLengthError";
  }
}

/** `get` of an object that does not exist. */
export class BlobNotFoundError extends Error {
  constructor(readonly key: string) {
    super(`no object at key ${key}`);
    this.name = "BlobNotFoundError";
  }
}

/**
 * The store could not read an object that should be there (I/O error, S3 unreachable): a
 * passing failure of the server's storage, answered 503 `storage_unavailable` (src/app.ts), not a
 * missing object (`BlobNotFoundError`). `cause` is the store's error.
 */
export class BlobReadError extends Error {
  constructor(cause: unknown) {
    super(`the blob store could not be read: ${(cause as Error)?.message ?? cause}`, { cause });
    this.name = "BlobReadError";
  }
}

/** Valid object key: segments of `[A-Za-z0-9._-]`, no empty, `.` or `..` segment. */
export function isValidKey(key: string): boolean {
  if (key.length === 0 || key.length > 512) return false;
  return key.split("/").every((s) => /^[A-Za-z0-9._-]+$/.test(s) && s !== "." && s !== "..");
}

/**
 * Wraps `body` so that it yields exactly `length` bytes: it errors with `BlobLengthError` as
 * soon as more arrive, or at the end when fewer did. `onData` sees every piece.
 */
export function exactLength(
  body: ReadableStream<Uint8Array>,
  length: number,
  onData?: (piece: Uint8Array) => void,
): ReadableStream<Uint8Array> {
  let seen = 0;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(piece, controller) {
        seen += piece.byteLength;
        if (seen > length) {
          controller.error(new BlobLengthError(length, seen));
          return;
        }
        onData?.(piece);
        controller.enqueue(piece);
      },
      flush(controller) {
        if (seen !== length) controller.error(new BlobLengthError(length, seen));
      },
    }),
  );
}
