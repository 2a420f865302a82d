/**
 * @module cli/commands/rm
 * `esync rm --folder LABEL PATH...`: deletes files of a folder on the server by their path
 * inside the folder (`/delete`, `file_id` = hex of `path_hash`, complement §5).
 */
import type { Command } from "commander";
import { fileId, normalizeRelativePath, pathHash } from "../../client/manifest.ts";
import type { GlobalOptions } from "../config.ts";
import { loadContext } from "../context.ts";
import {
  CliError,
  describeError,
  EXIT,
  type ExitCode,
  eprintln,
  exitCodeOf,
  printJson,
  println,
  usageError,
} from "../output.ts";
import { checkLabel } from "./folder.ts";

/** Registers `esync rm` on `program`. */
export function registerRm(program: Command): void {
  program
    .command("rm")
    .description("delete files of a folder on the server, by path inside the folder")
    .argument("<paths...>", "paths inside the folder, e.g. docs/report.pdf")
    .requiredOption("-f, --folder <label>", "folder label")
    .action(async (paths: string[], opts: { folder: string }, cmd: Command) => {
      const ctx = await loadContext(cmd.optsWithGlobals<GlobalOptions>());
      const keys = ctx.identity.folder(checkLabel(opts.folder));
      const rels = paths.map((p) => {
        try {
          return normalizeRelativePath(p);
        } catch (e) {
          throw usageError((e as Error).message);
        }
      });
      const results: Array<{ path: string; file_id: string; deleted: boolean; error?: string }> = [];
      let code: ExitCode = EXIT.ok;
      for (const rel of rels) {
        const id = fileId(pathHash(rel));
        try {
          await ctx.api.deleteFile(ctx.address, keys.folderHash, id);
          results.push({ path: rel, file_id: id, deleted: true });
          if (!ctx.json) println(`deleted ${rel}`);
        } catch (e) {
          results.push({ path: rel, file_id: id, deleted: false, error: describeError(e) });
          if (code === EXIT.ok) code = exitCodeOf(e);
          if (!ctx.json && rels.length > 1) eprintln(`esync: ${rel}: ${describeError(e)}`);
        }
      }
      if (ctx.json) printJson({ folder: opts.folder, folder_hash: keys.folderHash, results });
      const failed = results.filter((r) => !r.deleted).length;
      if (failed > 0) {
        const only = results.length === 1 ? results[0]?.error : undefined;
        throw new CliError(only ?? `${failed} of ${results.length} file(s) not deleted`, code);
      }
    });
}
