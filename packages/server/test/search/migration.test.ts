/**
 * The search migrations on a database that already holds files: drizzle/sqlite/0002_search_index.sql
 * (and 0003.. after it, up to 0008_search_partitions.sql, which renumbers the entries into id
 * partitions and rebuilds the FTS index) index the existing rows (backfill) exactly as the
 * triggers index new ones, and search then answers as the model does.
 */
import { Database } from "bun:sqlite";
import { afterAll, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { type Db, MIGRATIONS_DIR } from "../../src/db/client.ts";
import * as schema from "../../src/db/sqlite/schema.ts";
import { SqliteSearchIndex } from "../../src/db/sqlite/search/index.ts";
import { parseSearchQuery } from "../../src/search/search.query.ts";
import { expectIndexConsistent, type FileSpec, fileRow, filesUpserter, hex, modelSearch } from "./support.ts";

const sqlite = new Database(":memory:", { strict: true });
afterAll(() => sqlite.close());

/** Runs the statements of one migration file. */
function apply(file: string): void {
  for (const stmt of readFileSync(join(MIGRATIONS_DIR, file), "utf8").split("--> statement-breakpoint")) {
    if (stmt.trim()) sqlite.run(stmt);
  }
}

test("the migration indexes files that existed before it, and later writes keep the index exact", async () => {
  const files = readdirSync(MIGRATIONS_DIR)
    .filter((f) => f.endsWith(".sql"))
    .sort();
  const search = files.find((f) => f.endsWith("_search_index.sql"))!;
  for (const f of files.slice(0, files.indexOf(search))) apply(f);
  const db = drizzle(sqlite, { schema }) as Db;
  const upsert = filesUpserter(db);
  const specs = (): FileSpec[] =>
    Array.from({ length: 120 }, (_, i) => ({
      path: `${["a", "b/c", "Ä"][i % 3]}/${["IMG_", "report ", "Übersicht-"][i % 3]}${i}.${["jpg", "pdf", "TXT"][i % 3]}`,
      size: (i * 7919) % 5000,
      created: 1_700_000_000 + (i % 9) * 5000,
      ...(i % 17 === 0 ? { fileName: null } : {}),
      ...(i % 29 === 0 ? { fileName: null, relativePath: null } : {}),
    }));
  const before = ["owner-one", "owner-two"].flatMap((o) => specs().map((s) => fileRow(o, s)));
  for (const r of before) upsert(r);

  // The search migration and every later one (0003 adds the size × date grid, filled from the
  // entries 0002 has just written).
  for (const f of files.slice(files.indexOf(search))) apply(f);
  expectIndexConsistent(db);

  const index = new SqliteSearchIndex(db);
  for (const qs of [
    "",
    "q=img",
    "q=ü&sort_by=file_name",
    "file_type=pdf&size_min=1000",
    "date_from=1700010000&offset=5&limit=7",
    "size_min=100&size_max=3000&date_from=1700004000",
  ]) {
    const q = parseSearchQuery(new URLSearchParams(qs));
    const got = await index.search("owner-two", q);
    const want = modelSearch(
      before.filter((r) => r.owner === "owner-two"),
      q,
    );
    expect({ qs, total: got.total, page: got.hits.map((f) => hex(f.pathHash)) }).toEqual({
      qs,
      ...want,
    });
  }

  // New writes after the backfill continue each owner's id sequence.
  const after = specs().map((s) => fileRow("owner-one", { ...s, path: `new/${s.path}` }));
  for (const r of after) upsert(r);
  sqlite.run("DELETE FROM files WHERE owner = 'owner-two' AND size_bytes < 2500");
  expectIndexConsistent(db);
});
