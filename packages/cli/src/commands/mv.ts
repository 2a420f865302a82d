/**
 * @module cli/commands/mv
 * `esync mv --folder LABEL SRC DST`: renames a file, or a whole directory, of a folder on the
 * server without re-uploading (docs/protocol.md#rename-files: signed `/rename_files` batches; a directory's
 * entries move with it, docs/protocol.md#folder-entries, keeping their modification times). Like `mv`, a DST that
 * is an existing directory receives SRC inside it. An existing file at DST is never overwritten.
 */

import { type FolderRef, isUnder, moveTree, renameMany } from "@esync/client/batch.ts";
import type { Command } from "commander";
import type { GlobalOptions } from "../config.ts";
import { loadContext } from "../context.ts";
import { folderTarget } from "../drives.ts";
import { CliError, EXIT, errorln, printJson, println, usageError } from "../output.ts";
import { kindAt, listRemote } from "../remote-folder.ts";
import { resolveFolder } from "../resolve-folder.ts";
import { folderPaths } from "./rm.ts";

/** Registers `esync mv` on `program`. */
export function registerMv(program: Command): void {
  program
    .command("mv")
    .description("rename or move a file or a directory of a folder on the server (no re-upload)")
    .argument("<src>", "file or directory inside the folder")
    .argument("<dst>", "new path, or an existing directory to move into")
    .option("-f, --folder <label>", "folder label")
    .option(
      "-d, --drive <drive>",
      "a joined shared drive, OWNER/LABEL (`esync drive join`), instead of --folder",
    )
    .addHelpText(
      "after",
      `
Examples:
  esync mv --folder documents notes.txt archive/notes-2026.txt
  esync mv --folder documents reports/2025 archive/`,
    )
    .action(async (src: string, dst: string, opts: { folder?: string; drive?: string }, cmd: Command) => {
      const target = await folderTarget(await loadContext(cmd.optsWithGlobals<GlobalOptions>()), opts);
      const ctx = target.ctx;
      const label = target.label;
      await target.run(async () => {
        const keys =
          opts.drive !== undefined
            ? await ctx.identity.folderKeys(label)
            : (await resolveFolder(ctx, label)).keys;
        const f: FolderRef = { api: ctx.api, address: ctx.address, keys };
        const [from, rawTo] = folderPaths([src, dst]) as [string, string];
        const listing = await listRemote(f);
        const kind = kindAt(listing, from);
        if (kind === null) throw new CliError(`${from}: not found in "${label}"`, EXIT.server);
        const name = from.split("/").at(-1) ?? from;
        const to = kindAt(listing, rawTo) === "dir" ? `${rawTo}/${name}` : rawTo;
        if (to === from) throw usageError(`${from}: source and destination are the same`);
        if (kind === "dir" && isUnder(to, from)) throw usageError(`cannot move ${from} into itself (${to})`);
        if (kindAt(listing, to) !== null) throw new CliError(`${to}: already exists`, EXIT.server);
        const outcomes =
          kind === "file"
            ? await renameMany(f, [
                { entry: listing.files.find((e) => e.relative_path === from) as never, to },
              ])
            : (
                await moveTree(f, from, to, listing.files, listing.entries, {
                  folderKey: keys.key,
                  sealed: listing.attributes,
                })
              ).files;
        const failed = outcomes.filter((o) => o.reason !== undefined);
        if (ctx.json)
          printJson({
            folder: label,
            from,
            to,
            kind,
            moved: outcomes.length - failed.length,
            failures: failed.map((o) => ({ to: o.to, reason: o.reason })),
          });
        else {
          println(
            kind === "file"
              ? `moved ${from} -> ${to}`
              : `moved ${from}/ -> ${to}/ (${outcomes.length - failed.length} file(s))`,
          );
          if (failed.length > 1 || kind === "dir")
            for (const o of failed) errorln(`esync: ${o.to}: ${o.reason}`);
        }
        if (failed.length > 0)
          throw new CliError(
            kind === "file" ? `${from}: ${failed[0]?.reason}` : `${failed.length} file(s) not moved`,
            EXIT.server,
          );
      });
    });
}
