/**
 * @module server/metrics/blob-store
 * `InstrumentedBlobStore`: a `BlobStore` decorator that times every operation of the store it
 * wraps into `esync_blob_operation_duration_seconds{backend, op, outcome}` and counts stored
 * bytes, so the disk and S3 backends are measured the same way without metrics code in either.
 * It has the `Persistable`, `FileBacked`, `Composable`, `Presignable` and `Multipart` abilities exactly when the wrapped store has them
 * (a file range is not a store operation: it is handed on untimed).
 */
import {
  BlobNotFoundError,
  type BlobStore,
  type ByteRange,
  type Composable,
  type FileBacked,
  isComposable,
  isFileBacked,
  isMultipart,
  isPersistable,
  isPresignable,
  type Multipart,
  type Persistable,
  type Presignable,
  type PutOptions,
} from "../storage/blob-store.ts";
import type { Metrics } from "./metrics.ts";

/** Outcome label of a failed operation: `not_found` for `BlobNotFoundError`, else `error`. */
function failure(e: unknown): "not_found" | "error" {
  return e instanceof BlobNotFoundError ? "not_found" : "error";
}

/** Times the store operations of `inner` (see the module comment). */
export class InstrumentedBlobStore implements BlobStore {
  readonly kind: string;
  /** Present when the wrapped store is `Persistable` (see the constructor). */
  persist?: Persistable["persist"];
  /** Present when the wrapped store is `FileBacked` (see the constructor). */
  fileRange?: FileBacked["fileRange"];
  /** Present when the wrapped store is `Composable` (see the constructor). */
  compose?: Composable["compose"];
  /** Present when the wrapped store is `Presignable` (see the constructor). */
  presignGet?: Presignable["presignGet"];
  /** The `Multipart` ability, present when the wrapped store has it (see the constructor). */
  minPartBytes?: number;
  maxParts?: number;
  createMultipart?: Multipart["createMultipart"];
  putPart?: Multipart["putPart"];
  completeMultipart?: Multipart["completeMultipart"];
  abortMultipart?: Multipart["abortMultipart"];
  listMultipart?: Multipart["listMultipart"];

  constructor(
    private readonly inner: BlobStore,
    private readonly metrics: Metrics,
  ) {
    this.kind = inner.kind;
    if (isPersistable(inner)) this.persist = (keys) => this.timed("persist", () => inner.persist(keys));
    if (isFileBacked(inner)) this.fileRange = (key, range) => inner.fileRange(key, range);
    if (isPresignable(inner)) this.presignGet = (key, seconds) => inner.presignGet(key, seconds);
    if (isComposable(inner))
      this.compose = (target, sources, opts) =>
        this.timed("compose", () => inner.compose(target, sources, opts));
    if (isMultipart(inner)) {
      this.minPartBytes = inner.minPartBytes;
      this.maxParts = inner.maxParts;
      this.createMultipart = (key) => this.timed("create_multipart", () => inner.createMultipart(key));
      this.putPart = async (key, uploadId, partNumber, body, length, opts) => {
        const etag = await this.timed("put_part", () =>
          inner.putPart(key, uploadId, partNumber, body, length, opts),
        );
        this.metrics.blobPutBytes.inc({ backend: this.kind }, length);
        return etag;
      };
      this.completeMultipart = (key, uploadId, parts) =>
        this.timed("complete_multipart", () => inner.completeMultipart(key, uploadId, parts));
      this.abortMultipart = (key) => this.timed("abort_multipart", () => inner.abortMultipart(key));
      this.listMultipart = (prefix) => inner.listMultipart(prefix);
    }
  }

  /** The wrapped store. */
  get wrapped(): BlobStore {
    return this.inner;
  }

  private async timed<T>(op: string, run: () => Promise<T>): Promise<T> {
    const started = performance.now();
    let outcome = "ok";
    try {
      return await run();
    } catch (e) {
      outcome = failure(e);
      throw e;
    } finally {
      this.metrics.blobOps.observe({ backend: this.kind, op, outcome }, (performance.now() - started) / 1000);
    }
  }

  async put(key: string, body: ReadableStream<Uint8Array>, length: number, opts?: PutOptions): Promise<void> {
    await this.timed("put", () => this.inner.put(key, body, length, opts));
    this.metrics.blobPutBytes.inc({ backend: this.kind }, length);
  }

  /** Times until the stream is open (the first byte can be read), not until it is drained. */
  get(key: string, range?: ByteRange): Promise<ReadableStream<Uint8Array>> {
    return this.timed("get", () => this.inner.get(key, range));
  }

  size(key: string): Promise<number | null> {
    return this.timed("size", () => this.inner.size(key));
  }

  list(prefix: string): Promise<string[]> {
    return this.timed("list", () => this.inner.list(prefix));
  }

  delete(keys: string[]): Promise<void> {
    return this.timed("delete", () => this.inner.delete(keys));
  }

  deletePrefix(prefix: string): Promise<void> {
    return this.timed("delete_prefix", () => this.inner.deletePrefix(prefix));
  }

  check(): Promise<void> {
    return this.timed("check", () => this.inner.check());
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
