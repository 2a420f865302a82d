/**
 * openDb: migrations are applied at start-up, and a start that has migrations to apply says so
 * in the log (before and after, with the time taken), while a start with nothing to apply logs
 * nothing.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MIGRATIONS_DIR, openDb } from "../../src/db/client.ts";
import type { LogFields, Logger } from "../../src/util/log.ts";

const dir = mkdtempSync(join(tmpdir(), "esync-opendb-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function capture(): { log: Logger; events: [string, LogFields | undefined][] } {
  const events: [string, LogFields | undefined][] = [];
  const push = (e: string, f?: LogFields) => void events.push([e, f]);
  return { log: { debug: push, info: push, warn: push, error: push }, events };
}

test("a new database gets every migration, logged as db.migrating then db.migrated; a second open logs nothing", () => {
  const entries = (
    JSON.parse(readFileSync(join(MIGRATIONS_DIR, "meta", "_journal.json"), "utf8")) as { entries: unknown[] }
  ).entries.length;
  const path = join(dir, "meta.sqlite");
  const first = capture();
  openDb(path, first.log).$client.close();
  expect(first.events.map(([e]) => e)).toEqual(["db.migrating", "db.migrated"]);
  expect(first.events[0]![1]).toMatchObject({ path, pending: entries });
  expect(first.events[1]![1]).toMatchObject({ path, pending: entries, ms: expect.any(Number) });

  const second = capture();
  const db = openDb(path, second.log);
  expect(second.events).toEqual([]);
  const applied = db.$client.query<{ n: number }, []>("SELECT count(*) AS n FROM __drizzle_migrations").get();
  expect(applied?.n).toBe(entries);
  db.$client.close();
});
