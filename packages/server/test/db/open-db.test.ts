/**
 * openDb: migrations are applied at start-up, and a start that has migrations to apply says so
 * in the log (before and after, with the time taken), while a start with nothing to apply logs
 * nothing; a database of an older version (migrations tracked by drizzle, whatever folder they
 * were read from) gets only the newer ones.
 */

import { Database } from "bun:sqlite";
import { afterAll, expect, test } from "bun:test";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import { MIGRATIONS_DIR, openDb } from "../../src/db/client.ts";
import { SqliteMetadataStore } from "../../src/db/sqlite/store.ts";
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

test("a database migrated by a version without leases (through 0014) gets only the migrations from 0015 on, keeps its rows, and a session it left finalizing is released as one whose lease ran out", async () => {
  // The migrations as that version shipped them: the same files, journal cut before 0015.
  const old = join(dir, "old-migrations");
  cpSync(MIGRATIONS_DIR, old, { recursive: true });
  const journalPath = join(old, "meta", "_journal.json");
  const journal = JSON.parse(readFileSync(journalPath, "utf8")) as { entries: { tag: string }[] };
  const cut = journal.entries.findIndex((e) => e.tag === "0015_leases");
  expect(cut).toBe(15);
  writeFileSync(journalPath, JSON.stringify({ ...journal, entries: journal.entries.slice(0, cut) }));
  const path = join(dir, "old.sqlite");
  const sqlite = new Database(path, { create: true });
  migrate(drizzle(sqlite), { migrationsFolder: old });
  sqlite.exec(
    "INSERT INTO upload_sessions (session_id, owner, folder_hash, path_hash, manifest, ciphertext_hash, ciphertext_size, chunk_size, chunk_count, blob_id, state, created_at, expires_at) VALUES ('s1', 'o', 'f', x'00', '{}', 'h', 1, 1, 1, 'b', 'finalizing', 1, 9999999999)",
  );
  sqlite.close();

  const opened = capture();
  const store = new SqliteMetadataStore(openDb(path, opened.log), path);
  expect(opened.events[0]).toEqual(["db.migrating", { path, pending: journal.entries.length - cut }]);
  expect(await store.repos.sessions.get("s1")).toMatchObject({ state: "finalizing", finalizingUntil: null });
  expect(await store.repos.sessions.releaseExpiredFinalizing(100, 200)).toBe(1);
  expect(await store.repos.sessions.get("s1")).toMatchObject({ state: "receiving", expiresAt: 200 });
  await store.close();
});
