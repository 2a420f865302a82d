/**
 * @module server/db/open
 * The one place that picks the metadata database from the configuration: PostgreSQL
 * (`src/db/postgres/`) when `ESYNC_DATABASE_URL` is set (`postgres://…`, `postgresql://…`),
 * else the embedded SQLite file at `ESYNC_DB_PATH`. Nothing else branches on the dialect.
 */
import type { Config } from "../config/config.ts";
import type { SearchIndex } from "../search/search-index.ts";
import type { Logger } from "../util/log.ts";
import { withoutCredentials } from "./postgres/client.ts";
import { PgSearchIndex } from "./postgres/search/index.ts";
import { openPgMetadataStore, pgDb } from "./postgres/store.ts";
import { SqliteSearchIndex } from "./sqlite/search/index.ts";
import { openSqliteStore, SqliteMetadataStore } from "./sqlite/store.ts";
import type { MetadataStore } from "./store.ts";

/**
 * Opens the configured metadata store, applying pending migrations.
 * @throws when the database cannot be opened or a migration fails.
 */
export async function openMetadataStore(config: Config, log?: Logger): Promise<MetadataStore> {
  if (config.databaseUrl !== null) {
    return openPgMetadataStore(config.databaseUrl, log, { poolSize: config.databasePoolSize });
  }
  return openSqliteStore(config.dbPath, log);
}

/**
 * Where the configured metadata lives, for logs: the SQLite file, or the PostgreSQL URL without
 * its credentials (`postgres://host:port/database`).
 */
export function describeDatabase(config: Config): string {
  return config.databaseUrl === null ? config.dbPath : withoutCredentials(config.databaseUrl);
}

/**
 * The search index of `store`'s database: the tuned SQLite index (reading through the store's
 * gate) or the PostgreSQL one.
 * @throws Error for a store of neither kind.
 */
export function searchIndexOf(store: MetadataStore): SearchIndex {
  if (store instanceof SqliteMetadataStore)
    return new SqliteSearchIndex(store.db, { read: (fn) => store.read(fn) });
  const pg = pgDb(store);
  if (pg) return new PgSearchIndex(pg);
  throw new Error(`no search index for a ${store.dialect} metadata store`);
}
