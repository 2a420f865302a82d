/**
 * @module server/ops/fsck
 * Consistency check of the metadata database against the blob store (`bun run fsck`), dry run by
 * default, repairing what can be repaired with `repair: true`. Problems found, by `kind`:
 *
 * - `orphan_object`: an object that nothing accounts for. An object is accounted for when a file
 *   row or a kept version (docs/versions.md) references it (its blob and chunk generation), an upload session (any state, expired or
 *   not yet swept) covers its blob prefix, a stored file share covers its `s/<share_id>/` prefix
 *   (docs/sharing.md), or a queued deletion or write intent in
 *   `blob_deletions` names it or a prefix of it (objects waiting out the grace period are not
 *   orphans). Repair: the object is deleted.
 * - `missing_object`: a file row's or a kept version's chunk object does not exist. Not
 *   repairable (the bytes are gone); the file's download (or the version's restore) fails until
 *   it is uploaded again.
 * - `wrong_size`: a file row's chunk object exists with a size other than the row's chunk layout
 *   gives. Not repairable.
 * - `counter_mismatch`: a folder's `file_count`/`total_bytes` differ from its files, or are
 *   negative or not integers (also a folder row missing for files). Repair: recomputed.
 * - `orphan_upload`: a multipart upload in progress (S3) that no upload session names and no queued
 *   abort or write intent covers (a server that died between opening the upload and recording
 *   it cannot leave one: its intent is recorded first; an operator's or another tool's can).
 *   Listed before the database is read, like the objects. Repair: the upload is aborted, after
 *   the database is asked once more.
 * - `stuck_session`: a session in the internal `finalizing` state whose finalize lease
 *   (`finalizing_until`) ran out, that has none (left by a version without leases), or whose
 *   lease holder is provably dead as seen from the fsck process (`LeaseHolders.isDead`: a
 *   process of this machine and pid namespace that is gone). A live finalize renews its lease,
 *   and every node's sweeper returns sessions whose lease ran out or whose holder died, so this
 *   is found only between sweeps or when no server runs. Repair: returned to `receiving` for one
 *   more session lifetime, chunks intact.
 *
 * The blob store is listed before the database is read (`OpsRepository.snapshot`: one read
 * transaction on SQLite, one `REPEATABLE READ` transaction on PostgreSQL), so that an object a
 * running server writes meanwhile is already covered by its write intent when the rows are read.
 * Memory: the rows are read in pages (`pageSize`, default 1000) and never all held; what grows
 * with the service is the store's key listing (kept sorted, one string and one byte per object)
 * and the problems found. The objects of the files are then sized page by page (missing and
 * wrong-sized ones are reported only when their file row is still the same after a re-read).
 * Repairs are safe beside live servers on any number of nodes: an orphan is deleted only after
 * the database is asked once more whether anything references it; counters are recomputed in a
 * transaction under the owner's lock, in a way that loses no concurrent writer's counter change
 * (`OpsRepository.recountFolder`); a stuck session is released by a conditional update that a
 * renewed lease defeats.
 */
import { existsSync } from "node:fs";
import type { Config } from "../config/config.ts";
import { openMetadataStore } from "../db/open.ts";
import type { MetadataStore } from "../db/store.ts";
import { LeaseHolders } from "../sessions/lease-holder.ts";
import { shareObjectPrefix } from "../shares/share-rules.ts";
import { type BlobStore, isMultipart, type OpenUpload } from "../storage/blob-store.ts";
import { createBlobStore } from "../storage/index.ts";
import { blobPrefix, chunkKey, multipartBlobId } from "../storage/layout.ts";
import { type Clock, systemClock } from "../util/clock.ts";
import { chunkKeysOf, type FileLayout, objectsOf, type VersionLayout } from "./ops.repository.ts";

/** The kinds of problem fsck reports. */
export type FsckKind =
  | "orphan_object"
  | "missing_object"
  | "wrong_size"
  | "counter_mismatch"
  | "stuck_session"
  | "orphan_upload";

/** One problem found. `detail` is a sentence for a person; the other fields are for machines. */
export interface FsckProblem {
  kind: FsckKind;
  detail: string;
  /** Object key (object problems). */
  key?: string;
  /** Owner and folder of the row concerned (row problems). */
  owner?: string;
  folder_hash?: string;
  /** Multipart upload id (`orphan_upload`; its object key is `key`). */
  upload_id?: string;
  /** Session id (`stuck_session`). */
  session_id?: string;
  /** True when `--repair` fixed it. */
  repaired: boolean;
}

/** The result of a run; the shape `bun run fsck --json` prints. */
export interface FsckReport {
  /** True when no problem remains (none found, or every one repaired). */
  ok: boolean;
  problems: FsckProblem[];
  /** How many problems were repaired. */
  repaired: number;
}

/** What fsck works on. */
export interface FsckDeps {
  /** The metadata store (either dialect). */
  store: MetadataStore;
  blobs: BlobStore;
  clock: Clock;
}

/** Options of `runFsck`. */
export interface FsckOptions {
  /** Repair what can be repaired (default: dry run). */
  repair?: boolean;
  /** Session lifetime given to a repaired stuck session, seconds (default 86400). */
  sessionTtlSeconds?: number;
  /** Rows read per page, and objects sized per batch (default 1000): memory holds one page. */
  pageSize?: number;
}

/** The index of the first of the sorted `keys` not below `key` (`keys.length` when none). */
function lowerBound(keys: readonly string[], key: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((keys[mid] as string) < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Sizes of `keys`, 32 requests at a time. */
async function sizes(blobs: BlobStore, keys: string[]): Promise<(number | null)[]> {
  const out: (number | null)[] = new Array(keys.length);
  for (let i = 0; i < keys.length; i += 32) {
    const batch = await Promise.all(keys.slice(i, i + 32).map((k) => blobs.size(k)));
    for (let j = 0; j < batch.length; j++) out[i + j] = batch[j] ?? null;
  }
  return out;
}

/**
 * Checks (and with `repair`, repairs) the database against the blob store. Safe to run beside
 * running servers (see the module comment).
 * @throws when the database or the store cannot be read (the CLI's exit status 2).
 */
export async function runFsck(deps: FsckDeps, opts: FsckOptions = {}): Promise<FsckReport> {
  const { store, blobs, clock } = deps;
  const repair = opts.repair ?? false;
  const ttl = opts.sessionTtlSeconds ?? 86400;
  const pageSize = opts.pageSize ?? 1000;
  const problems: FsckProblem[] = [];

  // 1. List the store first (see the module comment), then mark every object the database
  // accounts for, reading the rows page by page from one snapshot.
  const listed = (await blobs.list("")).sort();
  const uploads: OpenUpload[] = [];
  if (isMultipart(blobs)) for await (const u of blobs.listMultipart("")) uploads.push(u);
  const accounted = new Uint8Array(listed.length);
  const mark = (key: string) => {
    const i = lowerBound(listed, key);
    if (listed[i] === key) accounted[i] = 1;
  };
  const markPrefix = (prefix: string) => {
    for (let i = lowerBound(listed, prefix); i < listed.length && listed[i]?.startsWith(prefix); i++)
      accounted[i] = 1;
  };
  const now = clock.now();
  const snapshot = await store.repos.ops.snapshot(now, pageSize, (page) => {
    if (page.kind === "files") for (const row of page.rows) for (const key of chunkKeysOf(row)) mark(key);
    else if (page.kind === "sessions")
      for (const id of page.blobIds) {
        markPrefix(blobPrefix(id));
        // The object a multipart session's upload completes into, until the file row takes it.
        mark(chunkKey(multipartBlobId(id), 0, ""));
      }
    else if (page.kind === "shares") for (const id of page.shareIds) markPrefix(shareObjectPrefix(id));
    else for (const target of page.targets) target.endsWith("/") ? markPrefix(target) : mark(target);
  });

  // 2. Orphan objects (a candidate deleted since the listing, e.g. by the sweeper, is skipped).
  const orphans = async (candidates: string[]) => {
    const candidateSizes = await sizes(blobs, candidates);
    for (const [i, key] of candidates.entries()) {
      if (candidateSizes[i] === null) continue;
      const problem: FsckProblem = {
        kind: "orphan_object",
        detail: `object ${key} is referenced by no file, session, write intent or queued deletion`,
        key,
        repaired: false,
      };
      // Asked again right before deleting: whatever came to reference the object since the
      // snapshot keeps it (it is then no orphan, and not reported).
      if (repair) {
        if (await store.repos.ops.isReferenced(key)) continue;
        await blobs.delete([key]);
        problem.repaired = true;
      }
      problems.push(problem);
    }
  };
  let candidates: string[] = [];
  for (const [i, key] of listed.entries()) {
    if (accounted[i]) continue;
    candidates.push(key);
    if (candidates.length >= pageSize) {
      await orphans(candidates);
      candidates = [];
    }
  }
  await orphans(candidates);

  // 2b. Multipart uploads no session or queued abort accounts for (asked again before the abort).
  for (const u of uploads) {
    if (await store.repos.ops.isUploadOwned(u.key, u.uploadId)) continue;
    const problem: FsckProblem = {
      kind: "orphan_upload",
      detail: `multipart upload ${u.uploadId} of ${u.key} is named by no session, write intent or queued abort`,
      key: u.key,
      upload_id: u.uploadId,
      repaired: false,
    };
    if (repair && isMultipart(blobs) && !(await store.repos.ops.isUploadOwned(u.key, u.uploadId))) {
      await blobs.abortMultipart(u.key);
      problem.repaired = true;
    }
    problems.push(problem);
  }

  // 3. Missing objects and wrong sizes, file page by file page (reported only when the file row
  // is still the one read: a file replaced or deleted since may have lost its objects rightly).
  for (let after: FileLayout | null = null; ; ) {
    const rows: FileLayout[] = await store.repos.ops.fileLayouts(after, pageSize);
    const chunks = rows.flatMap((row) =>
      objectsOf(row).map((o) => ({ key: o.key, expected: o.end - o.start, row })),
    );
    const actual = await sizes(
      blobs,
      chunks.map((c) => c.key),
    );
    for (const [i, c] of chunks.entries()) {
      const size = actual[i] ?? null;
      if (size === c.expected) continue;
      const current = await store.repos.files.get(c.row.owner, c.row.folderHash, c.row.pathHash);
      if (current?.blobId !== c.row.blobId || current.chunkGens !== c.row.chunkGens) continue;
      const file = `file ${Buffer.from(c.row.pathHash).toString("hex")} of folder ${c.row.folderHash} (${c.row.owner})`;
      problems.push(
        size === null
          ? {
              kind: "missing_object",
              detail: `object ${c.key} of ${file} does not exist`,
              key: c.key,
              owner: c.row.owner,
              folder_hash: c.row.folderHash,
              repaired: false,
            }
          : {
              kind: "wrong_size",
              detail: `object ${c.key} of ${file} has ${size} bytes; its chunk layout says ${c.expected}`,
              key: c.key,
              owner: c.row.owner,
              folder_hash: c.row.folderHash,
              repaired: false,
            },
      );
    }
    if (rows.length < pageSize) break;
    after = rows[rows.length - 1] as FileLayout;
  }

  // 3b. The same for kept versions (reported only while the version is still kept).
  for (let after: number | null = null; ; ) {
    const rows: VersionLayout[] = await store.repos.ops.versionLayouts(after, pageSize);
    const chunks = rows.flatMap((row) =>
      objectsOf(row).map((o) => ({ key: o.key, expected: o.end - o.start, row })),
    );
    const actual = await sizes(
      blobs,
      chunks.map((c) => c.key),
    );
    for (const [i, c] of chunks.entries()) {
      const size = actual[i] ?? null;
      if (size === c.expected) continue;
      if (!(await store.repos.versions.get(c.row.owner, c.row.folderHash, c.row.versionId))) continue;
      const version = `kept version ${c.row.versionId} of file ${Buffer.from(c.row.pathHash).toString("hex")} of folder ${c.row.folderHash} (${c.row.owner})`;
      problems.push({
        kind: size === null ? "missing_object" : "wrong_size",
        detail:
          size === null
            ? `object ${c.key} of ${version} does not exist`
            : `object ${c.key} of ${version} has ${size} bytes; its chunk layout says ${c.expected}`,
        key: c.key,
        owner: c.row.owner,
        folder_hash: c.row.folderHash,
        repaired: false,
      });
    }
    if (rows.length < pageSize) break;
    after = (rows[rows.length - 1] as VersionLayout).versionId;
  }

  // 4. Folder counters against their files (a folder with files but no row counts as a mismatch).
  for (const m of snapshot.counterMismatches) {
    const problem: FsckProblem = {
      kind: "counter_mismatch",
      detail: m.hasRow
        ? `folder ${m.folderHash} (${m.owner}) counts file_count ${m.fileCount}, total_bytes ${m.totalBytes}; its files: ${m.files} files, ${m.bytes} bytes`
        : `folder ${m.folderHash} (${m.owner}) has ${m.files} files but no folder row`,
      owner: m.owner,
      folder_hash: m.folderHash,
      repaired: false,
    };
    if (repair) {
      await store.transaction(async (tx) => {
        await tx.sessions.lockOwner(m.owner);
        await tx.ops.recountFolder(m.owner, m.folderHash, clock.now());
      });
      problem.repaired = true;
    }
    problems.push(problem);
  }

  // 5. Sessions stuck in the internal finalizing state.
  for (const s of snapshot.stuckSessions) {
    const problem: FsckProblem = {
      kind: "stuck_session",
      detail:
        s.finalizingUntil === null
          ? `session ${s.sessionId} (${s.owner}) is finalizing without a lease`
          : `session ${s.sessionId} (${s.owner}) has been finalizing with no live lease since ${new Date(s.finalizingUntil * 1000).toISOString()}`,
      session_id: s.sessionId,
      owner: s.owner,
      folder_hash: s.folderHash,
      repaired: false,
    };
    if (repair) problem.repaired = await store.repos.ops.releaseStuckSession(s.sessionId, now, now + ttl);
    problems.push(problem);
  }
  // Live leases of dead holders (a server killed mid-finalize, not restarted since).
  const holders = new LeaseHolders({ localDatabase: store.dialect === "sqlite" });
  for (const h of await store.repos.sessions.heldFinalizing(now)) {
    if (h.finalizingUntil === null || h.finalizingHolder === null || !holders.isDead(h.finalizingHolder))
      continue;
    const s = await store.repos.sessions.get(h.sessionId);
    if (!s) continue;
    const problem: FsckProblem = {
      kind: "stuck_session",
      detail: `session ${s.sessionId} (${s.owner}) is finalizing under the lease of a process that is gone (${h.finalizingHolder})`,
      session_id: s.sessionId,
      owner: s.owner,
      folder_hash: s.folderHash,
      repaired: false,
    };
    if (repair)
      problem.repaired = await store.repos.sessions.takeOverFinalizing(
        h.sessionId,
        h.finalizingUntil,
        h.finalizingHolder,
        now + ttl,
      );
    problems.push(problem);
  }

  const repaired = problems.filter((p) => p.repaired).length;
  return { ok: problems.every((p) => p.repaired), problems, repaired };
}

/**
 * `runFsck` on the metadata database and blob store `config` names (the server's `ESYNC_*`
 * settings: `ESYNC_DATABASE_URL` for PostgreSQL, else the SQLite file), for the command lines
 * (`bun run fsck`, `esync-admin fsck`); both are closed again afterwards. Opening applies
 * pending migrations, as a server start would.
 * @throws when there is no SQLite database at `config.dbPath`, or the database or the store
 *   cannot be opened.
 */
export async function runFsckWithConfig(config: Config, repair: boolean): Promise<FsckReport> {
  if (config.databaseUrl === null && config.dbPath !== ":memory:" && !existsSync(config.dbPath))
    throw new Error(`no database at ${config.dbPath} (set ESYNC_DATA_DIR or ESYNC_DB_PATH)`);
  let blobs: BlobStore | null = null;
  let store: MetadataStore | null = null;
  try {
    blobs = createBlobStore(config);
    store = await openMetadataStore(config);
    return await runFsck(
      { store, blobs, clock: systemClock },
      { repair, sessionTtlSeconds: config.sessionTtlSeconds },
    );
  } finally {
    await blobs?.close().catch(() => {});
    await store?.close();
  }
}

/**
 * The text form of `report`: a line per problem (`problem` or `repaired`, kind, detail), then a
 * summary line (which names `--repair` after a dry run).
 */
export function fsckReportLines(
  report: FsckReport,
  repair: boolean,
): { problems: string[]; summary: string } {
  const left = report.problems.length - report.repaired;
  return {
    problems: report.problems.map((p) => `${p.repaired ? "repaired" : "problem "}  ${p.kind}  ${p.detail}`),
    summary:
      report.problems.length === 0
        ? "no problems found"
        : `${report.problems.length} problem(s), ${report.repaired} repaired, ${left} remaining${repair ? "" : " (dry run; --repair to repair)"}`,
  };
}
