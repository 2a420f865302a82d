/**
 * The repository conformance suite (repositories.conformance.ts) on SQLite: a fresh in-memory
 * database per test.
 */
import { openSqliteStore } from "../../src/db/sqlite/store.ts";
import { repositoryConformance } from "./repositories.conformance.ts";

repositoryConformance("sqlite", async () => {
  const store = openSqliteStore(":memory:");
  return { store, dispose: () => store.close() };
});
