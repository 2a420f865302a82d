/**
 * @module cli/commands/folder
 * `esync folder add|list|rm`: the server's folder registry (docs/protocol.md#folders). A folder is
 * named by its label; its `folder_hash` and keys are derived from the label (docs/protocol.md#manifest, #client-keys), so the same label on another device with the same mnemonic is the same folder.
 */

import { ApiError } from "@esync/client/api-error.ts";
import { folderHash } from "@esync/client/keys.ts";
import type { Command } from "commander";
import type { GlobalOptions } from "../config.ts";
import { loadContext } from "../context.ts";
import { formatDate, formatSize, printJson, println, table, usageError } from "../output.ts";

/** Checks a folder label given on the command line: non-empty, no control characters. */
export function checkLabel(label: string): string {
  if (label.trim() === "") throw usageError("a folder label cannot be empty");
  if (/\p{Cc}/u.test(label)) throw usageError("a folder label cannot contain control characters");
  return label;
}

/** Registers `esync folder ...` on `program`. */
export function registerFolder(program: Command): void {
  const folder = program.command("folder").description("manage sync folders (add, list, rm)");

  folder
    .command("add")
    .description("register a folder on the server (push registers it too when needed)")
    .argument("<label>", "folder label; its hash and keys derive from it")
    .option("--device <name>", "device name to record (default: the one from init)")
    .action(async (label: string, opts: { device?: string }, cmd: Command) => {
      const ctx = await loadContext(cmd.optsWithGlobals<GlobalOptions>());
      const hash = folderHash(checkLabel(label));
      let already = false;
      try {
        await ctx.api.registerFolder({
          ss58Address: ctx.address,
          folderHash: hash,
          label,
          deviceName: opts.device ?? ctx.config.device_name,
        });
      } catch (e) {
        if (!(e instanceof ApiError && e.status === 409)) throw e;
        already = true;
      }
      if (ctx.json)
        printJson({ label, folder_hash: hash, registered: !already, already_registered: already });
      else
        println(
          already
            ? `folder "${label}" (${hash}) is already registered`
            : `registered folder "${label}" (${hash})`,
        );
    });

  folder
    .command("list")
    .alias("ls")
    .description("list registered folders with file counts and sizes")
    .action(async (_opts: unknown, cmd: Command) => {
      const ctx = await loadContext(cmd.optsWithGlobals<GlobalOptions>(), "read");
      const { folders } = await ctx.api.listFolders(ctx.address);
      if (ctx.json) return printJson(folders);
      if (folders.length === 0) return println("no folders (add one with `esync folder add LABEL`)");
      println(
        table(
          [
            { header: "LABEL" },
            { header: "HASH" },
            { header: "FILES", align: "right" },
            { header: "SIZE", align: "right" },
            { header: "UPDATED" },
            { header: "DEVICE" },
          ],
          folders.map((f) => [
            f.label,
            f.folder_hash,
            String(f.file_count),
            formatSize(f.total_bytes),
            formatDate(f.updated_at),
            f.device_name,
          ]),
        ),
      );
    });

  folder
    .command("rm")
    .description("unregister a folder and delete every file in it on the server (irreversible)")
    .argument("<label>", "folder label")
    .option("--yes", "confirm the deletion (required)")
    .action(async (label: string, opts: { yes?: boolean }, cmd: Command) => {
      const ctx = await loadContext(cmd.optsWithGlobals<GlobalOptions>());
      const hash = folderHash(checkLabel(label));
      if (!opts.yes)
        throw usageError(`folder rm deletes every file of "${label}" on the server; pass --yes to confirm`);
      const r = await ctx.api.unregisterFolder({ ss58Address: ctx.address, folderHash: hash });
      if (ctx.json) printJson({ label, folder_hash: hash, files_deleted: r.files_deleted });
      else println(`unregistered folder "${label}" (${hash}); ${r.files_deleted} file(s) deleted`);
    });
}
