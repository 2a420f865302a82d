/**
 * `esync sync add|list|remove` (the real CLI process, no server needed): pairs stored in the
 * configuration directory with absolute paths, refused when the directory is missing, already
 * paired or nested in a paired one, listed as a table and as JSON, removed by directory or by
 * folder; `sync --all` without pairs and `sync` without DIR are usage errors. A pairs file
 * written before drive pairs is still read; a drive pair is listed as `drive OWNER/LABEL`.
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLI, cliEnv, runCli } from "./helpers.ts";

setDefaultTimeout(60_000);

const work = mkdtempSync(join(tmpdir(), "esync-pairs-"));
const cfg = join(work, "config");
const docs = join(work, "Documents");
const photos = join(work, "Photos");
mkdirSync(join(docs, "inner"), { recursive: true });
mkdirSync(photos);
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Pair {
  dir: string;
  folder?: string;
  drive?: string;
  exclude: string[];
}

const stored = async () => ((await Bun.file(join(cfg, "sync-pairs.json")).json()) as { pairs: Pair[] }).pairs;

describe("esync sync add", () => {
  test("stores a pair with the directory made absolute, its excludes, in a 0600 file", async () => {
    // Run from `work` with a relative path: the stored path is absolute.
    const proc = Bun.spawn(
      [process.execPath, CLI, "sync", "add", "Documents", "--folder", "docs", "-x", "*.tmp", "-x", "build/"],
      {
        cwd: work,
        env: cliEnv({ ESYNC_CONFIG_DIR: cfg }),
        stdout: "pipe",
        stderr: "pipe",
      },
    );
    const out = await new Response(proc.stdout).text();
    expect(await proc.exited).toBe(0);
    expect(out).toBe(`added sync pair ${docs} <-> "docs"\n`);
    expect(await stored()).toEqual([{ dir: docs, folder: "docs", exclude: ["*.tmp", "build/"] }]);
    expect(statSync(join(cfg, "sync-pairs.json")).mode & 0o777).toBe(0o600);
  });

  test("refuses the same directory again, naming the folder it is synced with (exit 1)", async () => {
    const same = await runCli(cfg, ["sync", "add", docs, "--folder", "docs"]);
    expect(same.code).toBe(1);
    expect(same.stderr).toBe(`esync: ${docs} is already synced with folder "docs"\n`);
    const other = await runCli(cfg, ["sync", "add", `${docs}/../Documents/`, "--folder", "other"]);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain(
      `${docs} is already synced with folder "docs" (run \`esync sync remove ${docs}\` first)`,
    );
    expect(await stored()).toHaveLength(1);
  });

  test("refuses a directory inside a paired one, and one containing a paired one", async () => {
    const inner = await runCli(cfg, ["sync", "add", join(docs, "inner"), "--folder", "inner"]);
    expect(inner.code).toBe(1);
    expect(inner.stderr).toContain(`is inside ${docs}, which is already synced with folder "docs"`);
    const outer = await runCli(cfg, ["sync", "add", work, "--folder", "all"]);
    expect(outer.code).toBe(1);
    expect(outer.stderr).toContain(`contains ${docs}`);
  });

  test("refuses a directory that does not exist, and does not create it", async () => {
    const missing = join(work, "typo");
    const r = await runCli(cfg, ["sync", "add", missing, "--folder", "docs"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("no such directory");
    expect(() => statSync(missing)).toThrow();
  });

  test("refuses a pair without --folder", async () => {
    const r = await runCli(cfg, ["sync", "add", photos]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("--folder LABEL");
  });
});

describe("esync sync list", () => {
  test("shows the pairs as a table and as JSON", async () => {
    expect((await runCli(cfg, ["sync", "add", photos, "--folder", "photos", "--json"])).json()).toEqual({
      added: { dir: photos, folder: "photos", exclude: [] },
    });
    const r = await runCli(cfg, ["sync", "list"]);
    expect(r.code).toBe(0);
    const rows = r.stdout.trimEnd().split("\n");
    expect(rows[0]).toMatch(/^DIRECTORY\s+FOLDER\s+EXCLUDES$/);
    expect(rows[1]).toMatch(new RegExp(`^${docs}\\s+docs\\s+\\*\\.tmp build/$`));
    expect(rows[2]).toMatch(new RegExp(`^${photos}\\s+photos$`));
    expect((await runCli(cfg, ["sync", "list", "--json"])).json()).toEqual({ pairs: await stored() });
  });
});

describe("esync sync remove", () => {
  test("removes a pair by directory, then by folder, and says when nothing matches (exit 1)", async () => {
    const byDir = await runCli(cfg, ["sync", "remove", photos]);
    expect(byDir.code).toBe(0);
    expect(byDir.stdout).toBe(`removed sync pair ${photos} <-> "photos"\n`);
    const byFolder = await runCli(cfg, ["sync", "remove", "--folder", "docs", "--json"]);
    expect(byFolder.json()).toEqual({
      removed: [{ dir: docs, folder: "docs", exclude: ["*.tmp", "build/"] }],
    });
    expect(await stored()).toEqual([]);
    const none = await runCli(cfg, ["sync", "remove", photos]);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain(`no sync pair for ${photos}`);
    expect((await runCli(cfg, ["sync", "remove"])).code).toBe(1);
  });
});

describe("esync sync without a pair", () => {
  test("--all with no configured pair is a usage error that says how to add one", async () => {
    const r = await runCli(cfg, ["sync", "--all"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("no sync pairs configured: add one with `esync sync add DIR --folder LABEL`");
  });

  test("DIR and --folder are required without --all, and refused with it", async () => {
    const bare = await runCli(cfg, ["sync", docs]);
    expect(bare.code).toBe(1);
    expect(bare.stderr).toContain("give DIR and --folder LABEL or --drive OWNER/LABEL (or --all");
    const both = await runCli(cfg, ["sync", "--all", docs]);
    expect(both.code).toBe(1);
    expect(both.stderr).toContain("--all syncs the configured pairs");
  });
});

describe("the pairs file", () => {
  const file = join(cfg, "sync-pairs.json");
  test("a file of folder pairs only, as older clients write it, is still read and listed", async () => {
    writeFileSync(file, JSON.stringify({ version: 1, pairs: [{ dir: docs, folder: "docs" }] }));
    const r = await runCli(cfg, ["sync", "list", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toEqual({ pairs: [{ dir: docs, folder: "docs", exclude: [] }] });
  });

  test("lists a drive pair as `drive OWNER/LABEL` and removes it by --drive LABEL", async () => {
    const drive = "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY/team";
    writeFileSync(
      file,
      JSON.stringify({
        version: 1,
        pairs: [
          { dir: docs, folder: "docs" },
          { dir: photos, drive, exclude: [] },
        ],
      }),
    );
    const rows = (await runCli(cfg, ["sync", "list"])).stdout.trimEnd().split("\n");
    expect(rows[2]).toMatch(new RegExp(`^${photos}\\s+drive ${drive}$`));
    const r = await runCli(cfg, ["sync", "remove", "--drive", "team"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`removed sync pair ${photos} <-> drive ${drive}\n`);
    expect(await stored()).toEqual([{ dir: docs, folder: "docs", exclude: [] }]);
  });

  test("a pair with both a folder and a drive, or neither, is refused (exit 1)", async () => {
    for (const pair of [{ dir: docs, folder: "docs", drive: "x/team" }, { dir: docs }]) {
      writeFileSync(file, JSON.stringify({ version: 1, pairs: [pair] }));
      const r = await runCli(cfg, ["sync", "list"]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('every pair needs a "dir" string and a "folder" or a "drive" string');
    }
    rmSync(file);
  });
});
