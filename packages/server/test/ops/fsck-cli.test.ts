/**
 * `bun run fsck` as the chaos suite and operators call it: configured by the server's ESYNC_*
 * variables (a SQLite data directory, or `ESYNC_DATABASE_URL` naming PostgreSQL), dry run by
 * default, `--repair`, `--json` printing exactly one document `{ok, problems, repaired}`, and
 * exit status 0 (clean or all repaired), 1 (problems remain) or 2 (could not run).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDb } from "../../src/db/client.ts";
import { DiskBlobStore } from "../../src/storage/disk.ts";
import { bodyOf } from "../storage/conformance.ts";
import { PG_SETUP_TIMEOUT_MS, pgMigratedDatabase, pgTestServer } from "../support/pg-server.ts";

const root = mkdtempSync(join(tmpdir(), "esync-fsck-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
beforeAll(() => pgTestServer(), PG_SETUP_TIMEOUT_MS);

function fsck(dir: string, env: Record<string, string>, ...args: string[]) {
  const r = Bun.spawnSync(["bun", "run", join(import.meta.dir, "../../src/admin/fsck.ts"), ...args], {
    env: { ...process.env, ESYNC_DATA_DIR: dir, ESYNC_STORAGE: "disk", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

describe("bun run fsck", () => {
  for (const dialect of ["sqlite", "postgres"] as const)
    test(`exits 0 on a clean data directory, 1 with an orphan (dry run keeps it), 0 after --repair removes it (${dialect})`, async () => {
      const dir = join(root, dialect);
      const lease = dialect === "postgres" ? await pgMigratedDatabase("fsck_cli") : null;
      try {
        const env: Record<string, string> = lease ? { ESYNC_DATABASE_URL: lease.url } : {};
        if (!lease) openDb(join(dir, "esync.sqlite")).$client.close();
        const store = new DiskBlobStore({ root: join(dir, "blobs"), fsync: "off" });
        expect(fsck(dir, env, "--json")).toMatchObject({ code: 0 });
        expect(JSON.parse(fsck(dir, env, "--json").out)).toEqual({ ok: true, problems: [], repaired: 0 });

        const key = "b/cd/cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd/0.abcdef";
        await store.put(key, bodyOf(new Uint8Array(3)), 3);
        const dry = fsck(dir, env, "--json");
        expect(dry.code).toBe(1);
        expect(dry.out.trim().split("\n")).toHaveLength(1);
        const report = JSON.parse(dry.out);
        expect(report).toMatchObject({ ok: false, repaired: 0 });
        expect(report.problems).toEqual([expect.objectContaining({ kind: "orphan_object", key })]);
        expect(typeof report.problems[0].detail).toBe("string");
        expect(await store.size(key)).toBe(3);

        const human = fsck(dir, env);
        expect(human.code).toBe(1);
        expect(human.out).toContain("orphan_object");

        const repaired = fsck(dir, env, "--repair", "--json");
        expect(repaired.code).toBe(0);
        expect(JSON.parse(repaired.out)).toMatchObject({ ok: true, repaired: 1 });
        expect(await store.size(key)).toBeNull();
        expect(existsSync(join(dir, "blobs", "b", "cd"))).toBe(false);
        expect(fsck(dir, env, "--json").code).toBe(0);
      } finally {
        await lease?.release();
      }
    });

  test("exits 2, printing one JSON document with ok false, when it cannot run", () => {
    const dir = join(root, "broken");
    const noDb = fsck(dir, { ESYNC_DB_PATH: join(dir, "absent.sqlite") }, "--json");
    expect(noDb.code).toBe(2);
    expect(JSON.parse(noDb.out)).toMatchObject({ ok: false, problems: [], repaired: 0 });
    const badConfig = fsck(dir, { ESYNC_STORAGE: "s3", ESYNC_S3_ENDPOINT: "" }, "--json");
    expect(badConfig.code).toBe(2);
    expect(JSON.parse(badConfig.out).error).toContain("ESYNC_S3_ENDPOINT");
  });

  test("exits 2 with the database's error when the PostgreSQL server of ESYNC_DATABASE_URL does not answer", () => {
    const r = fsck(
      join(root, "nopg"),
      { ESYNC_DATABASE_URL: "postgres://esync@127.0.0.1:1/esync" },
      "--json",
    );
    expect(r.code).toBe(2);
    const report = JSON.parse(r.out);
    expect(report).toMatchObject({ ok: false, problems: [], repaired: 0 });
    expect(report.error.length).toBeGreaterThan(0);
  });
});
