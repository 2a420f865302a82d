/**
 * In-process test app: in-memory SQLite, a blob store, a manual clock, and helpers to call
 * `app.handle` with JSON or raw bodies. Every answer is checked against its route's documented
 * statuses and response schemas (`checkAnswer`).
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
import { openSqliteStore } from "../../src/db/sqlite/store.ts";
import type { MetadataStore } from "../../src/db/store.ts";
import { Metrics } from "../../src/metrics/metrics.ts";
import type { BlobStore } from "../../src/storage/blob-store.ts";
import { createBlobStore } from "../../src/storage/index.ts";
import { createS3BlobStore } from "../../src/storage/s3.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { type Logger, silentLogger } from "../../src/util/log.ts";
import { Sweeper } from "../../src/workers/sweeper.ts";
import { checkAnswer } from "./contract.ts";
import { s3Env, s3TestConfig, testStorage } from "./s3-server.ts";
import { tempDir } from "./tmp.ts";

export { testStorage };

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
  /** The SQLite handle of `store`, for tests that inspect or damage rows directly. */
  db: Db;
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
    ...storageVars,
    ...env,
  });
  const metadata = openSqliteStore(config.dbPath);
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
    db: metadata.db,
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
