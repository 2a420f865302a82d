/**
 * @module cli/commands/pull
 * `esync pull --folder LABEL DEST`: downloads every file of a folder into DEST, recreating
 * relative paths. Each file is decrypted while it streams, checked (every frame's
 * Poly1305 tag, the plaintext size and the `salted_hash` of the listing) and written
 * atomically (temporary file, fsync, rename), so a file at its destination is either the
 * old one or the complete verified new one (`downloadFile`).
 *
 * The server is not trusted with paths either: a `relative_path` that is absolute, has a
 * `..` segment, does not hash to the entry's `path_hash`, or leads (through a symbolic link)
 * outside DEST is refused. Files already identical locally are not downloaded again.
 *
 * Attributes (docs/user-guide.md#file-attributes) are restored: symbolic links as links, permission bits
 * and modification times, and directories' modification times when the server keeps them. A local file that differs from the server's is only replaced when
 * it is the copy an earlier pull or sync wrote and nobody edited since (DEST/.esync/state.sqlite
 * records what was written), or with `--force`; otherwise it is kept and reported.
 */
import { lstat, mkdir, realpath, stat, utimes } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { ApiError } from "@esync/client/api-error.ts";
import type { RemoteFileEntry } from "@esync/client/api-types.ts";
import { sha256, toHex } from "@esync/client/hash.ts";
import { type DiskNames, onDiskPath, safeDestination } from "@esync/client/local-files.ts";
import { openDirAttributes } from "@esync/client/sync/attributes.ts";
import { applyAttributes, materializeAt, recordRemoteIn } from "@esync/client/sync/engine.ts";
import { excludesFrom } from "@esync/client/sync/excludes.ts";
import { readLocalEntry, walkLocalTree } from "@esync/client/sync/local-tree.ts";
import { type RemoteVersion, remoteTree, sameVersion } from "@esync/client/sync/planner.ts";
import { SyncState, statePath } from "@esync/client/sync/state-db.ts";
import { ciphertextSizeFor } from "@esync/protocol/framing.ts";
import type { Command } from "commander";
import type { GlobalOptions } from "../config.ts";
import { type CommandContext, loadContext } from "../context.ts";
import { folderTarget } from "../drives.ts";
import { positiveInt } from "../options.ts";
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
  printJson,
  println,
  usageError,
} from "../output.ts";
import { progressMode, transferProgress } from "../progress.ts";
import { resolveFolder } from "../resolve-folder.ts";
import { checkLabel } from "./folder.ts";

interface PullOptions {
  folder?: string;
  drive?: string;
  jobs: string;
  verbose?: boolean;
  force?: boolean;
}

/** What happened to one remote file, as the `--json` summary lists it. */
export interface PullFileResult {
  path: string;
  action: "downloaded" | "up_to_date" | "kept_local" | "failed" | "interrupted" | "no_path";
  size: number;
  bytes_received?: number;
  error?: string;
  exit_code?: ExitCode;
}

interface PlannedDownload {
  entry: RemoteFileEntry;
  remote: RemoteVersion;
  rel: string;
}

/**
 * Where pull records what it wrote into `dest`: the directory's own sync state when `dest` is
 * synced (`DEST/.esync/state.sqlite`), else `<config-dir>/pulls/<sha256(DEST)>.sqlite`, so a
 * restore directory holds only the restored files.
 */
async function pullStatePath(ctx: CommandContext, dest: string): Promise<string> {
  const own = statePath(dest);
  if (await stat(own).catch(() => null)) return own;
  return join(dirname(ctx.paths.uploads), "pulls", `${toHex(sha256(await realpath(dest)))}.sqlite`);
}

/** Registers `esync pull` on `program`. */
export function registerPull(program: Command): void {
  program
    .command("pull")
    .description("download, decrypt and verify every file of a folder into DEST")
    .argument("<dest>", "destination directory (created if missing)")
    .option("-f, --folder <label>", "folder label")
    .option(
      "-d, --drive <drive>",
      "a joined shared drive, OWNER/LABEL (`esync drive join`), instead of --folder",
    )

    .option("-j, --jobs <n>", "files downloaded at once", "3")
    .option("-v, --verbose", "also list files already up to date")
    .option("--force", "replace local files that were changed locally (default: keep them)")
    .addHelpText(
      "after",
      `
Files already identical in DEST are skipped; others are replaced atomically,
unless the local file was edited after it was last pulled or synced: such a
file is kept (and reported) unless --force is given. Local files the server
does not have are left alone. Symbolic links, modes, modification times and
empty directories stored by esync are restored. What was pulled is recorded in
the config directory (pulls/), or in DEST/.esync/ when DEST is synced.

Example:
  esync pull --folder documents ~/restore/documents`,
    )
    .action(async (dest: string, opts: PullOptions, cmd: Command) => {
      const target = await folderTarget(
        await loadContext(cmd.optsWithGlobals<GlobalOptions>(), "transfer"),
        opts,
      );
      await target.run(() => pull(target.ctx, dest, { ...opts, folder: target.label }));
    });
}

async function pull(
  ctx: CommandContext,
  destArg: string,
  opts: PullOptions & { folder: string },
): Promise<void> {
  const label = checkLabel(opts.folder);
  const jobs = positiveInt("--jobs", opts.jobs);
  const { keys } = await resolveFolder(ctx, label);
  const dest = resolve(destArg);
  const st = await stat(dest).catch(() => null);
  if (st && !st.isDirectory()) throw usageError(`${destArg}: exists and is not a directory`);
  await mkdir(dest, { recursive: true });
  const say = (line: string) => {
    if (!ctx.json) println(line);
  };
  const started = performance.now();

  const entries: RemoteFileEntry[] = [];
  for await (const e of ctx.api.iterateState(ctx.address, keys.folderHash)) entries.push(e);
  const tree = remoteTree(entries, keys.key);
  const state = SyncState.open(
    dest,
    { address: ctx.address, folderHash: keys.folderHash },
    await pullStatePath(ctx, dest),
  );
  const base = state.entries();
  // Names already in DEST are used as they are on disk (a decomposed name is not written twice).
  const names = (await walkLocalTree(dest, excludesFrom([]))).disk;
  const results: PullFileResult[] = [];
  const todo: PlannedDownload[] = [];
  for (const entry of tree.unplaceable) {
    if (entry.relative_path === null) {
      results.push({ path: "", action: "no_path", size: entry.size_bytes });
      say(`skipping a file without a relative path (${entry.size_bytes} bytes)`);
      continue;
    }
    const error = `integrity check failed: ${JSON.stringify(entry.relative_path)} does not hash to its path_hash`;
    results.push({
      path: entry.relative_path,
      action: "failed",
      size: entry.size_bytes,
      error,
      exit_code: EXIT.local,
    });
    if (!ctx.json) println(`FAILED    ${entry.relative_path}: ${error}`);
  }
  for (const remote of tree.entries.values()) {
    ctx.signal.throwIfAborted();
    const { rel, entry } = remote;
    try {
      await safeDestination(dest, rel, names);
      const local = await readLocalEntry(dest, rel, ctx.address, (r) => base.get(r), names);
      if (local && sameVersion(local, { ...remote, mode: null })) {
        await applyAttributes(local.abs, remote);
        await recordRemoteIn(state, dest, remote, names);
        results.push({ path: rel, action: "up_to_date", size: entry.size_bytes });
        if (opts.verbose) say(`up to date ${rel}`);
        continue;
      }
      const b = base.get(rel);
      if (local && !opts.force && !(b && sameVersion(local, b))) {
        results.push({ path: rel, action: "kept_local", size: entry.size_bytes });
        say(`kept      ${rel}: changed locally (use --force to replace it with the server's)`);
        continue;
      }
      todo.push({ entry, remote, rel });
    } catch (e) {
      results.push({
        path: rel,
        action: "failed",
        size: entry.size_bytes,
        error: describeError(e),
        exit_code: EXIT.local,
      });
      if (!ctx.json) println(`FAILED    ${rel}: ${describeError(e)}`);
    }
  }
  // Directory times come with the entries when the server keeps them (docs/attributes.md#directory-modification-times).
  const listed =
    (await ctx.api.capabilities()).folder_entry_attributes === true
      ? await ctx.api.listFolderEntriesWithAttributes(ctx.address, keys.folderHash)
      : {
          paths: (await ctx.api.listFolderEntries(ctx.address, keys.folderHash)).relative_paths,
          attributes: new Map<string, Uint8Array>(),
        };
  const dirEntries = listed.paths;
  let directoriesCreated = 0;
  for (const dir of dirEntries) {
    try {
      const abs = await safeDestination(dest, dir, names);
      const existing = await stat(abs).catch(() => null);
      if (existing?.isDirectory()) continue;
      await mkdir(abs, { recursive: true });
      directoriesCreated++;
      if (opts.verbose) say(`created   ${dir}/`);
    } catch (e) {
      results.push({ path: dir, action: "failed", size: 0, error: describeError(e), exit_code: EXIT.local });
      if (!ctx.json) println(`FAILED    ${dir}/: ${describeError(e)}`);
    }
  }
  if (entries.length === 0 && dirEntries.length === 0) say(`folder "${label}" has no files on the server`);

  const totalBytes = todo.reduce((n, p) => n + ciphertextSizeFor(p.entry.size_bytes), 0);
  const progress = transferProgress(progressMode(ctx.json), `pull ${label}`, totalBytes, todo.length);
  const recvStart = performance.now();
  let doneTotal = 0;
  let filesDone = 0;
  let fatal = false;
  let next = 0;

  const downloadOne = async (p: PlannedDownload) => {
    const bar = progress.file(p.rel, p.entry.size_bytes);
    const ctSize = ciphertextSizeFor(p.entry.size_bytes);
    let fileDone = 0;
    try {
      await materializeAt(
        ctx.api,
        ctx.address,
        keys,
        dest,
        p.remote,
        ctx.signal,
        (n, total) => {
          doneTotal += n - fileDone;
          fileDone = n;
          bar.update("receiving", n, total ?? ctSize);
          progress.overall(doneTotal, filesDone);
        },
        names,
      );
      await recordRemoteIn(state, dest, p.remote, names);
      filesDone++;
      progress.overall(doneTotal, filesDone);
      results.push({
        path: p.rel,
        action: "downloaded",
        size: p.entry.size_bytes,
        bytes_received: fileDone,
      });
      bar.done(`downloaded ${p.rel}  ${formatSize(p.entry.size_bytes)}  verified`);
    } catch (e) {
      if (ctx.signal.aborted || isAbort(e)) {
        results.push({ path: p.rel, action: "interrupted", size: p.entry.size_bytes });
        bar.done(`interrupted ${p.rel}`);
        return;
      }
      filesDone++;
      progress.overall(doneTotal, filesDone);
      results.push({
        path: p.rel,
        action: "failed",
        size: p.entry.size_bytes,
        error: describeError(e),
        exit_code: exitCodeOf(e),
      });
      bar.done(`FAILED    ${p.rel}: ${describeError(e)}`);
      if (e instanceof ApiError && (e.status === 0 || e.status === 401 || e.status === 403)) fatal = true;
    }
  };
  const worker = async () => {
    while (!fatal && !ctx.signal.aborted && next < todo.length)
      await downloadOne(todo[next++] as PlannedDownload);
  };
  try {
    await Promise.all(Array.from({ length: Math.min(jobs, todo.length) }, worker));
  } finally {
    progress.stop();
    state.close();
  }

  if (!ctx.signal.aborted) await setDirTimes(dest, keys.key, listed.attributes, names);

  const recvMs = performance.now() - recvStart;
  const downloaded = results.filter((r) => r.action === "downloaded");
  const failed = results.filter((r) => r.action === "failed");
  const bytesReceived = downloaded.reduce((n, r) => n + (r.bytes_received ?? 0), 0);
  const s = {
    folder: label,
    folder_hash: keys.folderHash,
    dest,
    files: entries.length,
    directories_created: directoriesCreated,
    downloaded: downloaded.length,
    up_to_date: results.filter((r) => r.action === "up_to_date").length,
    kept_local: results.filter((r) => r.action === "kept_local").length,
    failed: failed.length,
    bytes_downloaded: downloaded.reduce((n, r) => n + r.size, 0),
    bytes_received: bytesReceived,
    elapsed_ms: Math.round(performance.now() - started),
    rate_bytes_per_sec: recvMs > 0 ? Math.round(bytesReceived / (recvMs / 1000)) : 0,
    interrupted: ctx.signal.aborted,
    results: results.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)),
  };
  if (ctx.json) printJson(s);
  else if (entries.length > 0) {
    const parts = [
      `pulled ${s.downloaded} file(s) (${formatSize(s.bytes_downloaded)}) from "${label}" into ${dest} in ${formatDuration(s.elapsed_ms)}`,
    ];
    if (s.downloaded > 0) parts.push(formatRate(s.rate_bytes_per_sec));
    parts.push(`${s.up_to_date} up to date`);
    if (s.kept_local > 0) parts.push(`${s.kept_local} kept (changed locally; --force replaces them)`);
    if (s.failed > 0) parts.push(`${s.failed} failed`);
    println(parts.join("; "));
  }
  if (ctx.signal.aborted) throw new CliError("interrupted", EXIT.interrupted);
  if (failed.length > 0) {
    const code = failed.some((r) => r.exit_code === EXIT.local) ? EXIT.local : EXIT.server;
    throw new CliError(`${failed.length} file(s) failed to download or verify`, code);
  }
}

/**
 * Sets the modification time of each directory under `dest` whose entry carries readable sealed
 * attributes (docs/attributes.md#directory-modification-times), deepest first, once every file is
 * written (a file written into a directory moves its time). Directories that are not there,
 * or refuse the change, keep their time.
 */
async function setDirTimes(
  dest: string,
  folderKey: Uint8Array,
  attributes: ReadonlyMap<string, Uint8Array>,
  names: DiskNames,
): Promise<void> {
  const times: [string, number][] = [];
  for (const [dir, sealed] of attributes) {
    const a = openDirAttributes(folderKey, dir, sealed);
    if (a) times.push([dir, a.mtimeMs]);
  }
  times.sort(([a], [b]) => b.split("/").length - a.split("/").length || (a < b ? -1 : 1));
  for (const [dir, ms] of times) {
    const abs = join(dest, ...onDiskPath(dir, names).split("/"));
    if (!(await lstat(abs).catch(() => null))?.isDirectory()) continue;
    await utimes(abs, ms / 1000, ms / 1000).catch(() => {});
  }
}
