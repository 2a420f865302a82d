/**
 * `esync sync` as the service runs it, the real CLI against a real server: `-q` prints
 * nothing on success and still prints errors, `--log-file` records the run as JSON lines,
 * `--limit-rate` caps the upload rate, `sync --all` syncs every pair and reports a failing
 * one by name without stopping the others, `sync --all --watch` runs one watcher per pair in
 * one process, and a directory named `add` is synced as `./add`.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ServerProcess, startServer } from "@esync/server/test/support/server.ts";
import { CLI, cliEnv, runCli, spawnCli } from "./helpers.ts";

// Real CLI processes against a real server, and a throttled upload of several seconds.
setDefaultTimeout(180_000);

const MNEMONIC = `${"abandon ".repeat(11)}about`;
const work = mkdtempSync(join(tmpdir(), "esync-sync-run-"));
const cfg = join(work, "config");
let server: ServerProcess;

beforeAll(async () => {
  server = await startServer({ env: { ESYNC_DISK_FSYNC: "off" } });
  expect((await runCli(cfg, ["init", "--import", "--server", server.url], MNEMONIC)).code).toBe(0);
});
afterAll(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** Paths of the files of folder `label` on the server. */
async function remotePaths(label: string): Promise<string[]> {
  const r = await runCli(cfg, ["ls", "--folder", label, "--json"]);
  expect(r.code).toBe(0);
  return r
    .json<{ files: Array<{ relative_path: string }> }>()
    .files.map((f) => f.relative_path)
    .sort();
}

function dirWith(name: string, files: Record<string, string | Uint8Array>): string {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  for (const [rel, content] of Object.entries(files)) writeFileSync(join(dir, rel), content);
  return dir;
}

describe("-q", () => {
  test("a successful sync prints nothing at all; without -q the same kind of run prints its lines", async () => {
    const dir = dirWith("quiet", { "a.txt": "alpha\n", "b.txt": "beta\n" });
    const quiet = await runCli(cfg, ["-q", "sync", dir, "--folder", "quiet", "--create"]);
    expect(quiet.code).toBe(0);
    expect(quiet.stdout).toBe("");
    expect(quiet.stderr).toBe("");
    expect(await remotePaths("quiet")).toEqual(["a.txt", "b.txt"]);
    writeFileSync(join(dir, "c.txt"), "gamma\n");
    const loud = await runCli(cfg, ["sync", dir, "--folder", "quiet"]);
    expect(loud.code).toBe(0);
    expect(loud.stdout).toContain("uploaded    c.txt");
  });

  test("a successful push prints nothing either: no progress lines, no summary", async () => {
    const dir = dirWith("quiet-push", { "p.txt": "push\n", "q.txt": "quiet\n" });
    const r = await runCli(cfg, ["-q", "push", dir, "--folder", "quiet-push", "--create"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe("");
    expect(await remotePaths("quiet-push")).toEqual(["p.txt", "q.txt"]);
  });

  test("errors are still printed on stderr, with the exit code", async () => {
    const dir = dirWith("quiet-error", { "a.txt": "a\n" });
    const r = await runCli(cfg, ["--quiet", "sync", dir, "--folder", "no-such-folder"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain('esync: no folder "no-such-folder" on the server');
  });

  test("a --json document is still printed", async () => {
    const r = await runCli(cfg, ["-q", "sync", "list", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toEqual({ pairs: [] });
  });
});

describe("--log-file", () => {
  test("records the command, each line it would have printed and its end as JSON lines, also with -q", async () => {
    const dir = dirWith("logged", { "one.txt": "1\n" });
    const log = join(work, "logs", "esync.log");
    const r = await runCli(cfg, ["-q", "--log-file", log, "sync", dir, "--folder", "logged", "--create"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("");
    const lines = (await Bun.file(log).text())
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const l of lines) {
      expect(l.ts).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      expect(["info", "warn", "error"]).toContain(l.level as string);
      expect(typeof l.event).toBe("string");
    }
    expect(lines[0]).toMatchObject({ level: "info", event: "command.start", command: "sync", args: [dir] });
    expect(lines).toContainEqual(expect.objectContaining({ event: "output", text: "uploaded    one.txt" }));
    expect(lines.at(-1)).toMatchObject({ level: "info", event: "command.end", code: 0 });
  });

  test("a failed command's error and exit code are logged", async () => {
    const log = join(work, "logs", "failed.log");
    const r = await runCli(cfg, ["--log-file", log, "ls", "--folder", "no-such-folder"]);
    expect(r.code).not.toBe(0);
    const lines = (await Bun.file(log).text())
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: "error",
        event: "error",
        text: expect.stringContaining("no-such-folder"),
      }),
    );
    expect(lines.at(-1)).toMatchObject({ event: "command.end", code: r.code });
  });
});

describe("sync --limit-rate", () => {
  const files = (tag: string) =>
    Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`${tag}-${i}.bin`, randomBytes(128 * 1024)]));

  test("caps the average upload rate: 768 KiB at 32KiB takes over 19 s, unthrottled far less", async () => {
    const slowDir = dirWith("rate-slow", files("slow"));
    const t0 = performance.now();
    const slow = await runCli(cfg, [
      "sync",
      slowDir,
      "--folder",
      "rate",
      "--create",
      "--limit-rate",
      "32KiB",
    ]);
    const slowMs = performance.now() - t0;
    expect(slow.code).toBe(0);
    // The first file goes at once; the other 5 × 128 KiB wait for the schedule: >= 20 s.
    expect(slowMs).toBeGreaterThan(19_000);
    const fastDir = dirWith("rate-fast", files("fast"));
    const t1 = performance.now();
    const fast = await runCli(cfg, ["sync", fastDir, "--folder", "rate-fast", "--create"]);
    expect(fast.code).toBe(0);
    expect(performance.now() - t1).toBeLessThan(19_000);
    expect(await remotePaths("rate")).toHaveLength(6);
  });

  test("refuses a rate of 0 or one that is not a size (exit 1)", async () => {
    const dir = dirWith("rate-bad", {});
    for (const rate of ["0", "fast"]) {
      const r = await runCli(cfg, ["sync", dir, "--folder", "rate", "--limit-rate", rate]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/--limit-rate must be above 0|not a size/);
    }
  });
});

describe("sync --all", () => {
  test("syncs every pair; a failing pair is reported by name and the others are still synced", async () => {
    const a = dirWith("all-a", { "a.txt": "a\n" });
    const bad = dirWith("all-bad", { "b.txt": "b\n" });
    const c = dirWith("all-c", { "c.txt": "c\n" });
    const gone = dirWith("all-gone", {});
    for (const label of ["all-a", "all-c"])
      expect((await runCli(cfg, ["folder", "add", label])).code).toBe(0);
    for (const [dir, label] of [
      [a, "all-a"],
      [bad, "all-unregistered"],
      [gone, "all-gone"],
      [c, "all-c"],
    ] as const)
      expect((await runCli(cfg, ["sync", "add", dir, "--folder", label])).code).toBe(0);
    rmSync(gone, { recursive: true });

    const r = await runCli(cfg, ["sync", "--all"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      `esync: ${bad} <-> "all-unregistered": no folder "all-unregistered" on the server`,
    );
    expect(r.stderr).toContain(`esync: ${gone} <-> "all-gone": ${gone} is missing or not a directory`);
    expect(r.stderr).toContain("2 of 4 sync pair(s) failed");
    expect(existsSync(gone)).toBe(false); // a missing pair directory is not created
    expect(await remotePaths("all-a")).toEqual(["a.txt"]);
    expect(await remotePaths("all-c")).toEqual(["c.txt"]);
    for (const dir of [a, bad, gone, c]) expect((await runCli(cfg, ["sync", "remove", dir])).code).toBe(0);
  });

  test("--watch runs one watcher per pair in one process; a failing pair is reported and the others keep syncing; SIGINT ends it with 130", async () => {
    const x = dirWith("watch-x", {});
    const y = dirWith("watch-y", {});
    const bad = dirWith("watch-bad", { "never.txt": "n\n" });
    for (const [dir, label] of [
      [x, "watch-x"],
      [y, "watch-y"],
    ] as const) {
      expect((await runCli(cfg, ["folder", "add", label])).code).toBe(0);
      expect((await runCli(cfg, ["sync", "add", dir, "--folder", label])).code).toBe(0);
    }
    expect((await runCli(cfg, ["sync", "add", bad, "--folder", "watch-unregistered"])).code).toBe(0);
    const proc = spawnCli(cfg, ["sync", "--all", "--watch", "--interval", "1", "--debounce", "100"]);
    let out = "";
    let err = "";
    const drain = async (stream: ReadableStream<Uint8Array>, add: (s: string) => void) => {
      const decoder = new TextDecoder();
      for await (const chunk of stream) add(decoder.decode(chunk));
    };
    const reading = Promise.all([
      drain(proc.stdout, (s) => (out += s)),
      drain(proc.stderr, (s) => (err += s)),
    ]);
    try {
      const deadline = Date.now() + 60_000;
      const started = () =>
        out.includes(`watching ${x} <-> "watch-x"`) && out.includes(`watching ${y} <-> "watch-y"`);
      while (!started() && Date.now() < deadline) await Bun.sleep(100);
      expect(started()).toBe(true);
      writeFileSync(join(x, "from-x.txt"), "x\n");
      writeFileSync(join(y, "from-y.txt"), "y\n");
      let seen: string[][] = [];
      while (Date.now() < deadline) {
        seen = [await remotePaths("watch-x"), await remotePaths("watch-y")];
        if (seen[0]?.length && seen[1]?.length) break;
        await Bun.sleep(500);
      }
      expect(seen).toEqual([["from-x.txt"], ["from-y.txt"]]);
      expect(err).toContain(
        `esync: ${bad} <-> "watch-unregistered": no folder "watch-unregistered" on the server`,
      );
      expect(proc.exitCode).toBeNull(); // still running for the two good pairs
    } finally {
      proc.kill("SIGINT");
    }
    expect(await proc.exited).toBe(130);
    await reading;
  });
});

describe("sync of a directory named like a subcommand", () => {
  test("./add is synced as a directory, not taken for `sync add`", async () => {
    dirWith("add", { "inside.txt": "in\n" });
    const proc = Bun.spawn([process.execPath, CLI, "sync", "./add", "--folder", "named-add", "--create"], {
      cwd: work,
      env: cliEnv({ ESYNC_CONFIG_DIR: cfg }),
      stdout: "pipe",
      stderr: "pipe",
    });
    const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    expect(code).toBe(0);
    expect(stdout).toContain("uploaded    inside.txt");
    expect(await remotePaths("named-add")).toEqual(["inside.txt"]);
  });

  test("a directory named help is synced too: `sync` has no help subcommand (--help remains)", async () => {
    dirWith("help", { "h.txt": "h\n" });
    const proc = Bun.spawn([process.execPath, CLI, "sync", "help", "--folder", "named-help", "--create"], {
      cwd: work,
      env: cliEnv({ ESYNC_CONFIG_DIR: cfg }),
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(await proc.exited).toBe(0);
    expect(await remotePaths("named-help")).toEqual(["h.txt"]);
  });
});
