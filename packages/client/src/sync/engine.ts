/**
 * @module client/sync/engine
 * One sync pass of a local directory with a remote folder: scan, read the remote state,
 * `planSync`, then carry the plan out, recording each settled path in the state database.
 *
 * Safety rules of the execution (nothing is lost):
 * - A local path is only replaced, moved or deleted when it still has the fingerprint the plan
 *   saw; a path edited meanwhile is left for the next round.
 * - Uploads carry the remote revision the plan saw as `base_revision_id` and never rebase on
 *   their own: a 409 Conflict envelope means the remote moved on, so the pass reads the remote
 *   state again and plans that path again (it becomes a download or a conflict), up to
 *   `MAX_ROUNDS` rounds.
 * - A conflict keeps both versions: the local one moves to its conflicted-copy name (and is
 *   uploaded there), the remote one is downloaded under the name.
 * - Downloads are verified (`downloadFile`) and land atomically; symbolic links are created
 *   under a temporary name and renamed into place; mode and mtime come from the attributes.
 *
 * Renames of regular files are sent as one signed `POST /rename_files` batch per round
 * (`propagateRenames`, docs/protocol.md#rename-files): the row moves, the ciphertext stays. An entry the
 * server refuses because the remote moved on (`revision_mismatch`, `not_found`) is planned
 * again; any other refused entry, and every file whose mode changed with the move, goes
 * through `propagateRename` (upload at the new path, then delete the old one), as do rows
 * whose attributes are of version 1 (bound to the path, `sync/attributes.ts`): the upload
 * reseals them.
 *
 * Empty directories are folder entries (docs/protocol.md#folder-entries): the planner sees each registered
 * directory with nothing under it on the server as the marker path `DIR/.esync-dir`; creating
 * one registers the entry, deleting one unregisters it (with ancestors gone locally). Marker
 * files that older versions uploaded are migrated at the start of a pass: the entry is
 * registered, then the marker file deleted.
 *
 * Directory modification times (docs/attributes.md#directory-modification-times) travel in the folder
 * entries' sealed attributes when the server has the capability; then every directory, empty or
 * not, has an entry. At the end of each round, once every file is written, `syncDirTimes` sets
 * the times on disk (deepest first) and sends the ones that moved here.
 */
import {
  chmod,
  lstat,
  mkdir,
  readFile,
  rename,
  rm,
  rmdir,
  symlink,
  utimes,
  writeFile,
} from "node:fs/promises";
import { dirname, join } from "node:path";
import { ciphertextSizeFor } from "@esync/protocol/framing.ts";
import type { EsyncApi } from "../api.ts";
import { ApiError } from "../api-error.ts";
import { deleteMany, parentDirs, registerEntries, renameMany, unregisterEntries } from "../batch.ts";
import { downloadFile, IntegrityError, RevisionChangedError } from "../downloader.ts";
import { PlaintextSizeError } from "../frame.ts";
import { fromHex, toHex } from "../hash.ts";
import { runJobs } from "../jobs.ts";
import type { FolderKeys } from "../keys.ts";
import { type DiskNames, safeDestination } from "../local-files.ts";
import { fileId, NEW_FILE, nextRevision, pathHash } from "../manifest.ts";
import type { UploadStateFile } from "../upload-state.ts";
import { SINGLE_SHOT_LIMIT, type UploadProgress, uploadFile } from "../uploader.ts";
import { markerDir, openDirAttributes, sealAttributes, sealDirAttributes } from "./attributes.ts";
import { type DirTimeBase, type DirTimeStep, isDirTimeChange, planDirTimes } from "./dir-times.ts";
import { type Excludes, STATE_DIR } from "./excludes.ts";
import {
  diskPath,
  type LocalEntry,
  type LocalTree,
  linkHash,
  markerPath,
  readLocalEntry,
  type SkippedPath,
  sameFingerprint,
  scanLocalTree,
} from "./local-tree.ts";
import {
  isChange,
  planSync,
  type RemoteTree,
  type RemoteVersion,
  remoteTree,
  type SyncAction,
} from "./planner.ts";
import type { BaseEntry, SyncState } from "./state-db.ts";

/** Rounds of plan-and-execute one pass runs at most while the remote keeps moving. */
export const MAX_ROUNDS = 4;

/** What a pass needs. */
export interface SyncContext {
  api: EsyncApi;
  /** Account SS58 address. */
  address: string;
  folder: FolderKeys;
  /** Absolute path of the synced directory. */
  root: string;
  /** This device's name (conflicted copies). */
  device: string;
  excludes: Excludes;
  state: SyncState;
  /** Resumable upload sessions (optional). */
  uploadState?: UploadStateFile;
  signal?: AbortSignal;
  /** One line per settled action, for display. */
  onAction?: (a: SyncAction, outcome: "done" | "skipped" | "failed", detail?: string) => void;
  /** Clock for conflicted-copy dates; default now. */
  now?: () => Date;
  /**
   * Uploads and downloads run at once (default `DEFAULT_SYNC_JOBS`), of which at most
   * `LARGE_TRANSFERS` move a file over the single-shot limit (8 MiB). 1 runs every action in
   * plan order.
   */
  jobs?: number;
  /**
   * On-disk names of the paths whose names are not NFC (the last scan's `LocalTree.disk`);
   * `planFolder` sets it, every file-system call of the pass goes through it.
   */
  diskNames?: DiskNames;
  /** Hears how the transfers of the pass move (a progress display). */
  progress?: SyncProgress;
  /**
   * Whether the server keeps folder entries' attributes (capability `folder_entry_attributes`), so
   * directory modification times sync (docs/attributes.md#directory-modification-times); `planFolder`
   * asks the server once when unset.
   */
  dirTimes?: boolean;
}

/** Progress of the transfers of a pass (`esync sync` draws it as push and pull do). */
export interface SyncProgress {
  /** The uploads and downloads a round is about to run, in plan order. */
  round(transfers: readonly SyncAction[]): void;
  /**
   * Transfer `a` has moved `done` of `total` bytes of phase `phase` (`encrypting`: plaintext;
   * `uploading`, `finalizing`, `receiving`: ciphertext), `skipped` of them found on the server
   * by a resume.
   */
  update(a: SyncAction, phase: string, done: number, total: number, skipped?: number): void;
}

/** Transfers of one pass run at once unless `SyncContext.jobs` says otherwise. */
export const DEFAULT_SYNC_JOBS = 8;
/** Large transfers (over `SINGLE_SHOT_LIMIT`) of one pass run at once, at most. */
export const LARGE_TRANSFERS = 3;

/** A plan with the trees it was made from. */
export interface FolderPlan {
  actions: SyncAction[];
  local: LocalTree;
  remote: RemoteTree;
}

/** Scans the directory, reads the remote state and plans (no changes made): what `esync status` shows. */
export async function planFolder(ctx: SyncContext): Promise<FolderPlan> {
  const base = ctx.state.entries();
  // Paths the rules exclude are out of sync on every side: adding a pattern never deletes anything.
  for (const rel of [...base.keys()]) if (pathExcluded(ctx.excludes, rel)) base.delete(rel);
  const local = await scanLocalTree(ctx.root, ctx.address, ctx.excludes, (rel) => base.get(rel));
  ctx.diskNames = local.disk;
  const entries = [];
  for await (const e of ctx.api.iterateState(ctx.address, ctx.folder.folderHash)) entries.push(e);
  const remote = remoteTree(entries, ctx.folder.key);
  ctx.dirTimes ??= (await ctx.api.capabilities()).folder_entry_attributes === true;
  if (ctx.dirTimes) {
    const listed = await ctx.api.listFolderEntriesWithAttributes(ctx.address, ctx.folder.folderHash);
    addFolderEntries(remote, listed.paths, linkHash(ctx.address, ""));
    remote.dirTimes = new Map();
    for (const [dir, sealed] of listed.attributes) {
      const a = openDirAttributes(ctx.folder.key, dir, sealed);
      if (a) remote.dirTimes.set(dir, a.mtimeMs);
    }
  } else {
    const { relative_paths } = await ctx.api.listFolderEntries(ctx.address, ctx.folder.folderHash);
    addFolderEntries(remote, relative_paths, linkHash(ctx.address, ""));
  }
  // Remote paths the local rules exclude are left alone, as if absent on both sides.
  for (const rel of [...remote.entries.keys()])
    if (pathExcluded(ctx.excludes, rel) && !local.entries.has(rel)) remote.entries.delete(rel);
  const actions = planSync({
    base,
    local: local.entries,
    remote: remote.entries,
    device: ctx.device,
    now: ctx.now?.() ?? new Date(),
  });
  return { actions, local, remote };
}

/** Revision id recorded as the base of a folder entry (entries have no revision). */
const FOLDER_ENTRY_REVISION = "";

/**
 * Adds the folder entries (docs/protocol.md#folder-entries) to `remote` as empty-directory marker versions:
 * each entry with no file and no other entry under it becomes `DIR/.esync-dir` of kind `dir`
 * (unless a marker file of an older version is still there), with `dirHash` as its hash.
 */
export function addFolderEntries(remote: RemoteTree, paths: readonly string[], dirHash: string): void {
  remote.dirEntries = new Set(paths);
  const fileDirs = new Set<string>();
  for (const rel of remote.entries.keys()) {
    const parents = parentDirs(rel);
    const own = markerDir(rel);
    for (const d of parents) if (d !== own) fileDirs.add(d);
  }
  const entryParents = new Set(paths.flatMap(parentDirs));
  for (const dir of paths) {
    if (fileDirs.has(dir) || entryParents.has(dir)) continue;
    const rel = markerPath(dir);
    if (remote.entries.has(rel)) continue;
    const ph = Array.from(pathHash(rel));
    remote.entries.set(rel, {
      rel,
      kind: "dir",
      hash: dirHash,
      mode: null,
      mtimeMs: null,
      revisionId: FOLDER_ENTRY_REVISION,
      revisionSeq: 0,
      folderEntry: dir,
      entry: {
        path_hash: ph,
        salted_hash: Array.from(fromHex(dirHash)),
        size_bytes: 0,
        revision_seq: 0,
        revision_id: new Array(32).fill(0),
        encrypted_path: [],
        file_name: null,
        relative_path: rel,
        store_hash: null,
        arion_hash: null,
        chunk_hashes: null,
        created_at: 0,
        updated_at: 0,
      },
    });
  }
}

/** The empty-directory marker files (of older versions) in `remote`: rows, not folder entries. */
function markerFiles(remote: RemoteTree): RemoteVersion[] {
  return [...remote.entries.values()].filter(
    (v) => v.kind === "dir" && v.folderEntry === undefined && markerDir(v.rel) !== null,
  );
}

/**
 * Moves the empty-directory marker files of older versions (`DIR/.esync-dir`, attributes type
 * `dir`) in `remote` to folder entries: registers each directory, then deletes the marker
 * files in `/delete_files` batches. Returns how many were migrated.
 */
export async function migrateMarkers(ctx: SyncContext, remote: RemoteTree): Promise<number> {
  const markers = markerFiles(remote);
  if (markers.length === 0) return 0;
  const f = { api: ctx.api, address: ctx.address, keys: ctx.folder };
  await registerEntries(
    f,
    markers.map((m) => markerDir(m.rel) as string),
  );
  await deleteMany(
    f,
    markers.map((m) => fileId(m.entry.path_hash)),
  );
  return markers.length;
}

/** What a pass did. */
export interface SyncReport {
  rounds: number;
  uploaded: number;
  downloaded: number;
  deletedRemote: number;
  deletedLocal: number;
  renamed: number;
  conflicts: string[];
  failures: { path: string; op: SyncAction["op"]; error: string }[];
  /** Paths left for a later pass (edited during the pass, or the remote kept moving). */
  deferred: string[];
  unplaceable: number;
  /** Local paths the scan cannot sync (by on-disk name, with the reason); never uploaded. */
  skipped: SkippedPath[];
}

/** The local path changed after it was planned, or the remote moved on: plan again. */
class Replan extends Error {
  constructor(why: string) {
    super(why);
    this.name = "Replan";
  }
}

/**
 * Errors that mean the plan is stale, not that something is broken: a local edit during the
 * pass, a 409 Conflict (the remote has a newer revision), a 404, a download answered with
 * another revision, or a blob whose size or content differs from the listing (the file was deleted or replaced after `/get_state`). The path is planned again.
 */
function movedOn(e: unknown): boolean {
  return (
    e instanceof Replan ||
    e instanceof IntegrityError ||
    e instanceof RevisionChangedError ||
    e instanceof PlaintextSizeError ||
    (e instanceof ApiError && (e.status === 409 || e.status === 404))
  );
}

/** Errors after which a pass stops: no server, bad credentials, server failing. */
function isFatal(e: unknown): boolean {
  return e instanceof ApiError && (e.status === 0 || e.status === 401 || e.status === 403 || e.status >= 500);
}

/**
 * Runs one sync pass (up to `MAX_ROUNDS` plan-and-execute rounds). Uploads and downloads that
 * follow each other in the plan run `ctx.jobs` at once; every other action runs alone, in plan
 * order. Throws only fatal errors (no server, 401/403, 5xx, abort), after the transfers already
 * running have ended.
 */
export async function runSyncPass(ctx: SyncContext): Promise<SyncReport> {
  const report: SyncReport = {
    rounds: 0,
    uploaded: 0,
    downloaded: 0,
    deletedRemote: 0,
    deletedLocal: 0,
    renamed: 0,
    conflicts: [],
    failures: [],
    deferred: [],
    unplaceable: 0,
    skipped: [],
  };
  const failed = new Set<string>();
  const jobs = ctx.jobs ?? DEFAULT_SYNC_JOBS;
  for (let round = 1; round <= MAX_ROUNDS; round++) {
    ctx.signal?.throwIfAborted();
    report.rounds = round;
    let plan = await planFolder(ctx);
    if (round === 1 && markerFiles(plan.remote).length > 0) {
      await migrateMarkers(ctx, plan.remote);
      plan = await planFolder(ctx);
    }
    report.unplaceable = plan.remote.unplaceable.length;
    report.skipped = plan.local.skipped;
    let todo = plan.actions.filter((a) => !failed.has(a.path));
    let replan = false;
    report.deferred = [];
    // Local deletions and moves can leave a directory empty: one more round records it.
    replan = todo.some((a) => a.op === "delete_local" || a.op === "move_local") && round < MAX_ROUNDS;
    const batched = await propagateRenames(ctx, todo, report);
    if (batched.deferred.length > 0) replan = true;
    todo = todo.filter((a) => !batched.settled.has(a));
    ctx.progress?.round(todo.filter((a) => a.op === "upload" || a.op === "download"));
    let fatal: { error: unknown } | null = null;
    const runOne = async (a: SyncAction): Promise<void> => {
      try {
        await execute(ctx, a, report, plan.remote);
        if (isChange(a)) ctx.onAction?.(a, "done");
      } catch (e) {
        if (ctx.signal?.aborted || isFatal(e)) {
          fatal ??= { error: e };
          return;
        }
        if (movedOn(e)) {
          replan = true;
          report.deferred.push(a.path);
          ctx.onAction?.(a, "skipped", (e as Error).message);
          return;
        }
        failed.add(a.path);
        report.failures.push({ path: a.path, op: a.op, error: (e as Error).message });
        ctx.onAction?.(a, "failed", (e as Error).message);
      }
    };
    for (const group of transferGroups(todo)) {
      ctx.signal?.throwIfAborted();
      if (group.length === 1) await runOne(group[0] as SyncAction);
      else {
        const large = group.filter(isLarge);
        const small = group.filter((a) => !isLarge(a));
        await runJobs(
          small,
          large,
          jobs,
          LARGE_TRANSFERS,
          runOne,
          () => fatal !== null || !!ctx.signal?.aborted,
        );
      }
      if (fatal) throw (fatal as { error: unknown }).error;
    }
    ctx.state.setDirs(plan.local.dirs);
    if (plan.remote.dirTimes) await syncDirTimes(ctx, plan, report);
    if (!replan) break;
  }
  return report;
}

/**
 * The directories (by path) that exist under the synced directory now, with their modification
 * times (Unix ms): those `plan` scanned and those the remote has (entries, and parents of its
 * files), except excluded ones.
 */
async function presentDirs(ctx: SyncContext, plan: FolderPlan): Promise<Map<string, number>> {
  const candidates = new Set(plan.local.dirTimes.keys());
  for (const d of plan.remote.dirEntries ?? []) candidates.add(d);
  for (const rel of plan.remote.entries.keys()) for (const d of parentDirs(rel)) candidates.add(d);
  const out = new Map<string, number>();
  for (const d of candidates) {
    if ([...parentDirs(d), d].some((p) => ctx.excludes.excluded(p, true))) continue;
    const st = await lstat(absOf(ctx, d)).catch(() => null);
    if (st?.isDirectory()) out.set(d, st.mtimeMs);
  }
  return out;
}

/**
 * The directory times a sync would carry out now (docs/attributes.md#directory-modification-times): the
 * changing steps of `planDirTimes` for the directories `plan` scanned, as they are; empty when
 * the server does not keep them. What `esync status` lists.
 */
export function pendingDirTimes(ctx: SyncContext, plan: FolderPlan): DirTimeStep[] {
  if (!plan.remote.dirTimes) return [];
  const base = ctx.state.dirTimes();
  for (const d of [...base.keys()]) if (ctx.excludes.excluded(d, true)) base.delete(d);
  return planDirTimes({
    scanned: plan.local.dirTimes,
    base,
    remote: plan.remote.dirTimes,
    entries: plan.remote.dirEntries ?? new Set(),
    present: plan.local.dirTimes,
  }).steps.filter(isDirTimeChange);
}

/**
 * The directory-time step of a round (docs/attributes.md#directory-modification-times), run once its
 * files are written: `planDirTimes` on the round's scan, the server's times and the base; sets
 * the times on disk deepest directory first, registers the entries whose time the server lacks
 * or differs (sealed, `sealDirAttributes`), unregisters those of directories removed here, and
 * records the new base. A time that cannot be set is left as it is (recorded as found, and
 * reported once in `report.failures`); a 403 on the entries (a reader) sends nothing.
 */
export async function syncDirTimes(ctx: SyncContext, plan: FolderPlan, report?: SyncReport): Promise<void> {
  const base = ctx.state.dirTimes();
  for (const d of [...base.keys()]) if (ctx.excludes.excluded(d, true)) base.delete(d);
  const present = await presentDirs(ctx, plan);
  const { steps, gone } = planDirTimes({
    scanned: plan.local.dirTimes,
    base,
    remote: plan.remote.dirTimes ?? new Map(),
    entries: plan.remote.dirEntries ?? new Set(),
    present,
  });
  const next = new Map<string, DirTimeBase>();
  const send = new Map<string, Uint8Array>();
  for (const s of steps) {
    let local = present.get(s.dir) as number;
    if (s.apply) {
      const abs = absOf(ctx, s.dir);
      const t = s.mtimeMs / 1000;
      const st = await utimes(abs, t, t)
        .then(() => lstat(abs))
        .catch(() => null);
      if (st) local = st.mtimeMs;
      else report?.failures.push({ path: s.dir, op: "download", error: "cannot set its modification time" });
    }
    if (s.send) send.set(s.dir, sealDirAttributes(ctx.folder.key, s.dir, { mtimeMs: s.mtimeMs }));
    next.set(s.dir, { local, remote: s.mtimeMs });
  }
  const f = { api: ctx.api, address: ctx.address, keys: ctx.folder };
  // A reader of a shared drive may not write entries (403): its times still follow the server's.
  const unlessForbidden = (e: unknown) => {
    if (!(e instanceof ApiError && e.status === 403)) throw e;
  };
  if (send.size > 0) await registerEntries(f, [...send.keys()], send).catch(unlessForbidden);
  if (gone.length > 0) await unregisterEntries(f, gone).catch(unlessForbidden);
  ctx.state.setDirTimes(next);
}

/**
 * Splits the plan into groups run one after the other, in plan order: each run of consecutive
 * uploads and downloads is one group, whose transfers may run at once (each touches only its
 * own path and creates missing parents); every other action (deletions, moves, conflicts,
 * records) is a group of its own, so it still sees every action planned before it done.
 */
function transferGroups(actions: readonly SyncAction[]): SyncAction[][] {
  const groups: SyncAction[][] = [];
  let run: SyncAction[] = [];
  for (const a of actions) {
    if (a.op === "upload" || a.op === "download") {
      run.push(a);
      continue;
    }
    if (run.length > 0) groups.push(run);
    run = [];
    groups.push([a]);
  }
  if (run.length > 0) groups.push(run);
  return groups;
}

/** True for a transfer whose file is over the single-shot limit (plaintext bytes). */
function isLarge(a: SyncAction): boolean {
  if (a.op === "upload") return a.local.size > SINGLE_SHOT_LIMIT;
  if (a.op === "download") return a.remote.entry.size_bytes > SINGLE_SHOT_LIMIT;
  return false;
}

function absOf(ctx: SyncContext, rel: string): string {
  return diskPath(ctx.root, rel, ctx.diskNames);
}

/** True when the rules exclude `rel` (for a marker path: its directory). */
function pathExcluded(excludes: Excludes, rel: string): boolean {
  const dir = markerDir(rel);
  return dir === null ? excludes.excluded(rel) : excludes.excluded(dir, true);
}

/** Throws `Replan` unless `rel` is still what the plan saw (`planned` null = absent). */
async function expectLocal(ctx: SyncContext, rel: string, planned: LocalEntry | null): Promise<void> {
  const st = await lstat(absOf(ctx, rel)).catch(() => null);
  if (!planned) {
    // A directory may exist (with content) where an empty-directory marker is expected: fine.
    if (st && !(markerDir(rel) !== null && st.isDirectory())) throw new Replan(`${rel} appeared locally`);
    return;
  }
  if (!st) throw new Replan(`${rel} disappeared locally`);
  const fp = {
    size: st.isDirectory() ? 0 : st.size,
    mtimeMs: st.mtimeMs,
    mode: st.mode & 0o7777,
    ino: st.ino,
  };
  if (!sameFingerprint(fp, planned) || st.isSymbolicLink() !== (planned.kind === "symlink"))
    throw new Replan(`${rel} changed locally`);
}

function baseOf(local: LocalEntry, revisionId: string, revisionSeq: number, hash = local.hash): BaseEntry {
  return {
    rel: local.rel,
    kind: local.kind,
    hash,
    mode: local.mode,
    size: local.size,
    mtimeMs: local.mtimeMs,
    ino: local.ino,
    revisionId,
    revisionSeq,
  };
}

async function execute(
  ctx: SyncContext,
  a: SyncAction,
  report: SyncReport,
  remote: RemoteTree,
): Promise<void> {
  switch (a.op) {
    case "upload": {
      await uploadEntry(ctx, a.path, a.local, a.remote, (u) => {
        if (u.phase === "encrypting") ctx.progress?.update(a, u.phase, u.encryptedBytes, u.plaintextSize);
        else ctx.progress?.update(a, u.phase, u.bytesDone, u.bytesTotal, u.bytesSkipped);
      });
      report.uploaded++;
      return;
    }
    case "download": {
      await expectLocal(ctx, a.path, a.local);
      if (a.local && a.local.kind === a.remote.kind && a.local.hash === a.remote.hash) {
        await applyAttributes(absOf(ctx, a.path), a.remote);
      } else {
        await materialize(ctx, a.remote, (n, total) =>
          ctx.progress?.update(a, "receiving", n, total ?? ciphertextSizeFor(a.remote.entry.size_bytes)),
        );
      }
      await recordRemote(ctx, a.remote);
      report.downloaded++;
      return;
    }
    case "delete_remote": {
      await deleteRemote(ctx, a.remote, remote);
      ctx.state.remove(a.path);
      report.deletedRemote++;
      return;
    }
    case "delete_local": {
      await expectLocal(ctx, a.path, a.local);
      if (a.local.kind === "dir") {
        const dir = markerDir(a.path) ?? a.path;
        // Kept when no longer empty; parents the server no longer has anything under go too.
        if (
          await rmdir(absOf(ctx, a.path)).then(
            () => true,
            () => false,
          )
        )
          await pruneEmptyParents(ctx, dir, remote);
      } else {
        await rm(absOf(ctx, a.path), { force: true });
        await pruneEmptyParents(ctx, a.path, remote);
      }
      ctx.state.remove(a.path);
      report.deletedLocal++;
      return;
    }
    case "rename_remote": {
      await propagateRename(ctx, a.from, a.path, a.local, a.remote);
      report.renamed++;
      return;
    }
    case "move_local": {
      await expectLocal(ctx, a.from, a.local);
      await expectLocal(ctx, a.path, null);
      const dest = await safeDestination(ctx.root, a.path, ctx.diskNames);
      await rename(absOf(ctx, a.from), dest);
      await pruneEmptyParents(ctx, a.from, remote);
      ctx.state.remove(a.from);
      if (a.edited) {
        // The edit follows the rename: uploaded on the moved revision (a 409 replans it).
        const moved = await readLocalEntry(ctx.root, a.path, ctx.address, undefined, ctx.diskNames);
        if (!moved) throw new Replan(`${a.path} disappeared locally`);
        await uploadEntry(ctx, a.path, moved, a.remote);
        report.uploaded++;
      } else {
        await applyAttributes(dest, a.remote);
        await recordRemote(ctx, a.remote);
      }
      report.renamed++;
      return;
    }
    case "conflict": {
      await expectLocal(ctx, a.path, a.local);
      await expectLocal(ctx, a.copyPath, null);
      const copyAbs = await safeDestination(ctx.root, a.copyPath, ctx.diskNames);
      await rename(absOf(ctx, a.path), copyAbs);
      await materialize(ctx, a.remote);
      await recordRemote(ctx, a.remote);
      report.conflicts.push(a.copyPath);
      const copy = await readLocalEntry(ctx.root, a.copyPath, ctx.address, undefined, ctx.diskNames);
      if (copy) await uploadEntry(ctx, a.copyPath, copy, null);
      return;
    }
    case "record": {
      ctx.state.put(baseOf(a.local, a.remote.revisionId, a.remote.revisionSeq));
      return;
    }
    case "forget": {
      ctx.state.remove(a.path);
      return;
    }
  }
}

/**
 * Removes the directories above `rel` that a remote deletion or move left empty, as long as
 * the server has nothing under them (no file, no empty-directory marker): the directory was
 * removed on the other side. A directory the other side kept arrives as a marker and stays.
 */
async function pruneEmptyParents(ctx: SyncContext, rel: string, remote: RemoteTree): Promise<void> {
  let dir = rel.includes("/") ? rel.slice(0, rel.lastIndexOf("/")) : "";
  while (dir !== "") {
    const prefix = `${dir}/`;
    for (const p of remote.entries.keys()) if (p.startsWith(prefix)) return;
    try {
      await rmdir(absOf(ctx, dir));
    } catch {
      return; // not empty (or already gone): keep it and everything above
    }
    dir = dir.includes("/") ? dir.slice(0, dir.lastIndexOf("/")) : "";
  }
}

/**
 * True when a rename can move the server's row as is: a regular file or link whose kind and
 * mode did not change, with attributes that stay readable at the new path.
 */
function batchable(a: SyncAction): a is Extract<SyncAction, { op: "rename_remote" }> {
  return (
    a.op === "rename_remote" &&
    a.local.kind !== "dir" &&
    a.remote.kind === a.local.kind &&
    a.remote.folderEntry === undefined &&
    a.remote.attributesMove === true &&
    (a.local.kind === "symlink" || a.remote.mode === a.local.mode)
  );
}

/**
 * Sends the batchable renames among `actions` as one signed `POST /rename_files` call
 * (docs/protocol.md#rename-files) and records each success as the base of its new path. Returns the actions
 * settled here (done, or deferred to the next round because the path changed locally or the
 * remote moved on); the others, and failed entries, are left to `propagateRename`.
 */
export async function propagateRenames(
  ctx: SyncContext,
  actions: readonly SyncAction[],
  report: SyncReport,
): Promise<{ settled: Set<SyncAction>; deferred: SyncAction[] }> {
  const settled = new Set<SyncAction>();
  const deferred: SyncAction[] = [];
  const ready: Extract<SyncAction, { op: "rename_remote" }>[] = [];
  for (const a of actions.filter(batchable)) {
    try {
      await expectLocal(ctx, a.path, a.local);
      ready.push(a);
    } catch (e) {
      if (!(e instanceof Replan)) throw e;
      settled.add(a);
      deferred.push(a);
      report.deferred.push(a.path);
      ctx.onAction?.(a, "skipped", e.message);
    }
  }
  if (ready.length === 0) return { settled, deferred };
  const outcomes = await renameMany(
    { api: ctx.api, address: ctx.address, keys: ctx.folder },
    ready.map((a) => ({ entry: a.remote.entry, to: a.path })),
  );
  ready.forEach((a, i) => {
    const o = outcomes[i];
    if (!o) return;
    if (o.revisionId && o.revisionSeq !== undefined) {
      ctx.state.remove(a.from);
      ctx.state.put(baseOf(a.local, toHex(o.revisionId), o.revisionSeq));
      report.renamed++;
      settled.add(a);
      ctx.onAction?.(a, "done");
    } else if (o.reason === "revision_mismatch" || o.reason === "not_found") {
      settled.add(a);
      deferred.push(a);
      report.deferred.push(a.path);
      ctx.onAction?.(a, "skipped", `${a.from}: ${o.reason}`);
    }
  });
  return { settled, deferred };
}

/**
 * Moves remote file `from` to `to`, whose local entry is `local`, by uploading at `to` and
 * then deleting `from` (the old path stays if the upload fails, so nothing is lost): for
 * links, files whose mode changed with the move, and entries `/rename_files` refused.
 */
export async function propagateRename(
  ctx: SyncContext,
  from: string,
  to: string,
  local: LocalEntry,
  old: RemoteVersion,
): Promise<void> {
  await uploadEntry(ctx, to, local, null);
  await deleteRemote(ctx, old);
  ctx.state.remove(from);
}

/**
 * Deletes a remote file, or unregisters a folder entry. Directory entries above the path that
 * no longer exist locally are unregistered too, so that a directory removed here is not
 * brought back by its entry.
 */
async function deleteRemote(ctx: SyncContext, remote: RemoteVersion, tree?: RemoteTree): Promise<void> {
  const f = { api: ctx.api, address: ctx.address, keys: ctx.folder };
  const gone: string[] = [];
  for (const d of parentDirs(remote.folderEntry ?? remote.rel))
    if (tree?.dirEntries?.has(d) && !(await lstat(absOf(ctx, d)).catch(() => null))) gone.push(d);
  // The tree forgets the entries it unregisters: the round's directory-time step sees them gone.
  const forget = (dirs: readonly string[]) => {
    for (const d of dirs) {
      tree?.dirEntries?.delete(d);
      tree?.dirTimes?.delete(d);
    }
  };
  if (remote.folderEntry !== undefined) {
    await unregisterEntries(f, [remote.folderEntry, ...gone]);
    forget([remote.folderEntry, ...gone]);
    return;
  }
  if (gone.length > 0) {
    await unregisterEntries(f, gone);
    forget(gone);
  }
  try {
    await ctx.api.deleteFile(ctx.address, ctx.folder.folderHash, fileId(remote.entry.path_hash));
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 404)) throw e;
  }
}

/**
 * Uploads the local entry at `rel` as the revision after `remote` (null = a new file), with
 * its attributes; records the result as the base. A Conflict (409) propagates as `ApiError`.
 */
async function uploadEntry(
  ctx: SyncContext,
  rel: string,
  local: LocalEntry,
  remote: RemoteVersion | null,
  onProgress?: (u: UploadProgress) => void,
) {
  await expectLocal(ctx, rel, local);
  const dir = local.kind === "dir" ? markerDir(rel) : null;
  if (dir !== null) {
    await registerEntries({ api: ctx.api, address: ctx.address, keys: ctx.folder }, [dir]);
    ctx.state.put(baseOf(local, FOLDER_ENTRY_REVISION, 0));
    return;
  }
  let source = local.abs;
  let temp: string | null = null;
  if (local.kind !== "file") {
    // A link's content is its target; an empty directory's marker is empty.
    temp = join(ctx.root, STATE_DIR, `link-${toHex(crypto.getRandomValues(new Uint8Array(6)))}`);
    await writeFile(temp, local.target ?? "", { mode: 0o600 });
    source = temp;
  }
  try {
    const out = await uploadFile({
      api: ctx.api,
      ss58Address: ctx.address,
      folder: ctx.folder,
      localPath: source,
      relativePath: rel,
      revision: remote
        ? nextRevision({ revision_seq: remote.revisionSeq, revision_id: fromHex(remote.revisionId) })
        : NEW_FILE,
      onConflict: "fail",
      attributes: (saltedHash) =>
        sealAttributes(
          ctx.folder.key,
          { pathHash: pathHash(rel), saltedHash },
          { type: local.kind, mode: local.mode, mtimeMs: local.mtimeMs },
        ),
      stateFile: local.kind === "file" ? ctx.uploadState : undefined,
      signal: ctx.signal,
      onProgress,
    });
    if (!out.result) throw new Replan(`${rel}: a resumed upload finished earlier; reading the state again`);
    ctx.state.put(
      baseOf(
        local,
        toHex(out.result.revision_id),
        out.manifest.revision_seq,
        toHex(out.manifest.salted_hash),
      ),
    );
  } finally {
    if (temp) await rm(temp, { force: true });
  }
}

/** Records the remote version as the base of its path, with the local fingerprint it now has. */
async function recordRemote(ctx: SyncContext, remote: RemoteVersion): Promise<void> {
  await recordRemoteIn(ctx.state, ctx.root, remote, ctx.diskNames);
}

/**
 * Records `remote` as the synced version of its path under `root` (names on disk as `names`
 * has them), with the path's current fingerprint.
 */
export async function recordRemoteIn(
  state: SyncState,
  root: string,
  remote: RemoteVersion,
  names?: DiskNames,
): Promise<void> {
  const st = await lstat(diskPath(root, remote.rel, names));
  state.put({
    rel: remote.rel,
    kind: remote.kind,
    hash: remote.hash,
    mode: st.mode & 0o7777,
    size: st.size,
    mtimeMs: st.mtimeMs,
    ino: st.ino,
    revisionId: remote.revisionId,
    revisionSeq: remote.revisionSeq,
  });
}

/** Sets mode and mtime from the remote attributes (when it has them). */
export async function applyAttributes(abs: string, remote: Pick<RemoteVersion, "kind" | "mode" | "mtimeMs">) {
  if (remote.kind !== "symlink" && remote.mode !== null) await chmod(abs, remote.mode);
  if (remote.mtimeMs !== null) {
    const t = remote.mtimeMs / 1000;
    if (remote.kind !== "symlink") await utimes(abs, t, t);
    else await lutimesIfPossible(abs, t);
  }
}

async function lutimesIfPossible(abs: string, t: number): Promise<void> {
  const { lutimes } = await import("node:fs/promises");
  await lutimes(abs, t, t).catch(() => {});
}

/**
 * Downloads `remote` into place (verified, atomic): a file with its mode (0644 without
 * attributes) and mtime, or a symbolic link to the decrypted target. Refuses unsafe paths
 * (`UnsafePathError`) and a directory in the way.
 */
export async function materializeAt(
  api: EsyncApi,
  address: string,
  folder: FolderKeys,
  root: string,
  remote: RemoteVersion,
  signal?: AbortSignal,
  onProgress?: (ciphertextBytes: number, ciphertextTotal: number | null) => void,
  names?: DiskNames,
): Promise<void> {
  const dir = markerDir(remote.rel);
  if (remote.kind === "dir" && dir !== null) {
    const path = diskPath(root, remote.rel, names);
    await safeDestination(root, dir, names); // checks the path, creates the parents
    await mkdir(path, { recursive: true });
    await applyAttributes(path, remote);
    return;
  }
  const dest = await safeDestination(root, remote.rel, names);
  const existing = await lstat(dest).catch(() => null);
  if (existing?.isDirectory()) throw new Error(`${remote.rel}: a local directory is in the way`);
  if (remote.kind === "symlink") {
    // The target is downloaded beside the link (a `*.esync-part-*` name, never synced).
    const tmp = `${dest}.esync-part-t${toHex(crypto.getRandomValues(new Uint8Array(4)))}`;
    try {
      await downloadFile({
        api,
        ss58Address: address,
        folder,
        entry: remote.entry,
        destPath: tmp,
        signal,
        onProgress,
      });
      const target = await readFile(tmp, "utf8");
      const link = `${dest}.esync-part-${toHex(crypto.getRandomValues(new Uint8Array(4)))}`;
      await symlink(target, link);
      await rename(link, dest);
    } finally {
      await rm(tmp, { force: true });
    }
  } else {
    await mkdir(dirname(dest), { recursive: true });
    await downloadFile({
      api,
      ss58Address: address,
      folder,
      entry: remote.entry,
      destPath: dest,
      signal,
      onProgress,
    });
    if (remote.mode === null) await chmod(dest, 0o644);
  }
  await applyAttributes(dest, remote);
}

async function materialize(
  ctx: SyncContext,
  remote: RemoteVersion,
  onProgress?: (ciphertextBytes: number, ciphertextTotal: number | null) => void,
): Promise<void> {
  await materializeAt(
    ctx.api,
    ctx.address,
    ctx.folder,
    ctx.root,
    remote,
    ctx.signal,
    onProgress,
    ctx.diskNames,
  );
}
