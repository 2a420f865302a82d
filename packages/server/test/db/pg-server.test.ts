/**
 * The PostgreSQL test helper (`test/support/pg-server.ts`) hands out fresh databases on a real
 * server where `pg_trgm` can be created, and `drop()` removes them.
 */
import { expect, test } from "bun:test";
import { SQL } from "bun";
import { PG_SETUP_TIMEOUT_MS, pgTestDatabase, pgTestServer } from "../support/pg-server.ts";

test(
  "gives each caller an empty database of its own where pg_trgm can be created, and drop removes it",
  async () => {
    const [a, b] = await Promise.all([pgTestDatabase("helper"), pgTestDatabase("helper")]);
    expect(a.name).not.toBe(b.name);
    const sql = new SQL(a.url, { max: 1 });
    try {
      const tables = await sql`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`;
      expect(tables[0].n).toBe(0);
      await sql`CREATE EXTENSION IF NOT EXISTS pg_trgm`;
      const [row] = await sql`SELECT similarity('holiday', 'holidays') > 0.5 AS close`;
      expect(row.close).toBe(true);
    } finally {
      await sql.close();
    }
    await Promise.all([a.drop(), b.drop()]);
    const admin = new SQL(await pgTestServer(), { max: 1 });
    try {
      const left = await admin`SELECT datname FROM pg_database WHERE datname IN (${a.name}, ${b.name})`;
      expect(left.length).toBe(0);
    } finally {
      await admin.close();
    }
  },
  PG_SETUP_TIMEOUT_MS,
);
