/**
 * In-process test app: a metadata store, a blob store, a manual clock, and helpers to call
 * `app.handle` with JSON or raw bodies. Every answer is checked against its route's documented
 * statuses and response schemas (`checkAnswer`).
 *
 * The metadata store is the one `ESYNC_TEST_DATABASE` names (`testDatabase`): by default
 * in-memory SQLite (or the file `ESYNC_DB_PATH` names); with `postgres`, a migrated, empty
 * database of the test PostgreSQL server (`test/support/pg-server.ts`) lent to the app and
 * emptied by `close`. `ESYNC_DATABASE_URL` in `env` puts the app on that (migrated) PostgreSQL
 * database instead, which the caller owns (several apps on one database: "nodes"). A few are made ready when this module loads, so that `makeTestApp` stays
 * synchronous.
 *
 * The blob store is the one `ESYNC_TEST_STORAGE` names (`testStorage`): by default a disk store
 * in a temporary directory; with `s3`, the S3 store on the real test server
 * (`test/support/s3-server.ts`): one bucket per test process, created when this module loads,
 * and a fresh key prefix in it for every app, emptied by `close`.
 */
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { createApp } from "../../src/app.ts";
import { type Config, loadConfig, type S3Config } from "../../src/config/config.ts";
import type { Db } from "../../src/db/client.ts";
import { connectPostgres } from "../../src/db/postgres/client.ts";
import { PgMetadataStore, pgDb } from "../../src/db/postgres/store.ts";
import { openSqliteStore, sqliteDb } from "../../src/db/sqlite/store.ts";
import type { MetadataStore } from "../../src/db/store.ts";
import { Metrics } from "../../src/metrics/metrics.ts";
import type { BlobStore } from "../../src/storage/blob-store.ts";
import { createBlobStore } from "../../src/storage/index.ts";
import { createS3BlobStore } from "../../src/storage/s3.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { type Logger, silentLogger } from "../../src/util/log.ts";
import { Sweeper } from "../../src/workers/sweeper.ts";
import { checkAnswer } from "./contract.ts";
import { type PgLease, pgMigratedDatabase, testDatabase } from "./pg-server.ts";
import { s3Env, s3TestConfig, testStorage } from "./s3-server.ts";
import { tempDir } from "./tmp.ts";

export { testDatabase, testStorage };

/** Creates the bucket every S3 test app of this process shares (each under its own prefix). */
async function createSharedBucket(): Promise<S3Config> {
  const cfg = await s3TestConfig("http");
  const store = createS3BlobStore(cfg);
  try {
    await store.check();
  } finally {
    await store.close();
  }
  return cfg;
}

/** The shared bucket when the tests run on S3, else null. */
const s3Bucket: S3Config | null = testStorage === "s3" ? await createSharedBucket() : null;

/**
 * Migrated, empty PostgreSQL databases for the next test apps (`ESYNC_TEST_DATABASE=postgres`):
 * each app takes one and a replacement is prepared at once, so that a burst of `PG_READY` apps
 * made without awaiting in between never waits.
 */
const PG_READY = 3;
const pgReady: PgLease[] =
  testDatabase === "postgres"
    ? await Promise.all(Array.from({ length: PG_READY }, () => pgMigratedDatabase("http")))
    : [];
let pgRefillError: unknown = null;

/** Prepares one more PostgreSQL database for `pgReady` in the background. */
function refillPg(): void {
  pgMigratedDatabase("http").then(
    (lease) => void pgReady.push(lease),
    (e: unknown) => {
      pgRefillError = e;
    },
  );
}

/** A PostgreSQL store for a new test app, and the database lease to give back on close. */
function takePgStore(): { store: PgMetadataStore; lease: PgLease } {
  const lease = pgReady.shift();
  if (!lease) {
    throw new Error(
      `no PostgreSQL test database ready: more than ${PG_READY} test apps were made without awaiting in between` +
        (pgRefillError ? ` (preparing one failed: ${pgRefillError})` : ""),
    );
  }
  refillPg();
  return { store: new PgMetadataStore(connectPostgres(lease.url, { poolSize: 4 })), lease };
}

/** A parsed JSON answer body; tests assert its fields one by one, so it is deliberately untyped. */
// biome-ignore lint/suspicious/noExplicitAny: response bodies are asserted field by field
export type JsonBody = any;

/** A test app and its handles. */
export interface TestApp {
  /** The Elysia app (its route table). */
  app: ReturnType<typeof createApp>["app"];
  config: Config;
  clock: ManualClock;
  /** The metadata store the app runs on. */
  store: MetadataStore;
  /**
   * The SQLite handle of `store`, for tests that inspect or damage rows directly.
   * @throws Error on PostgreSQL (`ESYNC_TEST_DATABASE=postgres`), where there is none.
   */
  readonly db: Db;
  blobs: BlobStore;
  services: ReturnType<typeof createApp>["services"];
  /** The app's metrics (a fresh registry, without the process metrics). */
  metrics: Metrics;
  sweeper: Sweeper;
  /** The app's request handler (what the server passes every request to). */
  handle(request: Request): Promise<Response>;
  /** Sends a request to the app. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** Sends a request and parses the JSON answer. */
  json(path: string, init?: RequestInit): Promise<{ status: number; body: JsonBody; headers: Headers }>;
  /**
   * Closes the database and the store and removes the data directory (synchronously, before the
   * first await); on S3 then deletes the app's objects.
   */
  close(): Promise<void>;
}

/**
 * Builds a test app on the test storage (see the module comment); `env` overrides
 * configuration variables. `blobs` replaces the store, or wraps it when it is a function (e.g.
 * to inject faults); the app owns the store either way and closes it. `log` receives the app's
 * log events (default: none).
 */
export function makeTestApp(
  env: Record<string, string> = {},
  blobs?: BlobStore | ((store: BlobStore) => BlobStore),
  log: Logger = silentLogger,
): TestApp {
  const dir = tempDir("esync-test-");
  const storageVars = s3Bucket ? s3Env({ ...s3Bucket, prefix: `app-${randomBytes(6).toString("hex")}` }) : {};
  const config = loadConfig({
    ESYNC_DATA_DIR: dir,
    ESYNC_DB_PATH: ":memory:",
    ESYNC_OPENAPI: "0",
    ESYNC_DISK_FSYNC: "off",
    // Versions off unless a test turns them on (docs/versions.md): the other tests check the
    // deletion queue and the quota of replaced and deleted files as they work without them.
    ESYNC_VERSION_RETENTION_DAYS: "0",
    ...storageVars,
    ...env,
  });
  const pg =
    testDatabase === "postgres" && env.ESYNC_DB_PATH === undefined && config.databaseUrl === null
      ? takePgStore()
      : null;
  const metadata: MetadataStore =
    pg?.store ??
    (config.databaseUrl !== null
      ? new PgMetadataStore(connectPostgres(config.databaseUrl, { poolSize: 4 }))
      : openSqliteStore(config.dbPath));
  const store =
    typeof blobs === "function" ? blobs(createBlobStore(config)) : (blobs ?? createBlobStore(config));
  const clock = new ManualClock();
  const metrics = new Metrics({ defaultMetrics: false });
  const { app, services, handle } = createApp({
    config,
    store: metadata,
    blobs: store,
    clock,
    log,
    metrics,
  });
  const fetchFn = async (path: string, init?: RequestInit) => {
    const request = new Request(`http://127.0.0.1${path}`, init);
    const response = await handle(request);
    await checkAnswer(app, request, response);
    return response;
  };
  return {
    app,
    config,
    clock,
    store: metadata,
    get db(): Db {
      const db = sqliteDb(metadata);
      if (!db) throw new Error("this test reads the SQLite database directly; the app runs on PostgreSQL");
      return db;
    },
    blobs: store,
    services,
    metrics,
    sweeper: new Sweeper(services),
    handle,
    fetch: fetchFn,
    async json(path, init) {
      const r = await fetchFn(path, init);
      const text = await r.text();
      let body: JsonBody = text;
      try {
        body = JSON.parse(text);
      } catch {}
      return { status: r.status, body, headers: r.headers };
    },
    async close() {
      const closing = metadata.close();
      rmSync(dir, { recursive: true, force: true });
      await closing;
      await pg?.lease.release();
      try {
        if (store.kind === "s3") await store.delete(await store.list(""));
      } finally {
        await store.close();
      }
    },
  };
}

/** `init` for a JSON request. */
export function jsonInit(method: string, auth: string | null, body: unknown): RequestInit {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (auth) headers.authorization = auth;
  return { method, headers, body: typeof body === "string" ? body : JSON.stringify(body) };
}

/** Names of the `bigint` columns of each PostgreSQL table (read once per table). */
const pgBigintColumns = new Map<string, Promise<Set<string>>>();

/**
 * Every row of `table` in the app's metadata database, as plain objects keyed by column name,
 * whichever the dialect: SQLite rows in rowid order; PostgreSQL rows ordered by every column in
 * turn, with `bigint` columns as numbers and `bytea` as `Uint8Array`, as SQLite gives them.
 * For tests that inspect rows directly (snapshots before and after a refused request).
 */
export async function tableRows(t: TestApp, table: string): Promise<Record<string, unknown>[]> {
  const sqlite = sqliteDb(t.store);
  if (sqlite)
    return sqlite.$client.query(`SELECT * FROM "${table}" ORDER BY rowid`).all() as Record<string, unknown>[];
  const pg = pgDb(t.store);
  if (!pg) throw new Error(`unknown metadata store dialect ${t.store.dialect}`);
  let bigints = pgBigintColumns.get(table);
  if (!bigints) {
    bigints =
      pg.$client`SELECT column_name FROM information_schema.columns WHERE table_name = ${table} AND data_type = 'bigint'`.then(
        (rows: { column_name: string }[]) => new Set(rows.map((r) => r.column_name)),
      );
    pgBigintColumns.set(table, bigints);
  }
  const [cols] = await pg.$client.unsafe(
    `SELECT count(*)::int AS n FROM information_schema.columns WHERE table_name = '${table}'`,
  );
  const order = Array.from({ length: Number(cols?.n ?? 1) }, (_, i) => i + 1).join(", ");
  const rows = (await pg.$client.unsafe(`SELECT * FROM "${table}" ORDER BY ${order}`)) as Record<
    string,
    unknown
  >[];
  const big = await bigints;
  return rows.map((r) =>
    Object.fromEntries(
      Object.entries(r).map(([k, v]) => [
        k,
        v !== null && big.has(k) ? Number(v) : Buffer.isBuffer(v) ? new Uint8Array(v) : v,
      ]),
    ),
  );
}

/**
 * Makes every `op` on `table` of the app's metadata database fail with a database error until
 * `heal` is awaited: a SQLite trigger that raises ABORT, or a PostgreSQL trigger that raises an
 * exception. For tests of what a failed database write leaves behind.
 */
export async function injectWriteFault(
  t: TestApp,
  table: string,
  op: "INSERT" | "DELETE" | "UPDATE" = "INSERT",
): Promise<{ heal(): Promise<void> }> {
  const name = `fault_${table}_${op.toLowerCase()}`;
  const sqlite = sqliteDb(t.store);
  if (sqlite) {
    sqlite.$client.exec(
      `CREATE TRIGGER ${name} BEFORE ${op} ON ${table} BEGIN SELECT RAISE(ABORT, 'injected failure'); END;`,
    );
    return { heal: async () => void sqlite.$client.exec(`DROP TRIGGER ${name}`) };
  }
  const pg = pgDb(t.store);
  if (!pg) throw new Error(`unknown metadata store dialect ${t.store.dialect}`);
  await pg.$client.unsafe(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'injected failure'; END $$;
    CREATE TRIGGER ${name} BEFORE ${op} ON ${table} FOR EACH ROW EXECUTE FUNCTION ${name}();`);
  return {
    heal: async () => {
      await pg.$client.unsafe(`DROP TRIGGER ${name} ON ${table}; DROP FUNCTION ${name}();`);
    },
  };
}
