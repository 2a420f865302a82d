/**
 * @module cli/commands/restore
 * `esync restore PATH... --folder LABEL [--to DIR]`: downloads, decrypts and verifies just
 * the files and directories named, as `pull` does for a whole folder (ciphertext frames
 * authenticated, plaintext checked against `salted_hash`, written atomically), keeping their
 * paths inside the folder under DIR (default: the current directory).
 *
 * Symbolic links, mode bits and modification times stored by esync come back too (the sync
 * engine's `materializeAt`). A PATH is a file's relative path, or a directory: every file below it. A PATH that matches
 * nothing on the server is a usage error (exit 1) before anything is written. A file already
 * identical at its destination is skipped; a different file there is left alone and reported
 * unless `--force` replaces it.
 */
import { mkdir, stat } from "node:fs/promises";
import { resolve } from "node:path";
import { ApiError } from "@esync/client/api-error.ts";
import type { RemoteFileEntry } from "@esync/client/api-types.ts";
import { safeDestination } from "@esync/client/local-files.ts";
import { applyAttributes, materializeAt } from "@esync/client/sync/engine.ts";
import { readLocalEntry } from "@esync/client/sync/local-tree.ts";
import { type RemoteVersion, remoteTree, sameVersion } from "@esync/client/sync/planner.ts";
import { ciphertextSizeFor } from "@esync/protocol/framing.ts";
import type { Command } from "commander";
import type { GlobalOptions } from "../config.ts";
import { type CommandContext, loadContext } from "../context.ts";
import { folderTarget } from "../drives.ts";
import {
  CliError,
  describeError,
  EXIT,
  type ExitCode,
  exitCodeOf,
  formatDuration,
  formatSize,
  isAbort,
  printJson,
  println,
  usageError,
} from "../output.ts";
import { progressMode, transferProgress } from "../progress.ts";
import { resolveFolder } from "../resolve-folder.ts";
import { browsePath } from "./ls.ts";
import { type HistoryChoice, parseTime, restoreFromHistory } from "./versions.ts";

interface RestoreOptions {
  folder?: string;
  drive?: string;
  to: string;
  force?: boolean;
  jobs: string;
  version?: string;
  at?: string;
  deleted?: boolean;
}

/** What happened to one file. */
export interface RestoreFileResult {
  path: string;
  action: "restored" | "up_to_date" | "exists" | "failed" | "interrupted";
  size: number;
  error?: string;
  exit_code?: ExitCode;
}

/**
 * The entries selected by `paths`: a path equal to a file's relative path selects it, a
 * directory path (or `""`, the root) every file below it. Returns the selection (each file
 * once, sorted by path) and the paths that matched nothing.
 */
export function selectEntries(
  entries: RemoteFileEntry[],
  paths: string[],
): { selected: RemoteFileEntry[]; unmatched: string[] } {
  const chosen = new Map<string, RemoteFileEntry>();
  const unmatched: string[] = [];
  for (const raw of paths) {
    const p = browsePath(raw);
    let hit = false;
    for (const e of entries) {
      const rel = e.relative_path;
      if (rel === null) continue;
      if (p === "" || rel === p || rel.startsWith(`${p}/`)) {
        chosen.set(rel, e);
        hit = true;
      }
    }
    if (!hit) unmatched.push(raw);
  }
  const selected = [...chosen.values()].sort((a, b) =>
    (a.relative_path as string) < (b.relative_path as string) ? -1 : 1,
  );
  return { selected, unmatched };
}

/** Registers `esync restore` on `program`. */
export function registerRestore(program: Command): void {
  program
    .command("restore")
    .description("download, decrypt and verify chosen files or directories of a folder")
    .argument("<paths...>", "files or directories inside the folder ('/' for all of it)")
    .option("-f, --folder <label>", "folder label")
    .option(
      "-d, --drive <drive>",
      "a joined shared drive, OWNER/LABEL (`esync drive join`), instead of --folder",
    )
    .option("--to <dir>", "where to restore them, keeping their paths (default: current directory)", ".")
    .option("--force", "replace local files that differ from the server's")
    .option("-j, --jobs <n>", "files downloaded at once", "3")
    .option("--version <n>", "restore kept version N of the file on the server (see esync versions)")
    .option("--at <time>", "restore the version that was current at TIME (ISO 8601 or Unix seconds)")
    .option("--deleted", "restore a deleted file from the folder's trash (see esync trash)")
    .addHelpText(
      "after",
      `
Each file is verified as \`esync pull\` verifies it. Files already identical are skipped;
a different local file is kept (and reported) unless --force.

With --version, --at or --deleted (one PATH), the server makes that version the file's
current revision (no bytes are sent again); the next sync brings it to every device. With
--to as well, the restored file is also downloaded there.

Examples:
  esync restore reports/2026 --folder documents --to ~/restore
  esync restore "notes/todo.txt" --folder documents --force
  esync restore notes/todo.txt --folder documents --version 12
  esync restore notes/todo.txt --folder documents --at 2026-11-27T18:00:00Z
  esync restore --deleted notes/old.txt --folder documents --to .`,
    )
    .action(async (paths: string[], opts: RestoreOptions, cmd: Command) => {
      const target = await folderTarget(
        await loadContext(cmd.optsWithGlobals<GlobalOptions>(), "transfer"),
        opts,
      );
      const ctx = target.ctx;
      const folderOpts = { ...opts, folder: target.label };
      const chosen = [opts.version !== undefined, opts.at !== undefined, opts.deleted === true].filter(
        Boolean,
      );
      if (chosen.length === 0) return target.run(() => restore(ctx, paths, folderOpts));
      if (chosen.length > 1) throw usageError("give one of --version, --at, --deleted");
      if (paths.length !== 1) throw usageError("--version, --at and --deleted restore one PATH");
      const version = Number(opts.version);
      if (opts.version !== undefined && !(Number.isInteger(version) && version > 0))
        throw usageError("--version must be a version number from esync versions");
      const choice: HistoryChoice =
        opts.version !== undefined
          ? { version }
          : opts.at !== undefined
            ? { at: parseTime(opts.at) }
            : { deleted: true };
      await target.run(async () => {
        const { path, restored } = await restoreFromHistory(ctx, target.label, paths[0] as string, choice);
        if (ctx.json && cmd.getOptionValueSource("to") !== "cli")
          return printJson({ folder: target.label, path, ...restored });
        if (!ctx.json)
          println(
            `restored ${path} (version ${restored.version_id}) on the server as revision ${restored.revision_seq}`,
          );
        if (cmd.getOptionValueSource("to") === "cli") return restore(ctx, [path], folderOpts);
        if (!ctx.json) println("the next sync brings it to your devices");
      });
    });
}

async function restore(ctx: CommandContext, paths: string[], opts: RestoreOptions): Promise<void> {
  const jobs = Number(opts.jobs);
  if (!Number.isInteger(jobs) || jobs < 1 || jobs > 64) throw usageError("--jobs must be an integer 1..64");
  const label = opts.folder as string;
  const keys =
    opts.drive !== undefined ? await ctx.identity.folderKeys(label) : (await resolveFolder(ctx, label)).keys;
  const all: RemoteFileEntry[] = [];
  for await (const e of ctx.api.iterateState(ctx.address, keys.folderHash)) all.push(e);
  const selection = selectEntries(all, paths);
  const { selected } = selection;
  // A path with no file under it may still be a directory (a folder entry, empty ones too).
  const { relative_paths: entries } = await ctx.api.listFolderEntries(ctx.address, keys.folderHash);
  const dirs = new Set<string>();
  const unmatched = selection.unmatched.filter((raw) => {
    const p = browsePath(raw);
    const under = entries.filter((d) => p === "" || d === p || d.startsWith(`${p}/`));
    for (const d of under) dirs.add(d);
    return under.length === 0;
  });
  for (const e of selected) {
    // Directories under the paths named come back too, empty ones included.
    const rel = e.relative_path ?? "";
    for (const d of entries) if (rel.startsWith(`${d}/`)) dirs.add(d);
  }
  if (unmatched.length > 0)
    throw usageError(
      `not in folder "${label}": ${unmatched.map((p) => JSON.stringify(p)).join(", ")} (see \`esync ls --folder ${label}\`)`,
    );
  const dest = resolve(opts.to);
  const st = await stat(dest).catch(() => null);
  if (st && !st.isDirectory()) throw usageError(`${opts.to}: exists and is not a directory`);
  await mkdir(dest, { recursive: true });
  const started = performance.now();
  let directoriesCreated = 0;
  for (const d of [...dirs].sort()) {
    const abs = await safeDestination(dest, d);
    if ((await stat(abs).catch(() => null))?.isDirectory()) continue;
    await mkdir(abs, { recursive: true });
    directoriesCreated++;
  }

  const tree = remoteTree(selected, keys.key);
  const results: RestoreFileResult[] = [];
  const todo: RemoteVersion[] = [];
  for (const entry of tree.unplaceable)
    results.push({
      path: entry.relative_path ?? "",
      action: "failed",
      size: entry.size_bytes,
      error: `integrity check failed: ${JSON.stringify(entry.relative_path)} does not hash to its path_hash`,
      exit_code: EXIT.local,
    });
  for (const remote of tree.entries.values()) {
    const { rel, entry } = remote;
    try {
      await safeDestination(dest, rel);
      const local = await readLocalEntry(dest, rel, ctx.address);
      if (local && sameVersion(local, { ...remote, mode: null })) {
        await applyAttributes(local.abs, remote);
        results.push({ path: rel, action: "up_to_date", size: entry.size_bytes });
      } else if (local && !opts.force) results.push({ path: rel, action: "exists", size: entry.size_bytes });
      else todo.push(remote);
    } catch (e) {
      results.push({
        path: rel,
        action: "failed",
        size: entry.size_bytes,
        error: describeError(e),
        exit_code: EXIT.local,
      });
    }
  }
  for (const r of results)
    if (!ctx.json && r.action !== "up_to_date")
      println(
        r.action === "exists"
          ? `kept      ${r.path} (differs locally; --force replaces it)`
          : `FAILED    ${r.path}: ${r.error}`,
      );

  const total = todo.reduce((n, p) => n + ciphertextSizeFor(p.entry.size_bytes), 0);
  const progress = transferProgress(progressMode(ctx.json), `restore ${label}`, total, todo.length);
  let doneTotal = 0;
  let filesDone = 0;
  let next = 0;
  let fatal = false;
  const one = async (p: RemoteVersion) => {
    const ctSize = ciphertextSizeFor(p.entry.size_bytes);
    const bar = progress.file(p.rel, ctSize);
    let fileDone = 0;
    try {
      await materializeAt(ctx.api, ctx.address, keys, dest, p, ctx.signal, (n, t) => {
        doneTotal += n - fileDone;
        fileDone = n;
        bar.update("receiving", n, t ?? ctSize);
        progress.overall(doneTotal, filesDone);
      });
      filesDone++;
      progress.overall(doneTotal, filesDone);
      results.push({ path: p.rel, action: "restored", size: p.entry.size_bytes });
      bar.done(`restored  ${p.rel}  ${formatSize(p.entry.size_bytes)}  verified`);
    } catch (e) {
      if (ctx.signal.aborted || isAbort(e)) {
        results.push({ path: p.rel, action: "interrupted", size: p.entry.size_bytes });
        bar.done(`interrupted ${p.rel}`);
        return;
      }
      filesDone++;
      results.push({
        path: p.rel,
        action: "failed",
        size: p.entry.size_bytes,
        error: describeError(e),
        exit_code: exitCodeOf(e),
      });
      bar.done(`FAILED    ${p.rel}: ${describeError(e)}`);
      if (e instanceof ApiError && (e.retryable || e.status === 401 || e.status === 403)) fatal = true;
    }
  };
  const worker = async () => {
    while (!fatal && !ctx.signal.aborted && next < todo.length)
      await one(todo[next++] as (typeof todo)[number]);
  };
  try {
    await Promise.all(Array.from({ length: Math.min(jobs, todo.length) }, worker));
  } finally {
    progress.stop();
  }

  const count = (a: RestoreFileResult["action"]) => results.filter((r) => r.action === a).length;
  const restored = results.filter((r) => r.action === "restored");
  const failed = results.filter((r) => r.action === "failed");
  const summary = {
    folder: label,
    dest,
    selected: selected.length,
    directories_created: directoriesCreated,
    restored: restored.length,
    up_to_date: count("up_to_date"),
    kept: count("exists"),
    failed: failed.length,
    bytes_restored: restored.reduce((n, r) => n + r.size, 0),
    elapsed_ms: Math.round(performance.now() - started),
    interrupted: ctx.signal.aborted,
    files: results.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)),
  };
  if (ctx.json) printJson(summary);
  else {
    const parts = [
      `restored ${summary.restored} file(s) (${formatSize(summary.bytes_restored)})${directoriesCreated > 0 ? ` and ${directoriesCreated} directory(ies)` : ""} from "${label}" into ${dest} in ${formatDuration(summary.elapsed_ms)}`,
      `${summary.up_to_date} up to date`,
    ];
    if (summary.kept > 0) parts.push(`${summary.kept} kept (differ locally)`);
    if (summary.failed > 0) parts.push(`${summary.failed} failed`);
    println(parts.join("; "));
  }
  if (ctx.signal.aborted)
    throw new CliError("interrupted; run the same command again to continue", EXIT.interrupted);
  if (failed.length > 0) {
    const code = failed.some((r) => r.exit_code === EXIT.local) ? EXIT.local : EXIT.server;
    throw new CliError(`${failed.length} file(s) failed to restore`, code);
  }
  if (summary.kept > 0)
    throw new CliError(
      `${summary.kept} file(s) differ locally and were kept; pass --force to replace them`,
      EXIT.local,
    );
}
