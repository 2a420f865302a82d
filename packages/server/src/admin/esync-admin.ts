#!/usr/bin/env bun
import { formatSize } from "@esync/protocol/units.ts";
/**
 * @module server/admin/esync-admin
 * `esync-admin`: the operator's command, separate from the user CLI `esync`. It works on the
 * database of the configured `ESYNC_DATA_DIR` / `ESYNC_DB_PATH`, or `ESYNC_DATABASE_URL` for
 * PostgreSQL (the same environment as the server; safe while the server runs), with the
 * conventions of `esync`: `--json` for scripts (on the program or any command), one-line errors
 * on stderr, and exit codes:
 *
 * | code | meaning |
 * |---|---|
 * | 0 | success |
 * | 1 | usage: bad arguments or options |
 * | 2 | failure: bad configuration, database or store error, no such token |
 * | 3 | `fsck`: problems found and not repaired |
 *
 * Commands: `token create|list|revoke` (src/cli/token.ts), `stats`, `fsck [--repair]`
 * (`runFsck`, src/ops/fsck.ts), `quota set|show` (`quota.ts`, src/quota), `freeze|unfreeze` (`freeze.ts`, docs/drives.md).
 */
import { Command, CommanderError, InvalidArgumentError } from "commander";
import pkg from "../../package.json" with { type: "json" };
import { ConfigError, loadConfig } from "../config/config.ts";
import { openMetadataStore } from "../db/open.ts";
import { fsckReportLines, runFsckWithConfig } from "../ops/fsck.ts";
import { systemClock } from "../util/clock.ts";
import { freezeCommands } from "./freeze.ts";
import { quotaCommand } from "./quota.ts";
import { collectStats, type Stats } from "./stats.ts";
import { tokenCommand } from "./token.ts";

/** Exit codes of `esync-admin`. */
export const ADMIN_EXIT = { ok: 0, usage: 1, failed: 2, problems: 3 } as const;

const EXIT_HELP = `Exit codes:
  0  success (fsck: no problem left)
  1  usage error (bad arguments or options)
  2  failure (bad configuration, database or blob store error, no such token)
  3  fsck found problems it did not repair`;

/** `fsck` found problems that remain; ends the program with `ADMIN_EXIT.problems`. */
class ProblemsRemain extends Error {
  constructor(count: number) {
    super(`${count} problem(s) remain`);
    this.name = "ProblemsRemain";
  }
}

function statsText(s: Stats): string {
  return [
    `accounts:          ${s.accounts}`,
    `folders:           ${s.folders}`,
    `files:             ${s.files}`,
    `plaintext:         ${formatSize(s.plaintext_bytes)} (${s.plaintext_bytes} bytes)`,
    `ciphertext:        ${formatSize(s.ciphertext_bytes)} (${s.ciphertext_bytes} bytes)`,
    `sessions:          ${s.sessions.receiving} receiving, ${s.sessions.finalizing} finalizing, ${s.sessions.finalized} finalized`,
    `deletion queue:    ${s.deletion_queue.depth} rows, oldest due ${s.deletion_queue.oldest_due_age_seconds} s ago`,
    `active API tokens: ${s.active_api_tokens}`,
  ].join("\n");
}

/** The `esync-admin` program with every command registered. */
export function buildAdminProgram(): Command {
  const program = new Command("esync-admin")
    .description(
      "Operate an esync server: API tokens, storage allowances, statistics, consistency check (on the server's database and store)",
    )
    .version(pkg.version, "-V, --version")
    .option("--json", "machine-readable JSON output (one document on stdout)")
    .addHelpText(
      "after",
      `
Configuration: the server's environment (ESYNC_DATA_DIR, ESYNC_DB_PATH or ESYNC_DATABASE_URL; see docs/operator-guide.md).

${EXIT_HELP}`,
    );
  program.addCommand(tokenCommand());
  program.addCommand(quotaCommand());
  for (const c of freezeCommands()) program.addCommand(c);
  program
    .command("stats")
    .description("Accounts, folders, files and bytes stored, upload sessions by state, deletion queue")
    .option("--json", "print JSON")
    .action(async (_o: unknown, cmd: Command) => {
      const store = await openMetadataStore(loadConfig());
      try {
        const s = await collectStats(store, systemClock.now());
        console.log(cmd.optsWithGlobals().json ? JSON.stringify(s) : statsText(s));
      } finally {
        await store.close();
      }
    });
  program
    .command("fsck")
    .description(
      "Check the database against the blob store: orphan, missing or wrong-size objects, folder counters, stuck sessions (dry run unless --repair)",
    )
    .option("--repair", "delete orphan objects, recompute folder counters, release stuck sessions")
    .option("--json", "print JSON: {ok, problems: [{kind, detail, ...}], repaired}")
    .action(async (o: { repair?: boolean }, cmd: Command) => {
      const repair = o.repair ?? false;
      const report = await runFsckWithConfig(loadConfig(), repair);
      if (cmd.optsWithGlobals().json) console.log(JSON.stringify(report));
      else {
        const { problems, summary } = fsckReportLines(report, repair);
        for (const line of problems) console.log(line);
        console.log(summary);
      }
      if (!report.ok) throw new ProblemsRemain(report.problems.length - report.repaired);
    });
  const conventions = (c: Command) => {
    c.exitOverride()
      .showHelpAfterError("(run with --help for usage)")
      .configureOutput({
        outputError: (text, write) => write(`esync-admin: ${text.replace(/^error: /, "")}`),
      });
    for (const sub of c.commands) conventions(sub);
  };
  conventions(program);
  return program;
}

/** Runs `esync-admin` with `argv` (as `process.argv`) and returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  try {
    await buildAdminProgram().parseAsync(argv);
    return ADMIN_EXIT.ok;
  } catch (e) {
    if (e instanceof InvalidArgumentError) {
      // Thrown by an action (a parse-time one was printed by commander and rethrown as CommanderError).
      console.error(`esync-admin: ${e.message}`);
      return ADMIN_EXIT.usage;
    }
    if (e instanceof CommanderError) return e.exitCode === 0 ? ADMIN_EXIT.ok : ADMIN_EXIT.usage;
    if (e instanceof ProblemsRemain) return ADMIN_EXIT.problems;
    console.error(
      e instanceof ConfigError
        ? `esync-admin: configuration error: ${e.message}`
        : `esync-admin: ${(e as Error).message}`,
    );
    return ADMIN_EXIT.failed;
  }
}

if (import.meta.main) process.exit(await main(process.argv));
