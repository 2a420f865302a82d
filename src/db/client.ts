/**
 * @module db/client
 * Opens the SQLite metadata database (WAL, foreign keys, busy timeout) and applies the
 * migrations in `drizzle/` with Drizzle's bun:sqlite migrator.
 */
import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { type BunSQLiteDatabase, drizzle } from "drizzle-orm/bun-sqlite";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import * as schema from "./schema.ts";

/** The Drizzle database handle used by every repository. */
export type Db = BunSQLiteDatabase<typeof schema> & { $client: Database };

/** Folder holding the generated SQL migrations (repository root `drizzle/`). */
export const MIGRATIONS_DIR = join(import.meta.dir, "..", "..", "drizzle");

/**
 * Opens (creating if needed) the database at `path` (`:memory:` for tests) and migrates it.
 * @throws when the file cannot be opened or a migration fails.
 */
export function openDb(path: string): Db {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const sqlite = new Database(path, { create: true, strict: true });
  sqlite.exec("PRAGMA journal_mode = WAL");
  sqlite.exec("PRAGMA synchronous = NORMAL");
  sqlite.exec("PRAGMA busy_timeout = 5000");
  sqlite.exec("PRAGMA foreign_keys = ON");
  sqlite.exec("PRAGMA temp_store = MEMORY");
  sqlite.exec("PRAGMA cache_size = -65536");
  const db = drizzle(sqlite, { schema }) as Db;
  migrate(db, { migrationsFolder: MIGRATIONS_DIR });
  return db;
}

/**
 * Rows changed by a Drizzle `.run()` on bun:sqlite. Drizzle types the result as `void`, but
 * bun:sqlite returns `{changes, lastInsertRowid}`.
 */
export function changes(result: unknown): number {
  return (result as { changes: number }).changes;
}
