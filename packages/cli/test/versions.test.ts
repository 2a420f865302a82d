/**
 * `esync versions`, `esync trash` and `esync restore --version/--at/--deleted` (docs/versions.md,
 * docs/user-guide.md), run as the real CLI against a real server; and their clear errors on a
 * server without the `versions` capability.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ServerProcess, startServer } from "@esync/server/test/support/server.ts";
import { runCli } from "./helpers.ts";

setDefaultTimeout(120_000);
const work = mkdtempSync(join(tmpdir(), "esync-versions-"));
const cfg = join(work, "config");
const src = join(work, "src");
let server: ServerProcess;

beforeAll(async () => {
  server = await startServer({ env: { ESYNC_DISK_FSYNC: "off", ESYNC_VERSION_RETENTION_DAYS: "30" } });
  expect((await runCli(cfg, ["init", "--server", server.url, "--json"])).code).toBe(0);
  mkdirSync(join(src, "notes"), { recursive: true });
  writeFileSync(join(src, "notes", "todo.txt"), "first");
  writeFileSync(join(src, "old.txt"), "to be deleted");
  expect((await runCli(cfg, ["push", src, "--folder", "docs", "--create", "--json"])).code).toBe(0);
});
afterAll(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe("esync versions and restore --version", () => {
  test("lists the replaced revision after an overwrite and restores it on the server; pull brings the old bytes", async () => {
    writeFileSync(join(src, "notes", "todo.txt"), "second, longer");
    expect((await runCli(cfg, ["push", src, "--folder", "docs", "--json"])).code).toBe(0);
    const listed = await runCli(cfg, ["versions", "notes/todo.txt", "--folder", "docs", "--json"]);
    expect(listed.code).toBe(0);
    const body = listed.json() as {
      current: { size_bytes: number };
      versions: { version_id: number; entry: { size_bytes: number } }[];
    };
    expect(body.current.size_bytes).toBe("second, longer".length);
    expect(body.versions.length).toBe(1);
    expect(body.versions[0]?.entry.size_bytes).toBe("first".length);
    const text = await runCli(cfg, ["versions", "notes/todo.txt", "--folder", "docs"]);
    expect(text.stdout).toContain("replaced");
    const id = body.versions[0]?.version_id;
    // A second between the overwrite and the restore, so that `--at` below can name a moment
    // when the overwrite was current.
    await Bun.sleep(1100);
    const r = await runCli(cfg, ["restore", "notes/todo.txt", "--folder", "docs", "--version", String(id)]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`restored notes/todo.txt (version ${id})`);
    const out = join(work, "pulled");
    expect((await runCli(cfg, ["pull", out, "--folder", "docs", "--json"])).code).toBe(0);
    expect(readFileSync(join(out, "notes", "todo.txt"), "utf8")).toBe("first");
  });

  test("restore --at picks the revision current at that time, and --to writes it locally too", async () => {
    const listed = (
      await runCli(cfg, ["versions", "notes/todo.txt", "--folder", "docs", "--json"])
    ).json() as {
      versions: { kept_at: number; entry: { size_bytes: number } }[];
    };
    // After the previous test: the current is "first" again, the kept ones are "second, longer" and "first".
    const longer = listed.versions.find((v) => v.entry.size_bytes === 14);
    if (!longer) throw new Error("the overwrite is not kept");
    const dest = join(work, "restored-at");
    const r = await runCli(cfg, [
      "restore",
      "notes/todo.txt",
      "--folder",
      "docs",
      "--at",
      String(longer.kept_at - 1),
      "--to",
      dest,
      "--force",
    ]);
    expect(r.code).toBe(0);
    expect(readFileSync(join(dest, "notes", "todo.txt"), "utf8")).toBe("second, longer");
  });

  test("an unknown version is a usage error (exit 1) that names the command listing them", async () => {
    const r = await runCli(cfg, ["restore", "notes/todo.txt", "--folder", "docs", "--version", "999999"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("no version 999999 of notes/todo.txt");
  });
});

describe("esync trash and restore --deleted", () => {
  test("a deleted file is listed in the trash and restored from it", async () => {
    expect((await runCli(cfg, ["rm", "old.txt", "--folder", "docs"])).code).toBe(0);
    const trash = await runCli(cfg, ["trash", "--folder", "docs"]);
    expect(trash.code).toBe(0);
    expect(trash.stdout).toContain("old.txt");
    const r = await runCli(cfg, ["restore", "--deleted", "old.txt", "--folder", "docs"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("the next sync brings it");
    const empty = await runCli(cfg, ["trash", "--folder", "docs"]);
    expect(empty.stdout).toContain("the trash of folder docs is empty");
  });

  test("restoring a path that is not in the trash is a usage error (exit 1)", async () => {
    const r = await runCli(cfg, ["restore", "--deleted", "never.txt", "--folder", "docs"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("never.txt is not in the trash of folder docs");
  });
});

describe("esync quota with kept versions", () => {
  test("shows the allowance itself and what uses it: live files plus kept versions", async () => {
    const q = await startServer({
      env: {
        ESYNC_DISK_FSYNC: "off",
        ESYNC_VERSION_RETENTION_DAYS: "30",
        ESYNC_DEFAULT_QUOTA_BYTES: "5000000",
      },
    });
    try {
      const qcfg = join(work, "quota-config");
      const tree = join(work, "quota-src");
      mkdirSync(tree, { recursive: true });
      expect((await runCli(qcfg, ["init", "--server", q.url, "--json"])).code).toBe(0);
      writeFileSync(join(tree, "big.txt"), "x".repeat(1000));
      expect((await runCli(qcfg, ["push", tree, "--folder", "q", "--create", "--json"])).code).toBe(0);
      writeFileSync(join(tree, "big.txt"), "y".repeat(10));
      expect((await runCli(qcfg, ["push", tree, "--folder", "q", "--json"])).code).toBe(0);
      const r = await runCli(qcfg, ["quota", "--json"]);
      expect(r.code).toBe(0);
      expect(r.json()).toMatchObject({
        used_bytes: 1010,
        file_bytes: 10,
        file_count: 1,
        version_bytes: 1000,
        share_bytes: 0,
        quota_bytes: 5_000_000,
        free_bytes: 5_000_000 - 1010,
      });
      const human = await runCli(qcfg, ["quota"]);
      expect(human.stdout).toContain("versions:");
      expect(human.stdout).toContain("allowance: 4.77 MiB");
    } finally {
      await q.stop();
      rmSync(q.dataDir, { recursive: true, force: true });
    }
  });
});

describe("a server without versions", () => {
  test("versions, trash and restore --deleted fail with exit 2 and name the missing capability", async () => {
    const off = await startServer({ env: { ESYNC_DISK_FSYNC: "off", ESYNC_VERSION_RETENTION_DAYS: "0" } });
    try {
      const cfg2 = join(work, "config-off");
      expect((await runCli(cfg2, ["init", "--server", off.url, "--json"])).code).toBe(0);
      for (const args of [
        ["versions", "a.txt", "--folder", "docs"],
        ["trash", "--folder", "docs"],
        ["restore", "--deleted", "a.txt", "--folder", "docs"],
      ]) {
        const r = await runCli(cfg2, args);
        expect({ args, code: r.code }).toEqual({ args, code: 2 });
        expect(r.stderr).toContain("keeps no versions");
      }
    } finally {
      await off.stop();
    }
  });
});
