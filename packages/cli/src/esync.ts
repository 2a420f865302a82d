#!/usr/bin/env bun
/**
 * @module cli/esync
 * The `esync` command: back up folders to an esync server end-to-end encrypted and restore
 * them. Every command takes `--json` for scripts; errors are one line on stderr
 * (`esync: 409 conflict: ...`) and the exit code says what kind of failure it was
 * (`EXIT` in `output.ts`, listed in `esync --help`).
 *
 *   esync init [--import] [--server URL]      create or import the master mnemonic
 *   esync folder add|list|rm LABEL            the server's folder registry
 *   esync push DIR --folder LABEL             upload new and changed files (resumable)
 *   esync pull --folder LABEL DEST            download, decrypt and verify a folder
 *   esync sync DIR --folder LABEL [--watch]   two-way sync (deletions, renames, conflicts kept)
 *   esync status DIR --folder LABEL           what a sync would do, without doing it
 *   esync search [Q] [filters]                search files across folders
 *   esync ls [PATH] --folder LABEL            list a directory of a folder on the server
 *   esync restore PATH... --folder LABEL      download and verify chosen files or directories
 *   esync rm --folder LABEL [-r] PATH...      delete files (directories with -r) in one batch
 *   esync mv --folder LABEL SRC DST           rename a file or a directory on the server
 *   esync mkdir --folder LABEL PATH...        create (empty) directories on the server
 *   esync drive invite|join|members|…     shared drives: other accounts in one of your folders
 *   esync quota                               storage used and room left in the allowance
 *   esync du [--folder LABEL]                 storage used by file type and client family
 *   esync share FILE | --folder LABEL [PATH]  share a file or a directory by link (docs/sharing.md)
 *   esync shares                              list your shares with expiry and links
 *   esync unshare TOKEN|URL                   revoke a share
 *   esync passphrase set|remove               encrypt the stored mnemonic with a passphrase
 *   esync sync add|list|remove                the directory <-> folder pairs of `sync --all`
 *   esync service install|uninstall|status    a systemd user unit running `sync --all --watch`
 */
import { Command, CommanderError } from "commander";
import pkg from "../package.json" with { type: "json" };
import { registerDrive } from "./commands/drive.ts";
import { registerFolder } from "./commands/folder.ts";
import { registerInit } from "./commands/init.ts";
import { registerLs } from "./commands/ls.ts";
import { registerMkdir } from "./commands/mkdir.ts";
import { registerMv } from "./commands/mv.ts";
import { registerPassphrase } from "./commands/passphrase.ts";
import { registerPull } from "./commands/pull.ts";
import { registerPush } from "./commands/push.ts";
import { registerRestore } from "./commands/restore.ts";
import { registerRm } from "./commands/rm.ts";
import { registerSearch } from "./commands/search.ts";
import { registerService } from "./commands/service.ts";
import { registerShare } from "./commands/share.ts";
import { registerStatus } from "./commands/status.ts";
import { registerSync } from "./commands/sync.ts";
import { registerSyncPairs } from "./commands/sync-pairs.ts";
import { registerUsage } from "./commands/usage.ts";
import { registerVersions } from "./commands/versions.ts";
import { logEvent } from "./log.ts";
import {
  describeError,
  EXIT,
  EXIT_CODES_HELP,
  errorln,
  exitCodeOf,
  lastOutage,
  resumeHint,
} from "./output.ts";
import { applyOutputOptions, type OutputOptions } from "./output-options.ts";

/** The `esync` program with every command registered; `exitOverride` lets `main` choose exit codes. */
export function buildProgram(): Command {
  const program = new Command("esync")
    .description("End-to-end-encrypted file sync: files are encrypted on this machine before they are sent")
    // `--version` alone is handled in `run`, so that `restore --version N` reaches its command.
    .version(pkg.version, "-V", "output the version number (also --version)")
    .option("--config-dir <dir>", "configuration directory (default $ESYNC_CONFIG_DIR or ~/.config/esync)")
    .option("--server <url>", "server URL for this run (default $ESYNC_SERVER or the one from init)")
    .option("--json", "machine-readable JSON output (one document on stdout)")
    .option(
      "--retry-for <duration>",
      "keep retrying network errors and 5xx this long before failing, e.g. 30s, 2m, 0 (default $ESYNC_RETRY_FOR, else 2m; 1s for read commands: folder list, ls, search, quota, du, status)",
    )
    .option("-q, --quiet", "print only errors (a --json document is still printed)")
    .option("--log-file <path>", "append JSON log lines to PATH (rotated at 10 MiB, 5 files kept)")
    .option(
      "--spill-dir <dir>",
      "where temporary files (a share's encrypted copy) go (default $ESYNC_SPILL_DIR or <config-dir>/spill)",
    )
    .showHelpAfterError("(run with --help for usage)")
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .configureOutput({ outputError: (text, write) => write(`esync: ${text.replace(/^error: /, "")}`) })
    .exitOverride()
    .hook("preAction", (_program, action) => {
      const names: string[] = [];
      for (let c: Command | null = action; c?.parent; c = c.parent) names.unshift(c.name());
      applyOutputOptions(action.optsWithGlobals<OutputOptions>(), {
        command: names.join(" "),
        args: action.args,
        options: action.opts(),
      });
    })
    .addHelpText(
      "after",
      `
Quick start:
  esync init --server http://127.0.0.1:8080
  esync folder add documents
  esync status ~/Documents --folder documents
  esync sync ~/Documents --folder documents
  esync sync add ~/Documents --folder documents && esync service install
  esync push ~/Photos --folder photos --create
  esync search report --type pdf
  esync ls --folder documents
  esync restore reports/2026 --folder documents --to ~/restore
  esync share reports/q1.pdf --folder documents --ttl 7d

Resuming large uploads:
  A file over 8 MiB is hashed in one encryption pass, then each 8 MiB chunk is
  encrypted from the file as it is sent; no encrypted copy is written to disk.
  After Ctrl-C, a crash or an outage, running the same command again sends only
  the chunks the server lacks (uploads.json keeps the session, the file's size,
  mtime and inode, and the nonce that re-encrypts them identically).

${EXIT_CODES_HELP}`,
    );
  registerInit(program);
  registerFolder(program);
  registerPush(program);
  registerPull(program);
  registerSyncPairs(registerSync(program));
  registerStatus(program);
  registerSearch(program);
  registerLs(program);
  registerRestore(program);
  registerRm(program);
  registerVersions(program);
  registerMv(program);
  registerMkdir(program);
  registerDrive(program);
  registerUsage(program);
  registerShare(program);
  registerPassphrase(program);
  registerService(program);
  for (const cmd of program.commands) {
    cmd.exitOverride();
    for (const sub of cmd.commands) sub.exitOverride();
  }
  return program;
}

/** Runs `esync` with `argv` (as `process.argv`) and returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  const start = performance.now();
  const code = await run(program, argv);
  logEvent(code === EXIT.ok ? "info" : "error", "command.end", {
    code,
    ms: Math.round(performance.now() - start),
  });
  return code;
}

async function run(program: Command, argv: string[]): Promise<number> {
  if (argv[2] === "--version") {
    process.stdout.write(`${pkg.version}\n`);
    return EXIT.ok;
  }
  try {
    await program.parseAsync(argv);
    return EXIT.ok;
  } catch (e) {
    if (e instanceof CommanderError) {
      // Help and version end with exit code 0; any other parse error was printed by commander.
      return e.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    errorln(`esync: ${describeError(e)}`);
    const code = exitCodeOf(e);
    const server = lastOutage();
    if (server && code !== EXIT.interrupted) errorln(resumeHint(server));
    return code;
  }
}

if (import.meta.main) {
  const code = await main(process.argv);
  // Exiting at once would cut what is still queued for a pipe (a `--json` summary of a large tree).
  await new Promise<void>((resolve) => process.stdout.end(resolve));
  process.exit(code);
}
