/**
 * @module server/storage/s3
 * S3 `BlobStore` on any S3-compatible server (Ceph RGW, MinIO, AWS S3) through the `minio` client.
 *
 * Object-key layout in the bucket: blob-store key `k` is the S3 object `<prefix>/<k>`, or `k`
 * itself when the configured prefix is empty. With the layout of `src/storage/layout.ts` a chunk
 * of a chunked blob is therefore `<prefix>/b/<xx>/<blob_id>/<index>.<gen>`, and every chunk of one
 * blob shares the S3 prefix `<prefix>/b/<xx>/<blob_id>/`, which `list` and `deletePrefix` walk with
 * ListObjectsV2; a one-object blob is the single object `<prefix>/b/<xx>/<blob_id>`. Nothing else
 * is stored in the bucket: no temporary objects and no metadata objects. Multipart uploads exist
 * in two places only: `compose`, which builds one object from others server side (UploadPartCopy,
 * completed or aborted before it returns), and the `Multipart` ability, with which an upload
 * session of large chunks streams each chunk as one part of the multipart upload of the file's
 * final object (`createMultipart`, `putPart`, `completeMultipart`; `abortMultipart` for a session
 * that ends unfinalized, `listMultipart` for fsck).
 *
 * Writes are one plain PUT each, with `Content-Length` set to the declared length and the body
 * streamed from the caller's stream (signed as `UNSIGNED-PAYLOAD`, so no hash of the body is
 * needed up front and nothing is buffered). S3 makes a PUT atomic: readers see the old object
 * or the new one. To make sure a body that turns out too long never completes a PUT, the last
 * byte is held back until the source stream has ended with exactly the declared length; a body
 * that is short, long or fails midway makes the request fail before S3 has every byte, so no
 * object is created and an existing one is left unchanged.
 *
 * The writes (an object or a part: `PUT`, `PUT ?partNumber&uploadId`; the start of a multipart
 * upload: `POST ?uploads`) go to a URL signed by minio's public `presignedUrl` and are sent with
 * Bun's `fetch`, which streams a body of known length from a web stream without copying it
 * through Node's socket layer. minio's own public writes cannot stream: `putObject` reads a body
 * of up to 64 MiB into memory and hashes it before sending, `uploadPart` takes a buffer.
 * Measured trade-off: docs/operator-guide.md#s3. Reads, listings, deletes, server-side copies and
 * completing, aborting and listing multipart uploads use minio's public methods.
 */

import * as http from "node:http";
import * as https from "node:https";
import { Readable } from "node:stream";
import { Client, CopyDestinationOptions, CopySourceOptions } from "minio";
import { S3_DEFAULT_TIMEOUTS, type S3Config } from "../config/config.ts";
import {
  BlobLengthError,
  BlobNotFoundError,
  type BlobStore,
  type ByteRange,
  type Composable,
  type ComposeSource,
  exactLength,
  isValidKey,
  type Multipart,
  MultipartGoneError,
  type OpenUpload,
  type Presignable,
  type PutOptions,
  type UploadedPart,
} from "./blob-store.ts";
import {
  type BodySource,
  type FetchLike,
  type S3Timeouts,
  type TimedAnswer,
  timedFetch,
  timedTransport,
} from "./s3-timeouts.ts";

/** Smallest part of a multipart upload but the last, bytes (S3's limit). */
const MIN_PART_BYTES = 5 * 1024 * 1024;

/** Most parts of one multipart upload (S3's limit). */
const MAX_PARTS = 10_000;

/** Largest number of keys S3 accepts in one DeleteObjects request. */
const DELETE_BATCH = 1000;

/** How long the signed URL of a write stays valid, seconds: it is used at once. */
const WRITE_URL_SECONDS = 15 * 60;

/**
 * The calls `S3BlobStore` makes, a structural subset of the `minio` `Client` (a real client
 * satisfies it as is); tests pass fakes to inject faults. Errors are expected as minio throws
 * them: objects with a string `code` (`NoSuchKey`, `NotFound`, ...) for S3 error replies.
 */
export interface S3Client {
  /**
   * A presigned (query-signed, `UNSIGNED-PAYLOAD`) URL for `method` on an object, valid
   * `expires` seconds, with the extra query parameters `reqParams` signed in (computed locally
   * when the client knows its region, as the store's client does).
   */
  presignedUrl(
    method: string,
    bucketName: string,
    objectName: string,
    expires?: number,
    reqParams?: Record<string, string>,
  ): Promise<string>;
  getObject(bucketName: string, objectName: string): Promise<Readable>;
  /** Bytes `[offset, offset + length)` of an object (`length` 0: to the end). */
  getPartialObject(
    bucketName: string,
    objectName: string,
    offset: number,
    length?: number,
  ): Promise<Readable>;
  statObject(bucketName: string, objectName: string): Promise<{ size: number }>;
  /** Every object under `prefix` when `recursive` is true. */
  listObjectsV2(bucketName: string, prefix?: string, recursive?: boolean): AsyncIterable<{ name?: string }>;
  /** DeleteObjects; resolves with the per-key errors S3 reported (empty when all went). */
  removeObjects(bucketName: string, objectsList: string[]): Promise<unknown[]>;
  bucketExists(bucketName: string): Promise<boolean>;
  /**
   * Multipart upload of `sources` copied server side (UploadPartCopy) into `dest`, completed.
   * minio's aborts the upload and resolves when a part fails, so the caller checks the result.
   */
  composeObject(dest: CopyDestinationOptions, sources: CopySourceOptions[]): Promise<unknown>;
  /**
   * CompleteMultipartUpload of `uploadId` with the parts `etags` (`part` from 1). minio throws
   * the S3 error, including one S3 sends after a 200 status.
   */
  completeMultipartUpload(
    bucketName: string,
    objectName: string,
    uploadId: string,
    etags: { part: number; etag?: string }[],
  ): Promise<unknown>;
  /** AbortMultipartUpload of `uploadId`. */
  abortMultipartUpload(bucketName: string, objectName: string, uploadId: string): Promise<void>;
  /** The multipart uploads in progress under `prefix` (every level when `recursive`). */
  listIncompleteUploads(
    bucketName: string,
    prefix: string,
    recursive: boolean,
  ): AsyncIterable<{ key: string; uploadId: string }>;
  /** A presigned GET URL of an object, valid `expires` seconds (computed locally, no request). */
  presignedGetObject(bucketName: string, objectName: string, expires?: number): Promise<string>;
  makeBucket(bucketName: string, region?: string): Promise<void>;
}

/** Options of the S3 store. */
export interface S3BlobStoreOptions {
  client: S3Client;
  bucket: string;
  /** Object-key prefix inside the bucket, without leading or trailing `/`; may be empty. */
  prefix: string;
  /** Region to create the bucket in and to sign requests for. */
  region: string;
  /** Endpoint URL, only used in error messages. */
  endpoint: string;
  /** How long `check` waits for the endpoint, in milliseconds (default 10,000). */
  checkTimeoutMs?: number;
  /** Bounds of each write (default `S3_DEFAULT_TIMEOUTS`); the client's transport bounds the rest. */
  timeouts?: S3Timeouts;
  /** Sends the writes (default: the global `fetch`); tests pass a stand-in. */
  fetch?: FetchLike;
  /** Called by `close` (e.g. to destroy the HTTP agent the client was built with). */
  onClose?: () => void;
}

function checkKey(key: string): void {
  if (!isValidKey(key)) throw new Error(`invalid object key: ${JSON.stringify(key)}`);
}

function errorCode(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/**
 * An S3 error reply to a write, as minio reports one for the other calls: `name` `S3Error`,
 * `code` the reply's `<Code>` (`NoSuchUpload`, `AccessDenied`, ...), and the HTTP status.
 */
export class S3ReplyError extends Error {
  constructor(
    readonly code: string,
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "S3Error";
  }
}

/** The S3 error reply `answer` (a status other than 200) as an `S3ReplyError`. */
function replyError(answer: TimedAnswer, what: string): S3ReplyError {
  const code = /<Code>([^<]*)<\/Code>/.exec(answer.text)?.[1] ?? `HTTP${answer.status}`;
  const detail = /<Message>([^<]*)<\/Message>/.exec(answer.text)?.[1];
  return new S3ReplyError(
    unescapeXml(code),
    answer.status,
    `S3 ${what} answered ${answer.status} ${unescapeXml(code)}${detail ? `: ${unescapeXml(detail)}` : ""}`,
  );
}

/** S3 replies that mean "no such object" (`NotFound` is what a HEAD gets, having no body). */
function isNotFound(e: unknown): boolean {
  const code = errorCode(e);
  return code === "NoSuchKey" || code === "NotFound";
}

function emptyStream(): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({ start: (c) => c.close() });
}

/** `BlobStore` in one S3 bucket; see the module comment for the key layout. */
export class S3BlobStore implements BlobStore, Composable, Presignable, Multipart {
  readonly kind = "s3";
  readonly minPartBytes = MIN_PART_BYTES;
  readonly maxParts = MAX_PARTS;
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;
  private readonly region: string;
  private readonly endpoint: string;
  private readonly checkTimeoutMs: number;
  private readonly timeouts: S3Timeouts;
  private readonly fetch: FetchLike;
  private readonly onClose: (() => void) | undefined;

  /** @throws Error if the key prefix is not a valid object key. */
  constructor(opts: S3BlobStoreOptions) {
    if (opts.prefix !== "" && !isValidKey(opts.prefix)) {
      throw new Error(`invalid S3 key prefix: ${JSON.stringify(opts.prefix)}`);
    }
    this.client = opts.client;
    this.bucket = opts.bucket;
    this.prefix = opts.prefix;
    this.region = opts.region;
    this.endpoint = opts.endpoint;
    this.checkTimeoutMs = opts.checkTimeoutMs ?? 10_000;
    this.timeouts = opts.timeouts ?? S3_DEFAULT_TIMEOUTS;
    this.fetch = opts.fetch ?? ((url, init) => fetch(url, init));
    this.onClose = opts.onClose;
  }

  /** S3 object name of blob-store key (or key prefix) `key`. */
  private objectName(key: string): string {
    return this.prefix === "" ? key : `${this.prefix}/${key}`;
  }

  /**
   * Streams `body` into one PUT of exactly `length` bytes (0 to 5 GiB; no multipart).
   * @throws BlobLengthError if the body is shorter or longer (no object is created).
   * @throws the body stream's own error if it fails, `signal.reason` if aborted, else the S3 or
   *   network error of the request; in every case no object is created by this call.
   */
  async put(
    key: string,
    body: ReadableStream<Uint8Array>,
    length: number,
    opts: PutOptions = {},
  ): Promise<void> {
    checkKey(key);
    if (!Number.isSafeInteger(length) || length < 0) throw new RangeError(`invalid length: ${length}`);
    await this.send(this.objectName(key), {}, body, length, opts);
  }

  /**
   * One PUT of `body`, exactly `length` bytes, to object `name` (with `query` `partNumber` and
   * `uploadId`, a part); resolves with the answer's headers. The length rules and errors are
   * those of `put`; an S3 error reply throws `S3ReplyError`.
   */
  private async send(
    name: string,
    query: Record<string, string>,
    body: ReadableStream<Uint8Array>,
    length: number,
    opts: Pick<PutOptions, "onData" | "signal">,
  ): Promise<Headers> {
    opts.signal?.throwIfAborted();
    const checked = exactLength(body, length, opts.onData);
    // An empty PUT is complete as soon as its headers are sent, so check the body first.
    if (length === 0) await drain(checked, opts.signal);
    const source = length === 0 ? null : new HeldBackSource(checked.getReader(), length);
    let answer: TimedAnswer;
    try {
      answer = await this.write("PUT", name, query, length, source, opts.signal);
    } catch (e) {
      // Release the caller's body however far it was read (the request may have failed before
      // the first piece), so an HTTP server can drain or close the client's connection.
      await source?.release();
      // Report the cause: the body's own error (BlobLengthError, or the caller's stream
      // failing) rather than how the transport saw the cut.
      if (opts.signal?.aborted) throw opts.signal.reason;
      if (source?.failure !== undefined) throw source.failure;
      throw e;
    }
    // S3 may answer (an error) before it has read the whole body.
    await source?.release();
    if (answer.status !== 200) throw replyError(answer, `PUT ${name}`);
    return answer.headers;
  }

  /**
   * One write request to object `name` with the signed `query`: `length` bytes of `body` (null
   * for none), sent by `timedFetch` to a URL presigned for `method`. Resolves with the answer,
   * whatever its status; the errors are `timedFetch`'s.
   */
  private async write(
    method: "PUT" | "POST",
    name: string,
    query: Record<string, string>,
    length: number,
    body: BodySource | null,
    signal?: AbortSignal,
  ): Promise<TimedAnswer> {
    const url = await this.client.presignedUrl(method, this.bucket, name, WRITE_URL_SECONDS, query);
    const request = {
      method,
      headers: { "Content-Length": String(length) },
      body,
      ...(signal ? { signal } : {}),
    };
    return timedFetch(this.fetch, url, request, this.timeouts);
  }

  /** `Multipart.createMultipart`: CreateMultipartUpload (`POST ?uploads`) of object `key`. */
  async createMultipart(key: string): Promise<string> {
    checkKey(key);
    const name = this.objectName(key);
    const answer = await this.write("POST", name, { uploads: "" }, 0, null);
    if (answer.status !== 200) throw replyError(answer, `CreateMultipartUpload ${name}`);
    const m = /<UploadId>([^<]+)<\/UploadId>/.exec(answer.text);
    if (!m?.[1]) throw new Error(`S3 CreateMultipartUpload of ${key} answered no UploadId`);
    return unescapeXml(m[1]);
  }

  /** `Multipart.putPart`: one streamed UploadPart, as `put` streams an object. */
  async putPart(
    key: string,
    uploadId: string,
    partNumber: number,
    body: ReadableStream<Uint8Array>,
    length: number,
    opts: Pick<PutOptions, "onData" | "signal"> = {},
  ): Promise<string> {
    checkKey(key);
    if (!Number.isSafeInteger(length) || length < 0) throw new RangeError(`invalid length: ${length}`);
    if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > MAX_PARTS)
      throw new RangeError(`invalid part number: ${partNumber}`);
    const query = { partNumber: String(partNumber), uploadId };
    let headers: Headers;
    try {
      headers = await this.send(this.objectName(key), query, body, length, opts);
    } catch (e) {
      if (errorCode(e) === "NoSuchUpload") throw new MultipartGoneError(key);
      throw e;
    }
    const etag = headers.get("etag");
    if (etag === null || etag === "")
      throw new Error(`S3 UploadPart ${partNumber} of ${key} answered no ETag`);
    return etag.replace(/^"|"$/g, "");
  }

  /** `Multipart.completeMultipart`: CompleteMultipartUpload with the given parts. */
  async completeMultipart(key: string, uploadId: string, parts: UploadedPart[]): Promise<void> {
    checkKey(key);
    try {
      await this.client.completeMultipartUpload(
        this.bucket,
        this.objectName(key),
        uploadId,
        parts.map((p) => ({ part: p.partNumber, etag: p.etag })),
      );
    } catch (e) {
      if (errorCode(e) === "NoSuchUpload") throw new MultipartGoneError(key);
      throw e;
    }
  }

  /** `Multipart.abortMultipart`: lists the uploads of `key` and aborts each. */
  async abortMultipart(key: string): Promise<void> {
    checkKey(key);
    const name = this.objectName(key);
    for await (const u of this.client.listIncompleteUploads(this.bucket, name, true)) {
      if (u.key !== name) continue;
      try {
        await this.client.abortMultipartUpload(this.bucket, name, u.uploadId);
      } catch (e) {
        if (errorCode(e) !== "NoSuchUpload") throw e;
      }
    }
  }

  /** `Multipart.listMultipart`: ListMultipartUploads under `prefix`. */
  async *listMultipart(prefix: string): AsyncGenerator<OpenUpload> {
    const strip = this.prefix === "" ? 0 : this.prefix.length + 1;
    const full = this.prefix === "" ? prefix : `${this.prefix}/${prefix}`;
    for await (const u of this.client.listIncompleteUploads(this.bucket, full, true)) {
      yield { key: u.key.slice(strip), uploadId: u.uploadId };
    }
  }

  /**
   * Streams object `key`, or bytes `[range.start, range.end)` of it with `end` clamped to the
   * object size (an empty range, or one starting at or past the end, yields no bytes).
   * @throws BlobNotFoundError when there is no such object; other S3 errors propagate.
   */
  async get(key: string, range?: ByteRange): Promise<ReadableStream<Uint8Array>> {
    checkKey(key);
    const name = this.objectName(key);
    let stream: Readable;
    try {
      if (!range) {
        stream = await this.client.getObject(this.bucket, name);
      } else {
        const { start, end } = range;
        if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0) {
          throw new RangeError(`invalid byte range: [${start}, ${end})`);
        }
        if (end <= start) {
          if ((await this.size(key)) === null) throw new BlobNotFoundError(key);
          return emptyStream();
        }
        stream = await this.client.getPartialObject(this.bucket, name, start, end - start);
      }
    } catch (e) {
      if (isNotFound(e)) throw new BlobNotFoundError(key);
      // A range starting at or past the end of the object (or any range of an empty one).
      if (errorCode(e) === "InvalidRange") {
        if ((await this.size(key)) === null) throw new BlobNotFoundError(key);
        return emptyStream();
      }
      throw e;
    }
    return Readable.toWeb(stream) as unknown as ReadableStream<Uint8Array>;
  }

  /**
   * `Composable.compose`: one multipart upload whose parts are the sources copied server side
   * (UploadPartCopy) when every source but the last has at least `MIN_PART_BYTES` and there are
   * at most `MAX_PARTS`; else one streamed PUT of the sources read in order.
   */
  async compose(target: string, sources: ComposeSource[], _opts?: { durable?: boolean }): Promise<void> {
    checkKey(target);
    for (const src of sources) checkKey(src.key);
    const total = sources.reduce((n, src) => n + src.length, 0);
    const copyable =
      sources.length > 1 &&
      sources.length <= MAX_PARTS &&
      sources.every((src, i) => i === sources.length - 1 || src.length >= MIN_PART_BYTES);
    if (!copyable) {
      await this.put(target, this.concat(sources), total, { fresh: true });
      return;
    }
    try {
      await this.client.composeObject(
        new CopyDestinationOptions({ Bucket: this.bucket, Object: this.objectName(target) }),
        sources.map(
          (src) => new CopySourceOptions({ Bucket: this.bucket, Object: this.objectName(src.key) }),
        ),
      );
    } catch (e) {
      if (isNotFound(e)) {
        for (const src of sources)
          if ((await this.size(src.key)) === null) throw new BlobNotFoundError(src.key);
      }
      throw e;
    }
    const size = await this.size(target);
    if (size === total) return;
    await this.delete([target]).catch(() => {});
    for (const src of sources) if ((await this.size(src.key)) === null) throw new BlobNotFoundError(src.key);
    // The copy completed with other sizes than declared, or minio aborted it (no object).
    if (size !== null) throw new BlobLengthError(total, size);
    throw new Error(
      `composing ${target} from ${sources.length} objects failed: the multipart upload was aborted`,
    );
  }

  /** The objects `sources` read one after the other, each checked against its length. */
  private concat(sources: ComposeSource[]): ReadableStream<Uint8Array> {
    const get = (src: ComposeSource) => this.get(src.key).then((s) => exactLength(s, src.length));
    let i = 0;
    let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
    return new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          for (;;) {
            if (!reader) {
              const src = sources[i++];
              if (!src) {
                controller.close();
                return;
              }
              reader = (await get(src)).getReader();
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
        },
      },
      { highWaterMark: 0 },
    );
  }

  presignGet(key: string, seconds: number): Promise<string> {
    checkKey(key);
    return this.client.presignedGetObject(this.bucket, this.objectName(key), seconds);
  }

  /** Size in bytes of object `key` (HEAD), or null when it does not exist. */
  async size(key: string): Promise<number | null> {
    checkKey(key);
    try {
      return (await this.client.statObject(this.bucket, this.objectName(key))).size;
    } catch (e) {
      if (isNotFound(e)) return null;
      throw e;
    }
  }

  /** Keys (without the bucket prefix) of every object whose key starts with `prefix`. */
  async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    for await (const key of this.walk(prefix)) keys.push(key);
    return keys;
  }

  private async *walk(prefix: string): AsyncGenerator<string> {
    const strip = this.prefix === "" ? 0 : this.prefix.length + 1;
    const full = this.prefix === "" ? prefix : `${this.prefix}/${prefix}`;
    for await (const item of this.client.listObjectsV2(this.bucket, full, true)) {
      if (item.name !== undefined) yield item.name.slice(strip);
    }
  }

  /**
   * Deletes the objects `keys` with DeleteObjects, at most 1000 per request; missing keys are
   * ignored. @throws Error naming the first key S3 failed to delete.
   */
  async delete(keys: string[]): Promise<void> {
    for (const k of keys) checkKey(k);
    for (let i = 0; i < keys.length; i += DELETE_BATCH) {
      await this.deleteBatch(keys.slice(i, i + DELETE_BATCH));
    }
  }

  private async deleteBatch(keys: string[]): Promise<void> {
    if (keys.length === 0) return;
    const errors = await this.client.removeObjects(
      this.bucket,
      keys.map((k) => this.objectName(k)),
    );
    for (const raw of errors) {
      // minio returns the <Error> entries of the reply, either bare or under `Error`.
      const entry = (raw as { Error?: unknown } | null)?.Error ?? raw;
      const { Code, Key, Message } = (entry ?? {}) as { Code?: string; Key?: string; Message?: string };
      if (!Code || Code === "NoSuchKey") continue;
      throw new Error(`S3 DeleteObjects failed for ${Key ?? "?"}: ${Code}${Message ? ` (${Message})` : ""}`);
    }
  }

  /**
   * Deletes every object under `prefix` (which ends in `/`), listing and deleting in batches of
   * 1000 so memory stays bounded; idempotent.
   */
  async deletePrefix(prefix: string): Promise<void> {
    if (!prefix.endsWith("/")) throw new Error(`prefix must end in "/": ${prefix}`);
    checkKey(prefix.slice(0, -1));
    let batch: string[] = [];
    for await (const key of this.walk(prefix)) {
      batch.push(key);
      if (batch.length === DELETE_BATCH) {
        await this.deleteBatch(batch);
        batch = [];
      }
    }
    await this.deleteBatch(batch);
  }

  /**
   * Checks that the endpoint answers and the bucket exists, creating the bucket if it is missing.
   * @throws Error naming the endpoint and bucket when S3 is unreachable, too slow, or refuses.
   */
  async check(): Promise<void> {
    const where = `S3 endpoint ${this.endpoint} (bucket ${this.bucket})`;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${where} did not answer within ${this.checkTimeoutMs} ms`)),
        this.checkTimeoutMs,
      );
    });
    try {
      await Promise.race([this.ensureBucket(), timeout]);
    } catch (e) {
      if (e instanceof Error && e.message.startsWith(where)) throw e;
      const code = errorCode(e);
      const message = e instanceof Error ? e.message : String(e);
      const isS3Reply = code !== undefined && !/^E[A-Z]+$/.test(code) && !/^Connection/.test(code);
      throw new Error(
        isS3Reply
          ? `${where} refused the request: ${code} ${message}`
          : `${where} is unreachable: ${message}`,
        { cause: e },
      );
    } finally {
      clearTimeout(timer);
    }
  }

  private async ensureBucket(): Promise<void> {
    if (await this.client.bucketExists(this.bucket)) return;
    try {
      await this.client.makeBucket(this.bucket, this.region);
    } catch (e) {
      // Another node created it between the two calls.
      if (errorCode(e) !== "BucketAlreadyOwnedByYou") throw e;
    }
  }

  /** Releases the client's HTTP agent when the store built it. */
  async close(): Promise<void> {
    this.onClose?.();
  }
}

/**
 * Pieces of a checked body, passed on as they come except the final byte, which waits until
 * the source has ended: S3 cannot complete the PUT before then, so a body that turns out too
 * long (the error comes with the next piece) never leaves an object. Records the source's own
 * error (not the request's).
 */
class HeldBackSource implements BodySource {
  failure: unknown;
  private seen = 0;
  private held: Uint8Array | undefined;
  private ended = false;

  constructor(
    private readonly reader: ReadableStreamDefaultReader<Uint8Array>,
    private readonly length: number,
  ) {}

  async next(): Promise<Uint8Array | null> {
    for (;;) {
      if (this.ended) {
        const last = this.held;
        this.held = undefined;
        return last ?? null;
      }
      let read: Awaited<ReturnType<ReadableStreamDefaultReader<Uint8Array>["read"]>>;
      try {
        read = await this.reader.read();
      } catch (e) {
        this.failure = e;
        throw e;
      }
      if (read.done) {
        this.ended = true;
        continue;
      }
      const value = read.value;
      if (value.byteLength === 0) continue;
      this.seen += value.byteLength;
      if (this.seen !== this.length) return value;
      this.held = value.subarray(value.byteLength - 1);
      if (value.byteLength > 1) return value.subarray(0, value.byteLength - 1);
    }
  }

  cancel(): Promise<void> {
    return this.release();
  }

  /**
   * Cancels the source unless it ended or failed by itself; idempotent. Without this, an HTTP
   * server never drains the rest of a client's request body, and the client's keep-alive
   * connection hangs.
   */
  async release(): Promise<void> {
    if (!this.ended && this.failure === undefined) await this.reader.cancel().catch(() => {});
  }
}

/** Reads `stream` to its end, discarding the bytes. */
async function drain(stream: ReadableStream<Uint8Array>, signal?: AbortSignal): Promise<void> {
  const reader = stream.getReader();
  try {
    for (;;) {
      signal?.throwIfAborted();
      if ((await reader.read()).done) return;
    }
  } catch (e) {
    await reader.cancel().catch(() => {});
    throw e;
  }
}

/** The text of an XML element's content with the five predefined entities decoded. */
function unescapeXml(s: string): string {
  return s.replace(/&(lt|gt|quot|apos|amp);/g, (_, e: string) =>
    e === "lt" ? "<" : e === "gt" ? ">" : e === "quot" ? '"' : e === "apos" ? "'" : "&",
  );
}

/**
 * The minio client the S3 store uses for `cfg`: path-style requests (as Ceph RGW and MinIO
 * want), no automatic retries (callers retry), keep-alive connections, and every request bounded
 * by the configured time-outs (`src/storage/s3-timeouts.ts`). `close` destroys its agent.
 * Exported for benchmarks that measure the same client without the store.
 */
export function createS3Client(cfg: S3Config): { client: Client; close(): void } {
  const url = new URL(cfg.endpoint);
  const useSSL = url.protocol === "https:";
  const agent = useSSL ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });
  const transport = timedTransport(useSSL ? https : http, timeoutsOf(cfg));
  const client = new Client({
    endPoint: url.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: url.port ? Number(url.port) : useSSL ? 443 : 80,
    useSSL,
    accessKey: cfg.accessKey,
    secretKey: cfg.secretKey,
    region: cfg.region,
    pathStyle: true,
    transport: transport as ConstructorParameters<typeof Client>[0]["transport"],
    transportAgent: agent,
    retryOptions: { disableRetry: true },
  });
  return { client, close: () => agent.destroy() };
}

/** The request bounds of `cfg`, defaults filled in (docs/operator-guide.md#s3-time-outs). */
function timeoutsOf(cfg: S3Config): S3Timeouts {
  return {
    connectMs: cfg.connectTimeoutMs ?? S3_DEFAULT_TIMEOUTS.connectMs,
    firstByteMs: cfg.firstByteTimeoutMs ?? S3_DEFAULT_TIMEOUTS.firstByteMs,
    idleMs: cfg.idleTimeoutMs ?? S3_DEFAULT_TIMEOUTS.idleMs,
  };
}

/** Builds the S3 store of `cfg` with a real minio client (`createS3Client`). */
export function createS3BlobStore(cfg: S3Config): S3BlobStore {
  const { client, close } = createS3Client(cfg);
  return new S3BlobStore({
    client,
    bucket: cfg.bucket,
    prefix: cfg.prefix,
    region: cfg.region,
    endpoint: cfg.endpoint,
    timeouts: timeoutsOf(cfg),
    onClose: close,
  });
}
