/**
 * @module server/main
 * Entry point: `bun run src/main.ts`. Reads the configuration from the environment (see docs/operator-guide.md#configuration),
 * starts the server, and shuts it down gracefully on SIGTERM or SIGINT: `/readyz` answers 503,
 * the listener stops accepting, in-flight requests get `ESYNC_SHUTDOWN_GRACE_SECONDS` to finish,
 * then the sweeper stops, the database is closed and the process exits 0. A second signal during
 * the shutdown exits at once (code 128 + signal number).
 */
import { ConfigError, loadConfig } from "./config/config.ts";
import { startServer } from "./server.ts";
import { createLogger } from "./util/log.ts";

const SIGNAL_NUMBERS: Record<string, number> = { SIGINT: 2, SIGTERM: 15 };

try {
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  const server = await startServer(config, log);
  console.log(`esync listening on ${server.url} (storage: ${config.storage}, data: ${config.dataDir})`);
  let stopping = false;
  const onSignal = async (signal: NodeJS.Signals) => {
    if (stopping) {
      log.warn("server.shutdown_forced", { signal });
      process.exit(128 + (SIGNAL_NUMBERS[signal] ?? 0));
    }
    stopping = true;
    const started = performance.now();
    log.info("server.shutting_down", { signal, grace_seconds: config.shutdownGraceSeconds });
    try {
      const drained = await server.shutdown(config.shutdownGraceSeconds);
      log.info("server.stopped", {
        signal,
        drained,
        duration_ms: Math.round(performance.now() - started),
      });
      process.exit(0);
    } catch (e) {
      log.error("server.shutdown_failed", { signal, error: e as Error });
      process.exit(1);
    }
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
} catch (e) {
  if (e instanceof ConfigError) console.error(`esync: configuration error: ${e.message}`);
  else console.error(`esync: failed to start: ${(e as Error).message}`);
  process.exit(1);
}
