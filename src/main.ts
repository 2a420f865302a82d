/**
 * @module main
 * Entry point: `bun run src/main.ts`. Reads the configuration from the environment (see README),
 * starts the server and stops it cleanly on SIGINT/SIGTERM.
 */
import { ConfigError, loadConfig } from "./config/config.ts";
import { startServer } from "./server.ts";

try {
  const config = loadConfig();
  const server = await startServer(config);
  console.log(`esync listening on ${server.url} (storage: ${config.storage}, data: ${config.dataDir})`);
  const shutdown = async () => {
    await server.stop();
    process.exit(0);
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
} catch (e) {
  if (e instanceof ConfigError) console.error(`esync: configuration error: ${e.message}`);
  else console.error(`esync: failed to start: ${(e as Error).message}`);
  process.exit(1);
}
