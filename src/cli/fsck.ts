#!/usr/bin/env bun
/**
 * @module cli/fsck
 * `bun run fsck [--repair] [--json]`: checks the metadata database against the blob store
 * (`src/ops/fsck.ts` lists the problem kinds). Configuration comes from the same `ESYNC_*`
 * environment as the server (data directory, database path, storage backend, S3 settings).
 *
 * Output: a line per problem and a summary, or with `--json` exactly one JSON document
 * `{"ok": boolean, "problems": [{"kind", "detail", ...}], "repaired": number}` (plus `"error"`
 * when it could not run). Exit status: 0 when no problem was found (or, with `--repair`, every
 * one was repaired), 1 when problems remain, 2 when it could not run.
 */
import { existsSync } from "node:fs";
import { Command } from "commander";
import { ConfigError, loadConfig } from "../config/config.ts";
import { openDb } from "../db/client.ts";
import { runFsck } from "../ops/fsck.ts";
import type { BlobStore } from "../storage/blob-store.ts";
import { createBlobStore } from "../storage/index.ts";
import { systemClock } from "../util/clock.ts";

const program = new Command("fsck")
  .description("Check the esync database against its blob store (dry run unless --repair)")
  .option("--repair", "delete orphan objects, recompute folder counters, release stuck sessions")
  .option("--json", "print one JSON document")
  .parse(process.argv);
const opts = program.opts<{ repair?: boolean; json?: boolean }>();

let blobs: BlobStore | null = null;
let code: number;
try {
  const config = loadConfig();
  if (config.dbPath !== ":memory:" && !existsSync(config.dbPath))
    throw new Error(`no database at ${config.dbPath} (set ESYNC_DATA_DIR or ESYNC_DB_PATH)`);
  const db = openDb(config.dbPath);
  blobs = createBlobStore(config);
  const report = await runFsck(
    { db, blobs, clock: systemClock },
    { repair: opts.repair ?? false, sessionTtlSeconds: config.sessionTtlSeconds },
  );
  if (opts.json) console.log(JSON.stringify(report));
  else {
    for (const p of report.problems)
      console.log(`${p.repaired ? "repaired" : "problem "}  ${p.kind}  ${p.detail}`);
    const left = report.problems.length - report.repaired;
    console.log(
      report.problems.length === 0
        ? "fsck: no problems found"
        : `fsck: ${report.problems.length} problem(s), ${report.repaired} repaired, ${left} remaining${opts.repair ? "" : " (dry run; --repair to repair)"}`,
    );
  }
  code = report.ok ? 0 : 1;
} catch (e) {
  const message =
    e instanceof ConfigError ? `configuration error: ${e.message}` : String((e as Error)?.message ?? e);
  if (opts.json) console.log(JSON.stringify({ ok: false, problems: [], repaired: 0, error: message }));
  console.error(`fsck: ${message}`);
  code = 2;
}
await blobs?.close().catch(() => {});
process.exit(code);
