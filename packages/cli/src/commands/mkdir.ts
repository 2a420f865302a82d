/**
 * @module cli/commands/mkdir
 * `esync mkdir --folder LABEL PATH...`: creates directories in a folder on the server as
 * folder entries (docs/protocol.md#folder-entries), with their parents, so that they exist (and show in `ls`,
 * `pull` and other devices) while empty. Creating an existing directory is not an error.
 */

import { type FolderRef, parentDirs, registerEntries } from "@esync/client/batch.ts";
import type { Command } from "commander";
import type { GlobalOptions } from "../config.ts";
import { loadContext } from "../context.ts";
import { folderTarget } from "../drives.ts";
import { printJson, println } from "../output.ts";
import { resolveFolder } from "../resolve-folder.ts";
import { folderPaths } from "./rm.ts";

/** Registers `esync mkdir` on `program`. */
export function registerMkdir(program: Command): void {
  program
    .command("mkdir")
    .description("create (empty) directories in a folder on the server, with their parents")
    .argument("<paths...>", "directory paths inside the folder, e.g. projects/2026")
    .option("-f, --folder <label>", "folder label")
    .option(
      "-d, --drive <drive>",
      "a joined shared drive, OWNER/LABEL (`esync drive join`), instead of --folder",
    )
    .action(async (paths: string[], opts: { folder?: string; drive?: string }, cmd: Command) => {
      const target = await folderTarget(await loadContext(cmd.optsWithGlobals<GlobalOptions>()), opts);
      const ctx = target.ctx;
      const keys =
        opts.drive !== undefined
          ? await ctx.identity.folderKeys(target.label)
          : (await resolveFolder(ctx, target.label)).keys;
      const f: FolderRef = { api: ctx.api, address: ctx.address, keys };
      const dirs = folderPaths(paths);
      await target.run(() =>
        registerEntries(
          f,
          dirs.flatMap((d) => [...parentDirs(d), d]),
        ),
      );
      if (ctx.json) printJson({ folder: target.label, created: dirs });
      else for (const d of dirs) println(`created ${d}/`);
    });
}
