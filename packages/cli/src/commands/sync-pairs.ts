/**
 * @module cli/commands/sync-pairs
 * `esync sync add DIR --folder LABEL|--drive OWNER/LABEL [--exclude P]...`, `esync sync list`
 * and `esync sync remove DIR|--folder LABEL|--drive OWNER/LABEL`: the pairs kept in the
 * configuration (`sync-pairs.ts`) that `esync sync --all` syncs (docs/user-guide.md, "Sync
 * pairs"). A drive pair is checked against the joined drives when it is added and stored under
 * the drive's `OWNER/LABEL` (docs/drives.md, "Client"). They are subcommands of `sync`, whose
 * own `sync DIR` keeps working: a directory literally named `add`, `list` or `remove` is given
 * as `./add`.
 *
 * Commander hands the options after `sync add DIR` to `sync` itself, which declares the same
 * `--folder`, `--drive` and `--exclude`; the subcommands declare them too (for their help) and
 * read both.
 */
import type { Command } from "commander";
import { configDir, configPaths, type GlobalOptions } from "../config.ts";
import { loadContext } from "../context.ts";
import { driveName, resolveDrive } from "../drives.ts";
import { collect } from "../options.ts";
import { printJson, println, table, usageError } from "../output.ts";
import { addPair, pairName, pairTarget, readPairs, removePairs } from "../sync-pairs.ts";

interface PairOptions {
  folder?: string;
  drive?: string;
  exclude?: string[];
}

/** `--folder`, `--drive` and `--exclude` of a subcommand of `sync`, wherever commander put them. */
function pairOptions(cmd: Command): { folder?: string; drive?: string; exclude: string[] } {
  const own = cmd.opts<PairOptions>();
  const parent = cmd.parent?.opts<PairOptions>() ?? {};
  return {
    folder: own.folder ?? parent.folder,
    drive: own.drive ?? parent.drive,
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
    .option("-f, --folder <label>", "folder label on the server (or --drive)")
    .option(
      "-d, --drive <drive>",
      "a joined shared drive, OWNER/LABEL (`esync drive join`), instead of --folder",
    )
    .option(
      "-x, --exclude <pattern>",
      "leave out paths matching PATTERN for this pair (gitignore syntax; repeatable)",
      collect,
      [],
    )
    .action(async (dir: string, _opts: unknown, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const { folder, drive, exclude } = pairOptions(cmd);
      if ((folder === undefined) === (drive === undefined))
        throw usageError("give --folder LABEL (your folder) or --drive OWNER/LABEL (a joined drive)");
      const target =
        drive === undefined
          ? { folder: folder as string }
          : { drive: driveName(await resolveDrive(await loadContext(g, "read"), drive)) };
      const pair = await addPair(configPaths(configDir(g.configDir)), dir, target, exclude);
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
          pairs.map((p) => [
            p.dir,
            p.drive === undefined ? (p.folder as string) : pairTarget(p),
            p.exclude.join(" "),
          ]),
        ),
      );
    });

  sync
    .command("remove")
    .description("forget the pair of DIR, or every pair of --folder or --drive (local files are left alone)")
    .argument("[dir]", "the paired directory")
    .option("-f, --folder <label>", "remove the pairs of this folder")
    .option("-d, --drive <drive>", "remove the pairs of this drive (OWNER/LABEL or LABEL)")
    .action(async (dir: string | undefined, _opts: unknown, cmd: Command) => {
      const { folder, drive } = pairOptions(cmd);
      if (dir === undefined && folder === undefined && drive === undefined)
        throw usageError("give DIR, --folder LABEL or --drive OWNER/LABEL");
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const removed = await removePairs(configPaths(configDir(g.configDir)), { dir, folder, drive });
      if (g.json) return printJson({ removed });
      for (const p of removed) println(`removed sync pair ${pairName(p)}`);
    });
}
