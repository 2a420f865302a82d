/**
 * @module server
 * Starts a complete server from a `Config`: database (migrated), blob store (checked), app,
 * start-up recovery (sessions left finalizing, spool files), the background sweeper, the
 * HTTP listener (node:http through @whatwg-node/server by default, or Bun.serve), the metrics
 * listener when `ESYNC_METRICS_PORT` is set, and the graceful shutdown (`RunningServer.shutdown`).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createServerAdapter } from "@whatwg-node/server";
import { createApp } from "./app.ts";
import { walletCryptoReady } from "./auth/wallet-token.ts";
import type { Config } from "./config/config.ts";
import { openDb } from "./db/client.ts";
import { NodeBodyRequest } from "./http/node-body.ts";
import { serveMetrics } from "./metrics/metrics.controller.ts";
import { Metrics } from "./metrics/metrics.ts";
import { createBlobStore } from "./storage/index.ts";
import { systemClock } from "./util/clock.ts";
import { createLogger, type Logger } from "./util/log.ts";
import { Sweeper } from "./workers/sweeper.ts";

/** A running server. */
export interface RunningServer {
  /** Base URL, e.g. `http://127.0.0.1:8080`. */
  url: string;
  port: number;
  /** Port of the separate metrics listener, or null when `/metrics` is on the public port or off. */
  metricsPort: number | null;
  /** Stops at once: closes every connection, stops the sweeper, closes the store and database. */
  stop(): Promise<void>;
  /**
   * Graceful stop: `/readyz` answers 503 at once, the listener stops accepting, in-flight requests
   * get up to `graceSeconds` to finish (then their connections are closed), then the sweeper
   * stops and the store and database are closed.
   * @returns whether every in-flight request finished within the grace period.
   */
  shutdown(graceSeconds: number): Promise<boolean>;
}

/** A listening HTTP server: its port and how to close it. */
interface Listener {
  port: number;
  /** Stops accepting; `force` closes active connections, else resolves when in-flight requests end. */
  close(force: boolean): Promise<void>;
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
    return { port: server.port ?? config.port, close: (force) => server.stop(force) };
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
    close: (force) =>
      new Promise<void>((resolve) => {
        // Kept-alive connections go as soon as they are idle, so the close ends with the last request.
        const idle = setInterval(() => server.closeIdleConnections(), 100);
        server.close(() => {
          clearInterval(idle);
          resolve();
        });
        if (force) server.closeAllConnections();
        else server.closeIdleConnections();
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
  const metrics = config.metrics ? new Metrics() : undefined;
  const { services, handle } = createApp({ config, db, blobs, clock: systemClock, log, metrics });
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
  const listener = await listen(config, handle);
  const metricsServer =
    metrics && config.metricsPort !== null ? serveMetrics(metrics, config.host, config.metricsPort) : null;
  const url = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${listener.port}`;
  log.info("server.started", {
    url,
    engine: config.httpEngine,
    storage: config.storage,
    data_dir: config.dataDir,
    db: config.dbPath,
    metrics_port: metricsServer?.port ?? null,
  });
  const release = async () => {
    await sweeper.stop();
    await metricsServer?.stop(true);
    await blobs.close();
    db.$client.close();
  };
  return {
    url,
    port: listener.port,
    metricsPort: metricsServer?.port ?? null,
    async stop() {
      await listener.close(true);
      await release();
    },
    async shutdown(graceSeconds) {
      services.readiness.drain();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const drained = await Promise.race([
        listener.close(false).then(() => true),
        new Promise<false>((resolve) => {
          timer = setTimeout(() => resolve(false), graceSeconds * 1000);
        }),
      ]);
      clearTimeout(timer);
      if (!drained) await listener.close(true);
      await release();
      return drained;
    },
  };
}
