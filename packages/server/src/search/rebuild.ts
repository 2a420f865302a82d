#!/usr/bin/env bun
/**
 * @module server/search/rebuild
 * `bun run search:rebuild`: rebuilds the search index from the `files` rows of the configured
 * database (`ESYNC_DB_PATH`, or PostgreSQL with `ESYNC_DATABASE_URL`, as the server), with a
 * progress bar on a terminal (a line per 10% otherwise), and clears the index's degraded state
 * (`SearchIndexHealth`) once every file is indexed. The server may keep running: on SQLite it
 * answers through the exact plan until the rebuild ends; on PostgreSQL the counters are recounted
 * and the indexes re-created concurrently.
 *
 * Exit status: 0 when the index is complete afterwards, 1 when it is still degraded (files the
 * index layout cannot take; the reason is printed), 2 when it could not run.
 */
import { SingleBar } from "cli-progress";
import { Command } from "commander";
import { ConfigError, loadConfig } from "../config/config.ts";
import { openMetadataStore, searchIndexOf } from "../db/open.ts";
import type { RebuildProgress, SearchIndex } from "./search-index.ts";

/** Runs `index.rebuild` with progress on stdout; returns the process exit status. */
export async function rebuildWithProgress(index: SearchIndex, interactive: boolean): Promise<number> {
  const before = await index.health();
  console.log(
    `search index (${index.kind}): ${before.state}${before.reason ? ` (${before.reason})` : ""}; rebuilding from files`,
  );
  const bar = interactive ? new SingleBar({ format: "rebuilding [{bar}] {value}/{total} files" }) : null;
  let lastTenth = -1;
  const report = await index.rebuild((p: RebuildProgress) => {
    if (bar) {
      if (p.done === 0) bar.start(p.total, 0);
      bar.setTotal(p.total);
      bar.update(p.done);
      return;
    }
    const tenth = p.total === 0 ? 10 : Math.floor((p.done * 10) / p.total);
    if (tenth !== lastTenth) console.log(`rebuilding: ${p.done}/${p.total} files`);
    lastTenth = tenth;
  });
  bar?.stop();
  console.log(
    `rebuilt: ${report.files} files in ${report.seconds.toFixed(1)} s; index ${report.health.state}${report.health.reason ? ` (${report.health.reason})` : ""}`,
  );
  return report.health.state === "ok" ? 0 : 1;
}

if (import.meta.main) {
  new Command("search:rebuild")
    .description("Rebuild the search index from the files table and clear its degraded state")
    .parse(process.argv);
  let code: number;
  try {
    const store = await openMetadataStore(loadConfig());
    try {
      code = await rebuildWithProgress(searchIndexOf(store), process.stdout.isTTY === true);
    } finally {
      await store.close();
    }
  } catch (e) {
    const message =
      e instanceof ConfigError ? `configuration error: ${e.message}` : String((e as Error)?.message ?? e);
    console.error(`search:rebuild: ${message}`);
    code = 2;
  }
  process.exit(code);
}
