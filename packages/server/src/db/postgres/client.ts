/**
 * @module server/db/postgres/client
 * Opens the PostgreSQL metadata database through Bun's built-in driver (`Bun.SQL`, chosen by
 * reasons: docs/design.md#database-driver) and Drizzle's `bun-sql` dialect, and applies the migrations in
 * `drizzle/postgres/`. Several nodes may start at once: each takes a session-level advisory lock
 * before migrating, so exactly one applies what is pending and the others wait for it, then find
 * nothing to do.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { SQL } from "bun";
import { type BunSQLDatabase, drizzle } from "drizzle-orm/bun-sql";
import { migrate } from "drizzle-orm/bun-sql/migrator";
import type { Logger } from "../../util/log.ts";
import * as schema from "./schema.ts";

/** The Drizzle handle of the PostgreSQL metadata database (its pool is `$client`). */
export type PgDb = BunSQLDatabase<typeof schema> & { $client: SQL };

/** Folder holding the generated PostgreSQL migrations (repository root `drizzle/postgres/`). */
export const PG_MIGRATIONS_DIR = join(import.meta.dir, "..", "..", "..", "drizzle", "postgres");

/**
 * Key of the advisory lock held while migrating (`pg_advisory_lock(bigint)`): the first 8 bytes
 * of "esync:m" as a number, so that it does not collide with other applications' locks.
 */
export const MIGRATION_LOCK_KEY = 0x6573796e633a6dn;

/** Options of `openPostgres`. */
export interface PgOptions {
  /** Most connections the pool opens (default 10). */
  poolSize?: number;
}

/** Migrations of `drizzle/postgres/meta/_journal.json`. */
function journalLength(): number {
  const journal = JSON.parse(readFileSync(join(PG_MIGRATIONS_DIR, "meta", "_journal.json"), "utf8")) as {
    entries: unknown[];
  };
  return journal.entries.length;
}

/** Migrations already applied (rows of drizzle's `drizzle.__drizzle_migrations`; 0 before the first). */
async function appliedCount(conn: SQL): Promise<number> {
  const [t] = await conn`SELECT to_regclass('drizzle.__drizzle_migrations') IS NOT NULL AS present`;
  if (!t?.present) return 0;
  const [r] = await conn`SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations`;
  return Number(r?.n ?? 0);
}

/**
 * Applies the pending migrations on one connection of `client`, holding the migration advisory
 * lock for the whole time (another node migrating makes this wait). Logs `db.migrating` and
 * `db.migrated` (with the time taken) when anything was pending.
 * @returns how many migrations this call applied (0 when another node had applied them).
 */
export async function migratePostgres(client: SQL, log?: Logger): Promise<number> {
  const conn = await client.reserve();
  try {
    const waited = performance.now();
    await conn`SELECT pg_advisory_lock(${MIGRATION_LOCK_KEY})`;
    const waitMs = Math.round(performance.now() - waited);
    if (waitMs > 1000) log?.info("db.migration_wait", { ms: waitMs });
    try {
      const pending = journalLength() - (await appliedCount(conn));
      if (pending <= 0) return 0;
      const t0 = performance.now();
      log?.info("db.migrating", { dialect: "postgres", pending });
      // The migrator runs on the reserved connection, the one holding the lock.
      await migrate(drizzle({ client: conn as unknown as SQL }), { migrationsFolder: PG_MIGRATIONS_DIR });
      log?.info("db.migrated", { dialect: "postgres", pending, ms: Math.round(performance.now() - t0) });
      return pending;
    } finally {
      await conn`SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY})`;
    }
  } finally {
    conn.release();
  }
}

/**
 * Connects to the PostgreSQL database at `url` (`postgres://user:password@host:port/db`), migrates
 * it (see `migratePostgres`; `log` receives its events) and returns the Drizzle handle.
 * @throws Error naming the server (without credentials) and the driver's or the migration's
 *   message when the server cannot be reached, refuses the credentials or a migration fails (the
 *   pool is closed then).
 */
export async function openPostgres(url: string, log?: Logger, opts: PgOptions = {}): Promise<PgDb> {
  const db = connectPostgres(url, opts);
  try {
    await migratePostgres(db.$client, log);
  } catch (e) {
    await db.$client.close();
    const why = e instanceof Error ? e.message : String(e);
    throw new Error(`PostgreSQL at ${withoutCredentials(url)}: ${why}`, { cause: e });
  }
  return db;
}

/** `url` without its user and password (`postgres://host:port/database`), for messages and logs. */
export function withoutCredentials(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return "(URL not shown)";
  }
}

/**
 * The Drizzle handle on a pool for `url`, without migrating (for a database known to be
 * migrated, such as a test's). Connects lazily: nothing is sent before the first query.
 */
export function connectPostgres(url: string, opts: PgOptions = {}): PgDb {
  const client = new SQL(url, { max: opts.poolSize ?? 10, idleTimeout: 60, connectionTimeout: 30 });
  return drizzle({ client, schema }) as PgDb;
}
