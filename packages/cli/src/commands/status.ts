/**
 * @module cli/commands/status
 * `esync status DIR --folder LABEL`: what `esync sync DIR --folder LABEL` would do now, without
 * doing it. The plan is the sync engine's own (`planFolder`: the three-way comparison of the
 * state database's base, the local tree and the server's state, `sync/planner.ts`), so status
 * and sync cannot disagree. Nothing is written: a directory never synced is compared with an
 * empty base (in memory), and its `.esync/` state is only read.
 */
import { existsSync } from "node:fs";
import { stat } from "node:fs/promises";
import { resolve } from "node:path";
import type { DirTimeStep } from "@esync/client/sync/dir-times.ts";
import { pendingDirTimes, planFolder } from "@esync/client/sync/engine.ts";
import { loadExcludes } from "@esync/client/sync/excludes.ts";
import { isChange, type SyncAction } from "@esync/client/sync/planner.ts";
import { SyncState, statePath } from "@esync/client/sync/state-db.ts";
import type { Command } from "commander";
import type { GlobalOptions } from "../config.ts";
import { type CommandContext, loadContext } from "../context.ts";
import { folderTarget } from "../drives.ts";
import { collect } from "../options.ts";
import { printJson, println, reportUnsyncable, usageError } from "../output.ts";
import { resolveFolder } from "../resolve-folder.ts";

interface StatusOptions {
  folder?: string;
  drive?: string;
  exclude?: string[];
}

/** One planned step as `status --json` lists it. */
export interface StatusItem {
  /**
   * The step; `dir_time_remote` and `dir_time_local` send a directory's modification time to the
   * server or set it here (docs/attributes.md#directory-modification-times).
   */
  op: Exclude<SyncAction["op"], "record" | "forget"> | "dir_time_remote" | "dir_time_local";
  path: string;
  /** The old path of a rename or move. */
  from?: string;
  /** `new` or `changed` for uploads and downloads; `changed` for a move of a file edited here (uploaded after it). */
  reason?: "new" | "changed";
  /** Where a conflict keeps the local version. */
  copy_path?: string;
}

/** The user-visible steps of a plan (bookkeeping steps `record` and `forget` left out). */
export function statusItems(actions: SyncAction[]): StatusItem[] {
  const out: StatusItem[] = [];
  for (const a of actions) {
    if (!isChange(a) || a.op === "record" || a.op === "forget") continue; // narrows the type too
    const item: StatusItem = { op: a.op, path: a.path };
    if (a.op === "upload" || a.op === "download") item.reason = a.reason;
    if (a.op === "rename_remote" || a.op === "move_local") item.from = a.from;
    if (a.op === "move_local" && a.edited) item.reason = "changed";
    if (a.op === "conflict") item.copy_path = a.copyPath;
    out.push(item);
  }
  return out; // in the planner's order: by kind of step, then path
}

/** The directory-time steps as status items (after the others, by path). */
export function dirTimeItems(steps: readonly DirTimeStep[]): StatusItem[] {
  const out: StatusItem[] = [];
  for (const s of [...steps].sort((a, b) => (a.dir < b.dir ? -1 : a.dir > b.dir ? 1 : 0))) {
    if (s.send) out.push({ op: "dir_time_remote", path: s.dir });
    if (s.apply) out.push({ op: "dir_time_local", path: s.dir });
  }
  return out;
}

/** One line of the listing: `upload         notes/a.txt (new)`. */
export function describeItem(i: StatusItem): string {
  const verb = {
    upload: "upload",
    download: "download",
    delete_remote: "delete on server",
    delete_local: "delete here",
    rename_remote: "rename on server",
    move_local: "move here",
    conflict: "conflict",
    dir_time_remote: "time on server",
    dir_time_local: "time here",
  }[i.op];
  const what =
    i.from !== undefined
      ? `${i.from} -> ${i.path}`
      : i.copy_path !== undefined
        ? `${i.path} (both changed: the local version goes to "${i.copy_path}")`
        : i.reason !== undefined
          ? `${i.path} (${i.reason})`
          : i.path;
  return `  ${verb.padEnd(17)}${what}`;
}

/** Registers `esync status` on `program`. */
export function registerStatus(program: Command): void {
  program
    .command("status")
    .description("show what `esync sync DIR` would do, without doing it")
    .argument("<dir>", "local directory")
    .option("-f, --folder <label>", "folder label")
    .option(
      "-d, --drive <drive>",
      "a joined shared drive, OWNER/LABEL (`esync drive join`), instead of --folder",
    )
    .option(
      "--exclude <pattern>",
      "also leave paths matching this gitignore pattern alone (repeatable)",
      collect,
    )
    .addHelpText(
      "after",
      `
Lists uploads, downloads, deletions, renames, conflicts and directory modification times a
sync would carry out now.
Nothing is changed, here or on the server.

Example:
  esync status ~/Documents --folder documents`,
    )
    .action(async (dir: string, opts: StatusOptions, cmd: Command) => {
      const target = await folderTarget(
        await loadContext(cmd.optsWithGlobals<GlobalOptions>(), "read"),
        opts,
      );
      await target.run(() => status(target.ctx, dir, { ...opts, folder: target.label }));
    });
}

async function status(ctx: CommandContext, dir: string, opts: StatusOptions): Promise<void> {
  const root = resolve(dir);
  const st = await stat(root).catch(() => null);
  if (!st?.isDirectory()) throw usageError(`${dir}: not a directory`);
  const label = opts.folder as string;
  const keys =
    opts.drive !== undefined ? await ctx.identity.folderKeys(label) : (await resolveFolder(ctx, label)).keys;
  const binding = { address: ctx.address, folderHash: keys.folderHash };
  const synced = existsSync(statePath(root));
  const state = SyncState.open(root, binding, synced ? statePath(root) : ":memory:");
  try {
    const syncCtx = {
      api: ctx.api,
      address: ctx.address,
      folder: keys,
      root,
      device: ctx.config.device_name,
      excludes: await loadExcludes(root, opts.exclude),
      state,
      signal: ctx.signal,
    };
    const plan = await planFolder(syncCtx);
    const items = [...statusItems(plan.actions), ...dirTimeItems(pendingDirTimes(syncCtx, plan))];
    const skipped = plan.local.skipped;
    const unsyncable = reportUnsyncable(skipped);
    if (ctx.json) {
      printJson({
        folder: label,
        dir: root,
        synced_before: synced,
        in_sync: items.length === 0 && skipped.length === 0,
        actions: items,
        skipped,
      });
    } else {
      if (!synced)
        println(`${root} has not been synced with "${label}" yet: compared with nothing in common`);
      if (items.length === 0 && skipped.length === 0) println(`${root} and "${label}" are in sync`);
      else if (items.length > 0) {
        println(`a sync of ${root} with "${label}" would:`);
        for (const i of items) println(describeItem(i));
        println(`${items.length} change(s); run \`esync sync ${dir} --folder ${label}\` to apply them`);
      }
    }
    if (unsyncable) throw unsyncable;
  } finally {
    state.close();
  }
}
