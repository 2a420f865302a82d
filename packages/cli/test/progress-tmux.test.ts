/**
 * The progress display of `esync push` as a person sees it: the real CLI in a real terminal
 * (tmux, 80 columns), pushing real files to a real server, the screen captured every 150 ms.
 * Every captured line fits 80 columns; percentages agree with the byte counts beside them;
 * error lines (the server killed mid-push) are wrapped at word boundaries, never cut.
 * tmux is installed with apt-get when missing (as root).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ServerProcess, startServer } from "@esync/server/test/support/server.ts";
import { CLI, copyHead, runCli } from "./helpers.ts";

// Real CLI processes against a real server: seconds each on a loaded machine.
setDefaultTimeout(120_000);

const MiB = 1024 * 1024;
const COLS = 80;
const work = mkdtempSync(join(tmpdir(), "esync-tmux-"));
const cfg = join(work, "config");
const socket = `esync-test-${process.pid}`;
let server: ServerProcess;

function ensureTmux(): void {
  if (Bun.which("tmux")) return;
  const r = Bun.spawnSync(["apt-get", "install", "-y", "-q", "tmux"], { stdout: "ignore", stderr: "pipe" });
  if (!Bun.which("tmux")) throw new Error(`tmux is missing and apt-get failed: ${r.stderr.toString()}`);
}

function tmux(...args: string[]): string {
  const r = Bun.spawnSync(["tmux", "-L", socket, ...args], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`tmux ${args.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString();
}

/** Runs `esync args` in a fresh 80-column tmux window; captures the screen until it exits. */
async function captureRun(
  name: string,
  args: string[],
  during?: (screen: string) => Promise<void> | void,
): Promise<{ screens: string[]; exit: number }> {
  const command = [
    `ESYNC_CONFIG_DIR='${cfg}'`,
    `'${process.execPath}' '${CLI}' ${args.map((a) => `'${a}'`).join(" ")};`,
    "echo ESYNC_EXIT=$?; sleep 60",
  ].join(" ");
  const start = () => tmux("new-session", "-d", "-s", name, "-x", String(COLS), "-y", "40", `env ${command}`);
  try {
    start();
  } catch {
    // The tmux server of the previous run may still be exiting (its last session was killed).
    await Bun.sleep(500);
    start();
  }
  const screens: string[] = [];
  const deadline = Date.now() + 120_000;
  try {
    for (;;) {
      const screen = tmux("capture-pane", "-p", "-t", name);
      screens.push(screen);
      await during?.(screen);
      const m = /ESYNC_EXIT=(\d+)/.exec(screen);
      if (m) return { screens, exit: Number(m[1]) };
      if (Date.now() > deadline) throw new Error(`no exit after 120 s:\n${screen}`);
      await Bun.sleep(150);
    }
  } finally {
    tmux("kill-session", "-t", name);
  }
}

const UNIT: Record<string, number> = { B: 1, KiB: 1024, MiB: MiB, GiB: 1024 * MiB };

function bytes(num: string, unit: string): number {
  return Number(num) * (UNIT[unit] ?? Number.NaN);
}

/** Every `NN%  X unit/Y unit` on a line: percentage against the byte counts (±1.5 for rounding). */
function checkPercentages(line: string): number {
  const re = /(\d+)%\s+(?:\w+\s+)?([\d.]+) (B|KiB|MiB|GiB)\/([\d.]+) (B|KiB|MiB|GiB)/g;
  let n = 0;
  for (const m of line.matchAll(re)) {
    const pct = Number(m[1]);
    const done = bytes(m[2] as string, m[3] as string);
    const total = bytes(m[4] as string, m[5] as string);
    if (done === 0) expect(pct).toBe(0);
    else expect(Math.abs(pct - (done / total) * 100)).toBeLessThanOrEqual(1.5);
    n++;
  }
  return n;
}

beforeAll(async () => {
  ensureTmux();
  server = await startServer({ env: { ESYNC_DISK_FSYNC: "off" } });
  const init = await runCli(cfg, ["init", "--server", server.url]);
  if (init.code !== 0) throw new Error(init.stderr);
  const src = join(work, "src");
  mkdirSync(join(src, "a rather long directory name/with another level below it"), { recursive: true });
  await copyHead(process.execPath, join(src, "real-24MiB.bin"), 24 * MiB);
  await copyHead(process.execPath, join(src, "second real file of 20 MiB.bin"), 20 * MiB);
  for (let i = 0; i < 12; i++)
    writeFileSync(
      join(
        src,
        "a rather long directory name/with another level below it",
        `note number ${i} with a long name.txt`,
      ),
      `note ${i}\n`.repeat(200 * (i + 1)),
    );
});

afterAll(async () => {
  Bun.spawnSync(["tmux", "-L", socket, "kill-server"], { stdout: "ignore", stderr: "ignore" });
  await server?.kill().catch(() => {});
  rmSync(work, { recursive: true, force: true });
});

// Runs before the push tests: their last one kills the server.
describe("esync sync in an 80-column terminal (tmux)", () => {
  test("shows push's progress while it uploads: an overall line with bytes, ETA, rate and files, every line within 80 columns", async () => {
    const dir = join(work, "sync-src");
    mkdirSync(join(dir, "sub"), { recursive: true });
    await copyHead(process.execPath, join(dir, "big file of 48 MiB.bin"), 48 * MiB);
    await copyHead(process.execPath, join(dir, "sub", "second big file.bin"), 40 * MiB);
    for (let i = 0; i < 6; i++) writeFileSync(join(dir, "sub", `note ${i}.txt`), `note ${i}\n`.repeat(100));
    const { screens, exit } = await captureRun("sync", ["sync", dir, "--folder", "tmux-sync", "--create"]);
    const last = screens.at(-1) as string;
    expect(exit).toBe(0);
    let overall = 0;
    let fileLines = 0;
    for (const screen of screens)
      for (const line of screen.split("\n")) {
        if (line.length > COLS) throw new Error(`line of ${line.length} columns:\n${line}\n${screen}`);
        checkPercentages(line);
        if (/^sync tmux-sync .*\d+%.*MiB\/.*MiB.*ETA .*\/s.*\d+\/8 files/.test(line)) overall++;
        if (/^ {2}(big|sub\/).*\d+%\s+(encrypting|uploading) /.test(line)) fileLines++;
      }
    expect(overall).toBeGreaterThan(0);
    expect(fileLines).toBeGreaterThan(0);
    expect(last).toContain("uploaded    big file of 48 MiB.bin");
    expect(last).toContain('synced "tmux-sync": 8 uploaded');
  }, 150_000);
});

describe("esync push in an 80-column terminal (tmux)", () => {
  test("every line fits 80 columns, percentages match the bytes, the overall line keeps rate, ETA and files", async () => {
    const { screens, exit } = await captureRun("push", [
      "push",
      join(work, "src"),
      "--folder",
      "tmux",
      "--create",
      "--limit-rate",
      "12MiB",
      "--jobs",
      "2",
    ]);
    const last = screens.at(-1) as string;
    expect(exit).toBe(0);
    expect(screens.length).toBeGreaterThan(5);
    let checked = 0;
    let fullOverall = 0;
    for (const screen of screens) {
      for (const line of screen.split("\n")) {
        if (line.length > COLS) throw new Error(`line of ${line.length} columns:\n${line}\n${screen}`);
        checked += checkPercentages(line);
        if (/^push tmux .*\d+%.*ETA .*MiB\/s.*\d+\/14 files/.test(line)) fullOverall++;
      }
    }
    expect(checked).toBeGreaterThan(10);
    expect(fullOverall).toBeGreaterThan(0);
    expect(last).toContain("uploaded  real-24MiB.bin  24 MiB");
    expect(last).toMatch(/pushed 14 file\(s\)/);
    expect(last).not.toMatch(/ETA \d+ms/);
    for (const screen of screens) expect(screen).not.toMatch(/ETA \d+h/); // no wild guesses while encrypting
    expect(last).not.toMatch(/MB\/s/); // one unit system: binary
  }, 150_000);

  test("a server killed mid-push: wrapped error lines naming the URL, whole words, and the resume hint", async () => {
    await copyHead(process.execPath, join(work, "src", "third.bin"), 24 * MiB);
    let killed = false;
    const { screens, exit } = await captureRun(
      "outage",
      ["push", join(work, "src"), "--folder", "tmux", "--limit-rate", "8MiB", "--retry-for", "2s"],
      async (screen) => {
        if (!killed && /third\.bin .*\d+%\s+uploading/.test(screen)) {
          killed = true;
          await server.kill();
        }
      },
    );
    expect(killed).toBe(true);
    expect(exit).toBe(2);
    const last = screens.at(-1) as string;
    for (const screen of screens)
      for (const line of screen.split("\n")) expect(line.length).toBeLessThanOrEqual(COLS);
    // Lines joined back (continuations are indented) give the whole message, no word cut.
    const text = last
      .split("\n")
      .map((l) => l.trim())
      .join(" ");
    expect(text).toMatch(
      new RegExp(`FAILED +third\\.bin: cannot reach ${server.url} \\(retried for \\d+s\\)`),
    );
    expect(text).toContain("Unable to connect");
    expect(text).toContain(`hint: run the same command again to resume once ${server.url} is back`);
  }, 150_000);
});
