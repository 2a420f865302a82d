/**
 * Preloaded by `bun test` (bunfig.toml `[test] preload`):
 * - the per-test timeout of bunfig.toml (10 min: end-to-end tests start real servers and move
 *   hundreds of MiB on a shared machine), set here too because this Bun does not apply the
 *   bunfig `timeout` key and stops such tests at its default 5 s;
 * - removes the suite's temporary directories (`tmp.ts`) once every test file has run.
 */
import { afterAll, setDefaultTimeout } from "bun:test";
import { removeTempDirs } from "./tmp.ts";

setDefaultTimeout(600_000);
afterAll(removeTempDirs);
