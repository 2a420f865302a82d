/**
 * @module db/open
 * The one place that picks the metadata database from the configuration: today the embedded
 * SQLite file at `ESYNC_DB_PATH`. `ESYNC_DATABASE_URL` (`postgres://…`, `postgresql://…`) will
 * select PostgreSQL here (`src/db/postgres/`, issue 11); nothing else branches on the dialect.
 */
import type { Config } from "../config/config.ts";
import type { Logger } from "../util/log.ts";
import { openSqliteStore } from "./sqlite/store.ts";
import type { MetadataStore } from "./store.ts";

/**
 * Opens the configured metadata store, applying pending migrations.
 * @throws when the database cannot be opened or a migration fails.
 */
export async function openMetadataStore(config: Config, log?: Logger): Promise<MetadataStore> {
  return openSqliteStore(config.dbPath, log);
}
