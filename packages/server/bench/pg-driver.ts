/**
 * PostgreSQL driver bench (issue 11): Bun's built-in `Bun.SQL` through `drizzle-orm/bun-sql`
 * against `postgres` (postgres.js) through `drizzle-orm/postgres-js`, both through drizzle as
 * the repositories use them. Per driver and concurrency (1 and 8 callers on a pool of 8):
 * single-row insert, point select by primary key, and a 3-statement transaction (insert,
 * update, select), `--iterations` operations of each. Before timing, it checks that each driver
 * commits and rolls back drizzle transactions, claims queue rows exactly once with
 * `FOR UPDATE SKIP LOCKED` under 4 concurrent claimers, round-trips bigint and bytea, and
 * reports a unique violation with SQLSTATE 23505.
 *
 *   bun bench/pg-driver.ts [--iterations 1000] [--database-url postgres://…] [--out bench/results/pg-driver.json]
 *
 * Without `--database-url` it uses a fresh database on the test cluster
 * (`test/support/pg-server.ts`). Prints µs per operation (median of 3 rounds) and ops/s, and
 * writes JSON. Baseline: the other driver, same run.
 */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { SQL } from "bun";
import { eq, sql } from "drizzle-orm";
import { drizzle as drizzleBun } from "drizzle-orm/bun-sql";
import { bigint, bigserial, customType, integer, pgTable, text } from "drizzle-orm/pg-core";
import { drizzle as drizzlePostgresJs } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { pgTestDatabase } from "../test/support/pg-server.ts";

const { values } = parseArgs({
  options: { iterations: { type: "string" }, "database-url": { type: "string" }, out: { type: "string" } },
});
const iterations = Number(values.iterations ?? 1000);
const out = values.out ?? "bench/results/pg-driver.json";
const POOL = 8;

const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({ dataType: () => "bytea" });
const items = pgTable("bench_items", {
  id: bigserial("id", { mode: "number" }).primaryKey(),
  owner: text("owner").notNull(),
  size: bigint("size", { mode: "number" }).notNull(),
  hash: bytea("hash").notNull(),
  n: integer("n").notNull().default(0),
});
const queue = pgTable("bench_queue", {
  id: bigserial("id", { mode: "number" }).primaryKey(),
  claimedBy: integer("claimed_by"),
});

// biome-ignore lint/suspicious/noExplicitAny: both drizzle flavours expose the same query builder
type AnyPgDb = any;

interface Driver {
  name: string;
  db: AnyPgDb;
  close(): Promise<void>;
}

const dbHandle = values["database-url"] ? null : await pgTestDatabase("bench_driver");
const url = values["database-url"] ?? dbHandle?.url ?? "";

function open(name: string): Driver {
  if (name === "bun-sql") {
    const client = new SQL(url, { max: POOL });
    return { name, db: drizzleBun({ client }), close: () => client.close() };
  }
  const client = postgres(url, { max: POOL, onnotice: () => {} });
  return { name, db: drizzlePostgresJs({ client }), close: () => client.end() };
}

async function setup(): Promise<void> {
  const admin = new SQL(url, { max: 1 });
  await admin.unsafe(`DROP TABLE IF EXISTS bench_items, bench_queue;
    CREATE TABLE bench_items (id bigserial PRIMARY KEY, owner text NOT NULL, size bigint NOT NULL, hash bytea NOT NULL, n integer NOT NULL DEFAULT 0);
    CREATE UNIQUE INDEX bench_items_owner_hash ON bench_items (owner, hash);
    CREATE TABLE bench_queue (id bigserial PRIMARY KEY, claimed_by integer);`);
  await admin.close();
}

/** The SQLSTATE of a driver error, wherever drizzle and the driver put it. */
function sqlState(e: unknown): string | undefined {
  for (
    let x = e as { code?: unknown; errno?: unknown; cause?: unknown } | undefined;
    x;
    x = x.cause as typeof x
  ) {
    if (typeof x.code === "string" && /^[0-9A-Z]{5}$/.test(x.code)) return x.code;
    if (typeof x.errno === "string" && /^[0-9A-Z]{5}$/.test(x.errno)) return x.errno;
  }
  return undefined;
}

/** Correctness checks; returns failures (empty = all good). */
async function check(d: Driver): Promise<string[]> {
  const bad: string[] = [];
  const hash = new Uint8Array([0, 1, 2, 255]);
  const big = 2 ** 40 + 7;
  const [row] = await d.db
    .insert(items)
    .values({ owner: `check-${d.name}`, size: big, hash })
    .returning();
  const [back] = await d.db.select().from(items).where(eq(items.id, row.id));
  if (back.size !== big) bad.push(`bigint came back as ${typeof back.size} ${back.size}`);
  if (!(back.hash instanceof Uint8Array) || Buffer.compare(Buffer.from(back.hash), Buffer.from(hash)) !== 0)
    bad.push(`bytea came back as ${back.hash?.constructor?.name}`);
  try {
    await d.db.insert(items).values({ owner: `check-${d.name}`, size: 1, hash });
    bad.push("duplicate insert succeeded");
  } catch (e) {
    if (sqlState(e) !== "23505") bad.push(`unique violation reported as ${sqlState(e)} (${e})`);
  }
  try {
    await d.db.transaction(async (tx: AnyPgDb) => {
      await tx.insert(items).values({ owner: `rolled-back-${d.name}`, size: 1, hash });
      throw new Error("rollback");
    });
  } catch {}
  const rolled = await d.db
    .select()
    .from(items)
    .where(eq(items.owner, `rolled-back-${d.name}`));
  if (rolled.length !== 0) bad.push("transaction did not roll back");
  await d.db.transaction(async (tx: AnyPgDb) => {
    await tx.insert(items).values({ owner: `committed-${d.name}`, size: 1, hash });
  });
  const committed = await d.db
    .select()
    .from(items)
    .where(eq(items.owner, `committed-${d.name}`));
  if (committed.length !== 1) bad.push("transaction did not commit");

  // SKIP LOCKED: 4 claimers, each transaction holds its rows a little before committing.
  await d.db.execute(sql`TRUNCATE bench_queue`);
  await d.db.insert(queue).values(Array.from({ length: 200 }, () => ({})));
  const claimed: number[] = [];
  await Promise.all(
    [1, 2, 3, 4].map(async (worker) => {
      for (;;) {
        const ids: number[] = await d.db.transaction(async (tx: AnyPgDb) => {
          const rows = await tx.execute(
            sql`UPDATE bench_queue SET claimed_by = ${worker} WHERE id IN (SELECT id FROM bench_queue WHERE claimed_by IS NULL ORDER BY id LIMIT 7 FOR UPDATE SKIP LOCKED) RETURNING id`,
          );
          await Bun.sleep(2);
          return [...rows].map((r: { id: unknown }) => Number(r.id));
        });
        if (ids.length === 0) return;
        claimed.push(...ids);
      }
    }),
  );
  if (claimed.length !== 200 || new Set(claimed).size !== 200)
    bad.push(`SKIP LOCKED claimed ${claimed.length} rows, ${new Set(claimed).size} distinct (want 200)`);
  return bad;
}

type Op = (d: Driver, i: number) => Promise<unknown>;
const ops: Record<string, Op> = {
  insert: (d, i) =>
    d.db.insert(items).values({
      owner: `o${i % 97}`,
      size: i,
      hash: new Uint8Array(new Float64Array([Math.random()]).buffer),
    }),
  select: (d, i) =>
    d.db
      .select()
      .from(items)
      .where(eq(items.id, (i % 500) + 1)),
  transaction: (d, i) =>
    d.db.transaction(async (tx: AnyPgDb) => {
      const [r] = await tx
        .insert(items)
        .values({
          owner: `t${i % 97}`,
          size: i,
          hash: new Uint8Array(new Float64Array([Math.random()]).buffer),
        })
        .returning({ id: items.id });
      await tx
        .update(items)
        .set({ n: sql`${items.n} + 1` })
        .where(eq(items.id, r.id));
      return tx.select().from(items).where(eq(items.id, r.id));
    }),
};

/** µs per operation for `n` operations spread over `c` concurrent callers. */
async function time(d: Driver, op: Op, c: number, n: number): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: c }, async () => {
      while (next < n) await op(d, next++);
    }),
  );
  return ((performance.now() - t0) * 1000) / n;
}

await setup();
const names = ["bun-sql", "postgres-js"];
const checks: Record<string, string[]> = {};
for (const name of names) {
  const d = open(name);
  checks[name] = await check(d);
  await d.close();
}
// Rows for the point selects.
{
  const d = open("bun-sql");
  for (let i = 0; i < 500; i++) await ops.insert?.(d, i);
  await d.close();
}

const results: { driver: string; op: string; concurrency: number; usPerOp: number; opsPerSec: number }[] = [];
const drivers = names.map(open);
for (const c of [1, 8]) {
  for (const [opName, op] of Object.entries(ops)) {
    for (const d of drivers) await time(d, op, c, Math.min(100, iterations)); // warm the pool
    const rounds: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
    // Interleaved rounds so that the shared machine's load hits both drivers alike.
    for (let round = 0; round < 3; round++)
      for (const d of drivers) rounds[d.name]?.push(await time(d, op, c, iterations));
    for (const d of drivers) {
      const median = (rounds[d.name] ?? []).sort((a, b) => a - b)[1] ?? 0;
      results.push({
        driver: d.name,
        op: opName,
        concurrency: c,
        usPerOp: Math.round(median),
        opsPerSec: Math.round(1e6 / median),
      });
    }
  }
}
for (const d of drivers) await d.close();
await dbHandle?.drop();

console.log("driver        op           c   µs/op   ops/s");
for (const r of results)
  console.log(
    `${r.driver.padEnd(13)} ${r.op.padEnd(12)} ${String(r.concurrency).padStart(1)} ${String(r.usPerOp).padStart(7)} ${String(r.opsPerSec).padStart(7)}`,
  );
for (const [name, bad] of Object.entries(checks))
  console.log(`${name}: checks ${bad.length === 0 ? "passed" : `FAILED: ${bad.join("; ")}`}`);
writeFileSync(out, `${JSON.stringify({ iterations, pool: POOL, checks, results }, null, 2)}\n`);
console.log(`wrote ${out}`);
