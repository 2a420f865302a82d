/**
 * `esync-admin` (issue 13) run as a process on the server's database: tokens it issues
 * authenticate and stop authenticating once revoked, `stats` reports exactly a known workload,
 * and failures end with one line on stderr and the documented exit code.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDb } from "../../src/db/client.ts";
import { DiskBlobStore } from "../../src/storage/disk.ts";
import { abort, openSession, putChunks, uploadViaSession } from "../http/helpers.ts";
import { bodyOf } from "../storage/conformance.ts";
import { makeTestApp } from "../support/app.ts";
import { newUser, randomCiphertext } from "../support/fixtures.ts";
import { PG_SETUP_TIMEOUT_MS, pgMigratedDatabase, pgTestServer } from "../support/pg-server.ts";
import { REPO_ROOT, SERVER_ROOT } from "../support/server.ts";

const dir = mkdtempSync(join(tmpdir(), "esync-admin-"));
const dbPath = join(dir, "esync.sqlite");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The metadata databases the stats and fsck commands are tested on. */
const DIALECTS = ["sqlite", "postgres"] as const;

/**
 * The settings naming a fresh database of `dialect`: a SQLite file in `dir`, or a migrated,
 * empty PostgreSQL database of the test server (released, i.e. emptied, by `release`).
 */
async function dialectDatabase(
  dialect: (typeof DIALECTS)[number],
  label: string,
): Promise<{ env: Record<string, string>; release(): Promise<void> }> {
  if (dialect === "sqlite")
    return { env: { ESYNC_DB_PATH: join(dir, `${label}.sqlite`) }, release: async () => {} };
  const lease = await pgMigratedDatabase(label);
  return { env: { ESYNC_DATABASE_URL: lease.url }, release: () => lease.release() };
}

function admin(...args: string[]): { code: number; stdout: string; stderr: string } {
  const r = Bun.spawnSync([process.execPath, join(SERVER_ROOT, "src/admin/esync-admin.ts"), ...args], {
    env: { ...process.env, ESYNC_DATA_DIR: dir, ESYNC_DB_PATH: dbPath },
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

describe("esync-admin token", () => {
  test("a token from `token create` authenticates, is listed without its secret, and gets 401 after `token revoke`", async () => {
    const user = newUser();
    const created = admin("token", "create", "--owner", user.address, "--label", "laptop", "--json");
    expect(created.code).toBe(0);
    const t = JSON.parse(created.stdout) as { id: string; token: string; owner: string };
    expect(t.owner).toBe(user.address);
    const app = makeTestApp({ ESYNC_DB_PATH: dbPath });
    try {
      const call = () =>
        app.fetch("/upload/session/nope/status", { headers: { authorization: `Bearer ${t.token}` } });
      expect((await call()).status).toBe(404);
      const list = admin("--json", "token", "list", "--owner", user.address);
      expect(list.code).toBe(0);
      const rows = JSON.parse(list.stdout) as { id: string; label: string; revoked_at: number | null }[];
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ id: t.id, label: "laptop", revoked_at: null });
      expect(list.stdout).not.toContain(t.token);
      const revoked = admin("token", "revoke", t.id);
      expect(revoked.code).toBe(0);
      expect(revoked.stdout.trim()).toBe(`revoked ${t.id}`);
      expect((await call()).status).toBe(401);
    } finally {
      await app.close();
    }
  });

  test("exits 2 with one line on stderr for revoking an unknown token id", () => {
    const r = admin("token", "revoke", "0000000000000000");
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe("esync-admin: no active token with id 0000000000000000");
  });

  test("exits 1 for bad arguments: an owner that is not SS58, an unknown command", () => {
    const bad = admin("token", "create", "--owner", "not-an-address");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("esync-admin: --owner is not an SS58 address");
    expect(admin("frobnicate").code).toBe(1);
  });
});

describe("esync-admin stats", () => {
  beforeAll(() => pgTestServer(), PG_SETUP_TIMEOUT_MS);

  for (const dialect of DIALECTS)
    test(`reports the accounts, files, bytes, sessions by state and deletion queue of a known workload (${dialect})`, async () => {
      const db = await dialectDatabase(dialect, "stats");
      const app = makeTestApp(db.env);
      const a = newUser();
      const b = newUser();
      const sizes = [3000, 1500, 700];
      try {
        await uploadViaSession(app, a, randomCiphertext(sizes[0] as number), { path: "a/1.bin" });
        await uploadViaSession(app, a, randomCiphertext(sizes[1] as number), { path: "a/2.bin" });
        await uploadViaSession(app, b, randomCiphertext(sizes[2] as number), { path: "b/1.bin" });
        const open = randomCiphertext(2048);
        const receiving = await openSession(app, b, open, { path: "b/open.bin" });
        await putChunks(app, receiving, open, [0]);
        const gone = await openSession(app, b, randomCiphertext(100), { path: "b/gone.bin" });
        expect((await abort(app, gone.auth, gone.sessionId)).status).toBe(200);
      } finally {
        await app.close();
      }
      try {
        const r = Bun.spawnSync(
          [process.execPath, join(SERVER_ROOT, "src/admin/esync-admin.ts"), "stats", "--json"],
          {
            env: { ...process.env, ESYNC_DATA_DIR: dir, ...db.env },
            stdout: "pipe",
            stderr: "pipe",
          },
        );
        expect(r.stderr.toString()).toBe("");
        expect(r.exitCode).toBe(0);
        const s = JSON.parse(r.stdout.toString());
        expect(s).toMatchObject({
          accounts: 2,
          folders: 2,
          files: 3,
          ciphertext_bytes: sizes.reduce((x, y) => x + y, 0),
          sessions: { receiving: 1, finalizing: 0, finalized: 3 },
          // The aborted session's chunks, and the chunks of each multi-chunk session (3000 and
          // 1500 bytes in chunks of 1024), which finalize copied into one object.
          deletion_queue: { depth: 1 + sizes.filter((n) => n > 1024).length },
        });
        const text = Bun.spawnSync(
          [process.execPath, join(SERVER_ROOT, "src/admin/esync-admin.ts"), "stats"],
          {
            env: { ...process.env, ESYNC_DATA_DIR: dir, ...db.env },
            stdout: "pipe",
            stderr: "pipe",
          },
        );
        expect(text.exitCode).toBe(0);
        expect(text.stdout.toString()).toContain("accounts:");
      } finally {
        await db.release();
      }
    });

  test("exits 2 with a one-line configuration error for a bad setting", () => {
    const r = Bun.spawnSync([process.execPath, join(SERVER_ROOT, "src/admin/esync-admin.ts"), "stats"], {
      env: { ...process.env, ESYNC_DATA_DIR: dir, ESYNC_STORAGE: "floppy" },
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(r.exitCode).toBe(2);
    expect(r.stderr.toString().trim()).toMatch(/^esync-admin: configuration error: ESYNC_STORAGE: /);
  });
});

describe("esync-admin fsck", () => {
  beforeAll(() => pgTestServer(), PG_SETUP_TIMEOUT_MS);

  for (const dialect of DIALECTS)
    test(`exits 0 on a clean store, 3 with an orphan object (dry run keeps it), 0 after --repair deletes it (${dialect})`, async () => {
      const fsckDir = mkdtempSync(join(tmpdir(), "esync-admin-fsck-"));
      const db = await dialectDatabase(dialect, "admin_fsck");
      try {
        const env = { ...process.env, ESYNC_DATA_DIR: fsckDir, ESYNC_STORAGE: "disk", ...db.env };
        const run = (...args: string[]) => {
          const r = Bun.spawnSync(
            [process.execPath, join(SERVER_ROOT, "src/admin/esync-admin.ts"), "fsck", ...args],
            {
              env,
              stdout: "pipe",
              stderr: "pipe",
            },
          );
          return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
        };
        if (db.env.ESYNC_DB_PATH) openDb(db.env.ESYNC_DB_PATH).$client.close();
        expect(run("--json")).toMatchObject({ code: 0 });
        const store = new DiskBlobStore({ root: join(fsckDir, "blobs"), fsync: "off" });
        const key = "b/ab/abababababababababababababababab/0.abcdef";
        await store.put(key, bodyOf(new Uint8Array(5)), 5);
        const dry = run("--json");
        expect(dry.code).toBe(3);
        expect(JSON.parse(dry.out)).toMatchObject({
          ok: false,
          repaired: 0,
          problems: [{ kind: "orphan_object", key }],
        });
        expect(await store.size(key)).toBe(5);
        const human = run();
        expect(human.code).toBe(3);
        expect(human.out).toContain("orphan_object");
        expect(human.out).toContain("dry run; --repair to repair");
        const repaired = run("--repair", "--json");
        expect(repaired.code).toBe(0);
        expect(JSON.parse(repaired.out)).toMatchObject({ ok: true, repaired: 1 });
        expect(await store.size(key)).toBeNull();
      } finally {
        rmSync(fsckDir, { recursive: true, force: true });
        await db.release();
      }
    });

  test("exits 2 with one line on stderr when there is no database", () => {
    const r = Bun.spawnSync([process.execPath, join(SERVER_ROOT, "src/admin/esync-admin.ts"), "fsck"], {
      env: { ...process.env, ESYNC_DATA_DIR: dir, ESYNC_DB_PATH: join(dir, "absent.sqlite") },
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(r.exitCode).toBe(2);
    expect(r.stderr.toString().trim()).toMatch(/^esync-admin: no database at /);
  });
});

describe("esync-admin quota", () => {
  test("set overrides the allowance the server enforces, show reports usage and source, default removes it", async () => {
    const quotaDb = join(dir, "quota.sqlite");
    const env = { ...process.env, ESYNC_DATA_DIR: dir, ESYNC_DB_PATH: quotaDb };
    const run = (...args: string[]) => {
      const r = Bun.spawnSync([process.execPath, join(SERVER_ROOT, "src/admin/esync-admin.ts"), ...args], {
        env,
        stdout: "pipe",
        stderr: "pipe",
      });
      return { code: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
    };
    const user = newUser();
    const app = makeTestApp({ ESYNC_DB_PATH: quotaDb });
    try {
      await uploadViaSession(app, user, randomCiphertext(1048), { path: "q/1.bin" });
      const set = run("quota", "set", user.address, "1500", "--json");
      expect(set.code).toBe(0);
      expect(JSON.parse(set.stdout)).toMatchObject({
        owner: user.address,
        quota_bytes: 1500,
        source: "override",
        used_bytes: 1000,
        file_count: 1,
      });
      const refused = await openSession(app, user, randomCiphertext(1048), { path: "q/2.bin" }).catch(
        (e: Error) => e,
      );
      expect(String(refused)).toContain("drive_quota_exceeded");
      const show = run("quota", "show", user.address);
      expect(show.code).toBe(0);
      expect(show.stdout).toContain("allowance 1.46 KiB (1500 bytes) (override)");
      const reset = run("--json", "quota", "set", user.address, "default");
      expect(JSON.parse(reset.stdout)).toMatchObject({ quota_bytes: null, source: "default" });
      await uploadViaSession(app, user, randomCiphertext(1048), { path: "q/2.bin" });
    } finally {
      await app.close();
    }
    const alias = Bun.spawnSync(["bun", "run", "quota", "show", user.address, "--json"], {
      cwd: REPO_ROOT,
      env,
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(alias.exitCode).toBe(0);
    expect(JSON.parse(alias.stdout.toString())).toMatchObject({ used_bytes: 2000, source: "default" });
  });

  test("exits 1 with one line for a bad allowance or address", () => {
    const bad = admin("quota", "set", newUser().address, "lots");
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim().split("\n")[0]).toContain("expected whole bytes, 'unlimited' or 'default'");
    expect(admin("quota", "show", "not-an-address").code).toBe(1);
  });
});

describe("esync-admin freeze", () => {
  test("freeze makes the server refuse the account's writes (402 drive_frozen), unfreeze lifts it", async () => {
    const freezeDb = join(dir, "freeze.sqlite");
    const env = { ...process.env, ESYNC_DATA_DIR: dir, ESYNC_DB_PATH: freezeDb };
    const run = (...args: string[]) => {
      const r = Bun.spawnSync([process.execPath, join(SERVER_ROOT, "src/admin/esync-admin.ts"), ...args], {
        env,
        stdout: "pipe",
        stderr: "pipe",
      });
      return { code: r.exitCode ?? -1, stdout: r.stdout.toString() };
    };
    const user = newUser();
    const app = makeTestApp({ ESYNC_DB_PATH: freezeDb });
    try {
      await uploadViaSession(app, user, randomCiphertext(1048), { path: "f/1.bin" });
      expect(run("freeze", user.address, "--until", "2000000000")).toEqual({
        code: 0,
        stdout: `${user.address}: frozen\n`,
      });
      const refused = await openSession(app, user, randomCiphertext(1048), { path: "f/2.bin" }).catch(
        (e: Error) => e,
      );
      expect(String(refused)).toContain("drive_frozen");
      expect(run("unfreeze", user.address).stdout).toBe(`${user.address}: unfrozen\n`);
      await uploadViaSession(app, user, randomCiphertext(1048), { path: "f/2.bin" });
    } finally {
      await app.close();
    }
  });
});
