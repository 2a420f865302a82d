/**
 * The connection-defence (issue 10, defect 2) and metadata database (issue 11) settings of
 * src/config/config.ts: defaults, bounds, and a ConfigError naming the variable for a bad value.
 */
import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig } from "../../src/config/config.ts";
import { describeDatabase } from "../../src/db/open.ts";

describe("connection-defence settings", () => {
  test("defaults: body idle 30 s, minimum 1024 B/s, header timeout 30 s, 32 chunk PUTs per user, 256 overall", () => {
    const c = loadConfig({});
    expect(c.bodyIdleTimeoutSeconds).toBe(30);
    expect(c.bodyMinBytesPerSecond).toBe(1024);
    expect(c.headerTimeoutSeconds).toBe(30);
    expect(c.maxInflightChunksPerUser).toBe(32);
    expect(c.maxInflightChunks).toBe(256);
  });

  test("reads every variable", () => {
    const c = loadConfig({
      ESYNC_BODY_IDLE_TIMEOUT_SECONDS: "5",
      ESYNC_BODY_MIN_BYTES_PER_SECOND: "0",
      ESYNC_HEADER_TIMEOUT_SECONDS: "255",
      ESYNC_MAX_INFLIGHT_CHUNKS_PER_USER: "4",
      ESYNC_MAX_INFLIGHT_CHUNKS: "100",
    });
    expect([
      c.bodyIdleTimeoutSeconds,
      c.bodyMinBytesPerSecond,
      c.headerTimeoutSeconds,
      c.maxInflightChunksPerUser,
      c.maxInflightChunks,
    ]).toEqual([5, 0, 255, 4, 100]);
  });

  for (const [name, value] of [
    ["ESYNC_BODY_IDLE_TIMEOUT_SECONDS", "0"],
    ["ESYNC_BODY_IDLE_TIMEOUT_SECONDS", "soon"],
    ["ESYNC_HEADER_TIMEOUT_SECONDS", "256"],
    ["ESYNC_MAX_INFLIGHT_CHUNKS_PER_USER", "0"],
    ["ESYNC_MAX_INFLIGHT_CHUNKS", "-1"],
    ["ESYNC_BODY_MIN_BYTES_PER_SECOND", "1.5"],
  ] as const) {
    test(`rejects ${name}=${value} with a ConfigError naming it`, () => {
      let err: unknown;
      try {
        loadConfig({ [name]: value });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).variable).toBe(name);
    });
  }

  test("ESYNC_HTTP_ENGINE and ESYNC_GC_INTERVAL_BYTES are gone: Bun.serve is the only engine", () => {
    const c = loadConfig({ ESYNC_HTTP_ENGINE: "node", ESYNC_GC_INTERVAL_BYTES: "1" }) as unknown as Record<
      string,
      unknown
    >;
    expect(c.httpEngine).toBeUndefined();
    expect(c.gcIntervalBytes).toBeUndefined();
  });
});

describe("metadata database settings", () => {
  test("defaults: no database URL (SQLite), a PostgreSQL pool of 10", () => {
    const c = loadConfig({});
    expect([c.databaseUrl, c.databasePoolSize]).toEqual([null, 10]);
  });

  test("reads ESYNC_DATABASE_URL (postgres:// or postgresql://) and ESYNC_DATABASE_POOL_SIZE", () => {
    expect(loadConfig({ ESYNC_DATABASE_URL: "postgres://u:p@db:5432/esync" }).databaseUrl).toBe(
      "postgres://u:p@db:5432/esync",
    );
    const c = loadConfig({ ESYNC_DATABASE_URL: "postgresql://db/esync", ESYNC_DATABASE_POOL_SIZE: "3" });
    expect([c.databaseUrl, c.databasePoolSize]).toEqual(["postgresql://db/esync", 3]);
  });

  for (const [name, value] of [
    ["ESYNC_DATABASE_URL", "mysql://db/esync"],
    ["ESYNC_DATABASE_URL", "/var/lib/esync.sqlite"],
    ["ESYNC_DATABASE_POOL_SIZE", "0"],
  ] as const) {
    test(`rejects ${name}=${value} with a ConfigError naming it`, () => {
      expect(() => loadConfig({ [name]: value })).toThrow(name);
    });
  }
});

describe("finalize lease (issue 11)", () => {
  test("ESYNC_FINALIZE_LEASE_SECONDS defaults to 60 and is read", () => {
    expect(loadConfig({}).finalizeLeaseSeconds).toBe(60);
    expect(loadConfig({ ESYNC_FINALIZE_LEASE_SECONDS: "300" }).finalizeLeaseSeconds).toBe(300);
  });

  test("rejects ESYNC_FINALIZE_LEASE_SECONDS below 3 (it is renewed every third of it) with a ConfigError naming it", () => {
    expect(() => loadConfig({ ESYNC_FINALIZE_LEASE_SECONDS: "2" })).toThrow(ConfigError);
  });
});

describe("describeDatabase (start-up log)", () => {
  test("names the SQLite file, or the PostgreSQL host and database without the credentials", () => {
    expect(describeDatabase(loadConfig({ ESYNC_DB_PATH: "/var/lib/esync/esync.sqlite" }))).toBe(
      "/var/lib/esync/esync.sqlite",
    );
    expect(
      describeDatabase(loadConfig({ ESYNC_DATABASE_URL: "postgres://esync:s3cret@db.internal:5432/esync" })),
    ).toBe("postgres://db.internal:5432/esync");
  });
});

describe("chunk byte budget", () => {
  test("ESYNC_MAX_INFLIGHT_CHUNK_BYTES defaults to 256 MiB, is read, and may not be below one 16 MiB chunk", () => {
    expect(loadConfig({}).maxInflightChunkBytes).toBe(256 * 1024 * 1024);
    expect(loadConfig({ ESYNC_MAX_INFLIGHT_CHUNK_BYTES: "67108864" }).maxInflightChunkBytes).toBe(
      64 * 1024 * 1024,
    );
    expect(() => loadConfig({ ESYNC_MAX_INFLIGHT_CHUNK_BYTES: "1000" })).toThrow(
      /ESYNC_MAX_INFLIGHT_CHUNK_BYTES/,
    );
  });
});

describe("S3 time-outs", () => {
  const s3 = {
    ESYNC_STORAGE: "s3",
    ESYNC_S3_ENDPOINT: "http://127.0.0.1:7480",
    ESYNC_S3_BUCKET: "esync",
    ESYNC_S3_ACCESS_KEY: "k",
    ESYNC_S3_SECRET_KEY: "s",
  };
  test("default to 5 s to connect, 30 s to the first byte, 30 s idle", () => {
    const c = loadConfig(s3).s3!;
    expect([c.connectTimeoutMs, c.firstByteTimeoutMs, c.idleTimeoutMs]).toEqual([5_000, 30_000, 30_000]);
  });
  test("reads ESYNC_S3_CONNECT_TIMEOUT_MS, ESYNC_S3_FIRST_BYTE_TIMEOUT_MS and ESYNC_S3_IDLE_TIMEOUT_MS, and rejects 0", () => {
    const c = loadConfig({
      ...s3,
      ESYNC_S3_CONNECT_TIMEOUT_MS: "100",
      ESYNC_S3_FIRST_BYTE_TIMEOUT_MS: "200",
      ESYNC_S3_IDLE_TIMEOUT_MS: "300",
    }).s3!;
    expect([c.connectTimeoutMs, c.firstByteTimeoutMs, c.idleTimeoutMs]).toEqual([100, 200, 300]);
    expect(() => loadConfig({ ...s3, ESYNC_S3_IDLE_TIMEOUT_MS: "0" })).toThrow(/ESYNC_S3_IDLE_TIMEOUT_MS/);
  });
});
