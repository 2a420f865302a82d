/**
 * `esync mv`, `rm` (batch, `-r`), `mkdir`, `quota`, `du` and `pull` of empty directories,
 * run as the real CLI against a real server (docs/protocol.md#delete-files, #rename-files, #quota, #summaries, #folder-entries).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ServerProcess, startServer } from "@esync/server/test/support/server.ts";
import { listTree, runCli } from "./helpers.ts";

setDefaultTimeout(120_000);
const work = mkdtempSync(join(tmpdir(), "esync-tree-"));
const cfg = join(work, "config");
let server: ServerProcess;

beforeAll(async () => {
  // Versions off: the usage `esync quota` shows below is the live files alone.
  server = await startServer({
    env: { ESYNC_DISK_FSYNC: "off", ESYNC_DEFAULT_QUOTA_BYTES: "5000000", ESYNC_VERSION_RETENTION_DAYS: "0" },
  });
  expect((await runCli(cfg, ["init", "--server", server.url, "--json"])).code).toBe(0);
  const src = join(work, "src");
  mkdirSync(join(src, "docs", "2025"), { recursive: true });
  writeFileSync(join(src, "a.txt"), "alpha");
  writeFileSync(join(src, "b.txt"), "beta");
  writeFileSync(join(src, "c.md"), "gamma");
  writeFileSync(join(src, "docs", "2025", "report.pdf"), "%PDF report");
  writeFileSync(join(src, "docs", "2025", "notes.txt"), "notes");
  writeFileSync(join(src, "docs", "photo.png"), "png");
  const push = await runCli(cfg, ["push", src, "--folder", "tree", "--create", "--json"]);
  expect(push.code).toBe(0);
});
afterAll(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

async function ls(
  path = "",
): Promise<{ folders: Array<{ name: string }>; files: Array<{ file_name: string }> }> {
  const r = await runCli(cfg, ["ls", ...(path ? [path] : []), "--folder", "tree", "--json"]);
  expect(r.code).toBe(0);
  return r.json();
}

describe("esync mv", () => {
  test("renames one file without re-upload; the old path is gone", async () => {
    const r = await runCli(cfg, ["mv", "--folder", "tree", "a.txt", "renamed.txt", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toMatchObject({ kind: "file", from: "a.txt", to: "renamed.txt", moved: 1 });
    const names = (await ls()).files.map((f) => f.file_name);
    expect(names).toContain("renamed.txt");
    expect(names).not.toContain("a.txt");
  });

  test("moves a whole directory as rename batches, into an existing directory", async () => {
    await runCli(cfg, ["mkdir", "--folder", "tree", "archive"]);
    const r = await runCli(cfg, ["mv", "--folder", "tree", "docs", "archive", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toMatchObject({ kind: "dir", to: "archive/docs", moved: 3, failures: [] });
    expect((await ls("archive/docs/2025")).files.map((f) => f.file_name).sort()).toEqual([
      "notes.txt",
      "report.pdf",
    ]);
    expect((await ls()).folders.map((f) => f.name)).not.toContain("docs");
  });

  test("refuses to overwrite an existing file (exit 2) and reports a missing source (exit 2)", async () => {
    const clash = await runCli(cfg, ["mv", "--folder", "tree", "b.txt", "c.md"]);
    expect(clash.code).toBe(2);
    expect(clash.stderr.trim()).toBe("esync: c.md: already exists");
    const missing = await runCli(cfg, ["mv", "--folder", "tree", "nope.txt", "x.txt"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("nope.txt: not found");
  });
});

describe("esync mkdir and pull", () => {
  test("mkdir creates empty directories (with parents) that ls shows and pull recreates", async () => {
    const r = await runCli(cfg, ["mkdir", "--folder", "tree", "empty/inner", "--json"]);
    expect(r.code).toBe(0);
    expect((await ls()).folders.map((f) => f.name)).toContain("empty");
    const dest = join(work, "pulled");
    const pulled = await runCli(cfg, ["pull", "--folder", "tree", dest, "--json"]);
    expect(pulled.code).toBe(0);
    expect(pulled.json<{ directories_created: number }>().directories_created).toBeGreaterThanOrEqual(2);
    expect(statSync(join(dest, "empty", "inner")).isDirectory()).toBe(true);
    expect(readFileSync(join(dest, "archive", "docs", "2025", "notes.txt"), "utf8")).toBe("notes");
    expect(listTree(dest).has("renamed.txt")).toBe(true);
  });
});

describe("esync rm", () => {
  test("deletes several files in one batch", async () => {
    const r = await runCli(cfg, ["rm", "--folder", "tree", "b.txt", "c.md", "--json"]);
    expect(r.code).toBe(0);
    const out = r.json<{ results: Array<{ path: string; deleted: boolean }> }>();
    expect(out.results.map((x) => [x.path, x.deleted])).toEqual([
      ["b.txt", true],
      ["c.md", true],
    ]);
    const names = (await ls()).files.map((f) => f.file_name);
    expect(names).not.toContain("b.txt");
    expect(names).not.toContain("c.md");
  });

  test("a missing file is exit 2 with one line; a directory needs -r", async () => {
    const again = await runCli(cfg, ["rm", "--folder", "tree", "b.txt"]);
    expect(again.code).toBe(2);
    expect(again.stderr.trim()).toBe("esync: b.txt: not found");
    const dir = await runCli(cfg, ["rm", "--folder", "tree", "archive"]);
    expect(dir.code).toBe(2);
  });

  test("-r deletes a directory with its files and its directory entries", async () => {
    const r = await runCli(cfg, ["rm", "-r", "--folder", "tree", "archive", "empty"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("deleted archive/ (3 file(s))");
    const root = await ls();
    expect(root.folders.map((f) => f.name)).toEqual([]);
    expect(root.files.map((f) => f.file_name)).toEqual(["renamed.txt"]);
    const dest = join(work, "pulled-after-rm");
    expect((await runCli(cfg, ["pull", "--folder", "tree", dest])).code).toBe(0);
    expect(existsSync(join(dest, "empty"))).toBe(false);
  });
});

describe("esync quota and du", () => {
  test("quota shows usage and the room left in the allowance", async () => {
    let out = { used_bytes: 0, free_bytes: 0 as number | null, quota_bytes: 0 as number | null };
    for (let i = 0; i < 30; i++) {
      const r = await runCli(cfg, ["quota", "--json"]);
      expect(r.code).toBe(0);
      out = r.json();
      if (out.used_bytes === 5) break;
      await Bun.sleep(200);
    }
    expect(out.used_bytes).toBe(5);
    expect(out.quota_bytes).toBe(5_000_000);
    expect(out.free_bytes).toBe(5_000_000 - 5);
    const human = await runCli(cfg, ["quota"]);
    expect(human.stdout).toContain("free");
  });

  test("du lists bytes by type and by source, for one folder", async () => {
    const r = await runCli(cfg, ["du", "--folder", "tree", "--json"]);
    expect(r.code).toBe(0);
    const out = r.json<{ file_count: number; by_type: Array<{ name: string; files: number }> }>();
    expect(out.by_type.find((t) => t.name === "document" || t.name === "other")).toBeDefined();
    expect(out.by_type.reduce((n, t) => n + t.files, 0)).toBe(1);
    const human = await runCli(cfg, ["du"]);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain("source");
  });
});
