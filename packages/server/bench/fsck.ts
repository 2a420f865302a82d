/**
 * fsck memory bench (issue 11): peak resident memory and time of `runFsck` (src/ops/fsck.ts) over
 * a SQLite database of N files (one 1,000-byte chunk each) and a blob store that holds exactly
 * their chunk objects (an in-process stand-in whose listing is the N keys and whose `size` answers
 * 1,000, so only fsck's own memory and the database differ between runs).
 *
 *   bun bench/fsck.ts [--files 200000] [--root DIR] [--out bench/results/fsck.json]
 *
 * `--root` runs the `src/` of another checkout (e.g. the main branch, the baseline: it holds
 * every row in memory). Each measurement runs in a child process of its own; the figure is its
 * peak RSS (VmHWM) over its RSS before fsck started. Prints a table and writes JSON.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { fileRow, filesUpserter } from "../test/search/support.ts";

const { values } = parseArgs({
  options: {
    files: { type: "string" },
    root: { type: "string" },
    out: { type: "string" },
    child: { type: "boolean" },
    db: { type: "string" },
    keys: { type: "string" },
  },
});
const root = resolve(values.root ?? join(import.meta.dir, ".."));

/** Resident set size now and its peak (VmRSS, VmHWM), bytes. */
async function rss(): Promise<{ now: number; peak: number }> {
  const status = await Bun.file("/proc/self/status").text();
  const kb = (name: string) =>
    Number(new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, "m").exec(status)?.[1] ?? 0) * 1024;
  return { now: kb("VmRSS"), peak: kb("VmHWM") };
}

if (values.child) {
  // Child: fsck on the prepared database with the stand-in store; prints one JSON line.
  const { loadConfig } = await import(join(root, "src/config/config.ts"));
  const { openMetadataStore } = await import(join(root, "src/db/open.ts"));
  const { runFsck } = await import(join(root, "src/ops/fsck.ts"));
  const { systemClock } = await import(join(root, "src/util/clock.ts"));
  const dir = mkdtempSync(join(tmpdir(), "esync-fsck-child-"));
  const store = await openMetadataStore(loadConfig({ ESYNC_DATA_DIR: dir, ESYNC_DB_PATH: values.db }));
  const keysPath = values.keys as string;
  const blobs = {
    kind: "bench",
    list: async () => (await Bun.file(keysPath).text()).split("\n").filter(Boolean),
    size: async () => 1000,
    delete: async () => {},
  };
  Bun.gc(true);
  const before = await rss();
  const started = performance.now();
  const report = await runFsck({ store, blobs, clock: systemClock }, { repair: false });
  const seconds = (performance.now() - started) / 1000;
  const after = await rss();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  console.log(
    JSON.stringify({ problems: report.problems.length, seconds, baseRss: before.now, peakRss: after.peak }),
  );
  process.exit(0);
}

const n = Number(values.files ?? 200_000);
const dir = mkdtempSync(join(tmpdir(), "esync-fsck-bench-"));
try {
  // The database: migrated by the measured checkout's code, then N files inserted directly.
  const dbPath = join(dir, "esync.sqlite");
  const { loadConfig } = await import(join(root, "src/config/config.ts"));
  const { openMetadataStore } = await import(join(root, "src/db/open.ts"));
  const { sqliteDb } = await import(join(root, "src/db/sqlite/store.ts"));
  const store = await openMetadataStore(loadConfig({ ESYNC_DATA_DIR: dir, ESYNC_DB_PATH: dbPath }));
  const db = sqliteDb(store);
  const upsert = filesUpserter(db);
  const keys: string[] = [];
  db.$client.transaction(() => {
    for (let i = 0; i < n; i++) {
      const row = fileRow(`owner${i % 100}`, { path: `d${i % 1000}/f${i}.bin`, size: 952 });
      row.ciphertextSize = 1000;
      row.chunkSize = 1000;
      upsert(row);
      keys.push(`b/${row.blobId.slice(0, 2)}/${row.blobId}/0.0`);
    }
  })();
  db.$client.exec(
    "INSERT INTO folders (owner, folder_hash, updated_at, file_count, total_bytes) SELECT owner, folder_hash, 0, count(*), sum(size_bytes) FROM files GROUP BY owner, folder_hash ON CONFLICT DO UPDATE SET file_count = excluded.file_count, total_bytes = excluded.total_bytes",
  );
  await store.close();
  const keysPath = join(dir, "keys.txt");
  writeFileSync(keysPath, `${keys.join("\n")}\n`);

  const child = Bun.spawn(
    [process.execPath, import.meta.path, "--child", "--root", root, "--db", dbPath, "--keys", keysPath],
    { stdout: "pipe", stderr: "inherit" },
  );
  const out = await new Response(child.stdout).text();
  if ((await child.exited) !== 0) throw new Error(`child failed: ${out}`);
  const r = JSON.parse(out.trim().split("\n").pop() as string) as {
    problems: number;
    seconds: number;
    baseRss: number;
    peakRss: number;
  };
  const MiB = 1024 * 1024;
  const result = {
    root,
    files: n,
    problems: r.problems,
    seconds: Number(r.seconds.toFixed(2)),
    base_rss_mib: Number((r.baseRss / MiB).toFixed(1)),
    peak_rss_mib: Number((r.peakRss / MiB).toFixed(1)),
    fsck_rss_mib: Number(((r.peakRss - r.baseRss) / MiB).toFixed(1)),
  };
  console.log("root | files | problems | seconds | base RSS MiB | peak RSS MiB | fsck's growth MiB");
  console.log(
    `${root} | ${n} | ${result.problems} | ${result.seconds} | ${result.base_rss_mib} | ${result.peak_rss_mib} | ${result.fsck_rss_mib}`,
  );
  const outPath = values.out ?? join(import.meta.dir, "results", "fsck.json");
  writeFileSync(outPath, `${JSON.stringify(result, null, 2)}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
