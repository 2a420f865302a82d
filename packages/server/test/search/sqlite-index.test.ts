/**
 * The SQLite search index runs the `SearchIndex` conformance suite under the production planner
 * thresholds, under thresholds that force every other plan, and degraded (every answer from the
 * exact plan over `files`); its derived tables are then checked against `files`.
 */

import type { SQLQueryBindings } from "bun:sqlite";
import { afterAll } from "bun:test";
import { SqliteSearchIndex } from "../../src/db/sqlite/search/index.ts";
import type { SearchTuning } from "../../src/db/sqlite/search/planner.ts";
import { makeTestApp } from "../support/app.ts";
import { type FileWrite, type IndexUnderTest, searchIndexConformance } from "./search-index.conformance.ts";
import { expectIndexConsistent, filesUpserter } from "./support.ts";

const t = makeTestApp();
afterAll(() => t.close());
const db = t.db;
const upsert = filesUpserter(db);
const del = db.$client.query("DELETE FROM files WHERE owner = ? AND folder_hash = ? AND path_hash = ?");

function sqliteUnderTest(tuning: Partial<SearchTuning>, degraded = false): IndexUnderTest {
  const index = new SqliteSearchIndex(db, { tuning });
  const setDegraded = (on: boolean) =>
    on
      ? db.$client.run(
          "INSERT OR REPLACE INTO search_index_state (id, reason, since) VALUES (1, 'test: degraded', 0)",
        )
      : db.$client.run("DELETE FROM search_index_state");
  return {
    index: degraded
      ? {
          kind: index.kind,
          health: () => index.health(),
          rebuild: (p) => index.rebuild(p),
          // Degraded only while this variant queries, so the other variants keep their fast plans.
          search: async (...a) => {
            setDegraded(true);
            try {
              return await index.search(...a);
            } finally {
              setDegraded(false);
            }
          },
          directory: async (...a) => {
            setDegraded(true);
            try {
              return await index.directory(...a);
            } finally {
              setDegraded(false);
            }
          },
          subdirectories: async (...a) => {
            setDegraded(true);
            try {
              return await index.subdirectories(...a);
            } finally {
              setDegraded(false);
            }
          },
        }
      : index,
    write: async (writes: FileWrite[]) => {
      db.$client.transaction(() => {
        for (const w of writes) {
          if (w.kind === "upsert") upsert(w.row);
          else del.run(w.owner, w.folderHash, w.pathHash as SQLQueryBindings);
        }
      })();
    },
    checkConsistent: async () => expectIndexConsistent(db),
  };
}

const VARIANTS: [string, Partial<SearchTuning>, boolean][] = [
  ["sqlite, production thresholds", {}, false],
  [
    "sqlite, every term common, always seek, always the grid and the id partitions",
    { rareHits: 0, seekMinOffset: 0, gridMinRows: 0, partitions: "always" },
    false,
  ],
  [
    "sqlite, every term rare, always seek, never the grid nor the id partitions",
    { rareHits: 1_000_000, seekMinOffset: 0, gridMinRows: 1e9, partitions: "never" },
    false,
  ],
  ["sqlite, degraded (exact plan over files)", {}, true],
];

for (const [name, tuning, degraded] of VARIANTS) {
  const sut = sqliteUnderTest(tuning, degraded);
  searchIndexConformance(name, () => sut);
}
