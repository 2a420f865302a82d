/**
 * @module test/support/pg-server
 * PostgreSQL for tests: a fresh, empty database per caller on a real server.
 *
 * Where the server comes from, first match wins:
 * 1. `ESYNC_TEST_DATABASE_URL`: a server someone else runs; the URL's user must be allowed to
 *    `CREATE DATABASE`. It must answer, or the PostgreSQL tests fail.
 * 2. A cluster already running in the shared directory `ESYNC_TEST_PG_DIR` (default
 *    `/tmp/esync-pg`), started there by another test process or by hand.
 * 3. Otherwise this helper starts one there with `scripts/pg/start.sh` (after
 *    `scripts/pg/install.sh` when PostgreSQL is missing and we are root). Every test process of
 *    the run shares it (a lock file serialises the start); the last process using a cluster
 *    that this helper started stops it when it exits.
 *
 * Each `pgTestDatabase()` is a new database (`CREATE DATABASE`) dropped by its `drop()`;
 * `pgMigratedDatabase()` lends a migrated, empty one, emptied again on release. When no
 * server can be had, the call rejects with a message saying why: the PostgreSQL tests fail, they
 * never skip.
 *
 * `ESYNC_TEST_DATABASE` (`sqlite`, the default, or `postgres`) picks the metadata database of the
 * dialect-neutral suites (`test/http` through `test/support/app.ts`, `test/e2e` through
 * `storageEnv`); `scripts/test.sh` runs `test/http` once on PostgreSQL.
 */
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { SQL } from "bun";
import { acquireSharedServer } from "./shared-server.ts";

/** Timeout for a hook that may have to install or start PostgreSQL (ms). */
export const PG_SETUP_TIMEOUT_MS = 5 * 60_000;

const ROOT = process.env.ESYNC_TEST_PG_DIR || "/tmp/esync-pg";
const SCRIPTS = resolve(import.meta.dir, "../../../../scripts/pg");

function log(message: string): void {
  process.stderr.write(`[pg-server] ${message}\n`);
}

/** Metadata database of the dialect-neutral suites: `ESYNC_TEST_DATABASE`, `sqlite` (default) or `postgres`. */
export const testDatabase: "sqlite" | "postgres" = (() => {
  const v = process.env.ESYNC_TEST_DATABASE || "sqlite";
  if (v !== "sqlite" && v !== "postgres")
    throw new Error(`ESYNC_TEST_DATABASE must be sqlite or postgres, got "${v}"`);
  return v;
})();

/** The URL `scripts/pg/start.sh` wrote to `dir/pg.env`, or null. */
function readEnvFile(dir: string): string | null {
  try {
    const line = readFileSync(join(dir, "pg.env"), "utf8")
      .split("\n")
      .find((l) => l.startsWith("URL="));
    return line ? line.slice(4).trim() : null;
  } catch {
    return null;
  }
}

/** Whether `url` answers `SELECT 1` within 5 s; the error otherwise. */
async function probe(url: string): Promise<Error | null> {
  const sql = new SQL(url, { max: 1, connectionTimeout: 5, idleTimeout: 1 });
  try {
    await sql`SELECT 1`;
    return null;
  } catch (e) {
    return e instanceof Error ? e : new Error(String(e));
  } finally {
    await sql.close();
  }
}

async function run(cmd: string[], what: string): Promise<string> {
  const proc = Bun.spawn(cmd, { stdout: "pipe", stderr: "inherit" });
  const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  if (code !== 0) throw new Error(`${what} failed (${cmd.join(" ")} exited with ${code})`);
  return out;
}

/** Installs PostgreSQL when it is missing and this is root. @throws Error saying what to do otherwise. */
async function ensureInstalled(): Promise<void> {
  const versions = existsSync("/usr/lib/postgresql") ? readdirSync("/usr/lib/postgresql") : [];
  if (versions.some((v) => existsSync(join("/usr/lib/postgresql", v, "bin", "initdb")))) return;
  if (process.getuid?.() !== 0) {
    throw new Error(
      "PostgreSQL is not installed and this is not root: run `sudo scripts/pg/install.sh`, " +
        "or point ESYNC_TEST_DATABASE_URL at a running PostgreSQL server",
    );
  }
  log("installing PostgreSQL (scripts/pg/install.sh)");
  await run(["bash", join(SCRIPTS, "install.sh")], "installing PostgreSQL");
}

async function acquire(): Promise<string> {
  const given = process.env.ESYNC_TEST_DATABASE_URL;
  if (given) {
    const err = await probe(given);
    if (err) throw new Error(`ESYNC_TEST_DATABASE_URL does not answer: ${err.message}`);
    return given;
  }
  return acquireSharedServer({
    root: ROOT,
    scripts: SCRIPTS,
    log,
    read: readEnvFile,
    probe,
    describe: (url) => `the PostgreSQL cluster at ${url}`,
    async start(dir) {
      await ensureInstalled();
      const started = Date.now();
      log(`starting PostgreSQL in ${dir} (scripts/pg/start.sh)`);
      await run(["bash", join(SCRIPTS, "start.sh"), dir], `starting PostgreSQL (log in ${dir}/log)`);
      const url = readEnvFile(dir);
      if (!url) throw new Error(`scripts/pg/start.sh succeeded but wrote no ${dir}/pg.env`);
      log(`PostgreSQL ready at ${url} after ${((Date.now() - started) / 1000).toFixed(1)} s`);
      return url;
    },
  });
}

const MEMO = Symbol.for("esync.test.pgServer");
type Memo = { [MEMO]?: Promise<string> };

/**
 * The URL of the test PostgreSQL server (its maintenance database), found or started once per
 * process (see the module comment).
 * @throws Error saying why when no server can be had (the PostgreSQL tests then fail).
 */
export function pgTestServer(): Promise<string> {
  const g = globalThis as Memo;
  g[MEMO] ??= acquire().catch((e: unknown) => {
    const why = e instanceof Error ? e.message : String(e);
    throw new Error(`no PostgreSQL server for the PostgreSQL tests: ${why}`, { cause: e });
  });
  return g[MEMO];
}

/** A database of one caller. */
export interface PgTestDatabase {
  /** `postgres://…/<name>` */
  url: string;
  name: string;
  /** Drops the database, ending its remaining connections first. */
  drop(): Promise<void>;
}

/**
 * A new, empty database on the test server, named `esync_<label>_<random>` (`label`: lowercase
 * letters, digits and `_` are kept).
 * @throws Error when no server can be had or `CREATE DATABASE` fails.
 */
export async function pgTestDatabase(label = "test"): Promise<PgTestDatabase> {
  const server = await pgTestServer();
  const safe = label
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, "_")
    .slice(0, 30);
  const name = `esync_${safe}_${randomBytes(5).toString("hex")}`;
  await admin(server, (sql) => sql.unsafe(`CREATE DATABASE "${name}"`));
  const url = new URL(server);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: () => admin(server, (sql) => sql.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)),
  };
}

async function admin(server: string, fn: (sql: SQL) => Promise<unknown>): Promise<void> {
  const sql = new SQL(server, { max: 1, idleTimeout: 1 });
  try {
    await fn(sql);
  } finally {
    await sql.close();
  }
}

/** Database settings for a server process: its `ESYNC_*` variables and how to clean up. */
export interface TestDatabaseEnv {
  env: Record<string, string>;
  /** Drops the database (PostgreSQL); nothing for SQLite, whose file lives in the data dir. */
  remove(): Promise<void>;
}

/**
 * Settings for server processes on the test database (`testDatabase`): no variable for SQLite
 * (the server's default file in its data directory); on PostgreSQL, `ESYNC_DATABASE_URL` of a
 * fresh database on the test server. `label` goes into the database name.
 */
export async function databaseEnv(label: string): Promise<TestDatabaseEnv> {
  if (testDatabase === "sqlite") return { env: {}, remove: async () => {} };
  const db = await pgTestDatabase(label);
  return { env: { ESYNC_DATABASE_URL: db.url }, remove: () => db.drop() };
}

/** A migrated database lent to one caller at a time (`pgMigratedDatabase`). */
export interface PgLease {
  /** `postgres://…/<name>` */
  url: string;
  /**
   * Empties every table (sequences restarted) and lends the database to the next caller. Close
   * the caller's connections first.
   */
  release(): Promise<void>;
}

const FREE = Symbol.for("esync.test.pgFree");
type FreeList = { [FREE]?: PgTestDatabase[] };

/**
 * A database with every PostgreSQL migration applied and no rows, lent until `release()`.
 * Released databases are emptied and lent again: migrating a new database for every test app
 * would cost far more (a CREATE DATABASE and the migrations take about half a second on the
 * shared test machine, emptying ten tables a few milliseconds). The databases are dropped with
 * the cluster when the last test process using it exits.
 * @throws Error when no server can be had or a migration fails.
 */
export async function pgMigratedDatabase(label = "test"): Promise<PgLease> {
  const g = globalThis as FreeList;
  g[FREE] ??= [];
  const free = g[FREE];
  let db = free.pop();
  if (!db) {
    db = await pgTestDatabase(label);
    // Imported here so that tests that only need a server do not load the application's client.
    const { openPostgres } = await import("../../src/db/postgres/client.ts");
    const handle = await openPostgres(db.url, undefined, { poolSize: 1 });
    await handle.$client.close();
  }
  const lent = db;
  return {
    url: lent.url,
    async release() {
      const sql = new SQL(lent.url, { max: 1, idleTimeout: 1 });
      try {
        const rows = (await sql`SELECT tablename FROM pg_tables WHERE schemaname = 'public'`) as {
          tablename: string;
        }[];
        if (rows.length > 0)
          await sql.unsafe(`TRUNCATE ${rows.map((r) => `"${r.tablename}"`).join(", ")} RESTART IDENTITY`);
      } finally {
        await sql.close();
      }
      free.push(lent);
    },
  };
}
