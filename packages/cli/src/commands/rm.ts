/**
 * @module cli/commands/rm
 * `esync rm --folder LABEL PATH...`: deletes files of a folder on the server by their path
 * inside the folder, all in `/delete_files` batches (docs/protocol.md#delete-files; `file_id` = hex of
 * `path_hash`). With `-r`, a directory goes with every file under it and its directory entries
 * (docs/protocol.md#folder-entries).
 */

import { deleteMany, type FolderRef, isUnder, unregisterEntries } from "@esync/client/batch.ts";
import { fileId, normalizeRelativePath, pathHash } from "@esync/client/manifest.ts";
import type { Command } from "commander";
import type { GlobalOptions } from "../config.ts";
import { loadContext } from "../context.ts";
import { folderTarget } from "../drives.ts";
import { CliError, EXIT, errorln, printJson, println, usageError } from "../output.ts";
import { kindAt, listRemote } from "../remote-folder.ts";
import { checkLabel } from "./folder.ts";

/** One path's result. */
interface RmResult {
  path: string;
  file_id?: string;
  kind: "file" | "dir";
  deleted: boolean;
  files_deleted?: number;
  error?: string;
}

/** Parses command-line paths into folder paths (usage error when one is invalid). */
export function folderPaths(paths: string[]): string[] {
  return paths.map((p) => {
    try {
      return normalizeRelativePath(p.replace(/\/+$/, ""));
    } catch (e) {
      throw usageError((e as Error).message);
    }
  });
}

/** Registers `esync rm` on `program`. */
export function registerRm(program: Command): void {
  program
    .command("rm")
    .description("delete files (with -r: directories) of a folder on the server, in one batch")
    .argument("<paths...>", "paths inside the folder, e.g. docs/report.pdf")
    .option("-f, --folder <label>", "folder label")
    .option(
      "-d, --drive <drive>",
      "a joined shared drive, OWNER/LABEL (`esync drive join`), instead of --folder",
    )
    .option("-r, --recursive", "delete directories with everything under them")
    .action(
      async (
        paths: string[],
        opts: { folder?: string; drive?: string; recursive?: boolean },
        cmd: Command,
      ) => {
        const target = await folderTarget(await loadContext(cmd.optsWithGlobals<GlobalOptions>()), opts);
        const ctx = target.ctx;
        await target.run(async () => {
          const keys = await ctx.identity.folderKeys(checkLabel(target.label));
          const f: FolderRef = { api: ctx.api, address: ctx.address, keys };
          const rels = folderPaths(paths);
          const results: RmResult[] = [];
          const ids = new Map<string, RmResult>();
          let dirEntries: string[] = [];
          if (opts.recursive) {
            const listing = await listRemote(f);
            for (const rel of rels) {
              const kind = kindAt(listing, rel);
              if (kind === "dir") {
                const under = listing.files.filter(
                  (e) => e.relative_path !== null && isUnder(e.relative_path, rel),
                );
                const r: RmResult = { path: rel, kind: "dir", deleted: true, files_deleted: under.length };
                results.push(r);
                for (const e of under) ids.set(fileId(Uint8Array.from(e.path_hash)), r);
                dirEntries.push(...listing.entries.filter((p) => isUnder(p, rel)));
                continue;
              }
              const r: RmResult = { path: rel, kind: "file", file_id: fileId(pathHash(rel)), deleted: true };
              results.push(r);
              ids.set(r.file_id as string, r);
            }
          } else
            for (const rel of rels) {
              const r: RmResult = { path: rel, kind: "file", file_id: fileId(pathHash(rel)), deleted: true };
              results.push(r);
              ids.set(r.file_id as string, r);
            }
          const out = await deleteMany(f, [...ids.keys()]);
          for (const d of out.deleted) {
            const r = ids.get(d.file_id);
            if (r?.kind === "file" && d.status === "already_deleted") {
              r.deleted = false;
              r.error = "not found";
            }
          }
          for (const e of out.errors) {
            const r = ids.get(e.file_id);
            if (r) {
              r.deleted = false;
              r.error = e.error;
            }
          }
          const missing = results.filter((r) => !r.deleted && r.kind === "file");
          if (!opts.recursive && missing.length > 0) {
            // Say which of the paths not found are directories, and how to delete them.
            const listing = await listRemote(f);
            for (const r of missing)
              if (kindAt(listing, r.path) === "dir")
                r.error = "is a directory (use -r to delete it with everything under it)";
              else r.error = "not found";
          }
          dirEntries = [...new Set(dirEntries)];
          if (dirEntries.length > 0) await unregisterEntries(f, dirEntries);
          if (ctx.json) printJson({ folder: target.label, folder_hash: keys.folderHash, results });
          else
            for (const r of results) {
              if (!r.deleted) {
                if (results.length > 1) errorln(`esync: ${r.path}: ${r.error}`);
              } else if (r.kind === "dir") println(`deleted ${r.path}/ (${r.files_deleted} file(s))`);
              else println(`deleted ${r.path}`);
            }
          const failed = results.filter((r) => !r.deleted).length;
          const only = results.length === 1 ? results[0] : undefined;
          if (failed > 0)
            throw new CliError(
              only ? `${only.path}: ${only.error}` : `${failed} of ${results.length} path(s) not deleted`,
              EXIT.server,
            );
        });
      },
    );
}
