/**
 * @module db/open
 * The one place that picks the metadata database from the configuration: PostgreSQL
 * (`src/db/postgres/`) when `ESYNC_DATABASE_URL` is set (`postgres://…`, `postgresql://…`),
 * else the embedded SQLite file at `ESYNC_DB_PATH`. Nothing else branches on the dialect.
 */
import type { Config } from "../config/config.ts";
import type { Logger } from "../util/log.ts";
import { openPgMetadataStore } from "./postgres/store.ts";
import { openSqliteStore } from "./sqlite/store.ts";
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
