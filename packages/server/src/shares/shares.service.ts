/**
 * @module server/shares/shares.service
 * File shares (docs/sharing.md): an encrypted copy of one file under a key only the link holds,
 * minted in one request or in 8 MiB chunks, listed, re-timed, revoked and read anonymously.
 *
 * Writes follow the rule of every other write: the intent of each object is recorded in the
 * deletion queue (`DeletionQueueRepository.reserve`) before its first byte lands, and claimed by
 * the transaction that references it; a failed write releases it. A complete share is one object
 * (`s/<share_id>/b.<gen>`), so that a download can be sent with its length. Revoked, expired and
 * idle uploading shares are reaped (`reap`): their rows go and their objects are queued for
 * deletion in the same transaction, so a crash never loses a deletion. Every share row counts
 * against its owner's quota until it is reaped.
 */

import { AppError, fail, storageFailure } from "@esync/protocol/errors.ts";
import { randomHex } from "@esync/protocol/ids.ts";
import { isUploadPath } from "@esync/protocol/paths.ts";
import type { FileOwnerWrapsBody, ShareMetadata } from "@esync/protocol/schemas.ts";
import type { Static } from "@sinclair/typebox";
import type { MetadataStore } from "../db/store.ts";
import type { QuotaService } from "../quota/quota.service.ts";
import { BlobLengthError, type BlobStore } from "../storage/blob-store.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import {
  expiryOf,
  framedSize,
  isTokenShaped,
  MAX_SHARE_PLAINTEXT_BYTES,
  newShareToken,
  rfc3339,
  SHARE_CHUNK_BYTES,
  SHARE_UPLOAD_IDLE_SECONDS,
  type ShareTtl,
  shareBlobKey,
  shareChunkCount,
  shareChunkKey,
  shareChunkLength,
  shareObjectPrefix,
} from "./share-rules.ts";
import type { ShareAccessRow, ShareRow } from "./shares.repository.ts";

/** The metadata of a mint, as its schema checked it. */
export type ShareMetadataInput = Static<typeof ShareMetadata>;

/** The answer of a mint, a complete and a PATCH. */
export interface MintedShare {
  share_token: string;
  /** RFC 3339, or null = never. */
  expires_at: string | null;
}

/** A chunk body the service opens once it knows the chunk's exact length (see the controller). */
export type OpenShareChunk = (length: number) => {
  stream: ReadableStream<Uint8Array>;
  /** Why the body failed (client or limit), when it did. */
  failure: () => { error: unknown } | undefined;
};

/** Settings of file shares. */
export interface FileSharesOptions {
  /** Seconds the objects of a reaped share stay readable, for downloads in flight. */
  graceSeconds: number;
  /** Whether access-log rows keep the client address (`ESYNC_SHARE_LOG_ADDRESSES`). */
  logAddresses: boolean;
}

/** Most access-log rows `GET /v1/shares/{token}/accesses` returns (newest first). */
export const MAX_ACCESS_ROWS = 1000;

/** What `accesses` returns: the share's counters and its newest log rows. */
export interface ShareAccessLog {
  maxDownloads: number | null;
  downloadCount: number;
  rows: ShareAccessRow[];
  truncated: boolean;
}

/** A share readable anonymously, and the byte count of its blob. */
export type ReadableShare = ShareRow & { blobKey: string };

/** Rules of file shares. */
export class FileSharesService {
  constructor(
    private readonly store: MetadataStore,
    private readonly blobs: BlobStore,
    private readonly clock: Clock,
    private readonly quota: QuotaService,
    private readonly log: Logger,
    private readonly opts: FileSharesOptions,
  ) {}

  /**
   * Checks a mint's metadata beyond its schema: one-segment file name, decodable name
   * ciphertext and 24-byte nonce, plaintext at most 5,000,000,000 bytes, the framed size formula,
   * and for a chunked mint `total_chunks` = max(1, ceil(ciphertext_size / 8 MiB)); for a single
   * request, a ciphertext of at most 8 MiB.
   * @throws AppError `bad_request` (400), `payload_too_large` (413).
   */
  checkMetadata(m: ShareMetadataInput, chunked: boolean): void {
    if (!isUploadPath(m.filename) || m.filename.includes("/"))
      throw fail("bad_request", "filename must be one path segment without control characters");
    if (Buffer.from(m.filename_nonce, "base64").byteLength !== 24)
      throw fail("bad_request", "filename_nonce must be 24 bytes");
    if (Buffer.from(m.filename_ct, "base64").byteLength < 16)
      throw fail("bad_request", "filename_ct must hold at least the 16-byte tag");
    if (m.plaintext_size > MAX_SHARE_PLAINTEXT_BYTES)
      throw fail("payload_too_large", `plaintext_size over ${MAX_SHARE_PLAINTEXT_BYTES} bytes`);
    if (m.ciphertext_size !== framedSize(m.plaintext_size))
      throw fail(
        "bad_request",
        `ciphertext_size must be ${framedSize(m.plaintext_size)} for plaintext_size ${m.plaintext_size}`,
      );
    if (chunked) {
      const want = shareChunkCount(m.ciphertext_size);
      if (m.total_chunks !== want) throw fail("bad_request", `total_chunks must be ${want}`);
    } else if (m.ciphertext_size > SHARE_CHUNK_BYTES) {
      throw fail("payload_too_large", `ciphertext over ${SHARE_CHUNK_BYTES} bytes; use /v1/shares/init`);
    }
  }

  /**
   * `POST /v1/shares`: stores `ciphertext` as a complete share of `caller`.
   * @throws AppError `bad_request` (length differs from `ciphertext_size`), `drive_quota_exceeded`
   *   (402), `storage_unavailable`/`storage_full`.
   */
  async mintSingle(caller: string, m: ShareMetadataInput, ciphertext: Uint8Array): Promise<MintedShare> {
    this.checkMetadata(m, false);
    if (ciphertext.byteLength !== m.ciphertext_size)
      throw fail(
        "bad_request",
        `ciphertext_size is ${m.ciphertext_size} but the ciphertext part has ${ciphertext.byteLength} bytes`,
      );
    // Refuse an over-quota mint before storing anything; the commit checks again under the lock.
    await this.quota.require(caller, m.plaintext_size);
    const shareId = randomHex(16);
    const key = shareBlobKey(shareId, randomHex(8));
    const intent = await this.store.repos.deletionQueue.reserve(key, this.clock.now());
    try {
      await this.blobs.put(
        key,
        new Blob([ciphertext as Uint8Array<ArrayBuffer>]).stream(),
        ciphertext.byteLength,
        {
          durable: true,
          fresh: true,
        },
      );
    } catch (e) {
      await this.discard(intent, key);
      this.log.error("share.store_failed", { owner: caller, error: e as Error });
      throw storageFailure(e, "The blob store failed to store the share; retry");
    }
    try {
      return await this.store.transaction(async (tx) => {
        await tx.sessions.lockOwner(caller);
        await this.quota.require(caller, m.plaintext_size, tx.quota);
        if (!(await tx.deletionQueue.claim(intent, this.clock.now())))
          throw fail("storage_unavailable", "The share's write took too long; retry", { retryAfter: 1 });
        const row = this.newRow(caller, shareId, m, "complete", key);
        await tx.shares.insert(row);
        return { share_token: row.token, expires_at: rfc3339(row.expiresAt) };
      });
    } catch (e) {
      await this.discard(intent, key);
      throw e;
    }
  }

  /**
   * `POST /v1/shares/init`: records an uploading share of `caller` (its quota charged now).
   * @throws AppError `bad_request`, `payload_too_large`, `drive_quota_exceeded`.
   */
  async init(caller: string, m: ShareMetadataInput): Promise<MintedShare> {
    this.checkMetadata(m, true);
    return this.store.transaction(async (tx) => {
      await tx.sessions.lockOwner(caller);
      await this.quota.require(caller, m.plaintext_size, tx.quota);
      const row = this.newRow(caller, randomHex(16), m, "uploading", null);
      await tx.shares.insert(row);
      return { share_token: row.token, expires_at: rfc3339(row.expiresAt) };
    });
  }

  /** A new share row minted by `caller` now. */
  private newRow(
    caller: string,
    shareId: string,
    m: ShareMetadataInput,
    state: ShareRow["state"],
    blobKey: string | null,
  ): ShareRow {
    const now = this.clock.now();
    return {
      shareId,
      token: newShareToken(),
      owner: caller,
      state,
      filename: m.filename,
      filenameCt: m.filename_ct,
      filenameNonce: m.filename_nonce,
      mimeType: m.mime_type,
      plaintextSize: m.plaintext_size,
      ciphertextSize: m.ciphertext_size,
      totalChunks: shareChunkCount(m.ciphertext_size),
      blobKey,
      createdAt: now,
      updatedAt: now,
      expiresAt: expiryOf(m.ttl as ShareTtl | undefined, now),
      revokedAt: null,
      ownerWrap: null,
      maxDownloads: m.max_downloads ?? null,
      downloadCount: 0,
      accessLog: m.access_log === true || m.max_downloads !== undefined,
    };
  }

  /**
   * The uploading share `token` of `caller`, for a chunk or complete.
   * @throws AppError `not_found` (unknown or revoked), `forbidden` (another account's upload),
   *   `conflict` (409: already complete).
   */
  private async ownUpload(caller: string, token: string): Promise<ShareRow> {
    const row = isTokenShaped(token) ? await this.store.repos.shares.byToken(token) : undefined;
    if (!row || row.revokedAt !== null) throw fail("not_found", "No such share");
    if (row.owner !== caller) throw fail("forbidden", "This share upload belongs to another account");
    if (row.state === "complete") throw fail("conflict", "The share is already complete");
    return row;
  }

  /**
   * `PUT /v1/shares/{token}/chunks/{index}`: stores one chunk (re-sending an index replaces it).
   * @throws AppError `bad_request` (index out of range, wrong length), `not_found`, `forbidden`,
   *   `conflict`, `storage_unavailable`/`storage_full`.
   */
  async putChunk(
    caller: string,
    token: string,
    index: number,
    open: OpenShareChunk,
    declaredLength: number | null,
  ): Promise<{ chunk_index: number }> {
    const share = await this.ownUpload(caller, token);
    if (index >= share.totalChunks)
      throw fail("bad_request", `chunk index ${index} is out of range (total_chunks ${share.totalChunks})`);
    const length = shareChunkLength(share.ciphertextSize, index);
    if (declaredLength !== null && declaredLength !== length)
      throw fail(
        "bad_request",
        `chunk ${index} must be exactly ${length} bytes, Content-Length is ${declaredLength}`,
      );
    const gen = randomHex(8);
    const key = shareChunkKey(share.shareId, index, gen);
    const intent = await this.store.repos.deletionQueue.reserve(key, this.clock.now());
    const body = open(length);
    try {
      await this.blobs.put(key, body.stream, length, { durable: true, fresh: true });
    } catch (e) {
      await this.discard(intent, key);
      const failure = body.failure();
      if (failure) {
        if (failure.error instanceof AppError) throw failure.error;
        throw fail("bad_request", `chunk ${index} was cut short by the client`);
      }
      if (e instanceof BlobLengthError)
        throw fail("bad_request", `chunk ${index} must be exactly ${length} bytes, received ${e.received}`);
      this.log.error("share.chunk_store_failed", { share: share.shareId, error: e as Error });
      throw storageFailure(e, "The blob store failed to store the chunk; retry");
    }
    try {
      await this.store.transaction(async (tx) => {
        const now = this.clock.now();
        const s = await tx.shares.getForUpdate(share.shareId);
        if (!s || s.revokedAt !== null) throw fail("not_found", "No such share");
        if (s.state === "complete") throw fail("conflict", "The share is already complete");
        if (!(await tx.deletionQueue.claim(intent, now)))
          throw fail("storage_unavailable", "The chunk's write took too long; retry", { retryAfter: 1 });
        const previous = await tx.shares.chunk(share.shareId, index);
        await tx.shares.putChunk({
          shareId: share.shareId,
          chunkIndex: index,
          gen,
          size: length,
          receivedAt: now,
        });
        // A replaced chunk's object is no longer referenced; a complete may be reading it.
        if (previous)
          await tx.deletionQueue.enqueue(
            [shareChunkKey(share.shareId, index, previous.gen)],
            now + this.opts.graceSeconds,
          );
        await tx.shares.update(share.shareId, { updatedAt: now });
      });
    } catch (e) {
      await this.discard(intent, key);
      throw e;
    }
    return { chunk_index: index };
  }

  /**
   * `POST /v1/shares/{token}/complete`: checks every chunk is there, joins them into the share's
   * one object (a single chunk already is), and makes the share readable.
   * @throws AppError `bad_request` (chunks missing), `not_found`, `forbidden`, `conflict`.
   */
  async complete(caller: string, token: string): Promise<MintedShare> {
    const share = await this.ownUpload(caller, token);
    const chunks = await this.store.repos.shares.chunks(share.shareId);
    const have = new Set(chunks.map((c) => c.chunkIndex));
    const missing: number[] = [];
    for (let i = 0; i < share.totalChunks && missing.length < 20; i++) if (!have.has(i)) missing.push(i);
    if (missing.length > 0) throw fail("bad_request", `missing chunks: ${missing.join(", ")}`);
    const total = chunks.reduce((n, c) => n + c.size, 0);
    if (total !== share.ciphertextSize)
      throw fail("bad_request", `the chunks hold ${total} bytes, ciphertext_size is ${share.ciphertextSize}`);
    const keys = chunks.map((c) => shareChunkKey(share.shareId, c.chunkIndex, c.gen));
    let blobKey: string;
    let intent: number | null = null;
    if (chunks.length === 1) {
      blobKey = keys[0] as string;
    } else {
      blobKey = shareBlobKey(share.shareId, randomHex(8));
      intent = await this.store.repos.deletionQueue.reserve(blobKey, this.clock.now());
      try {
        await this.blobs.put(blobKey, this.concatenated(keys), share.ciphertextSize, {
          durable: true,
          fresh: true,
        });
      } catch (e) {
        await this.discard(intent, blobKey);
        this.log.error("share.complete_failed", { share: share.shareId, error: e as Error });
        throw storageFailure(e, "The blob store failed to join the share's chunks; retry");
      }
    }
    try {
      return await this.store.transaction(async (tx) => {
        const now = this.clock.now();
        const s = await tx.shares.getForUpdate(share.shareId);
        if (!s || s.revokedAt !== null) throw fail("not_found", "No such share");
        if (s.state === "complete") throw fail("conflict", "The share is already complete");
        // A chunk re-sent since the check above changed what was joined: complete again.
        const now_ = await tx.shares.chunks(share.shareId);
        if (now_.some((c, i) => c.gen !== chunks[i]?.gen))
          throw fail("conflict", "A chunk was replaced while the share was being completed; retry");
        if (intent !== null && !(await tx.deletionQueue.claim(intent, now)))
          throw fail("storage_unavailable", "Joining the share took too long; retry", { retryAfter: 1 });
        await tx.shares.update(share.shareId, { state: "complete", blobKey, updatedAt: now });
        await tx.shares.removeChunks(share.shareId);
        if (intent !== null) await tx.deletionQueue.enqueue(keys, now);
        return { share_token: s.token, expires_at: rfc3339(s.expiresAt) };
      });
    } catch (e) {
      if (intent !== null) await this.discard(intent, blobKey);
      throw e;
    }
  }

  /** The objects `keys` read one after the other, as one stream. */
  private concatenated(keys: string[]): ReadableStream<Uint8Array> {
    const blobs = this.blobs;
    let i = 0;
    let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
    return new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          for (;;) {
            if (!reader) {
              const key = keys[i++];
              if (key === undefined) {
                controller.close();
                return;
              }
              reader = (await blobs.get(key)).getReader();
            }
            const r = await reader.read();
            if (!r.done) {
              controller.enqueue(r.value);
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

  /** `GET /v1/shares`: `caller`'s complete shares that are neither revoked nor expired. */
  async list(caller: string): Promise<ShareRow[]> {
    return this.store.repos.shares.listActive(caller, this.clock.now());
  }

  /**
   * The share `token` of `caller` that is complete, not revoked and not expired; the one answer
   * for every other case, so that the route does not tell which tokens exist.
   * @throws AppError `not_found`.
   */
  private async ownLive(caller: string, token: string): Promise<ShareRow> {
    const row = isTokenShaped(token) ? await this.store.repos.shares.byToken(token) : undefined;
    if (
      !row ||
      row.owner !== caller ||
      row.state !== "complete" ||
      row.revokedAt !== null ||
      (row.expiresAt !== null && row.expiresAt <= this.clock.now())
    )
      throw fail("not_found", "No such share");
    return row;
  }

  /**
   * `PATCH /v1/shares/{token}`: `expires_at` = now + `ttl` (null for `never`).
   * @throws AppError `not_found` (unknown, another account's, revoked, uploading or expired).
   */
  async setTtl(caller: string, token: string, ttl: ShareTtl): Promise<MintedShare> {
    const row = await this.ownLive(caller, token);
    const expiresAt = expiryOf(ttl, this.clock.now());
    await this.store.repos.shares.update(row.shareId, { expiresAt });
    return { share_token: row.token, expires_at: rfc3339(expiresAt) };
  }

  /**
   * `DELETE /v1/shares/{token}`: revokes `caller`'s share (an upload too); the link stops working
   * now and the reaper deletes the objects.
   * @throws AppError `not_found` (unknown, another account's, already revoked).
   */
  async revoke(caller: string, token: string): Promise<void> {
    const row = isTokenShaped(token) ? await this.store.repos.shares.byToken(token) : undefined;
    if (!row || row.owner !== caller || row.revokedAt !== null) throw fail("not_found", "No such share");
    await this.store.repos.shares.update(row.shareId, { revokedAt: this.clock.now() });
  }

  /**
   * `PUT /v1/shares/owner-wraps`: stores each wrap on `caller`'s share; other tokens are skipped.
   * @returns the number of shares updated.
   */
  async putOwnerWraps(caller: string, wraps: Static<typeof FileOwnerWrapsBody>["wraps"]): Promise<number> {
    let applied = 0;
    for (const w of wraps)
      if (isTokenShaped(w.token) && (await this.store.repos.shares.setOwnerWrap(caller, w.token, w.wrap)))
        applied++;
    return applied;
  }

  /**
   * The share `token` as an anonymous reader may see it: complete, not revoked, not expired.
   * @throws AppError `not_found` (unknown, revoked or still uploading), `gone` (410: expired).
   */
  async readable(token: string): Promise<ReadableShare> {
    const row = isTokenShaped(token) ? await this.store.repos.shares.byToken(token) : undefined;
    if (!row || row.revokedAt !== null || row.state !== "complete" || row.blobKey === null)
      throw fail("not_found", "No such share");
    if (row.expiresAt !== null && row.expiresAt <= this.clock.now())
      throw fail("gone", "This link has expired");
    if (row.maxDownloads !== null && row.downloadCount >= row.maxDownloads)
      throw fail("gone", "This link has reached its download limit", {
        fields: { reason: "download_limit" },
      });
    return row as ReadableShare;
  }

  /**
   * Wraps the body of one blob answer of a tracked share (`access_log` or `max_downloads`,
   * docs/sharing.md "Download limits" and "Access log") in a stream that counts the bytes handed
   * over. When the answer is the whole blob, the download is claimed (`claimDownload`) before its
   * last piece is handed over; a refused claim (the limit was reached by a parallel download)
   * errors the stream, so the client never gets a complete body. When the body ends, completes or
   * is cancelled, one access-log row is written (a failure to write it is logged, not thrown).
   * @param whole true when the answer is `[0, ciphertext_size)`.
   */
  trackedBody(
    share: ReadableShare,
    body: ReadableStream<Uint8Array>,
    length: number,
    whole: boolean,
    clientAddress: string,
  ): ReadableStream<Uint8Array> {
    const at = this.clock.now();
    const reader = body.getReader();
    let sent = 0;
    let completed = false;
    let logged = false;
    const finish = async (): Promise<void> => {
      if (logged) return;
      logged = true;
      try {
        await this.store.repos.shares.insertAccess({
          accessId: randomHex(16),
          shareId: share.shareId,
          at,
          bytesSent: sent,
          completed,
          clientAddress: this.opts.logAddresses ? clientAddress : null,
        });
      } catch (e) {
        this.log.warn("share.access_log_failed", { error: e as Error });
      }
    };
    return new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          try {
            const { done, value } = await reader.read();
            if (done) {
              controller.close();
              await finish();
              return;
            }
            if (whole && sent + value.byteLength >= length) {
              if (!(await this.store.repos.shares.claimDownload(share.shareId))) {
                await reader.cancel();
                controller.error(fail("gone", "This link has reached its download limit"));
                await finish();
                return;
              }
              completed = true;
            }
            sent += value.byteLength;
            controller.enqueue(value);
          } catch (e) {
            completed = false;
            controller.error(e);
            await finish();
          }
        },
        cancel: async (reason) => {
          completed = false;
          await reader.cancel(reason);
          await finish();
        },
      },
      { highWaterMark: 0 },
    );
  }

  /**
   * `GET /v1/shares/{token}/accesses`: the counters and newest `MAX_ACCESS_ROWS` access-log rows
   * of `caller`'s share (complete, not revoked; expired and used-up ones too, until reaped).
   * @throws AppError `not_found` (unknown, another account's, revoked or uploading).
   */
  async accesses(caller: string, token: string): Promise<ShareAccessLog> {
    const row = isTokenShaped(token) ? await this.store.repos.shares.byToken(token) : undefined;
    if (!row || row.owner !== caller || row.state !== "complete" || row.revokedAt !== null)
      throw fail("not_found", "No such share");
    const rows = await this.store.repos.shares.accesses(row.shareId, MAX_ACCESS_ROWS + 1);
    return {
      maxDownloads: row.maxDownloads,
      downloadCount: row.downloadCount,
      rows: rows.slice(0, MAX_ACCESS_ROWS),
      truncated: rows.length > MAX_ACCESS_ROWS,
    };
  }

  /**
   * One reaper pass: deletes up to 100 revoked, expired or idle uploading shares, queuing their
   * objects for deletion (after the grace period) in the same transaction.
   * @returns the number of shares reaped.
   */
  async reap(): Promise<number> {
    let reaped = 0;
    for (;;) {
      const now = this.clock.now();
      const idleBefore = now - SHARE_UPLOAD_IDLE_SECONDS;
      const rows = await this.store.repos.shares.reapable(now, idleBefore, 100);
      const before = reaped;
      for (const row of rows) {
        const done = await this.store.transaction(async (tx) => {
          const s = await tx.shares.getForUpdate(row.shareId);
          if (!s) return false;
          const dead =
            s.revokedAt !== null ||
            (s.expiresAt !== null && s.expiresAt <= now) ||
            (s.state === "uploading" && s.updatedAt < idleBefore);
          if (!dead) return false;
          await tx.deletionQueue.enqueue([shareObjectPrefix(s.shareId)], now + this.opts.graceSeconds);
          await tx.shares.remove(s.shareId);
          return true;
        });
        if (done) reaped++;
      }
      if (rows.length < 100 || reaped === before) break;
    }
    if (reaped > 0) this.log.info("share.reaped", { count: reaped });
    return reaped;
  }

  /**
   * Gives up the write of object `key` (intent `intent`): due for deletion now, and deleted at
   * once when the store allows it (else the sweeper does).
   */
  private async discard(intent: number, key: string): Promise<void> {
    await this.store.repos.deletionQueue.release(intent, key, this.clock.now());
    try {
      await this.blobs.delete([key]);
      await this.store.repos.deletionQueue.done(intent);
    } catch (e) {
      this.log.warn("share.discard_failed", { error: e as Error });
    }
  }
}
