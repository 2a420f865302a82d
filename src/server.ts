/**
 * @module server
 * Starts a complete server from a `Config`: database (migrated), blob store (checked), app,
 * start-up recovery (sessions left finalizing, spool files) and the background sweeper.
 */
import { createApp } from "./app.ts";
import type { Config } from "./config/config.ts";
import { openDb } from "./db/client.ts";
import { createBlobStore } from "./storage/index.ts";
import { systemClock } from "./util/clock.ts";
import { createLogger, type Logger } from "./util/log.ts";
import { walletCryptoReady } from "./auth/wallet-token.ts";
import { Sweeper } from "./workers/sweeper.ts";

/** A running server. */
export interface RunningServer {
  /** Base URL, e.g. `http://127.0.0.1:8080`. */
  url: string;
  port: number;
  /** Stops accepting requests, stops the sweeper, closes the store and database. */
  stop(): Promise<void>;
}

/**
 * Starts the service.
 * @throws when the database cannot be opened or migrated, or the blob store is unreachable.
 */
export async function startServer(config: Config, log: Logger = createLogger(config.logLevel)): Promise<RunningServer> {
  const db = openDb(config.dbPath);
  const blobs = createBlobStore(config);
  try {
    await blobs.check();
  } catch (e) {
    throw new Error(`blob store (${config.storage}) unavailable at start-up: ${(e as Error).message}`);
  }
  await walletCryptoReady();
  const { app, services } = createApp({ config, db, blobs, clock: systemClock, log });
  const recovered = services.sessions.recover();
  if (recovered > 0) log.warn("startup.sessions_recovered", { count: recovered });
  await services.singleUpload.resetSpool();
  if (config.insecureSs58Tokens) {
    log.warn("startup.insecure_tokens", { message: "ESYNC_INSECURE_SS58_TOKENS is on: a bare SS58 address is accepted as a bearer token. Never use this in production." });
  }
  const sweeper = new Sweeper(services);
  sweeper.start();
  const server = Bun.serve({
    hostname: config.host,
    port: config.port,
    maxRequestBodySize: Math.max(config.maxSingleUploadBytes + 1024 * 1024, 17 * 1024 * 1024),
    idleTimeout: 255,
    fetch: (req) => app.handle(req),
  });
  const url = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${server.port}`;
  log.info("server.started", { url, storage: config.storage, data_dir: config.dataDir, db: config.dbPath });
  return {
    url,
    port: server.port ?? config.port,
    async stop() {
      await server.stop(true);
      await sweeper.stop();
      await blobs.close();
      db.$client.close();
    },
  };
}
