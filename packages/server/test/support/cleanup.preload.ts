/**
 * Preloaded by `bun test` (bunfig.toml `[test] preload`): removes the suite's temporary
 * directories (`tmp.ts`) once every test file has run.
 */
import { afterAll } from "bun:test";
import { removeTempDirs } from "./tmp.ts";

afterAll(removeTempDirs);
