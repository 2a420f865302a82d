#!/usr/bin/env bun
/**
 * @module server/admin/fsck
 * `bun run fsck [--repair] [--json]`: checks the metadata database against the blob store
 * (`src/ops/fsck.ts` lists the problem kinds). Configuration comes from the same `ESYNC_*`
 * environment as the server (data directory, database path, storage backend, S3 settings).
 *
 * Output: a line per problem and a summary, or with `--json` exactly one JSON document
 * `{"ok": boolean, "problems": [{"kind", "detail", ...}], "repaired": number}` (plus `"error"`
 * when it could not run). Exit status: 0 when no problem was found (or, with `--repair`, every
 * one was repaired), 1 when problems remain, 2 when it could not run.
 */
import { Command } from "commander";
import { ConfigError, loadConfig } from "../config/config.ts";
import { fsckReportLines, runFsckWithConfig } from "../ops/fsck.ts";

const program = new Command("fsck")
  .description("Check the esync database against its blob store (dry run unless --repair)")
  .option("--repair", "delete orphan objects, recompute folder counters, release stuck sessions")
  .option("--json", "print one JSON document")
  .parse(process.argv);
const opts = program.opts<{ repair?: boolean; json?: boolean }>();

let code: number;
try {
  const repair = opts.repair ?? false;
  const report = await runFsckWithConfig(loadConfig(), repair);
  if (opts.json) console.log(JSON.stringify(report));
  else {
    const { problems, summary } = fsckReportLines(report, repair);
    for (const line of problems) console.log(line);
    console.log(`fsck: ${summary}`);
  }
  code = report.ok ? 0 : 1;
} catch (e) {
  const message =
    e instanceof ConfigError ? `configuration error: ${e.message}` : String((e as Error)?.message ?? e);
  if (opts.json) console.log(JSON.stringify({ ok: false, problems: [], repaired: 0, error: message }));
  console.error(`fsck: ${message}`);
  code = 2;
}
process.exit(code);
