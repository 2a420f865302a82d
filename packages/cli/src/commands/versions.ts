/**
 * @module cli/commands/versions
 * Version history and trash (docs/versions.md, docs/user-guide.md "Versions and trash"):
 * `esync versions PATH --folder L` lists a file's kept versions, `esync trash --folder L` the
 * folder's deleted files, and `restoreFromHistory` (behind `esync restore PATH --version N |
 * --at TIME | --deleted`) makes a kept version the file's current revision on the server,
 * without sending its bytes again; the next `sync` or `pull` brings it to every device.
 * Each needs a server that advertises the `versions` capability.
 */

import { ApiError } from "@esync/client/api-error.ts";
import type { FileVersion, RestoreVersionResult } from "@esync/client/api-types.ts";
import { fileId, pathHash } from "@esync/client/manifest.ts";
import type { Command } from "commander";
import type { GlobalOptions } from "../config.ts";
import { type CommandContext, loadContext } from "../context.ts";
import { CliError, EXIT, formatSize, printJson, println, usageError } from "../output.ts";
import { checkLabel } from "./folder.ts";
import { folderPaths } from "./rm.ts";

/** How `restoreFromHistory` picks the version. */
export type HistoryChoice = { version: number } | { at: number } | { deleted: true };

/** `YYYY-MM-DD HH:MM:SS` UTC of Unix seconds. */
function when(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace("T", " ").slice(0, 19);
}

/**
 * Parses `--at`: Unix seconds, or a date and time `Date.parse` reads (ISO 8601, e.g.
 * `2026-11-28T05:00:00Z`; without a zone, local time).
 * @throws CliError (usage) for anything else.
 */
export function parseTime(text: string): number {
  if (/^\d+$/.test(text)) return Number(text);
  const ms = Date.parse(text);
  if (Number.isNaN(ms))
    throw usageError(`--at: not a time: ${JSON.stringify(text)} (try 2026-11-28T05:00:00Z)`);
  return Math.floor(ms / 1000);
}

/**
 * Refuses a server without version history.
 * @throws CliError (server) when `GET /v1/capabilities` does not advertise `versions`.
 */
async function requireVersions(ctx: CommandContext): Promise<void> {
  if ((await ctx.api.capabilities()).versions) return;
  throw new CliError(
    `the server at ${ctx.serverUrl} keeps no versions (no 'versions' capability; its operator sets ESYNC_VERSION_RETENTION_DAYS)`,
    EXIT.server,
  );
}

/** The folder hash and file id of `path` in folder `label`. */
async function target(ctx: CommandContext, label: string, path: string) {
  const keys = await ctx.identity.folderKeys(checkLabel(label));
  const [rel] = folderPaths([path]) as [string];
  return { keys, rel, id: fileId(pathHash(rel)) };
}

/** One listing line of a kept version. */
function versionLine(v: FileVersion): string {
  return `${String(v.version_id).padStart(6)}  ${v.reason.padEnd(8)}  ${when(v.entry.updated_at)}  ${formatSize(v.entry.size_bytes).padStart(9)}  kept until ${when(v.expires_at)}`;
}

/**
 * Chooses the version of `versions` (newest first) that `choice` names: `version` by id,
 * `at` the revision that was current at that second (written at or before it, replaced or
 * deleted after it).
 * @throws CliError (usage) when none matches.
 */
export function chooseVersion(versions: FileVersion[], choice: HistoryChoice, rel: string): FileVersion {
  if ("version" in choice) {
    const v = versions.find((x) => x.version_id === choice.version);
    if (!v)
      throw usageError(
        `no version ${choice.version} of ${rel} (list them: esync versions ${rel} --folder …)`,
      );
    return v;
  }
  if ("at" in choice) {
    const v = versions.find((x) => x.entry.updated_at <= choice.at && choice.at < x.kept_at);
    if (!v) throw usageError(`no kept version of ${rel} was current at ${when(choice.at)} UTC`);
    return v;
  }
  throw usageError("internal: --deleted picks from the trash");
}

/**
 * Restores `path` of folder `label` on the server as `choice` says: a kept version over the
 * current revision (`version`, `at`), or a deleted file from the trash (`deleted`).
 * @returns the path and the new revision.
 * @throws CliError (usage) for an unknown version or a path not in the trash; (server) for a
 *   server without versions; ApiError from the server (409 when the file changed meanwhile).
 */
export async function restoreFromHistory(
  ctx: CommandContext,
  label: string,
  path: string,
  choice: HistoryChoice,
): Promise<{ path: string; restored: RestoreVersionResult }> {
  await requireVersions(ctx);
  const { keys, rel, id } = await target(ctx, label, path);
  let version: FileVersion | undefined;
  let base: number[] | null = null;
  if ("deleted" in choice) {
    for await (const v of ctx.api.iterateTrash(ctx.address, keys.folderHash))
      if (v.entry.relative_path === rel) {
        version = v;
        break;
      }
    if (!version)
      throw usageError(`${rel} is not in the trash of folder ${label} (see: esync trash --folder ${label})`);
  } else {
    const listing = await ctx.api.fileVersions(ctx.address, keys.folderHash, id);
    if (listing.versions.length === 0 && listing.current === null)
      throw usageError(`no file and no kept version at ${rel} in folder ${label}`);
    version = chooseVersion(listing.versions, choice, rel);
    base = listing.current?.revision_id ?? null;
  }
  try {
    const restored = await ctx.api.restoreVersion(ctx.address, keys.folderHash, id, version.version_id, base);
    return { path: rel, restored };
  } catch (e) {
    if (e instanceof ApiError && e.status === 409)
      throw new CliError(`${rel} changed on the server meanwhile; run the command again`, EXIT.server);
    throw e;
  }
}

/** Registers `esync versions` and `esync trash` on `program`. */
export function registerVersions(program: Command): void {
  program
    .command("versions")
    .description("list the kept versions of a file (restore one: esync restore PATH --version N)")
    .argument("<path>", "the file's path inside the folder")
    .requiredOption("-f, --folder <label>", "folder label")
    .action(async (path: string, opts: { folder: string }, cmd: Command) => {
      const ctx = await loadContext(cmd.optsWithGlobals<GlobalOptions>());
      await requireVersions(ctx);
      const { keys, rel, id } = await target(ctx, opts.folder, path);
      const r = await ctx.api.fileVersions(ctx.address, keys.folderHash, id);
      if (ctx.json) return printJson({ folder: opts.folder, path: rel, ...r });
      if (r.current === null && r.versions.length === 0)
        throw usageError(`no file and no kept version at ${rel} in folder ${opts.folder}`);
      if (r.current)
        println(
          `${"current".padStart(6)}  ${"".padEnd(8)}  ${when(r.current.updated_at)}  ${formatSize(r.current.size_bytes).padStart(9)}`,
        );
      else println(`${rel} is deleted (restore it: esync restore --deleted ${rel} --folder ${opts.folder})`);
      for (const v of r.versions) println(versionLine(v));
      if (r.versions.length === 0) println("no kept versions");
    });

  program
    .command("trash")
    .description("list the deleted files of a folder (restore one: esync restore --deleted PATH)")
    .requiredOption("-f, --folder <label>", "folder label")
    .action(async (opts: { folder: string }, cmd: Command) => {
      const ctx = await loadContext(cmd.optsWithGlobals<GlobalOptions>());
      await requireVersions(ctx);
      const keys = await ctx.identity.folderKeys(checkLabel(opts.folder));
      const deleted: FileVersion[] = [];
      for await (const v of ctx.api.iterateTrash(ctx.address, keys.folderHash)) deleted.push(v);
      if (ctx.json) return printJson({ folder: opts.folder, deleted });
      if (deleted.length === 0) return println(`the trash of folder ${opts.folder} is empty`);
      for (const v of deleted)
        println(
          `${when(v.kept_at)}  ${formatSize(v.entry.size_bytes).padStart(9)}  ${v.entry.relative_path ?? `(file ${fileId(v.entry.path_hash)})`}`,
        );
    });
}
