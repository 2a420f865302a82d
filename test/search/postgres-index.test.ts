/**
 * The PostgreSQL search index runs the `SearchIndex` conformance suite on a fresh database of the
 * test server (test/support/pg-server.ts), written through the PostgreSQL files repository.
 */
import { afterAll } from "bun:test";
import { openPostgres } from "../../src/db/postgres/client.ts";
import { PgFilesRepository } from "../../src/db/postgres/files.ts";
import { PgSearchIndex } from "../../src/search/postgres-index.ts";
import { PG_SETUP_TIMEOUT_MS, pgTestDatabase } from "../support/pg-server.ts";
import { type FileWrite, type IndexUnderTest, searchIndexConformance } from "./search-index.conformance.ts";

const database = await pgTestDatabase("search_index");
const db = await openPostgres(database.url);
afterAll(async () => {
  await db.$client.close();
  await database.drop();
}, PG_SETUP_TIMEOUT_MS);

const sut: IndexUnderTest = {
  index: new PgSearchIndex(db),
  write: async (writes: FileWrite[]) => {
    await db.transaction(async (tx) => {
      const files = new PgFilesRepository(tx);
      for (const w of writes) {
        if (w.kind === "upsert") await files.upsert(w.row);
        else await files.remove(w.owner, w.folderHash, w.pathHash);
      }
    });
  },
};

searchIndexConformance("postgres", () => sut, { numRuns: 100, timeoutMs: 120_000 });
