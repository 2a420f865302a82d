/**
 * @module cli/commands/service
 * `esync service install|uninstall|status`: a systemd user unit, `esync.service`, that runs
 * `esync sync --all --watch` for the pairs of `esync sync add` in the background, restarts
 * it when it fails, and logs to `<config-dir>/log/esync.log` (docs/user-guide.md, "The
 * background service"). The unit is written to `$XDG_CONFIG_HOME/systemd/user` (else
 * `~/.config/systemd/user`); `systemctl` is only run with `--enable`, by `uninstall` and by
 * `status`, and only when it is on the PATH.
 */
import { mkdir, rm, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import {
  type ConfigPaths,
  configDir,
  configPaths,
  type GlobalOptions,
  readConfig,
  readMnemonicFile,
  systemdUserUnitDir,
  writePrivate,
} from "../config.ts";
import { isSealed } from "../mnemonic-seal.ts";
import { CliError, EXIT, eprintln, formatSize, printJson, println } from "../output.ts";
import { configuredPairs, pairName, readPairs } from "../sync-pairs.ts";

/** Name of the unit. */
export const UNIT_NAME = "esync.service";

/** The commands that load and start the unit, now and at every login. */
export const ENABLE_COMMANDS = ["systemctl --user daemon-reload", "systemctl --user enable --now esync"];

/** The service's log file in configuration directory `dir`. */
export function serviceLogPath(dir: string): string {
  return join(dir, "log", "esync.log");
}

/**
 * The program that runs this CLI, as absolute paths: the Bun executable and this CLI's entry
 * point (`packages/cli/src/esync.ts`), or the executable alone when the CLI is a compiled binary.
 */
export function entryCommand(): string[] {
  const entry = resolve(import.meta.dir, "..", "esync.ts");
  return entry.startsWith("/$bunfs/") ? [process.execPath] : [process.execPath, entry];
}

/**
 * One word of a unit's `ExecStart=`: double-quoted (with `\` and `"` escaped) when it holds
 * spaces, quotes or backslashes; `%` is doubled and `$` too, so systemd substitutes neither.
 */
export function systemdQuote(word: string): string {
  const escaped = word.replaceAll("%", "%%").replaceAll("$", "$$$$");
  return /[\s"'\\]/.test(escaped) ? `"${escaped.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"` : escaped;
}

/** The text of `esync.service` for configuration directory `configDir`, run by `exec`. */
export function unitText(exec: string[], configDir: string): string {
  const args = [
    ...exec,
    "--config-dir",
    configDir,
    "--log-file",
    serviceLogPath(configDir),
    "--quiet",
    "sync",
    "--all",
    "--watch",
  ];
  return `# Written by \`esync service install\`; \`esync service uninstall\` removes it.
[Unit]
Description=esync: two-way sync of the directory <-> folder pairs of \`esync sync list\`

[Service]
Type=simple
ExecStart=${args.map(systemdQuote).join(" ")}
Restart=on-failure
RestartSec=10
# 130: stopped by SIGTERM (systemctl stop), a clean end.
SuccessExitStatus=130

[Install]
WantedBy=default.target
`;
}

function systemctl(): string | null {
  return Bun.which("systemctl");
}

/** Runs `systemctl --user ARGS`; its exit code and output (stdout, else stderr), trimmed. */
function runSystemctl(bin: string, args: string[]): { code: number; output: string } {
  const r = Bun.spawnSync([bin, "--user", ...args], { stdout: "pipe", stderr: "pipe", timeout: 30_000 });
  const out = r.stdout.toString().trim() || r.stderr.toString().trim();
  return { code: r.exitCode ?? -1, output: out };
}

async function requirePairs(paths: ConfigPaths): Promise<void> {
  await readConfig(paths); // usage error when `esync init` has not been run
  await configuredPairs(paths);
  if (isSealed(await readMnemonicFile(paths)))
    eprintln(
      "esync: warning: the mnemonic is sealed with a passphrase, which the service cannot ask for; " +
        "run `esync passphrase remove` or give the unit ESYNC_PASSPHRASE (systemctl --user edit esync)",
    );
}

/** Registers `esync service ...` on `program`. */
export function registerService(program: Command): void {
  const service = program
    .command("service")
    .description("run the sync pairs in the background (a systemd user unit)");

  service
    .command("install")
    .description(`write the systemd user unit ${UNIT_NAME} that runs \`esync sync --all --watch\``)
    .option("--dry-run", "print the unit and where it would go, write nothing")
    .option("--enable", "then run `systemctl --user daemon-reload` and `enable --now esync`")
    .action(async (opts: { dryRun?: boolean; enable?: boolean }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const paths = configPaths(configDir(g.configDir));
      await requirePairs(paths);
      const unitPath = join(systemdUserUnitDir(), UNIT_NAME);
      const text = unitText(entryCommand(), paths.dir);
      const replaced = (await stat(unitPath).catch(() => null)) !== null;
      if (!opts.dryRun) {
        await mkdir(systemdUserUnitDir(), { recursive: true });
        await writePrivate(unitPath, text);
      }
      const enabled = !opts.dryRun && opts.enable === true ? enableUnit() : false;
      if (g.json)
        return printJson({
          unit_path: unitPath,
          unit: text,
          written: !opts.dryRun,
          replaced: !opts.dryRun && replaced,
          enabled,
          log_file: serviceLogPath(paths.dir),
          commands: enabled ? [] : ENABLE_COMMANDS,
        });
      println(opts.dryRun ? `would write ${unitPath}:` : `${replaced ? "replaced" : "wrote"} ${unitPath}:`);
      println(text.trimEnd());
      println(`log file: ${serviceLogPath(paths.dir)}`);
      if (enabled) println("enabled and started: esync (systemctl --user status esync)");
      else println(`to start it now and at every login, run:\n  ${ENABLE_COMMANDS.join("\n  ")}`);
    });

  service
    .command("uninstall")
    .description(`stop and disable the service and remove ${UNIT_NAME}`)
    .action(async (_opts: unknown, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const unitPath = join(systemdUserUnitDir(), UNIT_NAME);
      if ((await stat(unitPath).catch(() => null)) === null) {
        if (g.json) return printJson({ unit_path: unitPath, removed: false });
        return println(`no unit at ${unitPath}: nothing to uninstall`);
      }
      const bin = systemctl();
      if (bin) {
        const r = runSystemctl(bin, ["disable", "--now", "esync"]);
        if (r.code !== 0) eprintln(`esync: warning: systemctl --user disable --now esync: ${r.output}`);
      }
      await rm(unitPath, { force: true });
      if (bin) runSystemctl(bin, ["daemon-reload"]);
      if (g.json) return printJson({ unit_path: unitPath, removed: true, stopped: bin !== null });
      println(`${bin ? "stopped, disabled and " : ""}removed ${unitPath}`);
    });

  service
    .command("status")
    .description("the unit file, whether it is enabled and running, the log file and the pairs")
    .action(async (_opts: unknown, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const paths = configPaths(configDir(g.configDir));
      const unitPath = join(systemdUserUnitDir(), UNIT_NAME);
      const installed = (await stat(unitPath).catch(() => null)) !== null;
      const bin = systemctl();
      const enabled = bin && installed ? runSystemctl(bin, ["is-enabled", "esync"]).output : null;
      const active = bin && installed ? runSystemctl(bin, ["is-active", "esync"]).output : null;
      const logFile = serviceLogPath(paths.dir);
      const logSize = (await stat(logFile).catch(() => null))?.size ?? null;
      const pairs = await readPairs(paths);
      if (g.json)
        return printJson({
          unit_path: unitPath,
          installed,
          enabled,
          active,
          log_file: logFile,
          log_bytes: logSize,
          pairs,
        });
      println(`unit:    ${unitPath}${installed ? "" : " (not installed: esync service install)"}`);
      if (installed)
        println(
          bin
            ? `state:   ${enabled || "unknown"}, ${active || "unknown"}`
            : "state:   unknown (systemctl not found)",
        );
      println(`log:     ${logFile}${logSize === null ? " (none yet)" : ` (${formatSize(logSize)})`}`);
      println(pairs.length === 0 ? "pairs:   none (esync sync add DIR --folder LABEL)" : "pairs:");
      for (const p of pairs) println(`  ${pairName(p)}`);
    });
}

/** Runs the `ENABLE_COMMANDS`; true when they succeeded. Errors when systemctl is absent or fails. */
function enableUnit(): boolean {
  const bin = systemctl();
  if (!bin)
    throw new CliError(
      `systemctl not found: the unit is written; enable it with \`${ENABLE_COMMANDS.join(" && ")}\` where systemd runs`,
      EXIT.local,
    );
  for (const args of [["daemon-reload"], ["enable", "--now", "esync"]]) {
    const r = runSystemctl(bin, args);
    if (r.code !== 0)
      throw new CliError(`systemctl --user ${args.join(" ")} failed: ${r.output}`, EXIT.local);
  }
  return true;
}
