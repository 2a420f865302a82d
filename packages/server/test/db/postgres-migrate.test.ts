/**
 * PostgreSQL start-up migration (issue 11): nodes starting at once on a fresh database migrate
 * it exactly once (advisory lock) and all end up on the full schema.
 */
import { afterAll, expect, test } from "bun:test";
import { is } from "drizzle-orm";
import { PgTable } from "drizzle-orm/pg-core";
import { openPostgres, type PgDb } from "../../src/db/postgres/client.ts";
import * as schema from "../../src/db/postgres/schema.ts";
import type { Logger } from "../../src/util/log.ts";
import { PG_SETUP_TIMEOUT_MS, type PgTestDatabase, pgTestDatabase } from "../support/pg-server.ts";

const databases: PgTestDatabase[] = [];
afterAll(async () => {
  for (const d of databases) await d.drop();
});

/** How many tables `src/db/postgres/schema.ts` declares. */
const schemaTables = Object.values(schema).filter((x) => is(x, PgTable)).length;

/** A logger that records event names. */
function recorder(events: string[]): Logger {
  const push = (event: string) => void events.push(event);
  return { debug: push, info: push, warn: push, error: push };
}

test(
  "three nodes opening a fresh database at once: exactly one migrates, all see every table",
  async () => {
    const db = await pgTestDatabase("migrate");
    databases.push(db);
    const events: string[][] = [[], [], []];
    const handles: PgDb[] = await Promise.all(
      events.map((e) => openPostgres(db.url, recorder(e), { poolSize: 2 })),
    );
    try {
      expect(events.map((e) => e.filter((x) => x === "db.migrating").length).sort()).toEqual([0, 0, 1]);
      expect(events.flat().filter((x) => x === "db.migrated").length).toBe(1);
      for (const h of handles) {
        const rows = await h.$client`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`;
        // Every table of src/db/postgres/schema.ts, the 6 counters and the 3 suffix tables of the
        // search index.
        expect(rows[0].n).toBe(schemaTables + 9);
        const [trgm] = await h.$client`SELECT count(*)::int AS n FROM pg_extension WHERE extname = 'pg_trgm'`;
        expect(trgm.n).toBe(1);
      }
      // A later start finds nothing pending.
      const again: string[] = [];
      const later = await openPostgres(db.url, recorder(again));
      await later.$client.close();
      expect(again).not.toContain("db.migrating");
    } finally {
      for (const h of handles) await h.$client.close();
    }
  },
  PG_SETUP_TIMEOUT_MS,
);

test("an unreachable server fails the start with a message naming it, without the password", async () => {
  const port = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const free = port.port;
  port.stop(true);
  const e = await openPostgres(`postgres://esync:s3cret@127.0.0.1:${free}/esync`).catch((x: unknown) => x);
  expect(e).toBeInstanceOf(Error);
  expect((e as Error).message).toStartWith(`PostgreSQL at postgres://127.0.0.1:${free}/esync: `);
  expect((e as Error).message).not.toContain("s3cret");
});
