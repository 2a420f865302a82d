/**
 * @module server
 * Starts a complete server from a `Config`: database (migrated), blob store (checked), app,
 * start-up recovery (sessions left finalizing, spool files), the background sweeper, and the
 * HTTP listener (node:http through @whatwg-node/server by default, or Bun.serve).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createServerAdapter } from "@whatwg-node/server";
import { createApp } from "./app.ts";
import { walletCryptoReady } from "./auth/wallet-token.ts";
import type { Config } from "./config/config.ts";
import { openDb } from "./db/client.ts";
import { NodeBodyRequest } from "./http/node-body.ts";
import { createBlobStore } from "./storage/index.ts";
import { systemClock } from "./util/clock.ts";
import { createLogger, type Logger } from "./util/log.ts";
import { Sweeper } from "./workers/sweeper.ts";

/** A running server. */
export interface RunningServer {
  /** Base URL, e.g. `http://127.0.0.1:8080`. */
  url: string;
  port: number;
  /** Stops accepting requests, stops the sweeper, closes the store and database. */
  stop(): Promise<void>;
}

/** A listening HTTP server: its port and how to close it. */
interface Listener {
  port: number;
  close(): Promise<void>;
}

/** Listens with the configured engine, sending every request to `handle`. */
async function listen(config: Config, handle: (r: Request) => Promise<Response>): Promise<Listener> {
  if (config.httpEngine === "bun") {
    const server = Bun.serve({
      hostname: config.host,
      port: config.port,
      maxRequestBodySize: Math.max(config.maxSingleUploadBytes + 1024 * 1024, 17 * 1024 * 1024),
      idleTimeout: 255,
      fetch: handle,
    });
    return { port: server.port ?? config.port, close: () => server.stop(true) };
  }
  // Bodies are limited by the handlers (exact chunk lengths, single-upload cap); a large upload
  // on a slow link must not be cut by node's default 300 s request timeout. Request bodies are
  // read through `NodeBodyRequest` (no copy of every byte, see src/http/node-body.ts).
  const server = http.createServer(
    { requestTimeout: 0, keepAliveTimeout: 65_000 },
    createServerAdapter(handle, { fetchAPI: { Request: NodeBodyRequest } }),
  );
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * Starts the service.
 * @throws when the database cannot be opened or migrated, the blob store is unreachable, or the
 *   port cannot be bound.
 */
export async function startServer(
  config: Config,
  log: Logger = createLogger(config.logLevel),
): Promise<RunningServer> {
  const db = openDb(config.dbPath, log);
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
    log.warn("startup.insecure_tokens", {
      message:
        "ESYNC_INSECURE_SS58_TOKENS is on: a bare SS58 address is accepted as a bearer token. Never use this in production.",
    });
  }
  const sweeper = new Sweeper(services);
  sweeper.start();
  const listener = await listen(config, (req) => app.handle(req));
  const url = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${listener.port}`;
  log.info("server.started", {
    url,
    engine: config.httpEngine,
    storage: config.storage,
    data_dir: config.dataDir,
    db: config.dbPath,
  });
  return {
    url,
    port: listener.port,
    async stop() {
      await listener.close();
      await sweeper.stop();
      await blobs.close();
      db.$client.close();
    },
  };
}
