/**
 * @module client/uploader
 * Uploads one local file: seal (encrypt + hash once, `seal.ts`), sign the manifest, send.
 *
 * - Ciphertext ≤ 8 MiB: single-shot `POST /upload`, the blob in memory.
 * - Larger: a session (docs/protocol.md#upload-sessions) with `chunk_size` 8 MiB. The manifest needs the
 *   ciphertext hash when the session opens, so a first pass encrypts and hashes the file without
 *   keeping the blob; each chunk is then encrypted again from the file as it is sent (same base
 *   nonce, same bytes; docs/framing.md), at most `parallelism` (4) at a time; then `status` once
 *   to resend anything missing, then finalize (empty body, `Content-Length: 0`), as the real
 *   clients do (docs/protocol.md#ciphertext).
 * - Network errors, 5xx and 429 are retried with jittered exponential backoff (`retry.ts`).
 *   A finalize whose answer was lost is settled by `status`: `finalized` means done.
 * - With a `stateFile`, the session id, base nonce, hashes and the file's identity (size, mtime,
 *   inode) are remembered before the first chunk; a later call for the same file checks
 *   `status` and encrypts and sends only the chunks the server lacks, under the saved nonce. When
 *   the inode differs (size and mtime equal), the file is hashed again under that nonce and
 *   resumed only if the hash still matches. A 404 means the session expired: a new one is
 *   opened. Aborting via `signal` keeps the session and state for that resume.
 * - Retries that run out on an outage (network, 5xx, 429 for the whole budget) keep the session
 *   and state, so the next run resumes. Any other failure deletes the session and
 *   forgets it; if even the DELETE fails, the state is kept so a later run can resume or clean up.
 * - A 409 Conflict envelope (docs/protocol.md#manifest) is thrown as `ApiError`, unless
 *   `onConflict: "rebase"`: the manifest moves onto the current revision (signature unchanged)
 *   and the upload is redone (a new session: a session's manifest is fixed at creation).
 */
import { stat } from "node:fs/promises";
import type { WireManifest } from "@esync/protocol/manifest.ts";
import type { EsyncApi } from "./api.ts";
import { ApiError } from "./api-error.ts";
import type { UploadResult } from "./api-types.ts";
import type { FrameEncryptor } from "./frame.ts";
import { fromHex } from "./hash.ts";
import {
  buildManifest,
  fileId,
  type ManifestSigner,
  NEW_FILE,
  normalizeRelativePath,
  pathHash,
  type RevisionInfo,
  rebaseManifest,
} from "./manifest.ts";
import { DEFAULT_RETRY, type RetryPolicy, realSleep, type Sleep, withRetry } from "./retry.ts";
import {
  openSealedFile,
  type SealedBlob,
  sealedFileRecord,
  sealFileStreaming,
  WHOLE_READ_BYTES,
} from "./seal.ts";
import { type PendingUpload, type UploadStateFile, uploadKey } from "./upload-state.ts";

/** Largest ciphertext sent single-shot: 8 MiB (docs/protocol.md#ciphertext). */
export const SINGLE_SHOT_LIMIT = 8 * 1024 * 1024;
/** Session chunk size: 8 MiB (docs/protocol.md#ciphertext; the server allows up to 16 MiB). */
export const DEFAULT_CHUNK_SIZE = 8 * 1024 * 1024;
/** Chunks in flight at once. */
export const DEFAULT_PARALLELISM = 4;
/** Rebases attempted on repeated Conflicts before giving up. */
export const MAX_REBASES = 3;

/** Progress of one file's upload. Byte counts are ciphertext unless named otherwise. */
export interface UploadProgress {
  phase: "encrypting" | "uploading" | "finalizing" | "done";
  /** Plaintext bytes encrypted so far, and the file's plaintext size. */
  encryptedBytes: number;
  plaintextSize: number;
  /** Bytes the server acknowledged in this run (all sessions, a rebase's resend included). */
  bytesSent: number;
  /** Bytes the current session holds: skipped plus sent to it; `bytesDone / bytesTotal` is the bar. */
  bytesDone: number;
  /** Bytes already on the server from an earlier run (resume). */
  bytesSkipped: number;
  /** Ciphertext size (0 until encryption finished). */
  bytesTotal: number;
  chunksDone: number;
  chunksTotal: number;
  /** `bytesSent` per second since sending started. */
  rateBytesPerSec: number;
  elapsedMs: number;
}

/** Folder keys that sign and encrypt (`FolderKeys` fits). */
export interface UploadFolder extends ManifestSigner {
  readonly folderHash: string;
  readonly key: Uint8Array;
}

/** Options of `uploadFile`. */
export interface UploadFileOptions {
  api: EsyncApi;
  /** Account address (manifest `ss58_address`, salt of `salted_hash`). */
  ss58Address: string;
  folder: UploadFolder;
  /** File to read. */
  localPath: string;
  /** Its path inside the folder (normalised: NFC, `/`). */
  relativePath: string;
  /**
   * Default a new file (seq 1, no base). A resumed session keeps the manifest (and revision)
   * it was opened with; a Conflict at its finalize is handled by `onConflict`.
   */
  revision?: RevisionInfo;
  /**
   * The manifest's `attributes` (esync extension) for the sealed content, given its
   * `salted_hash` (32 bytes); omitted when undefined.
   */
  attributes?: (saltedHash: Uint8Array) => Uint8Array;
  /** On a 409 Conflict envelope: throw (default) or rebase onto the current revision and retry. */
  onConflict?: "fail" | "rebase";
  /** Remembers sessions for resume; without it an interrupted upload starts over. */
  stateFile?: UploadStateFile;
  chunkSize?: number;
  parallelism?: number;
  /** Ciphertexts up to this size go single-shot; default 8 MiB. */
  singleShotLimit?: number;
  retry?: Partial<RetryPolicy>;
  onProgress?: (progress: UploadProgress) => void;
  /** Aborting leaves a session (and its state) in place for a later resume. */
  signal?: AbortSignal;
  /** Encrypt on worker threads (an `EncryptPool` shared by the caller); default this thread. */
  encryptPool?: FrameEncryptor;
  /**
   * The file's size and mtime as the caller last saw them (a scan of the tree): for a file of at
   * most 1 MiB, used instead of reading them again (`SealOptions.before`; a file changed since is
   * sent as it is now).
   */
  localStat?: { size: number; mtimeMs: number };
  /** Injected for tests. */
  sleep?: Sleep;
  /** Device-independent clock, Unix seconds; default the wall clock. */
  now?: () => number;
}

/** What an upload did. */
export interface UploadOutcome {
  /** The server's result; null when a resumed session turned out to be finalized already. */
  result: UploadResult | null;
  /** The manifest finally accepted. */
  manifest: WireManifest;
  mode: "single" | "session";
  sessionId: string | null;
  /** True when an earlier session was resumed. */
  resumed: boolean;
  bytesSent: number;
  bytesSkipped: number;
  /** Times the manifest was rebased on a Conflict. */
  rebases: number;
}

class Progress {
  readonly p: UploadProgress;
  private readonly t0 = performance.now();
  private sendStart = 0;

  constructor(
    plaintextSize: number,
    private readonly listener?: (p: UploadProgress) => void,
  ) {
    this.p = {
      phase: "encrypting",
      encryptedBytes: 0,
      plaintextSize,
      bytesSent: 0,
      bytesDone: 0,
      bytesSkipped: 0,
      bytesTotal: 0,
      chunksDone: 0,
      chunksTotal: 0,
      rateBytesPerSec: 0,
      elapsedMs: 0,
    };
  }

  startSending(total: number, chunks: number): void {
    this.p.phase = "uploading";
    this.p.bytesTotal = total;
    this.p.chunksTotal = chunks;
    this.p.encryptedBytes = this.p.plaintextSize;
    if (this.sendStart === 0) this.sendStart = performance.now();
    this.emit();
  }

  update(patch: Partial<UploadProgress>): void {
    Object.assign(this.p, patch);
    this.emit();
  }

  emit(): void {
    if (!this.listener) return;
    const now = performance.now();
    this.p.elapsedMs = now - this.t0;
    const sending = this.sendStart ? (now - this.sendStart) / 1000 : 0;
    this.p.rateBytesPerSec = sending > 0 ? this.p.bytesSent / sending : 0;
    this.listener({ ...this.p });
  }
}

/** Raised inside a session run when the server lost the session (404): a new one is opened. */
class SessionGone extends Error {}

interface Ctx {
  o: UploadFileOptions;
  api: EsyncApi;
  key: string;
  retry: RetryPolicy;
  sleep: Sleep;
  chunkSize: number;
  progress: Progress;
}

function retryOpts(ctx: Ctx) {
  return { policy: ctx.retry, sleep: ctx.sleep, signal: ctx.o.signal };
}

/** Uploads `localPath` as `relativePath` of the folder; see the module note for the policy. */
export async function uploadFile(o: UploadFileOptions): Promise<UploadOutcome> {
  const rel = normalizeRelativePath(o.relativePath);
  const id = fileId(pathHash(rel));
  const chunkSize = o.chunkSize ?? DEFAULT_CHUNK_SIZE;
  if (!Number.isSafeInteger(chunkSize) || chunkSize < 1 || chunkSize > 16 * 1024 * 1024) {
    throw new RangeError(`chunk size must be 1..16 MiB, got ${chunkSize}`);
  }
  // A large file is looked at afresh: its size and mtime are remembered for a resume.
  const st = o.localStat && o.localStat.size <= WHOLE_READ_BYTES ? o.localStat : await stat(o.localPath);
  const ctx: Ctx = {
    o,
    api: o.api,
    key: uploadKey(o.ss58Address, o.folder.folderHash, id),
    retry: { ...DEFAULT_RETRY, ...o.retry },
    sleep: o.sleep ?? realSleep,
    chunkSize,
    progress: new Progress(st.size, o.onProgress),
  };

  const pending = await o.stateFile?.get(ctx.key);
  if (pending) {
    const resumed = await tryResume(ctx, pending, st);
    if (resumed) return resumed;
  }

  const limit = o.singleShotLimit ?? SINGLE_SHOT_LIMIT;
  const sealed = await sealFileStreaming(o.localPath, {
    key: o.folder.key,
    ss58Address: o.ss58Address,
    memoryLimit: limit,
    onProgress: (done) => ctx.progress.update({ encryptedBytes: done }),
    signal: o.signal,
    pool: o.encryptPool,
    before: st,
  });
  const manifest = buildManifest(
    {
      ss58Address: o.ss58Address,
      folderHash: o.folder.folderHash,
      ciphertextHash: sealed.ciphertextHash,
      sizeBytes: sealed.plaintextSize,
      saltedHash: sealed.saltedHash,
      relativePath: rel,
      revision: o.revision ?? NEW_FILE,
      timestamp: o.now?.(),
      attributes: o.attributes?.(sealed.saltedHash),
    },
    o.folder,
  );
  if (sealed.ciphertextSize <= limit) {
    try {
      return await singleShot(ctx, sealed, manifest);
    } finally {
      await sealed.dispose();
    }
  }
  return runSessions(ctx, sealed, manifest, null, st.mtimeMs, false);
}

async function singleShot(ctx: Ctx, sealed: SealedBlob, first: WireManifest): Promise<UploadOutcome> {
  let manifest = first;
  ctx.progress.startSending(sealed.ciphertextSize, 1);
  for (let rebases = 0; ; rebases++) {
    try {
      const result = await withRetry(
        () => ctx.api.upload(manifest, sealed.slice(), ctx.o.signal),
        retryOpts(ctx),
      );
      const n = sealed.ciphertextSize;
      ctx.progress.update({ phase: "done", bytesSent: n, bytesDone: n, chunksDone: 1 });
      return {
        result,
        manifest,
        mode: "single",
        sessionId: null,
        resumed: false,
        bytesSent: sealed.ciphertextSize,
        bytesSkipped: 0,
        rebases,
      };
    } catch (e) {
      const conflict = e instanceof ApiError ? e.conflict : undefined;
      if (!conflict || ctx.o.onConflict !== "rebase" || rebases >= MAX_REBASES) throw e;
      manifest = rebaseManifest(manifest, conflict);
    }
  }
}

/** Resumes a remembered session; null when it cannot be (the caller then starts afresh). */
async function tryResume(
  ctx: Ctx,
  pending: PendingUpload,
  st: { size: number; mtimeMs: number },
): Promise<UploadOutcome | null> {
  const same =
    pending.localPath === ctx.o.localPath &&
    pending.plaintextSize === st.size &&
    pending.mtimeMs === st.mtimeMs &&
    pending.chunkSize === ctx.chunkSize;
  let sealed: SealedBlob | null = null;
  if (same) {
    sealed = await openSealedFile(pending.sealed, { key: ctx.o.folder.key, pool: ctx.o.encryptPool });
    if (!sealed) {
      // Not the recorded file (or a spill file left by an older client is gone): hashed again
      // under the saved base nonce, it is the same blob only if the hash still matches.
      const again = await sealFileStreaming(ctx.o.localPath, {
        key: ctx.o.folder.key,
        ss58Address: ctx.o.ss58Address,
        baseNonce: fromHex(pending.sealed.baseNonceHex),
        memoryLimit: 0,
        onProgress: (done) => ctx.progress.update({ encryptedBytes: done }),
        signal: ctx.o.signal,
        pool: ctx.o.encryptPool,
      });
      if (again.ciphertextHash === pending.manifest.ciphertext_hash) sealed = again;
      else await again.dispose();
    }
  }
  if (!sealed) {
    await abandon(ctx, pending.sessionId, pending.sealed.spillPath);
    return null;
  }
  return runSessions(ctx, sealed, pending.manifest, pending.sessionId, pending.mtimeMs, true);
}

/** Best-effort DELETE of a session and removal of its state and spill file. */
async function abandon(ctx: Ctx, sessionId: string, spillPath: string | null): Promise<void> {
  let gone = false;
  try {
    await ctx.api.deleteSession(sessionId);
    gone = true;
  } catch (e) {
    gone = e instanceof ApiError && (e.status === 404 || e.status === 403);
  }
  if (gone) {
    await ctx.o.stateFile?.delete(ctx.key);
    if (spillPath)
      await Bun.file(spillPath)
        .delete()
        .catch(() => {});
  }
}

/** Opens (or resumes) sessions until the blob is finalized, rebasing on Conflict when asked. */
async function runSessions(
  ctx: Ctx,
  sealed: SealedBlob,
  first: WireManifest,
  resumeId: string | null,
  mtimeMs: number,
  resumed: boolean,
): Promise<UploadOutcome> {
  let manifest = first;
  let sessionId = resumeId;
  let rebases = 0;
  let expiries = 0;
  const chunkCount = Math.ceil(sealed.ciphertextSize / ctx.chunkSize);
  const p = ctx.progress;
  try {
    for (;;) {
      let received = new Set<number>();
      if (sessionId) {
        try {
          const status = await withRetry(() => ctx.api.sessionStatus(sessionId as string), retryOpts(ctx));
          if (status.ciphertext_hash !== sealed.ciphertextHash || status.total_chunks !== chunkCount) {
            await ctx.api.deleteSession(sessionId).catch(() => {});
            sessionId = null;
          } else if (status.state === "finalized") {
            await finish(ctx, sealed);
            const n = sealed.ciphertextSize;
            p.update({ phase: "done", bytesSkipped: n, bytesDone: n, bytesTotal: n, chunksDone: chunkCount });
            return outcome(null, manifest, sessionId, resumed, 0, sealed.ciphertextSize, rebases);
          } else {
            received = new Set(status.chunks_received);
          }
        } catch (e) {
          if (!(e instanceof ApiError && e.status === 404)) throw e;
          sessionId = null; // expired: open a new one
        }
      }
      if (!sessionId) {
        const created = await withRetry(
          () =>
            ctx.api.createSession({
              manifest,
              chunkCount,
              chunkSize: ctx.chunkSize,
              ciphertextSize: sealed.ciphertextSize,
            }),
          retryOpts(ctx),
        );
        sessionId = created.session_id;
        const record = sealedFileRecord(sealed);
        if (ctx.o.stateFile && record) {
          await ctx.o.stateFile.put(ctx.key, {
            sessionId,
            localPath: ctx.o.localPath,
            plaintextSize: sealed.plaintextSize,
            mtimeMs,
            chunkSize: ctx.chunkSize,
            chunkCount,
            ciphertextSize: sealed.ciphertextSize,
            sealed: record,
            manifest,
            createdAt: Math.floor(Date.now() / 1000),
          });
        }
      }
      const skipped = [...received].reduce(
        (n, i) => n + chunkLength(sealed.ciphertextSize, ctx.chunkSize, i),
        0,
      );
      p.update({ bytesSkipped: skipped, bytesDone: skipped, chunksDone: received.size });
      p.startSending(sealed.ciphertextSize, chunkCount);
      try {
        await sendChunks(ctx, sealed, sessionId, received, chunkCount);
        // Once more from the server's view, as the real clients do: resend anything it lacks.
        const status = await withRetry(() => ctx.api.sessionStatus(sessionId as string), retryOpts(ctx));
        const have = new Set(status.chunks_received);
        if (have.size < chunkCount) {
          const missing = new Set([...Array(chunkCount).keys()].filter((i) => !have.has(i)));
          await sendChunks(ctx, sealed, sessionId, new Set([...have]), chunkCount, missing);
        }
        p.update({ phase: "finalizing" });
        const result = await finalize(ctx, sessionId);
        await finish(ctx, sealed);
        p.update({ phase: "done" });
        return outcome(result, manifest, sessionId, resumed, p.p.bytesSent, p.p.bytesSkipped, rebases);
      } catch (e) {
        if (e instanceof SessionGone || (e instanceof ApiError && e.status === 404)) {
          if (++expiries > 2) throw e;
          sessionId = null;
          continue;
        }
        const conflict = e instanceof ApiError ? e.conflict : undefined;
        if (conflict && ctx.o.onConflict === "rebase" && rebases < MAX_REBASES) {
          rebases++;
          manifest = rebaseManifest(manifest, conflict);
          await ctx.api.deleteSession(sessionId).catch(() => {});
          sessionId = null;
          continue;
        }
        throw e;
      }
    }
  } catch (e) {
    if (ctx.o.signal?.aborted) throw e; // interrupted: keep session and state for a resume
    // The server stayed unreachable or failing for the whole retry budget: keep them too.
    if (sessionId && e instanceof ApiError && e.retryable && e.extra.retriedForMs !== undefined) throw e;
    if (sessionId) await abandon(ctx, sessionId, sealed.spillPath);
    else await finish(ctx, sealed);
    throw e;
  }
}

function outcome(
  result: UploadResult | null,
  manifest: WireManifest,
  sessionId: string | null,
  resumed: boolean,
  bytesSent: number,
  bytesSkipped: number,
  rebases: number,
): UploadOutcome {
  return { result, manifest, mode: "session", sessionId, resumed, bytesSent, bytesSkipped, rebases };
}

async function finish(ctx: Ctx, sealed: SealedBlob): Promise<void> {
  await ctx.o.stateFile?.delete(ctx.key);
  await sealed.dispose();
}

/** Bytes of chunk `index` of a blob of `total` bytes. */
export function chunkLength(total: number, chunkSize: number, index: number): number {
  return Math.max(0, Math.min(chunkSize, total - index * chunkSize));
}

/** Sends the chunks not in `received` (or exactly `only`), `parallelism` at a time. */
async function sendChunks(
  ctx: Ctx,
  sealed: SealedBlob,
  sessionId: string,
  received: Set<number>,
  chunkCount: number,
  only?: Set<number>,
): Promise<void> {
  const todo = [...Array(chunkCount).keys()].filter((i) => (only ? only.has(i) : !received.has(i)));
  const inner = new AbortController();
  const signal = ctx.o.signal ? AbortSignal.any([ctx.o.signal, inner.signal]) : inner.signal;
  let next = 0;
  let failure: unknown = null;
  const worker = async () => {
    while (failure === null && next < todo.length) {
      const index = todo[next++] as number;
      const start = index * ctx.chunkSize;
      const end = Math.min(start + ctx.chunkSize, sealed.ciphertextSize);
      try {
        const body = await sealed.read(start, end);
        await withRetry(() => ctx.api.putChunk(sessionId, index, body, signal), {
          ...retryOpts(ctx),
          signal,
        });
      } catch (e) {
        if (failure === null) failure = e instanceof ApiError && e.status === 404 ? new SessionGone() : e;
        inner.abort(failure);
        return;
      }
      received.add(index);
      const p = ctx.progress.p;
      ctx.progress.update({
        bytesSent: p.bytesSent + (end - start),
        bytesDone: p.bytesDone + (end - start),
        chunksDone: p.chunksDone + 1,
      });
    }
  };
  const n = Math.max(1, Math.min(ctx.o.parallelism ?? DEFAULT_PARALLELISM, todo.length));
  await Promise.all(Array.from({ length: n }, worker));
  if (failure !== null) {
    if (ctx.o.signal?.aborted) throw ctx.o.signal.reason;
    throw failure;
  }
}

/**
 * Finalize, retried only when its answer was lost: `status` tells whether it committed
 * (`finalized`: done, result unknown) or not (`receiving`: try again).
 */
async function finalize(ctx: Ctx, sessionId: string): Promise<UploadResult | null> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await ctx.api.finalizeSession(sessionId);
    } catch (e) {
      const lost = e instanceof ApiError && (e.retryable || (e.status === 409 && !e.conflict));
      if (!lost || attempt >= ctx.retry.attempts) throw e;
      const status = await withRetry(() => ctx.api.sessionStatus(sessionId), retryOpts(ctx));
      if (status.state === "finalized") return null;
      if (e.status === 409) throw e;
      await ctx.sleep(ctx.retry.baseDelayMs * 2 ** (attempt - 1), ctx.o.signal);
    }
  }
}
