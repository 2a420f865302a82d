/**
 * `esync status DIR --folder LABEL`: the sync engine's plan, shown without carrying it out,
 * against a real server.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ServerProcess, startServer } from "@esync/server/test/support/server.ts";
import { runCli } from "./helpers.ts";

// Real CLI processes against a real server: seconds each on a loaded machine.
setDefaultTimeout(120_000);

const work = mkdtempSync(join(tmpdir(), "esync-status-"));
const cfg = join(work, "config");
const dir = join(work, "here");
const other = join(work, "other");
let server: ServerProcess;

interface Status {
  in_sync: boolean;
  synced_before: boolean;
  actions: Array<{ op: string; path: string; reason?: string; from?: string }>;
}

beforeAll(async () => {
  server = await startServer({ env: { ESYNC_DISK_FSYNC: "off" } });
  expect((await runCli(cfg, ["init", "--server", server.url])).code).toBe(0);
  mkdirSync(dir);
  mkdirSync(other);
  writeFileSync(join(dir, "a.txt"), "local a\n");
  writeFileSync(join(other, "b.txt"), "remote b\n");
  expect((await runCli(cfg, ["push", other, "--folder", "docs", "--create"])).code).toBe(0);
});

afterAll(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe("esync status", () => {
  test("before the first sync: local files to upload, remote ones to download; nothing is written", async () => {
    const r = await runCli(cfg, ["status", dir, "--folder", "docs", "--json"]);
    expect(r.code).toBe(0);
    const s = r.json<Status>();
    expect(s.synced_before).toBe(false);
    expect(s.in_sync).toBe(false);
    expect(s.actions).toEqual(
      expect.arrayContaining([
        { op: "upload", path: "a.txt", reason: "new" },
        { op: "download", path: "b.txt", reason: "new" },
      ]),
    );
    expect(s.actions).toHaveLength(2);
    expect(existsSync(join(dir, "b.txt"))).toBe(false);
    expect(existsSync(join(dir, ".esync"))).toBe(false);
    const plain = await runCli(cfg, ["status", dir, "--folder", "docs"]);
    expect(plain.stdout).toContain("  upload           a.txt (new)");
    expect(plain.stdout).toContain("  download         b.txt (new)");
  });

  test("after a sync it is in sync; local edits and deletions show as uploads and server deletions", async () => {
    const synced = await runCli(cfg, ["sync", dir, "--folder", "docs"]);
    expect(synced.code).toBe(0);
    const clean = await runCli(cfg, ["status", dir, "--folder", "docs", "--json"]);
    expect(clean.json<Status>()).toMatchObject({ in_sync: true, synced_before: true, actions: [] });
    writeFileSync(join(dir, "a.txt"), "edited a\n");
    unlinkSync(join(dir, "b.txt"));
    const r = await runCli(cfg, ["status", dir, "--folder", "docs", "--json"]);
    expect(r.json<Status>().actions).toEqual(
      expect.arrayContaining([
        { op: "upload", path: "a.txt", reason: "changed" },
        { op: "delete_remote", path: "b.txt" },
      ]),
    );
    const ls = await runCli(cfg, ["ls", "--folder", "docs", "--json"]);
    expect(
      ls
        .json<{ files: Array<{ relative_path: string }> }>()
        .files.map((f) => f.relative_path)
        .sort(),
    ).toEqual(["a.txt", "b.txt"]);
  });

  test("an unknown folder label exits 1", async () => {
    expect((await runCli(cfg, ["status", dir, "--folder", "nope"])).code).toBe(1);
  });
});
