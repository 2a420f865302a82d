/**
 * @module test/support/s3-server
 * S3 settings for tests, always backed by a real S3 server (Ceph RGW from `scripts/s3/`).
 *
 * Where the server comes from, first match wins:
 * 1. `ESYNC_TEST_S3_ENDPOINT` (with `ESYNC_TEST_S3_ACCESS_KEY`, `ESYNC_TEST_S3_SECRET_KEY`,
 *    `ESYNC_TEST_S3_REGION`, defaulting to the keys `scripts/s3/start.sh` creates): a server
 *    someone else runs. It must answer, or the S3 tests fail.
 * 2. A server already running in the shared directory `ESYNC_TEST_S3_DIR` (default
 *    `/tmp/esync-rgw`), started there by `.ci/s3.sh` or by another test process.
 * 3. Otherwise this helper starts one there with `scripts/s3/start.sh` (after
 *    `scripts/s3/install.sh` when the packages are missing and we are root). Every test file
 *    and every test process of the run shares it (a lock file serialises the start); the last
 *    process using a server that this helper started stops it when it exits. A server started
 *    by `.ci/s3.sh` is left running (`bash .ci/s3.sh stop` stops it).
 *
 * When no server can be had, `s3TestServer()` rejects with a message saying why: the S3 tests
 * fail, they never skip silently. `ESYNC_TEST_SKIP_S3=1` skips them loudly, for developers
 * only: it is ignored when `CI` is set.
 *
 * `ESYNC_TEST_STORAGE` (`disk`, the default, or `s3`) picks the backend of the storage-neutral
 * suites (`test/http` through `test/support/app.ts`, `test/e2e` through `storageEnv`);
 * `scripts/test.sh` runs them once with each.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Client } from "minio";
import type { S3Config } from "../../src/config/config.ts";
import { databaseEnv } from "./pg-server.ts";
import { acquireSharedServer } from "./shared-server.ts";

/** Where and how to reach the test S3 server. */
export interface S3TestServer {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  region: string;
}

/** The keys `scripts/s3/start.sh` gives its test user unless told otherwise. */
const DEFAULT_ACCESS_KEY = "ESYNCTESTACCESSKEY";
const DEFAULT_SECRET_KEY = "esync-test-secret-key";

/** Timeout for a hook that may have to install or start the S3 server (ms). */
export const SETUP_TIMEOUT_MS = 10 * 60_000;

const ROOT = process.env.ESYNC_TEST_S3_DIR || "/tmp/esync-rgw";
const SCRIPTS = resolve(import.meta.dir, "../../../../scripts/s3");

function log(message: string): void {
  process.stderr.write(`[s3-server] ${message}\n`);
}

/**
 * True when the S3 tests are to be skipped (`ESYNC_TEST_SKIP_S3=1` outside CI); says so loudly.
 * Under `CI` the variable is ignored, so CI always runs them.
 */
export const skipS3: boolean = (() => {
  if (process.env.ESYNC_TEST_SKIP_S3 !== "1") return false;
  if (process.env.CI) {
    log("ESYNC_TEST_SKIP_S3=1 is ignored because CI is set: the S3 tests run");
    return false;
  }
  log("!!! ESYNC_TEST_SKIP_S3=1: the S3 tests are SKIPPED. They are not optional in CI. !!!");
  return true;
})();

/** Backend of the storage-neutral suites: `ESYNC_TEST_STORAGE`, `disk` (default) or `s3`. */
export const testStorage: "disk" | "s3" = (() => {
  const v = process.env.ESYNC_TEST_STORAGE || "disk";
  if (v !== "disk" && v !== "s3") throw new Error(`ESYNC_TEST_STORAGE must be disk or s3, got "${v}"`);
  if (v === "s3" && skipS3) throw new Error("ESYNC_TEST_STORAGE=s3 contradicts ESYNC_TEST_SKIP_S3=1");
  return v;
})();

function readEnvFile(dir: string): S3TestServer | null {
  let text: string;
  try {
    text = readFileSync(join(dir, "s3.env"), "utf8");
  } catch {
    return null;
  }
  const vars = Object.fromEntries(
    text
      .split("\n")
      .filter((l) => l.includes("="))
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1).trim()]),
  );
  if (!vars.ENDPOINT || !vars.ACCESS_KEY || !vars.SECRET_KEY) return null;
  return {
    endpoint: vars.ENDPOINT,
    accessKey: vars.ACCESS_KEY,
    secretKey: vars.SECRET_KEY,
    region: vars.REGION || "us-east-1",
  };
}

/** A minio client for `server` (no retries, payload signing as minio does by default). */
export function testClient(server: S3TestServer): Client {
  const url = new URL(server.endpoint);
  return new Client({
    endPoint: url.hostname,
    port: Number(url.port || (url.protocol === "https:" ? 443 : 80)),
    useSSL: url.protocol === "https:",
    accessKey: server.accessKey,
    secretKey: server.secretKey,
    region: server.region,
    pathStyle: true,
    retryOptions: { disableRetry: true },
  });
}

/** Whether `server` answers an authenticated ListBuckets within 5 s; the error otherwise. */
async function probe(server: S3TestServer): Promise<Error | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      testClient(server).listBuckets(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error("no answer within 5 s")), 5000);
      }),
    ]);
    return null;
  } catch (e) {
    return e instanceof Error ? e : new Error(String(e));
  } finally {
    clearTimeout(timer);
  }
}

function freePort(): number {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = listener.port;
  listener.stop(true);
  return port;
}

async function run(cmd: string[], what: string, env?: Record<string, string>): Promise<void> {
  const proc = Bun.spawn(cmd, { stdout: "ignore", stderr: "inherit", env: { ...process.env, ...env } });
  const code = await proc.exited;
  if (code !== 0) throw new Error(`${what} failed (${cmd.join(" ")} exited with ${code})`);
}

/** Installs Ceph RGW when it is missing and this is root. @throws Error saying what to do otherwise. */
async function ensureInstalled(): Promise<void> {
  if (Bun.which("radosgw") && Bun.which("ceph-mon")) return;
  if (process.getuid?.() !== 0) {
    throw new Error(
      "Ceph RGW is not installed and this is not root: run `sudo scripts/s3/install.sh`, " +
        "or point ESYNC_TEST_S3_ENDPOINT at a running S3 server",
    );
  }
  log("installing Ceph RGW (scripts/s3/install.sh)");
  await run(["bash", join(SCRIPTS, "install.sh")], "installing Ceph RGW");
}

/** Starts an RGW with `scripts/s3/start.sh` in `dir` on a free port (`env`: extra variables for it). */
async function startRgw(dir: string, env?: Record<string, string>): Promise<S3TestServer> {
  await ensureInstalled();
  const started = Date.now();
  log(`starting Ceph RGW in ${dir} (scripts/s3/start.sh)`);
  await run(
    ["bash", join(SCRIPTS, "start.sh"), dir, String(freePort())],
    `starting RGW (logs in ${dir}/log)`,
    env,
  );
  const server = readEnvFile(dir);
  if (!server) throw new Error(`scripts/s3/start.sh succeeded but wrote no ${dir}/s3.env`);
  log(`RGW ready at ${server.endpoint} after ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return server;
}

async function acquire(): Promise<S3TestServer> {
  const env = process.env;
  if (env.ESYNC_TEST_S3_ENDPOINT) {
    const server = {
      endpoint: env.ESYNC_TEST_S3_ENDPOINT,
      accessKey: env.ESYNC_TEST_S3_ACCESS_KEY || DEFAULT_ACCESS_KEY,
      secretKey: env.ESYNC_TEST_S3_SECRET_KEY || DEFAULT_SECRET_KEY,
      region: env.ESYNC_TEST_S3_REGION || "us-east-1",
    };
    const err = await probe(server);
    if (err) throw new Error(`ESYNC_TEST_S3_ENDPOINT=${server.endpoint} does not answer: ${err.message}`);
    return server;
  }
  return acquireSharedServer({
    root: ROOT,
    scripts: SCRIPTS,
    log,
    read: readEnvFile,
    probe,
    start: (dir) => startRgw(dir),
    describe: (server) => `the RGW at ${server.endpoint}`,
  });
}

const MEMO = Symbol.for("esync.test.s3Server");
type Memo = { [MEMO]?: Promise<S3TestServer> };

/**
 * The test S3 server, found or started once per process (see the module comment).
 * @throws Error saying why when no server can be had (the S3 tests then fail).
 */
export function s3TestServer(): Promise<S3TestServer> {
  const g = globalThis as Memo;
  g[MEMO] ??= acquire().catch((e: unknown) => {
    const why = e instanceof Error ? e.message : String(e);
    throw new Error(`no real S3 server for the S3 tests: ${why}`, { cause: e });
  });
  return g[MEMO];
}

/**
 * S3 settings for a new bucket (not yet created; `S3BlobStore.check` creates it) on the test
 * server. `label` goes into the bucket name (lowercase letters, digits, `-`).
 */
export async function s3TestConfig(label: string, prefix = ""): Promise<S3Config> {
  const server = await s3TestServer();
  const safe = label
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .slice(0, 30);
  return { ...server, bucket: `esync-${safe}-${randomBytes(5).toString("hex")}`, prefix };
}

/** An RGW of one test's own, for fault tests that stop and start its gateway. */
export interface DedicatedS3 {
  server: S3TestServer;
  /** Process ids of its daemons (monitor, OSD, radosgw) as they are now. */
  pids(): number[];
  /** Kills the radosgw process (`scripts/s3/gateway.sh stop`): S3 is gone, its data is kept. */
  stopGateway(): Promise<void>;
  /** Starts radosgw again and waits until S3 accepts the test keys (`gateway.sh start`). */
  startGateway(): Promise<void>;
  /** Stops the whole server and deletes its data (`scripts/s3/stop.sh`). */
  stop(): Promise<void>;
}

/**
 * Starts an RGW in `dir` (a new directory) for one test file or bench, never shared: its gateway
 * may be stopped. `osdBytes` sizes its OSD (sparse; default 32 GiB). The caller stops it with
 * `stop()`.
 * @throws Error saying why when it cannot be installed or started (the test then fails).
 */
export async function startDedicatedS3(dir: string, opts: { osdBytes?: number } = {}): Promise<DedicatedS3> {
  // Should this process die before `stop()`, a detached watchdog stops the server all the same.
  Bun.spawn(
    [
      "setsid",
      "-f",
      "bash",
      "-c",
      'while kill -0 "$1" 2>/dev/null; do sleep 0.5; done; bash "$2" "$3"',
      "watchdog",
      String(process.pid),
      join(SCRIPTS, "stop.sh"),
      dir,
    ],
    { stdin: "ignore", stdout: "ignore", stderr: "ignore" },
  ).unref();
  const server = await startRgw(
    dir,
    opts.osdBytes ? { ESYNC_TEST_S3_OSD_BYTES: String(opts.osdBytes) } : undefined,
  );
  const gateway = (action: string) =>
    run(["bash", join(SCRIPTS, "gateway.sh"), dir, action], `gateway.sh ${action}`);
  return {
    server,
    pids: () =>
      ["mon", "osd", "rgw"].flatMap((name) => {
        try {
          return [Number(readFileSync(join(dir, "pids", name), "utf8").trim())];
        } catch {
          return [];
        }
      }),
    stopGateway: () => gateway("stop"),
    startGateway: () => gateway("start"),
    stop: () => run(["bash", join(SCRIPTS, "stop.sh"), dir], "stopping the RGW"),
  };
}

/** The `ESYNC_*` variables that point a server at `cfg` (`ESYNC_STORAGE=s3` and `ESYNC_S3_*`). */
export function s3Env(cfg: S3Config): Record<string, string> {
  return {
    ESYNC_STORAGE: "s3",
    ESYNC_S3_ENDPOINT: cfg.endpoint,
    ESYNC_S3_BUCKET: cfg.bucket,
    ESYNC_S3_ACCESS_KEY: cfg.accessKey,
    ESYNC_S3_SECRET_KEY: cfg.secretKey,
    ESYNC_S3_REGION: cfg.region,
    ESYNC_S3_PREFIX: cfg.prefix,
  };
}

/** Storage settings for server processes: their `ESYNC_*` variables and how to clean up. */
export interface TestStorageEnv {
  env: Record<string, string>;
  /** Deletes the bucket and its objects (S3); nothing on disk, where the data dir holds the blobs. */
  remove(): Promise<void>;
}

/**
 * Settings for server processes on the test storage (`testStorage`): no variable on disk (the
 * server's default); on S3, a fresh bucket of the test server, which the server creates at
 * start-up. `label` goes into the bucket name. With `ESYNC_TEST_DATABASE=postgres` they also
 * name a fresh PostgreSQL database (`databaseEnv` of `test/support/pg-server.ts`).
 */
export async function storageEnv(label: string): Promise<TestStorageEnv> {
  const database = await databaseEnv(label);
  if (testStorage === "disk") return database;
  const cfg = await s3TestConfig(label, "esync");
  return {
    env: { ...s3Env(cfg), ...database.env },
    remove: async () => {
      await database.remove();
      await removeTestBucket(cfg);
    },
  };
}

/** Deletes every object of `cfg.bucket` and the bucket; a missing bucket is fine. */
export async function removeTestBucket(cfg: S3Config): Promise<void> {
  const client = testClient(cfg);
  try {
    const names: string[] = [];
    for await (const item of client.listObjectsV2(cfg.bucket, "", true)) if (item.name) names.push(item.name);
    for (let i = 0; i < names.length; i += 1000)
      await client.removeObjects(cfg.bucket, names.slice(i, i + 1000));
    await client.removeBucket(cfg.bucket);
  } catch (e) {
    if ((e as { code?: string }).code !== "NoSuchBucket") throw e;
  }
}
