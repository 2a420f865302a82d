/**
 * @module cli/commands/ls
 * `esync ls [PATH] --folder LABEL`: the subfolders and files of one directory of a folder on
 * the server (`/browse`, docs/protocol.md#api-profiles), every page, as a
 * listing (directories first, with their file counts and sizes) or as JSON. A PATH that is
 * neither a directory with files nor a directory entry exits 1.
 */

import type { BrowseFolderEntry, RemoteFileEntry } from "@esync/client/api-types.ts";
import type { Command } from "commander";
import type { GlobalOptions } from "../config.ts";
import { loadContext } from "../context.ts";
import { folderTarget } from "../drives.ts";
import { CliError, EXIT, formatDate, formatSize, printJson, println, table } from "../output.ts";
import { resolveFolder } from "../resolve-folder.ts";

/** The largest page `/browse` serves (docs/protocol.md#api-profiles: larger values are lowered to 200). */
const BROWSE_PAGE = 200;

/** A path given on the command line as the directory `/browse` expects: no leading or trailing `/`. */
export function browsePath(path: string | undefined): string {
  return (path ?? "").replace(/^\/+|\/+$/g, "");
}

/** Registers `esync ls` on `program`. */
export function registerLs(program: Command): void {
  program
    .command("ls")
    .description("list the subfolders and files of a directory of a folder on the server")
    .argument("[path]", "directory inside the folder (default: its root)")
    .option("-f, --folder <label>", "folder label")
    .option(
      "-d, --drive <drive>",
      "a joined shared drive, OWNER/LABEL (`esync drive join`), instead of --folder",
    )

    .addHelpText(
      "after",
      `
Examples:
  esync ls --folder documents
  esync ls reports/2026 --folder documents --json`,
    )
    .action(async (path: string | undefined, o: { folder?: string; drive?: string }, cmd: Command) => {
      const target = await folderTarget(await loadContext(cmd.optsWithGlobals<GlobalOptions>(), "read"), o);
      const ctx = target.ctx;
      const opts = { folder: target.label };
      await target.run(async () => {
        const { keys } = await resolveFolder(ctx, opts.folder);
        const dir = browsePath(path);
        const folders: BrowseFolderEntry[] = [];
        const files: RemoteFileEntry[] = [];
        for (let offset = 0; ; ) {
          const page = await ctx.api.browse(ctx.address, keys.folderHash, {
            path: dir,
            offset,
            limit: BROWSE_PAGE,
            sortBy: "file_name",
            sortOrder: "asc",
          });
          folders.push(...page.folders);
          files.push(...page.files);
          offset += page.files.length + page.folders.length;
          if (!page.has_more || page.files.length + page.folders.length === 0) break;
        }
        if (folders.length + files.length === 0 && dir !== "") {
          // Nothing listed: an empty directory (a folder entry), or no such path at all.
          const { relative_paths } = await ctx.api.listFolderEntries(ctx.address, keys.folderHash);
          if (!relative_paths.includes(dir))
            throw new CliError(`no directory "${dir}" in folder "${opts.folder}"`, EXIT.usage);
        }
        if (ctx.json) return printJson({ folder: opts.folder, path: dir, folders, files });
        if (folders.length + files.length === 0)
          return println(dir === "" ? `folder "${opts.folder}" is empty` : `"${dir}" is empty`);
        println(
          table(
            [
              { header: "SIZE", align: "right" },
              { header: "FILES", align: "right" },
              { header: "UPDATED" },
              { header: "NAME" },
            ],
            [
              ...folders.map((f) => [formatSize(f.total_bytes), String(f.file_count), "", `${f.name}/`]),
              ...files.map((f) => [
                formatSize(f.size_bytes),
                "",
                formatDate(f.updated_at),
                f.file_name ?? f.relative_path?.split("/").at(-1) ?? "(no name)",
              ]),
            ],
          ),
        );
        println(`${folders.length} folder(s), ${files.length} file(s)`);
      });
    });
}
