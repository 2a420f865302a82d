/**
 * @module server/sessions/session.engine
 * The resumable upload session engine (docs/protocol.md#upload-sessions, #open-rules).
 *
 * States: `receiving` → (`finalizing`, internal) → `finalized`; deleted or expired sessions are
 * gone (404). Chunk i is streamed straight from the request into the blob store as object
 * `<blob>/<i>.<gen>` with a fresh `gen` per upload; only after the bytes are stored is the chunk
 * recorded, and only if the session is still `receiving`. Finalize moves the session to
 * `finalizing` atomically under a lease (`finalizing_until`, renewed while it hashes, and its
 * holder `finalizing_holder`), so exactly one concurrent finalize on any node proceeds and no
 * chunk can be recorded after the snapshot; it hashes the recorded chunk objects in order, then
 * commits the file and the `finalized` state in one transaction, provided it still holds its
 * lease. Any failure returns it to `receiving` with its chunks intact; so does any node's sweeper
 * once the lease of a finalize whose node died has run out, and at once a retried finalize, an
 * abort or a sweep that finds the holder provably dead (a process of this machine that is gone:
 * a server killed mid-finalize and restarted; see lease-holder.ts). A live holder's finalize is
 * never taken over.
 *
 * State kept in this process is an optimisation only: the running ingest hash (a finalize on a
 * node that saw none or only some of the chunks reads the rest back: the full BLAKE3 pass) and
 * the in-flight chunk limits (per node).
 *
 * On a store with multipart uploads (S3), a session of chunks of at least the smallest part
 * streams chunk i as part i + 1 of one multipart upload of the file's object instead, opened
 * (its write intent first) when the session is created and completed at finalize, so nothing is
 * copied (docs/design.md#multipart-sessions-on-s3).
 *
 * Blob lifecycle: a session row covers every object under its blob prefix (deleted when the
 * session is deleted or expires unfinalized, or, once a multi-chunk session's chunks were copied
 * into the file's one object, queued for deletion by the finalize commit). Each chunk PUT also records a write intent for its
 * object before the first byte lands, claimed by the transaction that records the chunk, so a
 * chunk that lands after its session vanished, or a crash mid-PUT, leaves an object the sweeper
 * reclaims. A multipart session's row covers its upload and the object it completes into instead
 * (deleting or expiring the session queues the upload's abort and the object's deletion).
 */

import { AppError, fail, isOutOfSpace, storageFailure } from "@esync/protocol/errors.ts";
import { randomHex, randomToken } from "@esync/protocol/ids.ts";
import { checkFraming, type Manifest, parseManifest } from "@esync/protocol/manifest.ts";
import type { SessionStatus } from "@esync/protocol/types.ts";
import type { MetadataStore, Repositories } from "../db/store.ts";
import type { FilesService, UploadResult } from "../files/files.service.ts";
import {
  BlobLengthError,
  BlobNotFoundError,
  type BlobStore,
  isMultipart,
  isPersistable,
  type Multipart,
  MultipartGoneError,
} from "../storage/blob-store.ts";
import {
  assembleBlob,
  type BlobLayout,
  blobObjects,
  blobPrefix,
  checkChunks,
  chunkKey,
  chunkLength,
  expectedChunkCount,
  hashBlob,
  multipartBlobId,
  multipartTarget,
  newOneObjectBlobId,
} from "../storage/layout.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { ChunkSlots, type SlotHolder, type SlotPolicy } from "./inflight.ts";
import { IngestHashes, type RecordedChunks } from "./ingest-hash.ts";
import type { LeaseHolders } from "./lease-holder.ts";
import type { ChunkRow, SessionRow, SessionsRepository } from "./sessions.repository.ts";

/** Largest chunk, bytes (docs/protocol.md#limits). */
export const MAX_CHUNK_BYTES = 16 * 1024 * 1024;

/** Engine settings (from `Config`). */
export interface SessionEngineOptions {
  /** Idle lifetime, seconds. */
  ttlSeconds: number;
  /** Told how every finalize that reached hashing went, and its duration in seconds (metrics). */
  onFinalize?: (path: FinalizePath, outcome: FinalizeOutcome, seconds: number) => void;
  maxSessionsPerUser: number;
  maxChunkCount: number;
  /**
   * Bytes of out-of-order chunks the ingest hasher may hold in memory instead of reading them
   * back from the store (see ingest-hash.ts). 0 on disk, where the read-back comes from the page
   * cache and is cheaper than holding copies; positive on S3, where it is a second transfer.
   */
  lookaheadBytes: number;
  /** Admission of chunk PUTs: caps, fair shares and eviction of slow holders (see inflight.ts). */
  slots: SlotPolicy;
  /**
   * Seconds a finalize holds its session (`finalizing_until`) before any node's sweeper may
   * return it to `receiving`; the finalize renews the lease every third of it while it runs.
   */
  finalizeLeaseSeconds: number;
  /** This process as a lease holder, and which holders are provably dead (see lease-holder.ts). */
  leaseHolders: LeaseHolders;
}

/**
 * Opens a chunk body that must be exactly `length` bytes: the stream, a probe telling whether
 * (and why) reading it failed on the client's side (an `AppError` for a limit or timeout), and
 * its progress and a way to fail it (`holder`) so that a slow upload can lose its slot.
 */
export type OpenChunkBody = (length: number) => {
  stream: ReadableStream<Uint8Array>;
  failure(): { error: unknown } | undefined;
  holder?: SlotHolder;
};

/** Body of `POST /upload/session` (docs/protocol.md#upload-sessions), still unvalidated. */
export interface CreateSessionInput {
  manifest: unknown;
  chunk_count: unknown;
  chunk_size: unknown;
  ciphertext_size: unknown;
}

export type { SessionStatus } from "@esync/protocol/types.ts";

const u = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;

/**
 * How a finalize got the BLAKE3 of the assembled ciphertext: entirely from the hash kept while the
 * chunks arrived (`running_hash`), partly (`partial_read`: the rest read back from the store), or
 * by reading every chunk back (`full_pass`).
 */
export type FinalizePath = "running_hash" | "partial_read" | "full_pass";

/** How a finalize had the hash of `chunkCount` chunks when the first `prehashed` were hashed on arrival. */
function finalizePath(prehashed: number, chunkCount: number): FinalizePath {
  return prehashed === 0 ? "full_pass" : prehashed >= chunkCount ? "running_hash" : "partial_read";
}
/** How a finalize that reached hashing ended. */
export type FinalizeOutcome = "ok" | "hash_mismatch" | "storage_error";

/** The upload session engine; HTTP-free. */
export class SessionEngine {
  /** Running in-order hashes of this process's sessions (an optimisation; see ingest-hash.ts). */
  private readonly ingest: IngestHashes;

  constructor(
    private readonly store: MetadataStore,
    private readonly files: FilesService,
    private readonly blobs: BlobStore,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly opts: SessionEngineOptions,
  ) {
    this.ingest = new IngestHashes(4096, opts.lookaheadBytes);
    this.inflight = new ChunkSlots(opts.slots);
  }

  /** Chunk PUTs whose bodies are streaming now. */
  private readonly inflight: ChunkSlots;

  /**
   * Opens a session for `caller` (docs/protocol.md#upload-sessions).
   * @returns `{session_id, expires_at}` (Unix seconds).
   * @throws AppError `invalid_manifest` (400: bad manifest, signature or chunk layout),
   *   `forbidden` (403: manifest owner is not `caller`), `drive_quota_exceeded` (402: the file's
   *   growth over the row it replaces exceeds the allowance), `session_limit` (429 with Retry-After).
   */
  async create(
    caller: string,
    input: CreateSessionInput,
  ): Promise<{ session_id: string; expires_at: number }> {
    const { chunk_count: count, chunk_size: size, ciphertext_size: total } = input;
    if (input.manifest === undefined || input.manifest === null)
      throw fail("invalid_manifest", "manifest is required");
    const manifest = parseManifest(input.manifest);
    if (!u(count) || count < 1 || count > 0xffffffff)
      throw fail("invalid_manifest", "chunk_count must be an integer from 1 to 2^32-1");
    if (!u(size) || size < 1 || size > MAX_CHUNK_BYTES) {
      throw fail("invalid_manifest", `chunk_size must be an integer from 1 to ${MAX_CHUNK_BYTES} (16 MiB)`);
    }
    if (!u(total) || total < 1) throw fail("invalid_manifest", "ciphertext_size must be a positive integer");
    const expected = expectedChunkCount(total, size);
    if (count !== expected) {
      throw fail(
        "invalid_manifest",
        `chunk_count ${count} is inconsistent with ciphertext_size ${total} and chunk_size ${size}: expected ${expected}`,
      );
    }
    if (count > this.opts.maxChunkCount)
      throw fail("invalid_manifest", `chunk_count over the limit of ${this.opts.maxChunkCount}`);
    checkFraming(manifest, total, "ciphertext_size");
    await this.files.admitWrite(caller, manifest);

    const blobId = randomHex(16);
    const multipart = this.multipartFor(size, count);
    const upload = multipart ? await this.openUpload(multipart, blobId) : null;
    try {
      return await this.insertSession(caller, input, manifest, blobId, upload);
    } catch (e) {
      // Refused (session limit, quota) or failed: the upload opened for it is aborted.
      if (upload)
        await this.store.repos.deletionQueue
          .release(upload.intent, multipartTarget(sessionObjectKey(blobId)), this.clock.now())
          .catch(() => {});
      throw e;
    }
  }

  /**
   * The store as `Multipart` when a session of `count` chunks of `chunkSize` bytes uploads its
   * chunks as the parts of one multipart upload: the store has the ability, every chunk but the
   * last is at least its smallest part, and there are several chunks and at most its most parts
   * (docs/design.md#storage-layout). Else null: each chunk is an object of its own.
   */
  private multipartFor(chunkSize: number, count: number): (BlobStore & Multipart) | null {
    const b = this.blobs;
    if (!isMultipart(b)) return null;
    return count > 1 && count <= b.maxParts && chunkSize >= b.minPartBytes ? b : null;
  }

  /**
   * Opens the multipart upload of a new session's object (the one-object blob
   * `multipartBlobId(blobId)`), its write intent recorded first: a `multipartTarget` row that
   * aborts the upload unless the transaction inserting the session claims it.
   * @throws AppError `storage_unavailable` (503) when the store fails.
   */
  private async openUpload(
    multipart: Multipart,
    blobId: string,
  ): Promise<{ uploadId: string; intent: number }> {
    const target = multipartTarget(sessionObjectKey(blobId));
    const deletions = this.store.repos.deletionQueue;
    const intent = await deletions.reserve(target, this.clock.now(), this.opts.leaseHolders.self);
    try {
      return { uploadId: await multipart.createMultipart(sessionObjectKey(blobId)), intent };
    } catch (e) {
      await deletions.release(intent, target, this.clock.now());
      this.log.warn("session.upload_open_failed", { error: e as Error });
      throw storageFailure(e, "The blob store failed to open the upload; retry");
    }
  }

  /** The transaction of `create`: limits, quota, and the session row (claiming `upload`'s intent). */
  private insertSession(
    caller: string,
    input: CreateSessionInput,
    manifest: Manifest,
    blobId: string,
    upload: { uploadId: string; intent: number } | null,
  ): Promise<{ session_id: string; expires_at: number }> {
    const {
      chunk_count: count,
      chunk_size: size,
      ciphertext_size: total,
    } = input as {
      chunk_count: number;
      chunk_size: number;
      ciphertext_size: number;
    };
    return this.store.transaction(async (tx) => {
      await tx.sessions.lockOwner(caller);
      await this.files.requireQuota(manifest, tx);
      const now = this.clock.now();
      const live = await tx.sessions.liveCount(caller, now);
      if (live.n >= this.opts.maxSessionsPerUser) {
        const retryAfter = Math.max(1, (live.earliest ?? now + 60) - now);
        throw fail("session_limit", `At most ${this.opts.maxSessionsPerUser} live upload sessions per user`, {
          retryAfter,
        });
      }
      const row: SessionRow = {
        sessionId: randomToken(18),
        owner: caller,
        folderHash: manifest.folderHash,
        pathHash: Buffer.from(manifest.pathHash),
        manifest: JSON.stringify(input.manifest),
        ciphertextHash: manifest.ciphertextHash,
        ciphertextSize: total,
        chunkSize: size,
        chunkCount: count,
        blobId,
        uploadId: upload?.uploadId ?? null,
        state: "receiving",
        createdAt: now,
        expiresAt: now + this.opts.ttlSeconds,
        finalizingUntil: null,
        finalizingHolder: null,
        result: null,
      };
      await tx.sessions.insert(row);
      if (upload && !(await tx.deletionQueue.claim(upload.intent, now)))
        throw fail("storage_unavailable", "Opening the upload took too long; retry", { retryAfter: 1 });
      this.log.info("session.created", {
        session: row.sessionId,
        owner: caller,
        chunks: count,
        bytes: total,
        multipart: upload !== null,
      });
      return { session_id: row.sessionId, expires_at: row.expiresAt };
    });
  }

  /**
   * Admits a member's session again (its manifest names another owner): a removal or a lowered
   * role since the session opened holds from the next chunk (docs/drives.md).
   * @throws AppError `forbidden` (403), `drive_frozen` (402).
   */
  private async admitMember(caller: string, s: SessionRow): Promise<void> {
    if ((JSON.parse(s.manifest) as { ss58_address?: unknown }).ss58_address === caller) return;
    await this.files.admitWrite(caller, parseManifest(JSON.parse(s.manifest)));
  }

  /**
   * Loads a live session owned by `caller` (through `tx`, locked, when given).
   * @throws 404 `not_found`, 403 `forbidden`.
   */
  private async owned(caller: string, sessionId: string, tx?: Repositories): Promise<SessionRow> {
    const s = tx ? await tx.sessions.getForUpdate(sessionId) : await this.store.repos.sessions.get(sessionId);
    if (!s || s.expiresAt <= this.clock.now())
      throw fail("not_found", "No such upload session (never existed, expired or deleted)");
    if (s.owner !== caller) throw fail("forbidden", "The token does not own this upload session");
    return s;
  }

  /**
   * Stores chunk `index` from `body` (docs/protocol.md#upload-sessions, #open-rules). The body must be exactly the
   * chunk's length (`chunk_size`, or the remainder for the last index).
   * @param body the chunk bytes, or a function that opens them given the exact length expected
   *   (the controller's guarded request body, which stops reading past that length and reports
   *   its own failures).
   * @param declaredLength the request's Content-Length, or null when not given.
   * @param address the client's network address, for the per-address share of chunk slots.
   * @throws AppError 404, 403; `invalid_manifest` (400: index out of range, wrong length, over
   *   16 MiB; nothing kept); `conflict` (409: session finalized or being finalized); 404 when
   *   the session is deleted or expires while the body streams; `too_many_requests` (429: the
   *   user's or address's share of chunk slots, or the server's cap with no slow holder to
   *   evict: inflight.ts); `request_timeout` (408: the body stalled, or its slot was taken by
   *   another client while it was slow);
   *   `storage_full` (507) on ENOSPC/EDQUOT; `storage_unavailable` (503) when the blob store fails
   *   otherwise.
   */
  async putChunk(
    caller: string,
    sessionId: string,
    index: number,
    body: ReadableStream<Uint8Array> | null | OpenChunkBody,
    declaredLength: number | null,
    address = "",
  ): Promise<{ chunk_index: number }> {
    const s = await this.owned(caller, sessionId);
    await this.admitMember(caller, s);
    if (index >= s.chunkCount) {
      throw fail(
        "invalid_manifest",
        `chunk_index ${index} is out of range: the session has ${s.chunkCount} chunks (0..${s.chunkCount - 1})`,
      );
    }
    if (declaredLength !== null && declaredLength > MAX_CHUNK_BYTES) {
      throw fail("invalid_manifest", `chunk body of ${declaredLength} bytes is larger than 16 MiB`);
    }
    if (s.state !== "receiving")
      throw fail("conflict", `The session is ${s.state}; chunks can no longer be uploaded`);
    const length = chunkLength(s.ciphertextSize, s.chunkSize, index);
    if (declaredLength !== null && declaredLength !== length) {
      throw fail(
        "invalid_manifest",
        `chunk ${index} must be exactly ${length} bytes, got Content-Length ${declaredLength}`,
      );
    }
    const slot = this.inflight.acquire(caller, address, length);
    try {
      if (typeof body === "function") {
        const opened = body(length);
        if (opened.holder) slot.attach(opened.holder);
        return await this.storeChunk(s, index, length, opened.stream, opened.failure);
      }
      const client: { error?: unknown } = {};
      const watched = body ? watchErrors(body, client) : null;
      return await this.storeChunk(s, index, length, watched, () =>
        "error" in client ? { error: client.error } : undefined,
      );
    } finally {
      slot.release();
    }
  }

  /**
   * Streams chunk `index` (exactly `length` bytes) of session `s` into the store and records it.
   * `clientFailure` says whether (and why) reading `body` itself failed.
   */
  private async storeChunk(
    s: SessionRow,
    index: number,
    length: number,
    body: ReadableStream<Uint8Array> | null,
    clientFailure: () => { error: unknown } | undefined,
  ): Promise<{ chunk_index: number }> {
    const sessionId = s.sessionId;
    const gen = randomHex(6);
    // A multipart session's chunk is part `index + 1` of its upload, which the session row
    // covers (its removal aborts the upload), so it needs no write intent of its own; a re-sent
    // chunk replaces its part. Else the chunk is an object of a new generation.
    const uploadId = s.uploadId ?? null;
    const multipart = uploadId !== null && isMultipart(this.blobs) ? this.blobs : null;
    if (uploadId !== null && !multipart) throw new Error("a multipart session on a store without multipart");
    const key = multipart ? sessionObjectKey(s.blobId) : chunkKey(s.blobId, index, gen);
    const deletions = this.store.repos.deletionQueue;
    const intent = multipart
      ? null
      : await deletions.reserve(key, this.clock.now(), this.opts.leaseHolders.self);
    const tap = this.ingest.tap(sessionId, index, length);
    let etag: string | null = null;
    try {
      const source = body ?? new ReadableStream<Uint8Array>({ start: (c) => c.close() });
      if (multipart && uploadId !== null)
        etag = await multipart.putPart(key, uploadId, index + 1, source, length, { onData: tap?.update });
      else await this.blobs.put(key, source, length, { onData: tap?.update });
    } catch (e) {
      tap?.fail();
      // A failed `put` leaves no object (the BlobStore contract), so the intent is simply dropped.
      if (intent !== null) await deletions.done(intent);
      const client = clientFailure();
      // A limit or timeout of the guarded body (400/408) is already the answer.
      if (client?.error instanceof AppError) throw client.error;
      if (e instanceof BlobLengthError) {
        throw fail(
          "invalid_manifest",
          `chunk ${index} must be exactly ${length} bytes, received ${e.received}${e.received > length ? " or more" : ""}`,
        );
      }
      // Only a failure of the request body itself is the client's; the same words (ECONNRESET,
      // aborted) from the store's own connection are a store failure.
      if (client)
        throw fail(
          "invalid_manifest",
          `chunk ${index} body ended early: ${String((client.error as Error)?.message)}`,
        );
      // The session was deleted or expired while the body streamed (its objects were being
      // deleted under the write): that is the session's 404, not a store failure.
      if (!(await this.isLive(sessionId)))
        throw fail("not_found", "The upload session expired or was deleted during the upload");
      if (e instanceof MultipartGoneError && uploadId !== null) throw await this.uploadGone(s, uploadId);
      this.log.warn("chunk.store_failed", { session: sessionId, index, error: e as Error });
      throw storageFailure(e, "The blob store failed to store the chunk; retry");
    }
    const outcome = await this.store.transaction(async (tx) => {
      const now = this.clock.now();
      // Locked: a finalize's receiving → finalizing waits for this transaction, so no chunk is
      // recorded after a finalize took its snapshot.
      const cur = await tx.sessions.getForUpdate(sessionId);
      if (!cur || cur.expiresAt <= now || cur.state !== "receiving") {
        if (intent !== null) await tx.deletionQueue.release(intent, key, now);
        return cur && cur.expiresAt > now ? cur.state : "gone";
      }
      // A finalize consumed the upload the part went to (and failed) while it streamed.
      if ((cur.uploadId ?? null) !== uploadId) return "upload_changed";
      if (intent !== null && !(await tx.deletionQueue.claim(intent, now))) {
        await tx.deletionQueue.release(intent, key, now);
        return "lease_lost";
      }
      const prev = await tx.sessions.chunk(sessionId, index);
      if (prev && !multipart) await tx.deletionQueue.enqueue([chunkKey(s.blobId, index, prev.gen)], now);
      await tx.sessions.putChunk({
        sessionId,
        chunkIndex: index,
        gen,
        size: length,
        receivedAt: now,
        etag,
      });
      await tx.sessions.setExpiry(sessionId, now + this.opts.ttlSeconds);
      return "stored";
    });
    if (outcome === "stored") {
      tap?.done(gen);
      this.ingest.recorded(sessionId, index, gen, this.recordedChunks(s));
    } else {
      tap?.fail();
    }
    if (outcome === "gone")
      throw fail("not_found", "The upload session expired or was deleted during the upload");
    if (outcome === "lease_lost")
      throw fail("storage_unavailable", "The chunk took too long to store; retry", { retryAfter: 1 });
    if (outcome === "upload_changed") throw uploadRestarted();
    if (outcome !== "stored")
      throw fail("conflict", `The session is ${outcome}; chunks can no longer be uploaded`);
    this.log.debug("chunk.stored", { session: sessionId, index, bytes: length });
    return { chunk_index: index };
  }

  /**
   * The answer to a part whose multipart upload `uploadId` is no longer in progress (a finalize
   * completed it, or the session's removal aborted it): 404 when the session is gone, 409 while it
   * is finalizing or finalized; when it is receiving and still names the upload (a finalize that
   * completed it died before letting it go), the session leaves it here, and the chunk is to be
   * sent again (503).
   */
  private async uploadGone(s: SessionRow, uploadId: string): Promise<AppError> {
    const cur = await this.store.repos.sessions.get(s.sessionId);
    if (!cur || cur.expiresAt <= this.clock.now())
      return fail("not_found", "The upload session expired or was deleted during the upload");
    if (cur.state !== "receiving")
      return fail("conflict", `The session is ${cur.state}; chunks can no longer be uploaded`);
    if (cur.uploadId === uploadId) await this.leaveUpload(s, uploadId);
    return uploadRestarted();
  }

  /**
   * Session `s` stops using its multipart upload `uploadId`, consumed by a finalize or gone: its
   * chunk rows go, and the object the upload may have completed into is queued for deletion in the
   * same transaction (and deleted at once). Its next chunks are objects of their own.
   */
  private async leaveUpload(s: SessionRow, uploadId: string): Promise<void> {
    const key = sessionObjectKey(s.blobId);
    await this.store.transaction(async (tx) => {
      await tx.sessions.leaveMultipart(s.sessionId, uploadId);
      await tx.deletionQueue.enqueue([key], this.clock.now());
    });
    this.ingest.forget(s.sessionId);
    await this.blobs.delete([key]).catch(() => {});
    this.log.warn("session.upload_left", { session: s.sessionId });
  }

  /** True while session `sessionId` exists and has not expired. */
  private async isLive(sessionId: string): Promise<boolean> {
    const cur = await this.store.repos.sessions.get(sessionId);
    return cur !== undefined && cur.expiresAt > this.clock.now();
  }

  /** How the ingest hasher reads a session's recorded chunks back from the store. */
  private recordedChunks(s: SessionRow): RecordedChunks {
    const recordedGen = async (i: number) =>
      i < s.chunkCount ? ((await this.store.repos.sessions.chunk(s.sessionId, i))?.gen ?? null) : null;
    // A part of a multipart upload cannot be read before the upload is completed.
    if (s.uploadId) return { recordedGen };
    return { recordedGen, open: (i, gen) => this.blobs.get(chunkKey(s.blobId, i, gen)) };
  }

  /**
   * Progress of a session (docs/protocol.md#upload-sessions); refreshes the expiry of a receiving session.
   * @throws AppError 404, 403.
   */
  async status(caller: string, sessionId: string): Promise<SessionStatus> {
    const s = await this.owned(caller, sessionId);
    let expiresAt = s.expiresAt;
    if (s.state !== "finalized") {
      expiresAt = this.clock.now() + this.opts.ttlSeconds;
      await this.store.repos.sessions.setExpiry(sessionId, expiresAt);
    }
    return {
      session_id: s.sessionId,
      state: s.state === "finalized" ? "finalized" : "receiving",
      total_chunks: s.chunkCount,
      chunks_received: await this.store.repos.sessions.chunkIndices(sessionId),
      expires_at: expiresAt,
      ciphertext_hash: s.ciphertextHash,
    };
  }

  /**
   * Finalizes a session (docs/protocol.md#upload-sessions): all chunks present, BLAKE3 of the assembled ciphertext
   * equal to the manifest's, revision checks, then the file row and `finalized` state are
   * committed together. A single chunk stays the stored blob; several are copied into one object
   * (see the comment in the body).
   * @throws AppError 404, 403; `conflict` (409: already finalized, a concurrent finalize is
   *   running, or base revision mismatch with the Conflict envelope); `invalid_manifest` (400:
   *   missing chunks or hash mismatch); `stale_sequence` (400); `storage_inconsistency` (500).
   */
  async finalize(caller: string, sessionId: string): Promise<UploadResult> {
    let s = await this.owned(caller, sessionId);
    const sessions = this.store.repos.sessions;
    // A finalize cut by the death of its process (a retry after a crash and restart) starts over.
    if (s.state === "finalizing" && (await this.releaseAbandoned(s))) s = await this.owned(caller, sessionId);
    // Admitted again: a member removed or lowered since the session opened is refused here.
    const admitted: Manifest = parseManifest(JSON.parse(s.manifest));
    await this.files.admitWrite(caller, admitted);
    // Every 409 from finalize uses the Conflict envelope (docs/protocol.md#manifest), with the current revision.
    const conflict = async (message: string, repos: Repositories = this.store.repos) =>
      fail("conflict", message, {
        conflict: await this.files.currentRevision(admitted.ss58Address, s.folderHash, s.pathHash, repos),
      });
    if (s.state !== "receiving") {
      throw await conflict(
        s.state === "finalized"
          ? "The session is already finalized"
          : "The session is being finalized by another request",
      );
    }
    // A finalize refused for missing chunks changes nothing (not even expires_at).
    const received = await sessions.chunkIndices(sessionId);
    if (received.length !== s.chunkCount) throw missingChunks(s.chunkCount, received);
    // Sessions opened before the framing rule held (docs/framing.md) are held to it here.
    const manifest = admitted;
    checkFraming(manifest, s.ciphertextSize, "ciphertext_size");
    const now = this.clock.now();
    const lease = new FinalizeLease(
      sessions,
      sessionId,
      now + this.opts.finalizeLeaseSeconds,
      this.opts.finalizeLeaseSeconds,
      this.clock,
      this.log,
    );
    if (
      !(await sessions.beginFinalizing(
        sessionId,
        lease.until,
        now + this.opts.ttlSeconds,
        this.opts.leaseHolders.self,
      ))
    ) {
      throw await conflict("The session is being finalized by another request");
    }
    lease.startRenewing();
    // Set once this finalize completed (or found completed) the session's multipart upload: its
    // parts are gone, so a failure from then on makes the session leave the upload.
    let consumed: string | null = null;
    // A finalize refused for the client's reason (4xx) leaves the session as it found it; after a
    // server-side failure (5xx) the session gets a fresh lifetime for the retry it was told to make.
    const backToReceiving = async (e: unknown) => {
      await lease.stopRenewing();
      if (consumed !== null) await this.leaveUpload(s, consumed);
      await sessions.endFinalizing(sessionId, lease.until, "receiving", {
        expiresAt:
          e instanceof AppError && e.status < 500 ? s.expiresAt : this.clock.now() + this.opts.ttlSeconds,
      });
    };
    try {
      const chunks = await sessions.chunks(sessionId);
      if (chunks.length !== s.chunkCount)
        throw missingChunks(
          s.chunkCount,
          chunks.map((c) => c.chunkIndex),
        );
      const layout: BlobLayout = {
        blobId: s.blobId,
        chunkSize: s.chunkSize,
        chunkCount: s.chunkCount,
        size: s.ciphertextSize,
        gens: chunks.map((c) => c.gen),
      };
      const started = performance.now();
      let actual: string;
      let prehashed = 0;
      let path: FinalizePath = "full_pass";
      const observe = (outcome: FinalizeOutcome) =>
        this.opts.onFinalize?.(path, outcome, (performance.now() - started) / 1000);
      const mismatch = (actual: string) => {
        observe("hash_mismatch");
        this.log.warn("finalize.hash_mismatch", { session: sessionId, expected: s.ciphertextHash, actual });
        return fail(
          "invalid_manifest",
          `Assembled ciphertext BLAKE3 ${actual} differs from manifest.ciphertext_hash ${s.ciphertextHash}`,
        );
      };
      let stored = layout;
      let intent: number | undefined;
      const deletions = this.store.repos.deletionQueue;
      if (s.uploadId) {
        // A multipart session: the upload is completed (its object is then the file's one
        // object; nothing is copied), then verified like any other blob. A finalize its revision
        // rules refuse must not consume the upload, so they are checked first (the commit checks
        // them again).
        await this.files.precheck(manifest);
        const uploadId = s.uploadId;
        const done = await this.completeUpload(s, uploadId, chunks, () => {
          consumed = uploadId;
        });
        path = done.path;
        prehashed = done.prehashed;
        if (done.error !== undefined) {
          observe("storage_error");
          throw done.error;
        }
        actual = done.actual;
        stored = done.stored;
        if (actual !== s.ciphertextHash) throw mismatch(actual);
      } else {
        try {
          // Chunks hashed while the upload ran (on this node) are not read again; only the rest is.
          const pre = await this.ingest.take(sessionId, layout.gens);
          actual = await hashBlob(this.blobs, layout, pre?.hasher, pre?.from ?? 0);
          if (prehashedAny(pre)) await checkChunks(this.blobs, layout);
          prehashed = pre?.from ?? 0;
          path = finalizePath(prehashed, s.chunkCount);
        } catch (e) {
          observe("storage_error");
          this.log.error("finalize.storage_failed", { session: sessionId, error: e as Error });
          if (e instanceof BlobNotFoundError)
            throw fail("storage_inconsistency", "A stored chunk is missing; re-upload it and finalize again");
          throw fail(
            "storage_inconsistency",
            "The blob store failed while reading the chunks; retry finalize",
          );
        }
        if (actual !== s.ciphertextHash) throw mismatch(actual);
        // A blob of several chunks is copied into one object (a one-object blob under a new id,
        // recorded as a write intent first), so that any byte range of the file is one range of one
        // object: a download goes out with its length (docs/design.md#storage-layout). The
        // chunk objects it is copied from are the ones just verified; a chunk PUT racing this
        // finalize writes a new generation, never them. Once the file row is committed they are
        // queued for deletion with the session's prefix.
        if (s.chunkCount > 1) {
          // A finalize its revision rules refuse copies nothing (the commit checks them again).
          await this.files.precheck(manifest);
          const blobId = newOneObjectBlobId();
          const key = chunkKey(blobId, 0, "");
          intent = await deletions.reserve(key, this.clock.now());
          try {
            await assembleBlob(this.blobs, layout, key);
          } catch (e) {
            await deletions.done(intent);
            observe("storage_error");
            this.log.error("finalize.assemble_failed", { session: sessionId, error: e as Error });
            if (isOutOfSpace(e)) throw storageFailure(e, "The blob store is full");
            if (e instanceof BlobNotFoundError)
              throw fail(
                "storage_inconsistency",
                "A stored chunk is missing; re-upload it and finalize again",
              );
            throw fail(
              "storage_inconsistency",
              "The blob store failed while assembling the chunks; retry finalize",
            );
          }
          stored = {
            blobId,
            chunkSize: s.chunkSize,
            chunkCount: s.chunkCount,
            size: s.ciphertextSize,
            gens: [""],
          };
        }
      }
      const discard = async () => {
        if (intent !== undefined)
          await deletions.release(intent, chunkKey(stored.blobId, 0, ""), this.clock.now());
      };
      try {
        if (isPersistable(this.blobs)) await this.blobs.persist(blobObjects(stored).map((o) => o.key));
      } catch (e) {
        await discard();
        this.log.error("finalize.persist_failed", { session: sessionId, error: e as Error });
        if (isOutOfSpace(e)) throw storageFailure(e, "The blob store is full");
        throw fail(
          "storage_inconsistency",
          "The blob store failed to make the chunks durable; retry finalize",
        );
      }
      await lease.stopRenewing();
      let result: UploadResult;
      try {
        result = await this.files.commit(
          manifest,
          { ...stored, ciphertextHash: actual, chunkHashes: null },
          async (r, tx) => {
            const ended = await tx.sessions.endFinalizing(sessionId, lease.until, "finalized", {
              result: JSON.stringify(r),
              expiresAt: this.clock.now() + this.opts.ttlSeconds,
            });
            // The lease ran out and a sweeper gave the session back (chunks may have changed since).
            if (!ended) throw await conflict("The session changed during finalize", tx);
            if (stored !== layout && !s.uploadId)
              await tx.deletionQueue.enqueue([blobPrefix(s.blobId)], this.clock.now());
          },
          intent,
          caller,
        );
      } catch (e) {
        await discard();
        throw e;
      }
      observe("ok");
      this.log.info("session.finalized", {
        session: sessionId,
        bytes: s.ciphertextSize,
        hash_ms: Math.round(performance.now() - started),
        prehashed_chunks: prehashed,
      });
      return result;
    } catch (e) {
      await backToReceiving(e);
      throw e;
    }
  }

  /**
   * Completes the multipart upload `uploadId` of session `s` with the recorded parts `chunks` (in
   * index order) and hashes the object it made, reading only the chunks this node did not hash
   * while they arrived (a part cannot be read before the upload is completed). `onConsumed` is
   * called once the upload is completed, or found no longer in progress: its parts are gone.
   * @returns the BLAKE3 (lowercase hex) and layout of the object, or the `storage_inconsistency`
   *   (500) error to answer; with how the hash was had.
   */
  private async completeUpload(
    s: SessionRow,
    uploadId: string,
    chunks: ChunkRow[],
    onConsumed: () => void,
  ): Promise<
    { path: FinalizePath; prehashed: number } & (
      | { error: AppError }
      | { error?: undefined; actual: string; stored: BlobLayout }
    )
  > {
    if (!isMultipart(this.blobs)) throw new Error("a multipart session on a store without multipart");
    const stored: BlobLayout = {
      blobId: multipartBlobId(s.blobId),
      chunkSize: s.chunkSize,
      chunkCount: s.chunkCount,
      size: s.ciphertextSize,
      gens: [""],
    };
    const key = chunkKey(stored.blobId, 0, "");
    const pre = await this.ingest.take(
      s.sessionId,
      chunks.map((c) => c.gen),
    );
    const prehashed = pre?.from ?? 0;
    const path = finalizePath(prehashed, s.chunkCount);
    const failed = (e: unknown, message: string) => {
      this.log.error("finalize.storage_failed", { session: s.sessionId, error: e as Error });
      return { error: fail("storage_inconsistency", message), path, prehashed };
    };
    try {
      await this.blobs.completeMultipart(
        key,
        uploadId,
        chunks.map((c) => ({ partNumber: c.chunkIndex + 1, etag: c.etag ?? "" })),
      );
    } catch (e) {
      if (e instanceof MultipartGoneError) {
        onConsumed();
        return failed(e, "The session's upload is no longer in progress; upload every chunk again");
      }
      // Refused (a part's ETag is not the recorded one: a chunk re-sent during the finalize) or
      // failed; the upload is unchanged.
      return failed(e, "The blob store failed to assemble the chunks; retry finalize");
    }
    onConsumed();
    try {
      const size = await this.blobs.size(key);
      if (size !== s.ciphertextSize)
        throw new Error(`the completed object has ${size} bytes, expected ${s.ciphertextSize}`);
      const actual = await hashBlob(this.blobs, stored, pre?.hasher, prehashed);
      return { actual, stored, path, prehashed };
    } catch (e) {
      return failed(e, "The blob store failed while reading the assembled chunks; upload every chunk again");
    }
  }

  /**
   * Deletes a session (docs/protocol.md#upload-sessions). A receiving session's chunk objects are queued for deletion;
   * a finalized session's objects belong to the file and stay.
   * @throws AppError 404, 403; `conflict` (409) while a finalize is running.
   */
  async abort(caller: string, sessionId: string): Promise<{ deleted: true }> {
    await this.store.transaction(async (tx) => {
      const s = await this.owned(caller, sessionId, tx);
      // Locked: a finalize that is abandoned now (lease out, or holder provably dead) cannot end.
      const abandoned = s.state === "finalizing" && this.abandoned(s);
      if (s.state === "finalizing" && !abandoned)
        throw fail("conflict", "The session is being finalized; try again when it completes");
      await tx.sessions.remove(sessionId);
      if (s.state !== "finalized") await tx.deletionQueue.enqueue(sessionTargets(s), this.clock.now());
    });
    this.ingest.forget(sessionId);
    this.log.info("session.deleted", { session: sessionId });
    return { deleted: true };
  }

  /**
   * True when the finalize holding `s` (state `finalizing`) is abandoned: its lease ran out, or
   * its holder is provably dead (`LeaseHolders.isDead`).
   */
  private abandoned(s: SessionRow): boolean {
    return (
      s.finalizingUntil === null ||
      s.finalizingUntil <= this.clock.now() ||
      this.opts.leaseHolders.isDead(s.finalizingHolder)
    );
  }

  /**
   * Returns session `s` (as read, state `finalizing`) to `receiving` when its finalize is
   * abandoned, fenced by the lease and holder read, so a finalize that started since is left
   * alone.
   * @returns true when `s` was abandoned (whoever released it: read the session again).
   */
  private async releaseAbandoned(s: SessionRow): Promise<boolean> {
    if (!this.abandoned(s)) return false;
    const sessions = this.store.repos.sessions;
    const expiresAt = this.clock.now() + this.opts.ttlSeconds;
    const released =
      s.finalizingUntil === null
        ? (await sessions.releaseExpiredFinalizing(this.clock.now(), expiresAt)) > 0
        : s.finalizingHolder !== null && this.opts.leaseHolders.isDead(s.finalizingHolder)
          ? await sessions.takeOverFinalizing(s.sessionId, s.finalizingUntil, s.finalizingHolder, expiresAt)
          : await sessions.endFinalizing(s.sessionId, s.finalizingUntil, "receiving", { expiresAt });
    if (released)
      this.log.warn("session.finalize_abandoned", { session: s.sessionId, holder: s.finalizingHolder });
    return true;
  }

  /**
   * Garbage-collects sessions (docs/protocol.md#upload-sessions): first returns to `receiving` every session whose
   * finalize lease ran out (its node died or stalled) or whose lease holder is provably dead,
   * then deletes the rows of sessions idle past `expires_at` and queues the chunk objects of
   * unfinalized ones for deletion. Safe to run on every node at once: each expired session is
   * collected by one of them. The first pass at start-up is the crash recovery.
   * @returns how many sessions were collected (deleted).
   */
  async sweepExpired(batch = 500): Promise<number> {
    const now = this.clock.now();
    const sessions = this.store.repos.sessions;
    const released = await sessions.releaseExpiredFinalizing(now, now + this.opts.ttlSeconds);
    if (released > 0) this.log.warn("session.finalize_lease_expired", { count: released });
    let takenOver = 0;
    for (const h of await sessions.heldFinalizing(now)) {
      if (h.finalizingUntil === null || h.finalizingHolder === null) continue;
      if (!this.opts.leaseHolders.isDead(h.finalizingHolder)) continue;
      if (
        await sessions.takeOverFinalizing(
          h.sessionId,
          h.finalizingUntil,
          h.finalizingHolder,
          now + this.opts.ttlSeconds,
        )
      )
        takenOver++;
    }
    if (takenOver > 0) this.log.warn("session.finalize_holder_dead", { count: takenOver });
    let total = 0;
    for (;;) {
      const { seen, removed } = await this.store.transaction(async (tx) => {
        const now = this.clock.now();
        const rows = await tx.sessions.expired(now, batch);
        const removed: string[] = [];
        for (const s of rows) {
          if (!(await tx.sessions.remove(s.sessionId))) continue;
          removed.push(s.sessionId);
          if (s.state !== "finalized") await tx.deletionQueue.enqueue(sessionTargets(s), now);
        }
        return { seen: rows.length, removed };
      });
      for (const id of removed) this.ingest.forget(id);
      total += removed.length;
      if (seen < batch) break;
    }
    if (total > 0) this.log.info("session.expired", { count: total });
    return total;
  }
}

/**
 * The lease of one running finalize: `until` (Unix seconds) is the value of the session's
 * `finalizing_until` this finalize set, renewed every third of the lease while it hashes.
 */
class FinalizeLease {
  private timer: ReturnType<typeof setInterval> | null = null;
  private renewing: Promise<void> | null = null;

  constructor(
    private readonly sessions: SessionsRepository,
    private readonly sessionId: string,
    /** The lease this finalize holds now (its fencing value). */
    public until: number,
    private readonly seconds: number,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** Renews the lease every `seconds / 3` until `stopRenewing`. */
  startRenewing(): void {
    this.timer = setInterval(
      () => {
        this.renewing ??= this.renew().finally(() => {
          this.renewing = null;
        });
      },
      (this.seconds * 1000) / 3,
    );
    this.timer.unref?.();
  }

  private async renew(): Promise<void> {
    const until = this.clock.now() + this.seconds;
    if (until <= this.until) return;
    try {
      if (await this.sessions.renewFinalizing(this.sessionId, this.until, until)) this.until = until;
      else this.log.warn("finalize.lease_lost", { session: this.sessionId });
    } catch (e) {
      this.log.warn("finalize.lease_renew_failed", { session: this.sessionId, error: e as Error });
    }
  }

  /** Stops renewing and waits for a renewal in flight, so that `until` is final. */
  async stopRenewing(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.renewing;
  }
}

/**
 * Object key of the one-object blob the multipart upload of a session with chunked blob id
 * `blobId` completes into.
 */
function sessionObjectKey(blobId: string): string {
  return chunkKey(multipartBlobId(blobId), 0, "");
}

/**
 * What deleting an unfinalized session `s` queues: its multipart upload (aborted) and the object
 * a finalize may have completed it into, or the prefix of its chunk objects.
 */
function sessionTargets(s: SessionRow): string[] {
  if (!s.uploadId) return [blobPrefix(s.blobId)];
  const key = sessionObjectKey(s.blobId);
  return [multipartTarget(key), key];
}

/** The 503 of a chunk whose multipart upload the session no longer uses: the chunk is sent again. */
function uploadRestarted(): AppError {
  return fail(
    "storage_unavailable",
    "The session's upload was restarted; upload this chunk again (see the session's status)",
    { retryAfter: 1 },
  );
}

/** The 400 of a finalize before every chunk is uploaded, naming the first missing indices. */
function missingChunks(chunkCount: number, received: number[]): AppError {
  const have = new Set(received);
  const missing: number[] = [];
  for (let i = 0; i < chunkCount && missing.length < 20; i++) if (!have.has(i)) missing.push(i);
  return fail(
    "invalid_manifest",
    `Not all chunks uploaded: ${chunkCount - have.size} of ${chunkCount} missing (first: ${missing.join(", ")})`,
  );
}

/** True when the ingest hasher already covered some chunks (so they must be checked, not read). */
function prehashedAny(pre: { from: number } | null): boolean {
  return pre !== null && pre.from > 0;
}

/**
 * `body` passed through unchanged, recording in `into.error` the error of reading it (the
 * client's request body broke off), so that it is told apart from a store failure by where it
 * happened rather than by its message.
 */
function watchErrors(
  body: ReadableStream<Uint8Array>,
  into: { error?: unknown },
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const r = await reader.read().catch((e: unknown) => {
          into.error = e;
          throw e;
        });
        if (r.done) controller.close();
        else controller.enqueue(r.value);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}
