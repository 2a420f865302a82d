/**
 * `esync service install|uninstall|status` (the real CLI process, no server or systemd
 * needed): the systemd user unit is written under `$XDG_CONFIG_HOME/systemd/user`, runs the
 * absolute entry point with the configuration directory, the service log and
 * `sync --all --watch`, restarts on failure; `--dry-run` writes nothing; without systemctl
 * on the PATH the enable commands are printed and `--enable` fails with the unit written.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { systemdQuote, unitText } from "../src/commands/service.ts";
import { CLI, runCli } from "./helpers.ts";

setDefaultTimeout(60_000);

const MNEMONIC = `${"abandon ".repeat(11)}about`;
const work = mkdtempSync(join(tmpdir(), "esync service-"));
const cfg = join(work, "config dir");
const xdg = join(work, "xdg");
const noSystemctl = join(work, "bin");
const docs = join(work, "Documents");
const unitPath = join(xdg, "systemd", "user", "esync.service");
const env = { XDG_CONFIG_HOME: xdg, PATH: noSystemctl };
const esync = (args: string[]) => runCli(cfg, args, undefined, env);

beforeAll(async () => {
  mkdirSync(noSystemctl);
  mkdirSync(docs);
  const init = await runCli(cfg, ["init", "--import", "--server", "http://127.0.0.1:1"], MNEMONIC, env);
  expect(init.code).toBe(0);
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("esync service install", () => {
  test("refuses to install a service with no sync pair configured (exit 1), writing nothing", async () => {
    const r = await esync(["service", "install"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("no sync pairs configured");
    expect(existsSync(unitPath)).toBe(false);
  });

  test("--dry-run prints the unit and where it would go, and writes nothing", async () => {
    expect((await esync(["sync", "add", docs, "--folder", "documents"])).code).toBe(0);
    const r = await esync(["service", "install", "--dry-run"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toStartWith(`would write ${unitPath}:\n`);
    expect(r.stdout).toContain("[Service]");
    expect(existsSync(unitPath)).toBe(false);
  });

  test("writes the unit under XDG_CONFIG_HOME: absolute entry point, config dir, service log, sync --all --watch, restart on failure", async () => {
    const r = await esync(["service", "install"]);
    expect(r.code).toBe(0);
    const unit = await Bun.file(unitPath).text();
    const execStart = unit.split("\n").find((l) => l.startsWith("ExecStart="));
    const logFile = join(cfg, "log", "esync.log");
    // The config dir has a space: it is quoted as systemd reads it.
    expect(execStart).toBe(
      `ExecStart=${process.execPath} ${CLI} --config-dir "${cfg}" --log-file "${logFile}" --quiet sync --all --watch`,
    );
    expect(unit).toContain("\nRestart=on-failure\n");
    expect(unit).toContain("\nSuccessExitStatus=130\n"); // SIGTERM from `systemctl stop` is a clean end
    expect(unit).toContain("\n[Install]\nWantedBy=default.target\n");
    // It says what it wrote, the unit itself, and how to enable it.
    expect(r.stdout).toStartWith(`wrote ${unitPath}:\n${unit.trimEnd()}\n`);
    expect(r.stdout).toContain(`log file: ${logFile}`);
    expect(r.stdout).toContain("systemctl --user daemon-reload\n  systemctl --user enable --now esync");
  });

  test("a second install replaces the unit and says so", async () => {
    const r = await esync(["service", "install", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toMatchObject({ unit_path: unitPath, written: true, replaced: true, enabled: false });
  });

  test("--enable without systemctl on the PATH fails (exit 3) with the unit written and the commands named", async () => {
    rmSync(unitPath);
    const r = await esync(["service", "install", "--enable"]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("systemctl not found");
    expect(r.stderr).toContain("systemctl --user enable --now esync");
    expect(existsSync(unitPath)).toBe(true);
  });
});

describe("esync service status", () => {
  test("shows the unit, the state it cannot know without systemctl, the log file and the pairs", async () => {
    const r = await esync(["service", "status"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`unit:    ${unitPath}\n`);
    expect(r.stdout).toContain("state:   unknown (systemctl not found)");
    expect(r.stdout).toContain(`log:     ${join(cfg, "log", "esync.log")} (none yet)`);
    expect(r.stdout).toContain(`  ${docs} <-> "documents"`);
    expect((await esync(["service", "status", "--json"])).json()).toMatchObject({
      unit_path: unitPath,
      installed: true,
      enabled: null,
      active: null,
      pairs: [{ dir: docs, folder: "documents", exclude: [] }],
    });
  });
});

describe("esync service uninstall", () => {
  test("removes the unit, and says there is nothing to do the second time", async () => {
    const r = await esync(["service", "uninstall"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`removed ${unitPath}\n`);
    expect(existsSync(unitPath)).toBe(false);
    const again = await esync(["service", "uninstall"]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("nothing to uninstall");
    expect((await esync(["service", "status", "--json"])).json()).toMatchObject({ installed: false });
  });
});

describe("--log-file and secrets", () => {
  test("a new mnemonic is shown on stdout but never written to the log file", async () => {
    const log = join(work, "init.log");
    const r = await runCli(
      join(work, "fresh"),
      ["--log-file", log, "init", "--server", "http://127.0.0.1:1"],
      undefined,
      env,
    );
    expect(r.code).toBe(0);
    const words = r.stdout
      .split("\n")
      .find((l) => /^ {2}(\w+ ){23}\w+$/.test(l))
      ?.trim();
    expect(words?.split(" ")).toHaveLength(24);
    const text = await Bun.file(log).text();
    expect(text).toContain('"event":"command.end"');
    expect(text).not.toContain(words as string);
  });
});

describe("unit text", () => {
  test("quotes words with spaces or quotes and escapes systemd's % and $ specifiers", () => {
    expect(systemdQuote("/usr/bin/bun")).toBe("/usr/bin/bun");
    expect(systemdQuote("/home/a b/esync")).toBe('"/home/a b/esync"');
    expect(systemdQuote('/x/"q"\\y')).toBe('"/x/\\"q\\"\\\\y"');
    expect(systemdQuote("/x/100%/$HOME")).toBe("/x/100%%/$$HOME");
  });

  test("runs the given program with the config dir and its log file", () => {
    const text = unitText(["/opt/bun", "/opt/esync/src/cli/esync.ts"], "/home/u/.config/esync");
    expect(text).toContain(
      "ExecStart=/opt/bun /opt/esync/src/cli/esync.ts --config-dir /home/u/.config/esync --log-file /home/u/.config/esync/log/esync.log --quiet sync --all --watch\n",
    );
  });
});
