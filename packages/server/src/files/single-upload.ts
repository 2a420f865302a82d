/**
 * @module server/files/single-upload
 * Single-shot `POST /upload` (docs/protocol.md#sync-endpoints): `multipart/form-data` with a `manifest` part
 * (JSON) followed by a `ciphertext` part. Every part is parsed as bytes (real clients send the
 * ciphertext part without a filename, which form parsers such as `Request.formData()` turn into
 * text): a body that declares at most 1 MiB is read into memory and parsed there by
 * @remix-run/multipart-parser; a larger or undeclared one is parsed as it streams by
 * @fastify/busboy and its ciphertext streams to a spool file while its BLAKE3 is computed. The
 * same rules and errors hold on both paths. Only a verified
 * ciphertext whose revision precondition holds is moved into the blob store (a one-object blob,
 * src/storage/layout.ts) and committed like a finalized session, so the two are indistinguishable afterwards. The write
 * intent of the blob is recorded before its first byte lands in the store and claimed by the
 * commit (see `DeletionQueueRepository`); the spool directory is emptied at start-up.
 * A full disk or quota (ENOSPC/EDQUOT) while spooling or storing is 507 `storage_full`.
 */
import { createWriteStream } from "node:fs";
import { mkdir, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { Readable, Transform, type Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { blake3Hex, createBlake3 } from "@esync/protocol/blake3.ts";
import { AppError, fail, isOutOfSpace, storageFailure } from "@esync/protocol/errors.ts";
import { ciphertextSizeFor } from "@esync/protocol/framing.ts";
import { randomHex } from "@esync/protocol/ids.ts";
import { checkFraming, type Manifest, parseManifest } from "@esync/protocol/manifest.ts";
import Busboy from "@fastify/busboy";
import { MaxPartsExceededError, parseMultipart } from "@remix-run/multipart-parser";
import type { BlobStore } from "../storage/blob-store.ts";
import { blobTarget, chunkKey, deleteBlob, newOneObjectBlobId } from "../storage/layout.ts";
import type { Clock } from "../util/clock.ts";
import { jsonDepthOver, MAX_JSON_DEPTH } from "../util/json-depth.ts";
import type { Logger } from "../util/log.ts";
import type { DeletionQueueRepository } from "../workers/deletion-queue.repository.ts";
import type { FilesService, UploadResult } from "./files.service.ts";

/** Largest manifest part, bytes. */
const MAX_MANIFEST_BYTES = 1024 * 1024;
/** Largest header block of one part of a body held in memory, bytes (busboy's limit for streamed ones). */
const MAX_PART_HEADER_BYTES = 80 * 1024;

/** Settings of the single-shot path. */
export interface SingleUploadOptions {
  /** Directory for spool files (emptied at start-up). */
  spoolDir: string;
  /** Largest ciphertext part accepted, bytes. */
  maxBytes: number;
  /** Opens a spool file for writing (default `createWriteStream`; tests inject disk faults). */
  openSpoolFile?: (path: string) => Writable;
  /**
   * This process as the holder of its write intents (`LeaseHolders.self`), so that a crash's
   * intents fall due as soon as a sweeper proves it dead; null or absent when unknown.
   */
  intentHolder?: string | null;
  /** Bodies declaring at most this many bytes are read into memory instead of spooled (default 1 MiB). */
  memoryBodyBytes?: number;
  /** Most bytes of in-memory bodies held at once; a body past it is spooled (default 64 MiB). */
  memoryBudgetBytes?: number;
}

/** Default `SingleUploadOptions.memoryBodyBytes`. */
const MEMORY_BODY_BYTES = 1024 * 1024;
/** Default `SingleUploadOptions.memoryBudgetBytes`. */
const MEMORY_BUDGET_BYTES = 64 * 1024 * 1024;

/** A received ciphertext part: its size, BLAKE3 hex, and its bytes when held in memory. */
interface ReceivedCiphertext {
  size: number;
  hash: string;
  bytes: Uint8Array | null;
}

/**
 * Bytes a multipart body may carry beyond its parts' payloads (boundaries, part headers,
 * preamble): with the manifest cap, the most `/upload` reads before answering 413.
 */
const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

/** Handles single-shot uploads. */
export class SingleUploadService {
  /** Bytes of the in-memory bodies being handled now. */
  private memoryInUse = 0;

  constructor(
    private readonly files: FilesService,
    private readonly deletions: DeletionQueueRepository,
    private readonly blobs: BlobStore,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly opts: SingleUploadOptions,
  ) {}

  /** Empties the spool directory (start-up: leftovers of a crash). */
  async resetSpool(): Promise<void> {
    await rm(this.opts.spoolDir, { recursive: true, force: true });
    await mkdir(this.opts.spoolDir, { recursive: true });
  }

  /**
   * Accepts one upload for `caller`: `body` is a `multipart/form-data` stream delimited by
   * `boundary`, with parts `manifest` (JSON) then `ciphertext`; `declaredBytes` is its
   * `Content-Length` (null when not declared), which decides whether it is held in memory.
   * @throws AppError `invalid_manifest` (400: parts missing or out of order, bad manifest, hash
   *   mismatch), `forbidden` (403), `payload_too_large` (413), `conflict` (409, Conflict
   *   envelope; checked before the bytes are stored and again at commit), `stale_sequence` (400),
   *   `storage_full` (507) on ENOSPC/EDQUOT, `storage_unavailable` (503).
   */
  async upload(
    caller: string,
    body: ReadableStream<Uint8Array>,
    boundary: string,
    declaredBytes: number | null,
  ): Promise<UploadResult> {
    const held =
      declaredBytes !== null &&
      declaredBytes <= (this.opts.memoryBodyBytes ?? MEMORY_BODY_BYTES) &&
      this.memoryInUse + declaredBytes <= (this.opts.memoryBudgetBytes ?? MEMORY_BUDGET_BYTES)
        ? declaredBytes
        : null;
    if (held !== null) this.memoryInUse += held;
    const spool = held === null ? join(this.opts.spoolDir, `${randomHex(12)}.part`) : null;
    try {
      const { manifest, size, hash, bytes } =
        spool === null
          ? this.receiveHeld(await readAll(body), boundary)
          : await this.receive(caller, body, boundary, spool, declaredBytes);
      checkFraming(manifest, size);
      if (hash !== manifest.ciphertextHash) {
        this.log.warn("upload.hash_mismatch", {
          owner: caller,
          expected: manifest.ciphertextHash,
          actual: hash,
        });
        throw fail(
          "invalid_manifest",
          `Ciphertext BLAKE3 ${hash} differs from manifest.ciphertext_hash ${manifest.ciphertextHash}`,
        );
      }
      await this.files.admitWrite(caller, manifest);
      // Reject revision conflicts before moving any bytes into the blob store.
      await this.files.precheck(manifest);
      // A one-object blob (src/storage/layout.ts): its object lands without a directory of its own.
      const blobId = newOneObjectBlobId();
      const key = chunkKey(blobId, 0, "");
      const intent = await this.deletions.reserve(
        blobTarget(blobId),
        this.clock.now(),
        this.opts.intentHolder ?? null,
      );
      const committing = this.files.expectCommit();
      try {
        const stored = bytes ? new Blob([bytes as Uint8Array<ArrayBuffer>]) : Bun.file(spool as string);
        await this.blobs.put(key, stored.stream() as ReadableStream<Uint8Array>, size, {
          durable: true,
          fresh: true,
        });
      } catch (e) {
        committing();
        this.log.error("upload.store_failed", { owner: caller, error: e as Error });
        await this.discard(intent, blobId);
        throw storageFailure(e, "The blob store failed to store the ciphertext; retry");
      }
      committing();
      try {
        return await this.files.commit(
          manifest,
          {
            blobId,
            chunkSize: size,
            chunkCount: 1,
            size,
            gens: [""],
            ciphertextHash: hash,
            chunkHashes: null,
          },
          undefined,
          intent,
          caller,
        );
      } catch (e) {
        await this.discard(intent, blobId);
        throw e;
      }
    } finally {
      if (held !== null) this.memoryInUse -= held;
      if (spool !== null) await rm(spool, { force: true });
    }
  }

  /**
   * Gives up the write of blob `blobId`: its intent becomes due now, then the objects are deleted
   * at once when the store allows it (else the sweeper does it).
   */
  private async discard(intent: number, blobId: string): Promise<void> {
    await this.deletions.release(intent, blobTarget(blobId), this.clock.now());
    try {
      await deleteBlob(this.blobs, blobId);
      await this.deletions.done(intent);
    } catch (e) {
      this.log.warn("upload.discard_failed", { blob: blobId, error: e as Error });
    }
  }

  /**
   * Most bytes of a whole `/upload` body: the ciphertext cap, the manifest cap and the multipart
   * framing. The controller reads at most this many (`guardedBody`) and answers `tooLarge()` past it.
   */
  maxBodyBytes(): number {
    return this.opts.maxBytes + MAX_MANIFEST_BYTES + MULTIPART_OVERHEAD_BYTES;
  }

  /** The error of an `/upload` body longer than `maxBodyBytes()`: 413 `payload_too_large`. */
  tooLarge(): AppError {
    return fail("payload_too_large", `ciphertext over ${this.opts.maxBytes} bytes; use an upload session`);
  }

  /**
   * Parses a multipart body held in memory with `@remix-run/multipart-parser` (synchronously,
   * no streams), under the rules and errors of `receive`: manifest first (validated), then the ciphertext, hashed and kept in memory.
   */
  private receiveHeld(body: Uint8Array, boundary: string): { manifest: Manifest } & ReceivedCiphertext {
    let manifest: Manifest | null = null;
    let ciphertext: Uint8Array | null = null;
    try {
      const parts = parseMultipart(withoutPreamble(body, boundary), {
        boundary,
        maxHeaderSize: MAX_PART_HEADER_BYTES,
        maxFileSize: body.byteLength,
        maxTotalSize: body.byteLength,
        maxParts: 2,
      });
      for (const part of parts) {
        const name = part.name;
        if (name === "manifest") {
          if (manifest || ciphertext)
            throw fail("invalid_manifest", "Only one 'manifest' part, before 'ciphertext', is allowed");
          if (part.size > MAX_MANIFEST_BYTES) throw fail("invalid_manifest", "manifest part over 1 MiB");
          manifest = manifestOf(part.content);
        } else if (name === "ciphertext") {
          if (!manifest)
            throw fail("invalid_manifest", "The 'manifest' part must come before the 'ciphertext' part");
          if (ciphertext) throw fail("invalid_manifest", "Only one 'ciphertext' part is allowed");
          if (part.size > this.opts.maxBytes) throw this.tooLarge();
          ciphertext = part.content.length === 1 ? (part.content[0] as Uint8Array) : part.bytes;
        } else {
          throw fail("invalid_manifest", `Unexpected part '${name}'; expected 'manifest' then 'ciphertext'`);
        }
      }
    } catch (e) {
      if (e instanceof AppError) throw e;
      if (e instanceof MaxPartsExceededError)
        throw fail("invalid_manifest", "Too many parts; expected 'manifest' then 'ciphertext'");
      throw fail("invalid_manifest", `Malformed multipart body: ${(e as Error)?.message ?? e}`);
    }
    if (!manifest) throw fail("invalid_manifest", "Missing 'manifest' part");
    if (!ciphertext) throw fail("invalid_manifest", "Missing 'ciphertext' part");
    if (ciphertext.byteLength === 0) throw fail("invalid_manifest", "The ciphertext part is empty");
    return { manifest, size: ciphertext.byteLength, hash: blake3Hex(ciphertext), bytes: ciphertext };
  }

  /**
   * Parses a streamed multipart body with busboy: manifest first (validated),
   * then the ciphertext, hashed and spooled to `spool`. The ciphertext part is read only once the
   * manifest is known and its revision precondition holds (`FilesService.precheck`: a 409 comes
   * before the body), and no further than the size its `size_bytes` encrypts to
   * (docs/framing.md): a body whose `declaredBytes` cannot hold that much is refused before it.
   */
  private receive(
    caller: string,
    body: ReadableStream<Uint8Array>,
    boundary: string,
    spool: string,
    declaredBytes: number | null,
  ): Promise<{ manifest: Manifest } & ReceivedCiphertext> {
    return new Promise((resolve, reject) => {
      let manifest: Promise<Manifest> | null = null;
      let ciphertext: Promise<ReceivedCiphertext> | null = null;
      /** The spool write, once started (an abort waits for its file to be closed). */
      let spooling: Promise<ReceivedCiphertext> | null = null;
      let ciphertextPart: Readable | null = null;
      let failed = false;
      const source = Readable.fromWeb(body as never);
      const bb = Busboy({
        headers: { "content-type": `multipart/form-data; boundary="${boundary}"` },
        limits: {
          parts: 2,
          files: 2,
          fileSize: Math.max(this.opts.maxBytes, MAX_MANIFEST_BYTES) + 1,
          headerPairs: 20,
        },
        isPartAFile: () => true,
      });
      const abort = (e: unknown) => {
        if (failed) return;
        failed = true;
        source.unpipe(bb as unknown as Writable);
        source.destroy();
        const err =
          e instanceof AppError
            ? e
            : isOutOfSpace(e)
              ? storageFailure(e, "The upload spool failed; retry")
              : fail("invalid_manifest", `Malformed multipart body: ${(e as Error)?.message ?? e}`);
        // Stop a spool write in progress and reject only once its file is closed, so that the
        // caller's removal of the spool file cannot run before the file is created.
        ciphertextPart?.destroy();
        const pending = spooling;
        if (pending)
          pending.then(
            () => reject(err),
            () => reject(err),
          );
        else reject(err);
      };
      bb.on("file", (name, stream) => {
        if (failed) return void stream.resume();
        if (name === "manifest") {
          if (manifest || ciphertext)
            return abort(
              fail("invalid_manifest", "Only one 'manifest' part, before 'ciphertext', is allowed"),
            );
          manifest = this.readManifest(stream);
          manifest.catch(abort);
        } else if (name === "ciphertext") {
          if (!manifest)
            return abort(
              fail("invalid_manifest", "The 'manifest' part must come before the 'ciphertext' part"),
            );
          if (ciphertext) return abort(fail("invalid_manifest", "Only one 'ciphertext' part is allowed"));
          ciphertextPart = stream;
          ciphertext = manifest.then(async (m) => {
            // Who may write, then the revision precondition: a refusal or a conflict is answered
            // before any ciphertext byte is read (both are checked again before the commit).
            await this.files.admitWrite(caller, m);
            await this.files.precheck(m);
            if (failed) throw fail("invalid_manifest", "The multipart body was aborted");
            const expected = ciphertextSizeFor(m.sizeBytes);
            // A ciphertext over the cap is left to reach it: that is 413, whatever it declares.
            if (declaredBytes !== null && declaredBytes < expected && expected <= this.opts.maxBytes)
              throw fail(
                "invalid_manifest",
                `Content-Length ${declaredBytes} cannot hold the ${expected} bytes of ciphertext that manifest.size_bytes ${m.sizeBytes} encrypts to`,
              );
            spooling = this.spool(stream, spool, expected);
            return spooling;
          });
          ciphertext.catch(abort);
        } else {
          stream.resume();
          abort(fail("invalid_manifest", `Unexpected part '${name}'; expected 'manifest' then 'ciphertext'`));
        }
      });
      bb.on("partsLimit", () =>
        abort(fail("invalid_manifest", "Too many parts; expected 'manifest' then 'ciphertext'")),
      );
      bb.on("error", abort);
      bb.on("finish", async () => {
        if (failed) return;
        if (!manifest) return abort(fail("invalid_manifest", "Missing 'manifest' part"));
        if (!ciphertext) return abort(fail("invalid_manifest", "Missing 'ciphertext' part"));
        try {
          const m = await manifest;
          const r = await ciphertext;
          if (r.size === 0) return abort(fail("invalid_manifest", "The ciphertext part is empty"));
          resolve({ manifest: m, ...r });
        } catch (e) {
          abort(e);
        }
      });
      source.on("error", abort);
      source.pipe(bb as unknown as Writable);
    });
  }

  /** Reads the manifest part (at most 1 MiB) and validates it. */
  private readManifest(stream: Readable): Promise<Manifest> {
    return new Promise((resolve, reject) => {
      const parts: Buffer[] = [];
      let n = 0;
      stream.on("data", (d: Buffer) => {
        n += d.length;
        if (n > MAX_MANIFEST_BYTES) {
          stream.resume();
          reject(fail("invalid_manifest", "manifest part over 1 MiB"));
        } else parts.push(d);
      });
      stream.on("error", reject);
      stream.on("end", () => {
        try {
          resolve(manifestOf(parts));
        } catch (e) {
          reject(e);
        }
      });
    });
  }

  /**
   * Streams a part to `path`, hashing and counting it; over `maxBytes` is 413, over `expected`
   * (the size the manifest's `size_bytes` encrypts to) 400 `invalid_manifest`. A failure of the
   * spool file itself (full disk, I/O error) is the server's: 507 `storage_full` or 503.
   */
  private async spool(stream: Readable, path: string, expected: number): Promise<ReceivedCiphertext> {
    try {
      await mkdir(this.opts.spoolDir, { recursive: true });
    } catch (e) {
      throw storageFailure(e, "The upload spool directory is unavailable; retry");
    }
    // Aborted while the directory was made: create no file (a pipeline on it would not settle).
    if (stream.destroyed) throw fail("invalid_manifest", "The multipart body was aborted");
    const hasher = createBlake3();
    let size = 0;
    const max = this.opts.maxBytes;
    const meter = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        size += chunk.length;
        if (size > max)
          return cb(fail("payload_too_large", `ciphertext over ${max} bytes; use an upload session`));
        if (size > expected)
          return cb(
            fail(
              "invalid_manifest",
              `the ciphertext part is over the ${expected} bytes that manifest.size_bytes encrypts to`,
            ),
          );
        hasher.update(chunk);
        cb(null, chunk);
      },
    });
    const out = this.opts.openSpoolFile?.(path) ?? createWriteStream(path, { highWaterMark: 1 << 20 });
    let spoolError: unknown;
    out.once("error", (e) => {
      spoolError = e;
    });
    try {
      await pipeline(stream, meter, out);
    } catch (e) {
      // pipeline rejects before the destroyed file stream has closed its descriptor.
      if (!out.closed) await new Promise((r) => out.once("close", r));
      if (spoolError !== undefined && !(e instanceof AppError)) {
        this.log.error("upload.spool_failed", { error: spoolError as Error });
        throw storageFailure(spoolError, "The upload spool failed; retry");
      }
      throw e;
    }
    const st = await stat(path);
    if (st.size !== size) throw fail("invalid_manifest", "ciphertext part truncated");
    return { size, hash: hasher.digestHex(), bytes: null };
  }
}

/**
 * The manifest in the bytes of its part (`pieces`), validated (who may write it is decided
 * once the body is in: `FilesService.admitWrite`).
 * @throws AppError `invalid_manifest` (not JSON, nested deeper than `MAX_JSON_DEPTH`, or as
 *   `parseManifest`).
 */
function manifestOf(pieces: Uint8Array[]): Manifest {
  const bytes = Buffer.concat(pieces);
  if (jsonDepthOver(bytes))
    throw fail(
      "invalid_manifest",
      `manifest part nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`,
    );
  let raw: unknown;
  try {
    raw = JSON.parse(bytes.toString("utf8"));
  } catch {
    throw fail("invalid_manifest", "manifest part is not valid JSON");
  }
  return parseManifest(raw);
}

/** Every byte of `body` (a guarded request body: its limits and timeouts fail the read). */
async function readAll(body: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const pieces: Uint8Array[] = [];
  let size = 0;
  for await (const piece of body) {
    pieces.push(piece);
    size += piece.byteLength;
  }
  return pieces.length === 1 ? (pieces[0] as Uint8Array) : Buffer.concat(pieces, size);
}

/**
 * `body` from its first boundary delimiter on: RFC 2046 §5.1.1 allows a preamble (text, or a bare
 * CRLF) before it, which the streaming parser (busboy) skips and the in-memory one rejects. A body
 * without a delimiter is returned whole, for the parser to report.
 */
export function withoutPreamble(body: Uint8Array, boundary: string): Uint8Array {
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const delimiter = `--${boundary}`;
  if (bytes.subarray(0, delimiter.length).toString("latin1") === delimiter) return body;
  const at = bytes.indexOf(`\r\n${delimiter}`, 0, "latin1");
  return at < 0 ? body : body.subarray(at + 2);
}
