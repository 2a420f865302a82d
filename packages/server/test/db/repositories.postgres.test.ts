/**
 * The repository conformance suite (repositories.conformance.ts) on PostgreSQL: one database
 * for the file, every table emptied before each test.
 */
import { afterAll } from "bun:test";
import { sql } from "drizzle-orm";
import { openPgMetadataStore, type PgMetadataStore } from "../../src/db/postgres/store.ts";
import { PG_SETUP_TIMEOUT_MS, type PgTestDatabase, pgTestDatabase } from "../support/pg-server.ts";
import { repositoryConformance } from "./repositories.conformance.ts";

let shared: { database: PgTestDatabase; store: PgMetadataStore } | undefined;
afterAll(async () => {
  await shared?.store.close();
  await shared?.database.drop();
});

repositoryConformance(
  "postgres",
  async () => {
    if (!shared) {
      const database = await pgTestDatabase("conformance");
      shared = { database, store: await openPgMetadataStore(database.url) };
    }
    await shared.store.db.execute(
      sql`TRUNCATE files, folders, upload_sessions, session_chunks, blob_deletions, api_tokens, folder_entries, account_usage, quota_overrides, usage_buckets RESTART IDENTITY`,
    );
    return { store: shared.store, dispose: async () => {} };
  },
  PG_SETUP_TIMEOUT_MS,
);
