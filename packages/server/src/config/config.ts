/**
 * @module server/config/config
 * The one place that reads `process.env`. Every setting is documented here and in docs/operator-guide.md#configuration
 * configuration table; `loadConfig` validates them all once at start-up and throws a
 * `ConfigError` naming the variable when a value is bad.
 */

import { API_PROFILES, type ApiProfile } from "./profile.ts";

/** Which blob store backend holds ciphertext. */
export type StorageKind = "disk" | "s3";

/**
 * Default S3 request time-outs, milliseconds: connect, first byte of the response, idle body
 * (docs/operator-guide.md#s3-time-outs).
 */
export const S3_DEFAULT_TIMEOUTS = { connectMs: 5_000, firstByteMs: 30_000, idleMs: 30_000 } as const;

/** S3-compatible bucket settings, used when `storage` is `"s3"`. */
export interface S3Config {
  /** Endpoint URL, e.g. `http://127.0.0.1:7480` (scheme, host and optional port). */
  endpoint: string;
  bucket: string;
  accessKey: string;
  secretKey: string;
  region: string;
  /** Object key prefix inside the bucket (no leading or trailing slash; may be empty). */
  prefix: string;
  /**
   * Longest wait for a connection to S3, milliseconds (`ESYNC_S3_CONNECT_TIMEOUT_MS`, default
   * 5,000; docs/operator-guide.md#s3-time-outs). Unset: the default.
   */
  connectTimeoutMs?: number;
  /**
   * Longest wait for S3's response headers once a request is sent, milliseconds
   * (`ESYNC_S3_FIRST_BYTE_TIMEOUT_MS`, default 30,000). Unset: the default.
   */
  firstByteTimeoutMs?: number;
  /**
   * Longest S3 may leave a request body unread or a response body silent, milliseconds
   * (`ESYNC_S3_IDLE_TIMEOUT_MS`, default 30,000). Unset: the default.
   */
  idleTimeoutMs?: number;
}

/** Validated service configuration. Sizes are bytes, durations are seconds. */
export interface Config {
  /** Interface to listen on (`ESYNC_HOST`, default `127.0.0.1`). */
  host: string;
  /** TCP port (`ESYNC_PORT`, default 8080; 0 picks a free port). */
  port: number;
  /** Directory for the SQLite file and, with disk storage, the blobs (`ESYNC_DATA_DIR`, default `./data`). */
  dataDir: string;
  /** SQLite database file (`ESYNC_DB_PATH`, default `<dataDir>/esync.sqlite`; `:memory:` for tests). */
  dbPath: string;
  /**
   * PostgreSQL metadata database (`ESYNC_DATABASE_URL`, `postgres://…` or `postgresql://…`); null
   * (unset, the default) = SQLite at `dbPath`.
   */
  databaseUrl: string | null;
  /** Most connections to PostgreSQL per process (`ESYNC_DATABASE_POOL_SIZE`, default 10). */
  databasePoolSize: number;
  /** Blob store backend (`ESYNC_STORAGE`, default `disk`). */
  storage: StorageKind;
  /** Root directory of the disk blob store (`ESYNC_BLOB_DIR`, default `<dataDir>/blobs`). */
  blobDir: string;
  /** When the disk store fsyncs (`ESYNC_DISK_FSYNC`: `persist` (default, at finalize), `object`, `off`). */
  diskFsync: "object" | "persist" | "off";
  /** Idle lifetime of an upload session in seconds (`ESYNC_SESSION_TTL_SECONDS`, default 86400). */
  sessionTtlSeconds: number;
  /**
   * Lease of a running finalize, seconds (`ESYNC_FINALIZE_LEASE_SECONDS`, default 60): renewed
   * every third of it while the finalize runs; once it runs out (the node died), any node's
   * sweeper returns the session to `receiving`.
   */
  finalizeLeaseSeconds: number;
  /** Interval of the background sweep (expired sessions, blob deletions), seconds (`ESYNC_SWEEP_INTERVAL_SECONDS`, default 60). */
  sweepIntervalSeconds: number;
  /**
   * Seconds a replaced or deleted file's objects stay readable before they are deleted, so that
   * downloads in flight finish (`ESYNC_BLOB_GRACE_SECONDS`, default 3600; 0 = at the next sweep).
   */
  blobGraceSeconds: number;
  /**
   * Seconds a replaced or deleted revision is kept as a version that can be listed and restored
   * (`ESYNC_VERSION_RETENTION_DAYS`, default 30 days; 0 = versions are off and replaced or deleted
   * revisions go to the deletion queue after `blobGraceSeconds`): docs/versions.md.
   */
  versionRetentionSeconds: number;
  /**
   * Requests per minute one client address may make to the anonymous share routes
   * (`ESYNC_SHARE_RATE_LIMIT`, default 120; 0 = no limit): docs/sharing.md.
   */
  shareRateLimit: number;
  /**
   * Whether a file share's access log keeps the client address of each blob answer
   * (`ESYNC_SHARE_LOG_ADDRESSES`, default false): docs/sharing.md, "Access log".
   */
  shareLogAddresses: boolean;
  /** Live upload sessions allowed per user (`ESYNC_MAX_SESSIONS_PER_USER`, default 32). */
  maxSessionsPerUser: number;
  /** Accept the bare SS58 address as a bearer token (`ESYNC_INSECURE_SS58_TOKENS`, default off). Development only. */
  insecureSs58Tokens: boolean;
  /** Largest single-shot `/upload` ciphertext in bytes (`ESYNC_MAX_SINGLE_UPLOAD_BYTES`, default 256 MiB). */
  maxSingleUploadBytes: number;
  /** Most chunks one session may declare (`ESYNC_MAX_CHUNK_COUNT`, default 1,048,576). */
  maxChunkCount: number;
  /**
   * Bytes of out-of-order chunks held in memory for in-order hashing instead of reading them back
   * from the store (`ESYNC_LOOKAHEAD_BYTES`; default 0 with disk storage, 64 MiB with S3).
   */
  lookaheadBytes: number;
  /**
   * Seconds a request body may go without a byte before the request is answered 408
   * `request_timeout` and its connection closed (`ESYNC_BODY_IDLE_TIMEOUT_SECONDS`, default 30).
   */
  bodyIdleTimeoutSeconds: number;
  /**
   * Slowest body rate accepted, bytes per second, over the last `bodyRateWindowSeconds` once
   * `bodyRateGraceSeconds` have passed (`ESYNC_BODY_MIN_BYTES_PER_SECOND`, default 1024; 0 = no
   * minimum). Stops a body trickled just fast enough never to be idle. Also the rate below which
   * a chunk PUT past the grace may lose its slot to a newcomer (docs/operator-guide.md#limits-under-load).
   */
  bodyMinBytesPerSecond: number;
  /** Seconds of a body before its rate is checked (`ESYNC_BODY_RATE_GRACE_SECONDS`, default 5). */
  bodyRateGraceSeconds: number;
  /** Seconds over which a body's rate is measured (`ESYNC_BODY_RATE_WINDOW_SECONDS`, default 10). */
  bodyRateWindowSeconds: number;
  /**
   * Seconds a connection may stay silent while no request body is being read: a request's headers
   * must arrive, and an idle keep-alive connection is closed, within it (Bun.serve `idleTimeout`;
   * `ESYNC_HEADER_TIMEOUT_SECONDS`, default 30, at most 255).
   */
  headerTimeoutSeconds: number;
  /** Chunk PUTs one user may have in flight; the next is 429 `too_many_requests` (`ESYNC_MAX_INFLIGHT_CHUNKS_PER_USER`, default 32). */
  maxInflightChunksPerUser: number;
  /**
   * Chunk PUTs in flight over all users (`ESYNC_MAX_INFLIGHT_CHUNKS`, default 256): past it a
   * newcomer evicts a slow or over-share holder, else gets 429 `too_many_requests`.
   */
  maxInflightChunks: number;
  /**
   * Bytes, by the chunks' lengths, of the chunk PUTs streaming at once over all users
   * (`ESYNC_MAX_INFLIGHT_CHUNK_BYTES`, default 256 MiB): past it a newcomer evicts a slow holder
   * or one of a user over its share of these bytes, else gets 429 `too_many_requests`.
   */
  maxInflightChunkBytes: number;
  /**
   * Smallest fair share of in-flight chunk PUTs of one user or client address while others upload
   * (`ESYNC_INFLIGHT_CHUNKS_FAIR_FLOOR`, default 4); the share is
   * `max(this, ESYNC_MAX_INFLIGHT_CHUNKS / active users or addresses)`.
   */
  inflightChunksFairFloor: number;
  /** Log level (`ESYNC_LOG_LEVEL`: `debug`, `info`, `warn`, `error`; default `info`). */
  logLevel: "debug" | "info" | "warn" | "error";
  /** Serve the OpenAPI page at `/swagger` (`ESYNC_OPENAPI`, default on). */
  openApi: boolean;
  /**
   * Storage allowance of an account without an override, plaintext bytes
   * (`ESYNC_DEFAULT_QUOTA_BYTES`; empty or absent = unlimited, `null`).
   */
  defaultQuotaBytes: number | null;
  /**
   * API profile (`ESYNC_API_PROFILE`): `base` (default) follows the base contract; `hcfs` switches
   * exactly the three rules where the product differs (see `src/config/profile.ts`).
   */
  apiProfile: ApiProfile;
  /** S3 settings (`ESYNC_S3_*`); `null` unless `storage` is `s3`. */
  s3: S3Config | null;
  /**
   * `ESYNC_S3_DOWNLOAD_REDIRECT_SECONDS` (default 0: off): when above 0, a `/download` of more
   * than 1 MiB whose bytes are in one object answers 302 to a presigned GET of that object valid
   * this many seconds, so the bytes come from S3 with their `Content-Length`
   * (docs/design.md#downloads-and-content-length).
   */
  s3DownloadRedirectSeconds: number;

  /** Collect and serve Prometheus metrics (`ESYNC_METRICS`, default on). */
  metrics: boolean;
  /** Serve `/metrics` on this port of `host` instead of the public port (`ESYNC_METRICS_PORT`; default unset: the public port). */
  metricsPort: number | null;
  /** Seconds in-flight requests get to finish after SIGTERM/SIGINT (`ESYNC_SHUTDOWN_GRACE_SECONDS`, default 30). */
  shutdownGraceSeconds: number;
}

/** Thrown by `loadConfig` for a missing or malformed variable; the message names it. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = "ConfigError";
  }
}

type Env = Record<string, string | undefined>;

function str(env: Env, name: string, dflt: string): string {
  const v = env[name];
  return v === undefined || v === "" ? dflt : v;
}

function int(env: Env, name: string, dflt: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return dflt;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, `expected a whole number, got "${raw}"`);
  const n = Number(raw.trim());
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new ConfigError(name, `expected a whole number from ${min} to ${max}, got "${raw}"`);
  }
  return n;
}

function bool(env: Env, name: string, dflt: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "") return dflt;
  const v = raw.trim().toLowerCase();
  if (["1", "true", "yes", "on"].includes(v)) return true;
  if (["0", "false", "no", "off"].includes(v)) return false;
  throw new ConfigError(name, `expected one of 1/0, true/false, yes/no, on/off, got "${raw}"`);
}

function oneOf<T extends string>(env: Env, name: string, dflt: T, allowed: readonly T[]): T {
  const raw = str(env, name, dflt);
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(name, `expected one of ${allowed.join(", ")}, got "${raw}"`);
  }
  return raw as T;
}

function required(env: Env, name: string): string {
  const v = env[name];
  if (v === undefined || v === "") throw new ConfigError(name, "required when ESYNC_STORAGE=s3");
  return v;
}

/**
 * Reads and validates the configuration from an environment (default `process.env`).
 * @throws ConfigError naming the first bad variable.
 */
export function loadConfig(env: Env = process.env): Config {
  const dataDir = str(env, "ESYNC_DATA_DIR", "./data");
  const storage = oneOf<StorageKind>(env, "ESYNC_STORAGE", "disk", ["disk", "s3"]);
  let s3: S3Config | null = null;
  if (storage === "s3") {
    const endpoint = required(env, "ESYNC_S3_ENDPOINT");
    try {
      const u = new URL(endpoint);
      if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error("scheme");
    } catch {
      throw new ConfigError("ESYNC_S3_ENDPOINT", `expected an http(s) URL, got "${endpoint}"`);
    }
    const bucket = required(env, "ESYNC_S3_BUCKET");
    if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
      throw new ConfigError("ESYNC_S3_BUCKET", `not a valid bucket name: "${bucket}"`);
    }
    s3 = {
      endpoint,
      bucket,
      accessKey: required(env, "ESYNC_S3_ACCESS_KEY"),
      secretKey: required(env, "ESYNC_S3_SECRET_KEY"),
      region: str(env, "ESYNC_S3_REGION", "us-east-1"),
      prefix: str(env, "ESYNC_S3_PREFIX", "").replace(/^\/+|\/+$/g, ""),
      connectTimeoutMs: int(env, "ESYNC_S3_CONNECT_TIMEOUT_MS", S3_DEFAULT_TIMEOUTS.connectMs, 1, 3_600_000),
      firstByteTimeoutMs: int(
        env,
        "ESYNC_S3_FIRST_BYTE_TIMEOUT_MS",
        S3_DEFAULT_TIMEOUTS.firstByteMs,
        1,
        3_600_000,
      ),
      idleTimeoutMs: int(env, "ESYNC_S3_IDLE_TIMEOUT_MS", S3_DEFAULT_TIMEOUTS.idleMs, 1, 3_600_000),
    };
  }
  const databaseUrl = str(env, "ESYNC_DATABASE_URL", "") || null;
  if (databaseUrl !== null && !/^postgres(ql)?:\/\/./.test(databaseUrl)) {
    throw new ConfigError("ESYNC_DATABASE_URL", "expected a postgres:// or postgresql:// URL");
  }
  return {
    host: str(env, "ESYNC_HOST", "127.0.0.1"),
    port: int(env, "ESYNC_PORT", 8080, 0, 65535),
    dataDir,
    dbPath: str(env, "ESYNC_DB_PATH", `${dataDir}/esync.sqlite`),
    databaseUrl,
    databasePoolSize: int(env, "ESYNC_DATABASE_POOL_SIZE", 10, 1, 1000),
    storage,
    blobDir: str(env, "ESYNC_BLOB_DIR", `${dataDir}/blobs`),
    diskFsync: oneOf(env, "ESYNC_DISK_FSYNC", "persist", ["object", "persist", "off"] as const),
    sessionTtlSeconds: int(env, "ESYNC_SESSION_TTL_SECONDS", 86400, 1, 365 * 86400),
    finalizeLeaseSeconds: int(env, "ESYNC_FINALIZE_LEASE_SECONDS", 60, 3, 86400),
    sweepIntervalSeconds: int(env, "ESYNC_SWEEP_INTERVAL_SECONDS", 60, 1, 86400),
    blobGraceSeconds: int(env, "ESYNC_BLOB_GRACE_SECONDS", 3600, 0, 30 * 86400),
    versionRetentionSeconds: int(env, "ESYNC_VERSION_RETENTION_DAYS", 30, 0, 3650) * 86400,
    shareRateLimit: int(env, "ESYNC_SHARE_RATE_LIMIT", 120, 0, 1_000_000),
    shareLogAddresses: bool(env, "ESYNC_SHARE_LOG_ADDRESSES", false),
    maxSessionsPerUser: int(env, "ESYNC_MAX_SESSIONS_PER_USER", 32, 1, 1_000_000),
    insecureSs58Tokens: bool(env, "ESYNC_INSECURE_SS58_TOKENS", false),
    maxSingleUploadBytes: int(env, "ESYNC_MAX_SINGLE_UPLOAD_BYTES", 256 * 1024 * 1024, 48, 2 ** 40),
    maxChunkCount: int(env, "ESYNC_MAX_CHUNK_COUNT", 1_048_576, 1, 2 ** 32 - 1),
    lookaheadBytes: int(env, "ESYNC_LOOKAHEAD_BYTES", storage === "s3" ? 64 * 1024 * 1024 : 0, 0, 2 ** 40),
    bodyIdleTimeoutSeconds: int(env, "ESYNC_BODY_IDLE_TIMEOUT_SECONDS", 30, 1, 3600),
    bodyMinBytesPerSecond: int(env, "ESYNC_BODY_MIN_BYTES_PER_SECOND", 1024, 0, 2 ** 40),
    bodyRateGraceSeconds: int(env, "ESYNC_BODY_RATE_GRACE_SECONDS", 5, 1, 3600),
    bodyRateWindowSeconds: int(env, "ESYNC_BODY_RATE_WINDOW_SECONDS", 10, 1, 3600),
    headerTimeoutSeconds: int(env, "ESYNC_HEADER_TIMEOUT_SECONDS", 30, 1, 255),
    maxInflightChunksPerUser: int(env, "ESYNC_MAX_INFLIGHT_CHUNKS_PER_USER", 32, 1, 100_000),
    maxInflightChunks: int(env, "ESYNC_MAX_INFLIGHT_CHUNKS", 256, 1, 1_000_000),
    maxInflightChunkBytes: int(
      env,
      "ESYNC_MAX_INFLIGHT_CHUNK_BYTES",
      256 * 1024 * 1024,
      16 * 1024 * 1024,
      2 ** 40,
    ),
    inflightChunksFairFloor: int(env, "ESYNC_INFLIGHT_CHUNKS_FAIR_FLOOR", 4, 1, 1_000_000),
    logLevel: oneOf(env, "ESYNC_LOG_LEVEL", "info", ["debug", "info", "warn", "error"] as const),
    openApi: bool(env, "ESYNC_OPENAPI", true),
    defaultQuotaBytes:
      str(env, "ESYNC_DEFAULT_QUOTA_BYTES", "") === ""
        ? null
        : int(env, "ESYNC_DEFAULT_QUOTA_BYTES", 0, 0, Number.MAX_SAFE_INTEGER),
    apiProfile: oneOf(env, "ESYNC_API_PROFILE", "base", API_PROFILES),
    s3,
    s3DownloadRedirectSeconds: int(env, "ESYNC_S3_DOWNLOAD_REDIRECT_SECONDS", 0, 0, 7 * 24 * 3600),
    metrics: bool(env, "ESYNC_METRICS", true),
    metricsPort: env.ESYNC_METRICS_PORT ? int(env, "ESYNC_METRICS_PORT", 0, 0, 65535) : null,
    shutdownGraceSeconds: int(env, "ESYNC_SHUTDOWN_GRACE_SECONDS", 30, 0, 3600),
  };
}
