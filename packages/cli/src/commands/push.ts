/**
 * @module cli/commands/push
 * `esync push DIR --folder LABEL`: uploads the new and changed files of a directory tree.
 *
 * 1. Walk DIR: regular files and symbolic links (stored as links, never followed), leaving out
 *    what `DIR/.esyncignore` and `--exclude` match (`sync/excludes.ts`).
 * 2. Register the folder if the server does not list it yet.
 * 3. Read the folder's state (`/get_state`, every page). A local file is unchanged when the
 *    server has its path with the same `salted_hash` (which the client computes from the
 *    plaintext, docs/protocol.md#client-keys), kind and permission bits (from the attributes); unchanged files
 *    are not sent. Every upload carries the file's attributes (docs/user-guide.md#file-attributes).
 * 4. Upload the rest with `uploadFile`, `--jobs` files at a time (8), of which at most
 *    `LARGE_JOBS` (3) are large files (ciphertext over the single-shot limit, through a
 *    session), each with `--parallel` chunks in flight and encryption on an `EncryptPool`. A changed file is a new revision of
 *    the server's (rebased if the server moved on meanwhile).
 * 5. Sessions are remembered in `<config-dir>/uploads.json` with the file's identity and base
 *    nonce (no copy of the blob): after Ctrl-C (exit 130) or a crash, the same command resumes
 *    each file from the server's `status`, encrypting and sending only the chunks it lacks.
 */
import { mkdir, rm, stat, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { EsyncApi } from "@esync/client/api.ts";
import { ApiError } from "@esync/client/api-error.ts";
import type { RemoteFileEntry } from "@esync/client/api-types.ts";
import { registerEntries } from "@esync/client/batch.ts";
import { EncryptPool } from "@esync/client/encrypt-pool.ts";
import { toHex } from "@esync/client/hash.ts";
import { runJobs } from "@esync/client/jobs.ts";
import { fileId, nextRevision, pathHash } from "@esync/client/manifest.ts";
import { markerDir, sealAttributes } from "@esync/client/sync/attributes.ts";
import { loadExcludes } from "@esync/client/sync/excludes.ts";
import {
  hashLocalFile,
  type LocalFile,
  markerPath,
  type SkippedPath,
  walkLocalTree,
} from "@esync/client/sync/local-tree.ts";
import { remoteTree, sameVersion } from "@esync/client/sync/planner.ts";
import { UploadStateFile, uploadKey } from "@esync/client/upload-state.ts";
import { SINGLE_SHOT_LIMIT, type UploadProgress, uploadFile } from "@esync/client/uploader.ts";
import { ciphertextSizeFor } from "@esync/protocol/framing.ts";
import type { Command } from "commander";
import type { GlobalOptions } from "../config.ts";
import { type CommandContext, loadContext } from "../context.ts";
import { folderTarget } from "../drives.ts";
import { collect, positiveInt } from "../options.ts";
import {
  CliError,
  describeError,
  EXIT,
  type ExitCode,
  exitCodeOf,
  formatDuration,
  formatRate,
  formatSize,
  isAbort,
  parseSize,
  printJson,
  println,
  reportUnsyncable,
  usageError,
} from "../output.ts";
import { progressMode, transferProgress } from "../progress.ts";
import { resolveFolder } from "../resolve-folder.ts";
import { Throttle, ThrottledApi } from "../throttle.ts";
import { checkLabel } from "./folder.ts";

interface PushOptions {
  folder?: string;
  drive?: string;
  jobs: string;
  parallel: string;
  limitRate?: string;
  encryptWorkers?: string;
  dryRun?: boolean;
  verbose?: boolean;
  create?: boolean;
  exclude: string[];
}

/** What happened to one file, as the `--json` summary lists it. */
export interface PushFileResult {
  path: string;
  action: "uploaded" | "unchanged" | "failed" | "interrupted" | "would_upload";
  size: number;
  /** `new` or `changed` for files that were (or would be) sent. */
  reason?: "new" | "changed";
  mode?: "single" | "session";
  resumed?: boolean;
  /** Ciphertext bytes sent in this run. */
  bytes_sent?: number;
  /** Ciphertext bytes already on the server from an interrupted run. */
  bytes_resumed?: number;
  revision_seq?: number;
  error?: string;
  exit_code?: ExitCode;
}

/** Large files (sent through sessions, `--parallel` chunks each) uploaded at once, at most. */
export const LARGE_JOBS = 3;

/** Errors after which starting more files is pointless: no server, bad auth, server failing. */
function isFatal(e: unknown): boolean {
  return e instanceof ApiError && (e.status === 0 || e.status === 401 || e.status === 403 || e.status >= 500);
}

interface PlannedFile {
  file: LocalFile;
  id: string;
  entry: RemoteFileEntry | undefined;
}

/** Forgets remembered sessions of this folder whose file is gone or already on the server. */
async function dropStalePending(
  ctx: CommandContext,
  state: UploadStateFile,
  folderHash: string,
  keep: Set<string>,
): Promise<void> {
  const prefix = `${ctx.address}/${folderHash}/`;
  for (const [key, pending] of Object.entries(await state.all())) {
    if (!key.startsWith(prefix) || keep.has(key.slice(prefix.length))) continue;
    await ctx.api.deleteSession(pending.sessionId).catch(() => {});
    await state.delete(key);
    if (pending.sealed.spillPath) await rm(pending.sealed.spillPath, { force: true });
  }
}

/** Registers `esync push` on `program`. */
export function registerPush(program: Command): void {
  program
    .command("push")
    .description("upload new and changed files of DIR to a folder (resumes interrupted uploads)")
    .argument("<dir>", "local directory to push")
    .option("-f, --folder <label>", "folder label (must exist unless --create)")
    .option(
      "-d, --drive <drive>",
      "a joined shared drive, OWNER/LABEL (`esync drive join`), instead of --folder",
    )

    .option("--create", "register the folder on the server if it does not exist yet")
    .option("-j, --jobs <n>", `files uploaded at once (at most ${LARGE_JOBS} of them over 8 MiB)`, "8")
    .option("--parallel <n>", "chunks of one file in flight", "4")
    .option(
      "--encrypt-workers <n>",
      "encryption threads; 0 encrypts on the main thread (default: one per core)",
    )
    .option("--limit-rate <rate>", "average upload bandwidth cap per second, e.g. 20MiB")
    .option("-n, --dry-run", "only show what would be uploaded")
    .option("-v, --verbose", "also list unchanged files")
    .option(
      "-x, --exclude <pattern>",
      "leave out paths matching PATTERN (gitignore syntax; repeatable)",
      collect,
      [],
    )
    .addHelpText(
      "after",
      `
Unchanged files (same content, kind and mode as on the server) are skipped.
Symbolic links, modes, modification times and empty directories are stored.
Paths matching DIR/.esyncignore (gitignore syntax) or --exclude are left out.
Files removed locally are not deleted on the server (use \`esync rm\`, or
\`esync sync\`). Interrupted with Ctrl-C or by a crash, the same command resumes
each large file where it stopped.

Examples:
  esync push ~/Documents --folder documents --create
  esync push ./photos -f photos --jobs 2 --limit-rate 50MiB --json`,
    )
    .action(async (dir: string, opts: PushOptions, cmd: Command) => {
      const target = await folderTarget(
        await loadContext(cmd.optsWithGlobals<GlobalOptions>(), "transfer"),
        opts,
      );
      await target.run(() => push(target.ctx, dir, { ...opts, folder: target.label }));
    });
}

async function push(ctx: CommandContext, dir: string, opts: PushOptions & { folder: string }): Promise<void> {
  const label = checkLabel(opts.folder);
  const jobs = positiveInt("--jobs", opts.jobs);
  const parallel = positiveInt("--parallel", opts.parallel);
  const workers =
    opts.encryptWorkers === undefined
      ? navigator.hardwareConcurrency || 1
      : opts.encryptWorkers === "0"
        ? 0
        : positiveInt("--encrypt-workers", opts.encryptWorkers);
  const limit = opts.limitRate === undefined ? undefined : parseSize(opts.limitRate);
  if (limit === 0) throw usageError("--limit-rate must be above 0");
  const root = resolve(dir);
  const st = await stat(root).catch(() => null);
  if (!st?.isDirectory()) throw usageError(`${dir}: not a directory`);
  const keys = await ctx.identity.folderKeys(label);
  const say = (line: string) => {
    if (!ctx.json) println(line);
  };
  const started = performance.now();

  // The server's side is read while the tree is walked.
  const remoteSide = (async () => {
    const folder = await resolveFolder(ctx, label, {
      create: opts.create === true,
      dryRun: opts.dryRun,
      createFlag: true,
    });
    const entries: RemoteFileEntry[] = [];
    for await (const e of ctx.api.iterateState(ctx.address, keys.folderHash)) entries.push(e);
    const dirEntries = folder.entry
      ? (await ctx.api.listFolderEntries(ctx.address, keys.folderHash)).relative_paths
      : [];
    return { folder, entries, dirEntries: new Set(dirEntries) };
  })();
  remoteSide.catch(() => {}); // awaited below; a walk failure must not leave it unhandled
  const tree = await walkLocalTree(root, await loadExcludes(root, opts.exclude));
  const walk = { files: [...tree.entries.values()], skipped: tree.skipped };
  const unsyncable = reportUnsyncable(walk.skipped);

  const { folder, entries, dirEntries } = await remoteSide;
  const registered = folder.registered;
  if (registered) say(`registered folder "${label}" (${keys.folderHash})`);
  const remote = new Map(entries.map((e) => [toHex(e.path_hash), e]));
  const versions = remoteTree(entries, keys.key).entries;

  if (walk.files.length > 0) say(`checking ${walk.files.length} file(s) against the server...`);
  const results: PushFileResult[] = [];
  const todo: PlannedFile[] = [];
  // Empty directories become folder entries (docs/protocol.md#folder-entries), registered in batches below.
  const newDirs: string[] = [];
  for (const file of walk.files) {
    ctx.signal.throwIfAborted();
    const dir = file.kind === "dir" ? markerDir(file.rel) : null;
    if (dir !== null) {
      if (dirEntries.has(dir) || versions.get(file.rel)?.kind === "dir") {
        results.push({ path: file.rel, action: "unchanged", size: 0 });
        if (opts.verbose) say(`unchanged ${dir}/`);
      } else newDirs.push(dir);
      continue;
    }
    const id = fileId(pathHash(file.rel));
    const entry = remote.get(id);
    const version = versions.get(file.rel);
    // Only a file the server has (with attributes: one stored without them, by an older push or
    // another client, is sent again with them) is read and hashed here; new files are hashed
    // once, while they are sealed.
    if (
      entry &&
      version &&
      version.mode !== null &&
      sameVersion(await hashLocalFile(file, ctx.address), version)
    ) {
      results.push({ path: file.rel, action: "unchanged", size: file.size });
      if (opts.verbose) say(`unchanged ${file.rel}`);
    } else {
      todo.push({ file, id, entry });
    }
  }

  const state = new UploadStateFile(ctx.paths.uploads);
  if (!opts.dryRun && newDirs.length > 0)
    await registerEntries({ api: ctx.api, address: ctx.address, keys }, newDirs);
  for (const dir of newDirs) {
    results.push({ path: markerPath(dir), action: opts.dryRun ? "would_upload" : "uploaded", size: 0 });
    say(opts.dryRun ? `would create ${dir}/` : `created   ${dir}/`);
  }
  if (opts.dryRun) {
    for (const p of todo) {
      results.push({
        path: p.file.rel,
        action: "would_upload",
        size: p.file.size,
        reason: p.entry ? "changed" : "new",
      });
      say(`would upload ${p.file.rel} (${p.entry ? "changed" : "new"}, ${formatSize(p.file.size)})`);
    }
    const bytes = todo.reduce((n, p) => n + p.file.size, 0);
    if (ctx.json) printJson(summary(label, keys.folderHash, walk, results, false, 0, started, true));
    else
      println(
        `dry run: ${todo.length} file(s), ${formatSize(bytes)} to upload; ${results.filter((r) => r.action === "unchanged").length} unchanged`,
      );
    if (unsyncable) throw unsyncable;
    return;
  }
  await dropStalePending(ctx, state, keys.folderHash, new Set(todo.map((p) => p.id)));

  if (todo.length === 0) {
    if (ctx.json) printJson(summary(label, keys.folderHash, walk, results, registered, 0, started, false));
    else
      println(
        newDirs.length > 0
          ? `created ${newDirs.length} directory(ies); nothing else to upload in "${label}"`
          : `everything up to date: ${results.length} file(s) unchanged in "${label}"`,
      );
    if (unsyncable) throw unsyncable;
    return;
  }

  const totalBytes = todo.reduce((n, p) => n + ciphertextSizeFor(p.file.size), 0);
  const progress = transferProgress(progressMode(ctx.json), `push ${label}`, totalBytes, todo.length);
  const api: EsyncApi =
    limit === undefined
      ? ctx.api
      : new ThrottledApi(
          { baseUrl: ctx.serverUrl, token: ctx.tokens, retry: ctx.retry },
          new Throttle(limit),
        );
  await mkdir(ctx.paths.spill, { recursive: true, mode: 0o700 });
  const pool =
    workers > 0 && todo.some((p) => p.file.size > 1024 * 1024) ? new EncryptPool(workers) : undefined;
  const sendStart = performance.now();
  let doneTotal = 0;
  let skippedTotal = 0;
  let filesDone = 0;
  let fatal = false;

  const pending = new Set(Object.keys(await state.all()));
  const uploadOne = async (p: PlannedFile) => {
    const { file } = p;
    const singleShot = ciphertextSizeFor(file.size) <= SINGLE_SHOT_LIMIT;
    const bar = progress.file(file.rel, file.size);
    let fileDone = 0;
    let fileSkipped = 0;
    let sentSoFar = 0;
    const setDone = (n: number, skipped: number) => {
      doneTotal += n - fileDone;
      skippedTotal += skipped - fileSkipped;
      fileDone = n;
      fileSkipped = skipped;
      progress.overall(doneTotal, filesDone, skippedTotal);
    };
    // Overall progress counts ciphertext bytes on the server (what takes the time); bytes a
    // resumed session already had are kept out of the rate.
    const onProgress = (u: UploadProgress) => {
      sentSoFar = u.bytesSent;
      if (u.phase === "encrypting") bar.update("encrypting", u.encryptedBytes, u.plaintextSize);
      else {
        bar.update(u.phase, u.bytesDone, u.bytesTotal, u.bytesSkipped);
        setDone(u.bytesDone, u.bytesSkipped);
      }
    };
    // A link is uploaded as a file holding its target (encrypted like any content); an empty
    // directory as its empty marker.
    const linkFile =
      file.kind !== "file"
        ? join(ctx.paths.spill, `link-${toHex(crypto.getRandomValues(new Uint8Array(6)))}`)
        : null;
    try {
      if (linkFile) await writeFile(linkFile, file.target ?? "", { mode: 0o600 });
      const out = await uploadFile({
        api,
        ss58Address: ctx.address,
        folder: keys,
        localPath: linkFile ?? file.abs,
        relativePath: file.rel,
        attributes: (saltedHash) =>
          sealAttributes(
            keys.key,
            { pathHash: pathHash(file.rel), saltedHash },
            { type: file.kind, mode: file.mode, mtimeMs: file.mtimeMs },
          ),
        revision: nextRevision(p.entry),
        onConflict: "rebase",
        // Only files over the single-shot limit open sessions; a small one needs the state file
        // only to settle a session remembered from when it was large.
        stateFile:
          linkFile || (singleShot && !pending.has(uploadKey(ctx.address, keys.folderHash, p.id)))
            ? undefined
            : state,
        localStat: linkFile ? undefined : { size: file.size, mtimeMs: file.mtimeMs },
        parallelism: parallel,
        encryptPool: pool,
        signal: ctx.signal,
        onProgress,
      });
      filesDone++;
      setDone(ciphertextSizeFor(file.size), fileSkipped);
      results.push({
        path: file.rel,
        action: "uploaded",
        size: file.size,
        reason: p.entry ? "changed" : "new",
        mode: out.mode,
        resumed: out.resumed,
        bytes_sent: out.bytesSent,
        bytes_resumed: out.bytesSkipped,
        revision_seq: out.manifest.revision_seq,
      });
      const resumed = out.resumed ? `, resumed: ${formatSize(out.bytesSkipped)} already on the server` : "";
      bar.done(`uploaded  ${file.rel}  ${formatSize(file.size)}${p.entry ? " (changed)" : ""}${resumed}`);
    } catch (e) {
      if (ctx.signal.aborted || isAbort(e)) {
        results.push({ path: file.rel, action: "interrupted", size: file.size, bytes_sent: sentSoFar });
        bar.done(`interrupted ${file.rel} (resumable)`);
        return;
      }
      filesDone++;
      progress.overall(doneTotal, filesDone, skippedTotal);
      results.push({
        path: file.rel,
        action: "failed",
        size: file.size,
        error: describeError(e),
        exit_code: exitCodeOf(e),
      });
      bar.done(`FAILED    ${file.rel}: ${describeError(e)}`);
      if (isFatal(e)) fatal = true;
    } finally {
      if (linkFile) await rm(linkFile, { force: true });
    }
  };

  const large = todo.filter((p) => ciphertextSizeFor(p.file.size) > SINGLE_SHOT_LIMIT);
  const small = todo.filter((p) => ciphertextSizeFor(p.file.size) <= SINGLE_SHOT_LIMIT);
  try {
    await runJobs(small, large, jobs, LARGE_JOBS, uploadOne, () => fatal || ctx.signal.aborted);
  } finally {
    progress.stop();
    pool?.close();
  }

  const interrupted = ctx.signal.aborted;
  const s = summary(
    label,
    keys.folderHash,
    walk,
    results,
    registered,
    performance.now() - sendStart,
    started,
    false,
  );
  if (ctx.json) printJson({ ...s, interrupted });
  else {
    const parts = [
      `pushed ${s.uploaded} file(s) (${formatSize(s.bytes_uploaded)}) to "${label}" in ${formatDuration(s.elapsed_ms)}`,
      `${formatSize(s.bytes_sent)} sent at ${formatRate(s.rate_bytes_per_sec)}`,
    ];
    if (s.bytes_resumed > 0) parts.push(`${formatSize(s.bytes_resumed)} resumed`);
    parts.push(`${s.unchanged} unchanged`);
    if (s.failed > 0) parts.push(`${s.failed} failed`);
    println(parts.join("; "));
  }
  if (interrupted)
    throw new CliError(
      "interrupted; run the same command again to resume where it stopped",
      EXIT.interrupted,
    );
  const failed = results.filter((r) => r.action === "failed");
  if (failed.length > 0) {
    const code = failed.some((r) => r.exit_code === EXIT.local) ? EXIT.local : EXIT.server;
    throw new CliError(`${failed.length} file(s) failed to upload`, code);
  }
  if (unsyncable) throw unsyncable;
}

/** The `--json` summary of a push. */
function summary(
  label: string,
  folderHash: string,
  walk: { files: LocalFile[]; skipped: SkippedPath[] },
  results: PushFileResult[],
  registered: boolean,
  sendMs: number,
  started: number,
  dryRun: boolean,
) {
  const uploaded = results.filter((r) => r.action === "uploaded");
  const bytesSent = results.reduce((n, r) => n + (r.bytes_sent ?? 0), 0);
  return {
    folder: label,
    folder_hash: folderHash,
    dry_run: dryRun,
    registered_folder: registered,
    files_scanned: walk.files.length,
    uploaded: uploaded.length,
    unchanged: results.filter((r) => r.action === "unchanged").length,
    failed: results.filter((r) => r.action === "failed").length,
    /** Plaintext bytes of the files uploaded. */
    bytes_uploaded: uploaded.reduce((n, r) => n + r.size, 0),
    /** Ciphertext bytes sent in this run (an interrupted file's included). */
    bytes_sent: bytesSent,
    /** Ciphertext bytes found already on the server (resumed sessions). */
    bytes_resumed: uploaded.reduce((n, r) => n + (r.bytes_resumed ?? 0), 0),
    elapsed_ms: Math.round(performance.now() - started),
    rate_bytes_per_sec: sendMs > 0 ? Math.round(bytesSent / (sendMs / 1000)) : 0,
    /** Local paths that cannot be synced, with the reason (the exit status is then 3). */
    skipped: walk.skipped,
    files: results.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)),
  };
}
