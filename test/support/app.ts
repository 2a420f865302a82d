/**
 * In-process test app: in-memory SQLite, a temporary disk blob store, a manual clock, and helpers
 * to call `app.handle` with JSON or raw bodies.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp } from "../../src/app.ts";
import { type Config, loadConfig } from "../../src/config/config.ts";
import { openDb } from "../../src/db/client.ts";
import type { BlobStore } from "../../src/storage/blob-store.ts";
import { DiskBlobStore } from "../../src/storage/disk.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { silentLogger } from "../../src/util/log.ts";
import { Sweeper } from "../../src/workers/sweeper.ts";

/** A parsed JSON answer body; tests assert its fields one by one, so it is deliberately untyped. */
// biome-ignore lint/suspicious/noExplicitAny: response bodies are asserted field by field
export type JsonBody = any;

/** A test app and its handles. */
export interface TestApp {
  config: Config;
  clock: ManualClock;
  blobs: BlobStore;
  services: ReturnType<typeof createApp>["services"];
  sweeper: Sweeper;
  /** Sends a request to the app. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** Sends a request and parses the JSON answer. */
  json(path: string, init?: RequestInit): Promise<{ status: number; body: JsonBody; headers: Headers }>;
  close(): void;
}

/** Builds a test app; `env` overrides configuration variables; `blobs` overrides the store. */
export function makeTestApp(env: Record<string, string> = {}, blobs?: BlobStore): TestApp {
  const dir = mkdtempSync(join(tmpdir(), "esync-test-"));
  const config = loadConfig({ ESYNC_DATA_DIR: dir, ESYNC_DB_PATH: ":memory:", ESYNC_OPENAPI: "0", ...env });
  const db = openDb(config.dbPath);
  const store = blobs ?? new DiskBlobStore({ root: config.blobDir, fsync: "off" });
  const clock = new ManualClock();
  const { app, services } = createApp({ config, db, blobs: store, clock, log: silentLogger });
  const fetchFn = (path: string, init?: RequestInit) =>
    app.handle(new Request(`http://127.0.0.1${path}`, init));
  return {
    config,
    clock,
    blobs: store,
    services,
    sweeper: new Sweeper(services),
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
    close() {
      db.$client.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** `init` for a JSON request. */
export function jsonInit(method: string, auth: string | null, body: unknown): RequestInit {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (auth) headers.authorization = auth;
  return { method, headers, body: typeof body === "string" ? body : JSON.stringify(body) };
}
