/**
 * @module server/db/client
 * Opens the SQLite metadata database (WAL, foreign keys, busy timeout) and applies the
 * migrations in `drizzle/sqlite/` with Drizzle's bun:sqlite migrator.
 */
import { Database } from "bun:sqlite";
import { mkdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { type BunSQLiteDatabase, drizzle } from "drizzle-orm/bun-sqlite";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import type { Logger } from "../util/log.ts";
import * as schema from "./sqlite/schema.ts";
import { backfillNfcSearchNames } from "./sqlite/search/nfc-backfill.ts";

/** The Drizzle database handle used by every repository. */
export type Db = BunSQLiteDatabase<typeof schema> & { $client: Database };

/** Folder holding the generated SQLite migrations (repository root `drizzle/sqlite/`). */
export const MIGRATIONS_DIR = join(import.meta.dir, "..", "..", "drizzle", "sqlite");

/** Migrations in `drizzle/sqlite/` not yet applied to `sqlite` (by count: the migrator applies them in order). */
function pendingMigrations(sqlite: Database): number {
  const journal = JSON.parse(readFileSync(join(MIGRATIONS_DIR, "meta", "_journal.json"), "utf8")) as {
    entries: unknown[];
  };
  const table = sqlite
    .query<{ n: number }, []>(
      "SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'",
    )
    .get();
  if (!table?.n) return journal.entries.length;
  const done = sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM __drizzle_migrations").get();
  return journal.entries.length - (done?.n ?? 0);
}

/**
 * Opens (creating if needed) the database at `path` (`:memory:` for tests), migrates it and
 * finishes data backfills the migrations queued (`src/db/sqlite/search/nfc-backfill.ts`).
 * When `log` is given and migrations are pending, logs `db.migrating` before and `db.migrated`
 * (with the time taken) after: on a large existing database an index migration takes a while
 * (0005 and 0006, the trigram counts and the wider name index, took 36 s on a million files).
 * @throws when the file cannot be opened or a migration fails.
 */
export function openDb(path: string, log?: Logger): Db {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const sqlite = new Database(path, { create: true, strict: true });
  sqlite.exec("PRAGMA journal_mode = WAL");
  sqlite.exec("PRAGMA synchronous = NORMAL");
  sqlite.exec("PRAGMA busy_timeout = 5000");
  sqlite.exec("PRAGMA foreign_keys = ON");
  sqlite.exec("PRAGMA temp_store = MEMORY");
  sqlite.exec("PRAGMA cache_size = -65536");
  const db = drizzle(sqlite, { schema }) as Db;
  const pending = log ? pendingMigrations(sqlite) : 0;
  const t0 = performance.now();
  if (pending > 0) log?.info("db.migrating", { path, pending });
  migrate(db, { migrationsFolder: MIGRATIONS_DIR });
  const renamed = backfillNfcSearchNames(sqlite);
  if (renamed > 0) log?.info("search.nfc_backfilled", { files: renamed });
  if (pending > 0) log?.info("db.migrated", { path, pending, ms: Math.round(performance.now() - t0) });
  return db;
}

/**
 * A second, read-only connection to the (already opened and migrated) database file at `path`,
 * for reads while the first connection holds a write transaction: in WAL mode it sees the last
 * committed state and never waits for the writer. Any write on it fails at once with
 * `SQLITE_READONLY` (no busy wait). See `src/db/sqlite/store.ts`.
 * @throws when the file cannot be opened.
 */
export function openReader(path: string): Db {
  const sqlite = new Database(path, { readonly: true, strict: true });
  sqlite.exec("PRAGMA busy_timeout = 5000");
  sqlite.exec("PRAGMA temp_store = MEMORY");
  sqlite.exec("PRAGMA cache_size = -65536");
  return drizzle(sqlite, { schema }) as Db;
}

/**
 * Rows changed by a Drizzle `.run()` on bun:sqlite. Drizzle types the result as `void`, but
 * bun:sqlite returns `{changes, lastInsertRowid}`.
 */
export function changes(result: unknown): number {
  return (result as { changes: number }).changes;
}
