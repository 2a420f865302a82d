/**
 * @module cli/commands/sync-pairs
 * `esync sync add DIR --folder LABEL [--exclude P]...`, `esync sync list` and
 * `esync sync remove DIR|--folder LABEL`: the pairs kept in the configuration
 * (`sync-pairs.ts`) that `esync sync --all` syncs (docs/user-guide.md, "Sync pairs"). They are subcommands of `sync`, whose own `sync DIR` keeps working: a
 * directory literally named `add`, `list` or `remove` is given as `./add`.
 *
 * Commander hands the options after `sync add DIR` to `sync` itself, which declares the same
 * `--folder` and `--exclude`; the subcommands declare them too (for their help) and read both.
 */
import type { Command } from "commander";
import { configDir, configPaths, type GlobalOptions } from "../config.ts";
import { collect } from "../options.ts";
import { printJson, println, table, usageError } from "../output.ts";
import { addPair, pairName, readPairs, removePairs } from "../sync-pairs.ts";

interface PairOptions {
  folder?: string;
  exclude?: string[];
}

/** `--folder` and `--exclude` of a subcommand of `sync`, wherever commander put them. */
function pairOptions(cmd: Command): { folder?: string; exclude: string[] } {
  const own = cmd.opts<PairOptions>();
  const parent = cmd.parent?.opts<PairOptions>() ?? {};
  return {
    folder: own.folder ?? parent.folder,
    exclude: [...(parent.exclude ?? []), ...(own.exclude ?? [])],
  };
}

/** Registers `add`, `list` and `remove` under the `sync` command (`registerSync`'s). */
export function registerSyncPairs(sync: Command): void {
  sync.helpCommand(false); // `esync sync help` would take a directory named `help`; --help stays
  sync
    .command("add")
    .description("remember DIR <-> folder as a pair synced by `esync sync --all` and the service")
    .argument("<dir>", "an existing local directory (stored as an absolute path)")
    .option("-f, --folder <label>", "folder label on the server (required)")
    .option(
      "-x, --exclude <pattern>",
      "leave out paths matching PATTERN for this pair (gitignore syntax; repeatable)",
      collect,
      [],
    )
    .action(async (dir: string, _opts: unknown, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const { folder, exclude } = pairOptions(cmd);
      if (folder === undefined) throw usageError("give the folder: esync sync add DIR --folder LABEL");
      const pair = await addPair(configPaths(configDir(g.configDir)), dir, folder, exclude);
      if (g.json) printJson({ added: pair });
      else println(`added sync pair ${pairName(pair)}`);
    });

  sync
    .command("list")
    .description("list the configured directory <-> folder pairs")
    .action(async (_opts: unknown, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const pairs = await readPairs(configPaths(configDir(g.configDir)));
      if (g.json) return printJson({ pairs });
      if (pairs.length === 0)
        return println("no sync pairs (add one with `esync sync add DIR --folder LABEL`)");
      println(
        table(
          [{ header: "DIRECTORY" }, { header: "FOLDER" }, { header: "EXCLUDES" }],
          pairs.map((p) => [p.dir, p.folder, p.exclude.join(" ")]),
        ),
      );
    });

  sync
    .command("remove")
    .description("forget the pair of DIR, or every pair of --folder (local files are left alone)")
    .argument("[dir]", "the paired directory")
    .option("-f, --folder <label>", "remove the pairs of this folder")
    .action(async (dir: string | undefined, _opts: unknown, cmd: Command) => {
      const { folder } = pairOptions(cmd);
      if (dir === undefined && folder === undefined) throw usageError("give DIR or --folder LABEL");
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const removed = await removePairs(configPaths(configDir(g.configDir)), { dir, folder });
      if (g.json) return printJson({ removed });
      for (const p of removed) println(`removed sync pair ${pairName(p)}`);
    });
}
