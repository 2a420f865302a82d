/**
 * @module server/server
 * Starts a complete server from a `Config`: metadata store (migrated), blob store (checked), app,
 * start-up cleanup (spool files), the background sweeper (which also returns sessions whose
 * finalize lease ran out, on this node or another), the HTTP
 * listener (Bun.serve), the metrics listener when `ESYNC_METRICS_PORT` is set, and the graceful
 * shutdown (`RunningServer.shutdown`). The listener also owns the connection-level defences of
 * issue 10: the header timeout, body timeouts handed to `src/http/body.ts`, closing the connection
 * of an error response whose body was not read, and routing requests with short `Host` headers.
 */
import { readFileSync } from "node:fs";
import { blake3Backend, blake3FallbackWarning } from "@esync/protocol/blake3.ts";
import type { Server } from "bun";
import { createApp } from "./app.ts";
import { walletCryptoReady } from "./auth/wallet-token.ts";
import type { Config } from "./config/config.ts";
import { describeDatabase, openMetadataStore } from "./db/open.ts";
import { answerThenDrain, DRAIN_BYTES, dropUnread, mustClose, setBodyPolicy } from "./http/body.ts";
import { setPeerAddress } from "./http/peer.ts";
import { registerTimer, timerClaimed } from "./http/response-timer.ts";
import { serveMetrics } from "./metrics/metrics.controller.ts";
import { Metrics } from "./metrics/metrics.ts";
import { MAX_CHUNK_BYTES } from "./sessions/session.engine.ts";
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

/**
 * `request` with a URL whose path the router can find. Bun builds `request.url` from the `Host`
 * header, and Elysia looks for the path from index 11 on (`url.indexOf("/", 11)`): with a host of
 * three characters or fewer (`Host: api`, `a.b`, `x:1`) that lands past the path's first slash,
 * and with an empty `Host` Bun gives only the path (`/health`, no scheme), so every route would
 * answer 404 or an error (issue 10, defect 4). Such requests get the same path and query under
 * `http://localhost`; every other request is passed on untouched.
 */
export function routable(request: Request): Request {
  const url = request.url;
  const scheme = url.indexOf("://");
  const pathStart = scheme === -1 ? 0 : url.indexOf("/", scheme + 3);
  if (scheme !== -1 && pathStart >= 11) return request;
  const path = pathStart === -1 ? "" : url.slice(pathStart);
  return new Request(`http://localhost${path.startsWith("/") ? path : `/${path}`}`, request);
}

/**
 * The soft and hard limits on open files of this process, from `/proc/self/limits` (null when
 * unreadable). Bun raises the soft limit to the hard one at start-up; the server logs both.
 */
function openFileLimits(): { soft: string; hard: string } | null {
  try {
    const line = readFileSync("/proc/self/limits", "utf8")
      .split("\n")
      .find((l) => l.startsWith("Max open files"));
    const m = line && /Max open files\s+(\S+)\s+(\S+)/.exec(line);
    return m ? { soft: m[1]!, hard: m[2]! } : null;
  } catch {
    return null;
  }
}

/**
 * Listens with Bun.serve, sending every request to `handle`.
 *
 * Timeouts: Bun's `idleTimeout` (the header timeout) closes a connection that sends no complete
 * request headers, or sits idle between requests, for `headerTimeoutSeconds`. While a handler runs
 * it is switched off for that request (Bun's timer is not reset by body bytes, so a long upload
 * would be cut however fast it streams); request bodies are timed by `src/http/body.ts` instead
 * (idle timeout and minimum rate), and the timer is switched back on for writing the response
 * (a download body keeps it armed while it is sent, since Bun does not reset it as bytes go out:
 * src/http/response-timer.ts).
 */
/**
 * Bun.serve's `maxRequestBodySize` for `config`, bytes: a backstop only, since every route
 * enforces its own, smaller limit while the body streams. It leaves room for the largest route
 * limit (a single-shot upload with its multipart framing, or a chunk) plus the drain of a refused
 * body (`DRAIN_BYTES`, src/http/body.ts) and 4 MiB of pieces in flight: Bun fails a body at this
 * size and the connection then closes mid-drain, with the client's bytes unread, and the reset
 * that follows can destroy the error answer the client has not read yet.
 */
export function requestBodyBackstop(config: Pick<Config, "maxSingleUploadBytes">): number {
  const MiB = 1024 * 1024;
  const largestRouteLimit = Math.max(config.maxSingleUploadBytes + 2 * MiB, MAX_CHUNK_BYTES + MiB);
  return largestRouteLimit + DRAIN_BYTES + 4 * MiB;
}

function listen(config: Config, handle: (r: Request) => Promise<Response>): Server<undefined> {
  const headerTimeout = config.headerTimeoutSeconds;
  return Bun.serve({
    hostname: config.host,
    port: config.port,
    maxRequestBodySize: requestBodyBackstop(config),
    idleTimeout: headerTimeout,
    async fetch(raw, server) {
      server.timeout(raw, 0);
      const request = routable(raw);
      const peer = server.requestIP(raw);
      if (peer) setPeerAddress(request, peer.address);
      registerTimer(request, {
        set: (seconds) => server.timeout(raw, seconds),
        live: () => server.requestIP(raw) !== null,
        headerTimeoutSeconds: headerTimeout,
        minBytesPerSecond: config.bodyMinBytesPerSecond,
      });
      const response = await handle(request);
      if (response.status >= 400 && mustClose(request) && (raw === request || mustClose(raw))) {
        // Answered before its body was read: answer at once, drain the rest of the body for a
        // bounded time and byte count, then close (src/http/body.ts). The timer stays off while
        // the drain runs (it is bounded itself) and covers writing the rest after it.
        return answerThenDrain(request, response, () => server.timeout(raw, headerTimeout));
      }
      dropUnread(request);
      // Unless a download body took charge of it (src/http/response-timer.ts), the timer covers
      // writing this response and the keep-alive idle after it.
      if (!timerClaimed(request)) server.timeout(raw, headerTimeout);
      return response;
    },
  });
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
  const store = await openMetadataStore(config, log);
  const blobs = createBlobStore(config);
  try {
    await blobs.check();
  } catch (e) {
    await store.close();
    throw new Error(`blob store (${config.storage}) unavailable at start-up: ${(e as Error).message}`);
  }
  await walletCryptoReady();
  const metrics = config.metrics ? new Metrics() : undefined;
  const { services, handle } = createApp({ config, store, blobs, clock: systemClock, log, metrics });
  await services.singleUpload.resetSpool();
  if (config.insecureSs58Tokens) {
    log.warn("startup.insecure_tokens", {
      message:
        "ESYNC_INSECURE_SS58_TOKENS is on: a bare SS58 address is accepted as a bearer token. Never use this in production.",
    });
  }
  const blake3Warning = blake3FallbackWarning();
  if (blake3Warning) {
    log.warn("startup.blake3_fallback", { message: blake3Warning });
    console.error(`esync: WARNING: ${blake3Warning}`);
  }
  const sweeper = new Sweeper(services);
  sweeper.start();
  setBodyPolicy({
    idleMs: config.bodyIdleTimeoutSeconds * 1000,
    minBytesPerSecond: config.bodyMinBytesPerSecond,
    rateGraceMs: config.bodyRateGraceSeconds * 1000,
    rateWindowMs: config.bodyRateWindowSeconds * 1000,
  });
  const listener = listen(config, handle);
  const port = listener.port ?? config.port;
  const metricsServer =
    metrics && config.metricsPort !== null ? serveMetrics(metrics, config.host, config.metricsPort) : null;
  const url = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${port}`;
  const files = openFileLimits();
  if (files && files.soft !== files.hard)
    log.warn("startup.open_files", {
      message: `the soft open-file limit ${files.soft} is below the hard limit ${files.hard}`,
    });
  log.info("server.started", {
    url,
    storage: config.storage,
    data_dir: config.dataDir,
    db: describeDatabase(config),
    metrics_port: metricsServer?.port ?? null,
    open_files_soft_limit: files?.soft ?? "unknown",
    open_files_hard_limit: files?.hard ?? "unknown",
    blake3: blake3Backend(),
  });
  const release = async () => {
    await sweeper.stop();
    await metricsServer?.stop(true);
    await blobs.close();
    await store.close();
  };
  return {
    url,
    port,
    metricsPort: metricsServer?.port ?? null,
    async stop() {
      await listener.stop(true);
      await release();
    },
    async shutdown(graceSeconds) {
      services.readiness.drain();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const drained = await Promise.race([
        listener.stop(false).then(() => true),
        new Promise<false>((resolve) => {
          timer = setTimeout(() => resolve(false), graceSeconds * 1000);
        }),
      ]);
      clearTimeout(timer);
      if (!drained) await listener.stop(true);
      await release();
      return drained;
    },
  };
}
