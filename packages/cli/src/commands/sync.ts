/**
 * @module cli/commands/sync
 * `esync sync DIR --folder LABEL [--watch]`: two-way sync of a directory with a folder
 * (`src/sync/`): local creations, changes, deletions and renames go up, remote ones come down,
 * a file changed on both sides keeps both versions. The state of the directory lives in
 * `DIR/.esync/state.sqlite`. With `--watch` it keeps running: local changes are picked up
 * from filesystem events, remote ones by polling, and a server outage only delays sync.
 * `esync sync --all` does the same for each pair configured with `esync sync add`
 * (`sync-pairs.ts`); `--limit-rate` caps the upload rate (`throttle.ts`).
 */
import { mkdir, stat } from "node:fs/promises";
import { resolve } from "node:path";
import {
  DEFAULT_SYNC_JOBS,
  LARGE_TRANSFERS,
  runSyncPass,
  type SyncContext,
  type SyncReport,
} from "@esync/client/sync/engine.ts";
import { loadExcludes } from "@esync/client/sync/excludes.ts";
import type { SyncAction } from "@esync/client/sync/planner.ts";
import { StateBindingError, SyncState } from "@esync/client/sync/state-db.ts";
import { UploadStateFile } from "@esync/client/upload-state.ts";
import { ciphertextSizeFor } from "@esync/protocol/framing.ts";
import type { Command } from "commander";
import { configDir, configPaths, type GlobalOptions } from "../config.ts";
import { type CommandContext, loadContext } from "../context.ts";
import { folderTarget } from "../drives.ts";
import { collect, positiveInt } from "../options.ts";
import {
  CliError,
  describeError,
  EXIT,
  eprintln,
  printJson,
  println,
  reportUnsyncable,
  usageError,
} from "../output.ts";
import { type FileProgress, type ProgressMode, progressMode, transferProgress } from "../progress.ts";
import { resolveFolder } from "../resolve-folder.ts";
import { configuredPairs, syncAll } from "../sync-pairs.ts";
import { limitRate } from "../throttle.ts";
import { checkLabel } from "./folder.ts";

interface SyncOptions {
  folder?: string;
  drive?: string;
  all?: boolean;
  limitRate?: string;
  create?: boolean;
  createDir?: boolean;
  watch?: boolean;
  exclude: string[];
  interval: string;
  jobs: string;
  debounce: string;
}

/** One line describing a settled action. */
export function describeAction(a: SyncAction): string {
  switch (a.op) {
    case "upload":
      return `uploaded    ${a.path}${a.reason === "changed" ? " (changed)" : ""}`;
    case "download":
      return `downloaded  ${a.path}${a.reason === "changed" ? " (changed)" : ""}`;
    case "delete_remote":
      return `deleted     ${a.path} on the server`;
    case "delete_local":
      return `deleted     ${a.path} locally`;
    case "rename_remote":
      return `renamed     ${a.from} -> ${a.path} on the server`;
    case "move_local":
      return `renamed     ${a.from} -> ${a.path} locally${a.edited ? " (your edit uploaded there)" : ""}`;
    case "conflict":
      return `conflict    ${a.path}: both changed; yours kept as ${a.copyPath}`;
    case "record":
    case "forget":
      return `recorded    ${a.path}`;
  }
}

function summaryLine(label: string, r: SyncReport): string {
  const parts: string[] = [];
  if (r.uploaded) parts.push(`${r.uploaded} uploaded`);
  if (r.downloaded) parts.push(`${r.downloaded} downloaded`);
  if (r.renamed) parts.push(`${r.renamed} renamed`);
  if (r.deletedRemote) parts.push(`${r.deletedRemote} deleted on the server`);
  if (r.deletedLocal) parts.push(`${r.deletedLocal} deleted locally`);
  if (r.conflicts.length) parts.push(`${r.conflicts.length} conflict(s) kept as copies`);
  if (r.failures.length) parts.push(`${r.failures.length} failed`);
  if (r.deferred.length) parts.push(`${r.deferred.length} left for the next pass`);
  return parts.length === 0 ? `"${label}" is in sync` : `synced "${label}": ${parts.join(", ")}`;
}

/** The progress display of one round of a pass: push's bars, one per transfer. */
interface SyncDisplay {
  update(a: SyncAction, phase: string, done: number, total: number, skipped?: number): void;
  /** Transfer (or other action) `a` ended: its bar goes, `line` (when not null) is printed. */
  settled(a: SyncAction, line: string | null): void;
  log(line: string): void;
  stop(): void;
}

/**
 * A display for `transfers` (uploads and downloads of one round): an overall line of their
 * ciphertext bytes and files, and a line per file in flight (`cli/progress.ts`).
 */
function syncDisplay(mode: ProgressMode, label: string, transfers: readonly SyncAction[]): SyncDisplay {
  const size = (a: SyncAction) =>
    a.op === "upload" ? a.local.size : a.op === "download" ? a.remote.entry.size_bytes : 0;
  const total = transfers.reduce((n, a) => n + ciphertextSizeFor(size(a)), 0);
  const progress = transferProgress(mode, `sync ${label}`, total, transfers.length);
  const bars = new Map<SyncAction, { bar: FileProgress; done: number; skipped: number }>();
  let done = 0;
  let skipped = 0;
  let files = 0;
  let stopped = false;
  return {
    update(a, phase, n, t, s = 0) {
      let f = bars.get(a);
      if (!f) {
        f = { bar: progress.file(a.path, size(a)), done: 0, skipped: 0 };
        bars.set(a, f);
      }
      f.bar.update(phase, n, t, s);
      if (phase === "encrypting") return; // overall progress counts ciphertext moved
      done += n - f.done;
      skipped += s - f.skipped;
      f.done = n;
      f.skipped = s;
      progress.overall(done, files, skipped);
    },
    settled(a, line) {
      const f = bars.get(a);
      if (transfers.includes(a)) {
        files++;
        progress.overall(done, files, skipped);
      }
      if (f) {
        bars.delete(a);
        f.bar.done(line ?? `skipped     ${a.path}`);
      } else if (line !== null) progress.log(line);
    },
    log: (line) => progress.log(line),
    stop() {
      if (stopped) return;
      stopped = true;
      progress.stop();
    },
  };
}

/** Registers `esync sync` on `program` and returns it (`registerSyncPairs` adds its subcommands). */
export function registerSync(program: Command): Command {
  return program
    .command("sync")
    .description("two-way sync of DIR with a folder (uploads, downloads, deletions, renames)")
    .argument("[dir]", "local directory to sync (must exist unless --create-dir)")
    .option("-f, --folder <label>", "folder label (must exist unless --create)")
    .option(
      "-d, --drive <drive>",
      "a joined shared drive, OWNER/LABEL (`esync drive join`), instead of --folder",
    )
    .option("--all", "sync every pair configured with `esync sync add` (no DIR or --folder)")
    .option("--create", "register the folder on the server if it does not exist yet")
    .option("--create-dir", "create DIR if it does not exist (then the folder is downloaded into it)")
    .option("-w, --watch", "keep running: sync on local changes and poll the server")
    .option(
      "-x, --exclude <pattern>",
      "leave out paths matching PATTERN (gitignore syntax; repeatable)",
      collect,
      [],
    )
    .option(
      "-j, --jobs <n>",
      `files uploaded or downloaded at once (at most ${LARGE_TRANSFERS} of them over 8 MiB)`,
      String(DEFAULT_SYNC_JOBS),
    )
    .option("--interval <seconds>", "with --watch: how often to poll the server", "5")
    .option("--debounce <ms>", "with --watch: quiet time after a local change before syncing", "300")
    .option("--limit-rate <rate>", "average upload bandwidth cap per second, e.g. 20MiB")
    .addHelpText(
      "after",
      `
A file changed on both sides keeps both: the server's version under its name,
yours as "NAME (conflicted copy from DEVICE YYYY-MM-DD).EXT". Deletions and
renames propagate both ways. Modes, modification times, symbolic links and
empty directories are kept. Paths matching DIR/.esyncignore (gitignore syntax)
or --exclude are left alone on both sides. The sync state is kept in
DIR/.esync/ (never synced). With --json, each pass prints one JSON document.

Pairs: \`esync sync add DIR --folder LABEL\` (or \`--drive OWNER/LABEL\`) remembers a pair, \`esync sync list\`
shows them, \`esync sync remove DIR\` forgets one, and \`esync sync --all [--watch]\`
syncs them all (one watcher each; a failing pair is reported and the others go on).
A directory named add, list or remove is synced as ./add.

Examples:
  esync sync ~/Documents --folder documents --create
  esync sync ~/Team --drive 5Grw...utQY/team
  esync sync ~/Documents -f documents --watch -x '*.tmp' -x node_modules/
  esync sync add ~/Photos --folder photos && esync sync --all --watch`,
    )
    .action(async (dir: string | undefined, opts: SyncOptions, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      if (!opts.all) {
        if (dir === undefined || (opts.folder === undefined && opts.drive === undefined))
          throw usageError(
            "give DIR and --folder LABEL or --drive OWNER/LABEL (or --all for the pairs of `esync sync list`)",
          );
        const target = await folderTarget(limitRate(await loadContext(g, "transfer"), opts.limitRate), opts);
        return target.run(() => sync(target.ctx, dir, { ...opts, folder: target.label }));
      }
      if (dir !== undefined || opts.folder !== undefined || opts.drive !== undefined)
        throw usageError("--all syncs the configured pairs: give no DIR, --folder or --drive");
      const pairs = await configuredPairs(configPaths(configDir(g.configDir)));
      const ctx = limitRate(await loadContext(g, "transfer"), opts.limitRate);
      await syncAll(pairs, opts.watch === true, ctx.signal, async (p) => {
        // A drive pair works in the owner's folder with the drive key, as `sync DIR --drive` does.
        const target = await folderTarget(ctx, { folder: p.folder, drive: p.drive, create: opts.create });
        await target.run(() =>
          sync(target.ctx, p.dir, {
            ...opts,
            folder: target.label,
            exclude: [...p.exclude, ...opts.exclude],
          }),
        );
      });
    });
}

const uploadStates = new Map<string, UploadStateFile>();

/** The one `UploadStateFile` of `path` in this process (the pairs of `--all` share it). */
function uploadStateFile(path: string): UploadStateFile {
  let file = uploadStates.get(path);
  if (!file) {
    file = new UploadStateFile(path);
    uploadStates.set(path, file);
  }
  return file;
}

async function sync(ctx: CommandContext, dir: string, opts: SyncOptions & { folder: string }): Promise<void> {
  const label = checkLabel(opts.folder);
  const intervalS = positiveInt("--interval", opts.interval, 86400);
  const jobs = positiveInt("--jobs", opts.jobs);
  const debounce = Number(opts.debounce);
  if (!Number.isInteger(debounce) || debounce < 0 || debounce > 60_000)
    throw usageError("--debounce must be an integer 0..60000 (milliseconds)");
  const root = resolve(dir);
  const st = await stat(root).catch(() => null);
  if (st && !st.isDirectory()) throw usageError(`${dir}: exists and is not a directory`);
  // A typo in DIR must not create a directory and download the whole folder into it.
  if (!st && !opts.createDir)
    throw usageError(`${dir}: no such directory (pass --create-dir to create it and download the folder)`);
  const folder = await ctx.identity.folderKeys(label);
  // While transfers run, lines go through the progress display (above its bars).
  let display: SyncDisplay | null = null;
  const say = (line: string) => {
    if (ctx.json) return;
    if (display) display.log(line);
    else println(line);
  };
  // The label is checked before anything local is touched: a typo is named as the label.
  const resolved = await resolveFolder(ctx, label, { create: opts.create === true, createFlag: true });
  if (resolved.registered) say(`registered folder "${label}"`);
  await mkdir(root, { recursive: true });

  let state: SyncState;
  try {
    state = SyncState.open(root, { address: ctx.address, folderHash: folder.folderHash, label });
  } catch (e) {
    if (e instanceof StateBindingError) throw usageError(e.message);
    throw e;
  }
  try {
    const base: Omit<SyncContext, "excludes"> = {
      api: ctx.api,
      address: ctx.address,
      folder,
      root,
      device: ctx.config.device_name,
      state,
      uploadState: uploadStateFile(ctx.paths.uploads),
      signal: ctx.signal,
      jobs,
      onAction: (a, outcome, detail) => {
        const line =
          outcome === "done"
            ? describeAction(a)
            : outcome === "failed"
              ? `FAILED      ${a.path}: ${detail ?? ""}`
              : null;
        if (display) display.settled(a, line);
        else if (line !== null) say(line);
      },
      progress: {
        round(transfers) {
          display?.stop();
          display = transfers.length > 0 ? syncDisplay(progressMode(ctx.json), label, transfers) : null;
        },
        update(a, phase, done, total, skipped) {
          display?.update(a, phase, done, total, skipped);
        },
      },
    };
    const pass = async (): Promise<SyncReport> => {
      // The ignore file is read again each pass, so editing it takes effect without a restart.
      const excludes = await loadExcludes(root, opts.exclude);
      let report: SyncReport;
      try {
        report = await runSyncPass({ ...base, excludes });
      } finally {
        display?.stop();
        display = null;
      }
      if (ctx.json) printJson({ folder: label, folder_hash: folder.folderHash, dir: root, ...report });
      return report;
    };

    if (!opts.watch) {
      const report = await pass();
      say(summaryLine(label, report));
      const unsyncable = reportUnsyncable(report.skipped);
      if (report.failures.length > 0)
        throw new CliError(`${report.failures.length} path(s) failed to sync`, EXIT.local);
      if (unsyncable) throw unsyncable;
      return;
    }
    say(`watching ${root} <-> "${label}" (Ctrl-C to stop)`);
    // The file watcher (chokidar) is loaded only by `--watch`, not on every start of the CLI.
    const { watchLoop } = await import("@esync/client/sync/watch.ts");
    const named = new Set<string>();
    await watchLoop({
      root,
      excludes: await loadExcludes(root, opts.exclude),
      debounceMs: debounce,
      pollMs: intervalS * 1000,
      signal: ctx.signal,
      pass: async () => {
        const report = await pass();
        const line = summaryLine(label, report);
        if (!line.endsWith("is in sync")) say(`${new Date().toISOString().slice(11, 19)} ${line}`);
        // Each path that cannot be synced is named once per run, not on every pass.
        const fresh = report.skipped.filter((s) => !named.has(s.path));
        for (const s of fresh) named.add(s.path);
        reportUnsyncable(fresh);
      },
      onRetry: (e, delay) =>
        eprintln(`esync: ${describeError(e)}; retrying in ${Math.round(delay / 1000)} s`),
    });
  } finally {
    state.close();
  }
  if (ctx.signal.aborted) throw new CliError("stopped", EXIT.interrupted);
}
