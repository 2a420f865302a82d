/**
 * File-commit bench (issue 15): the cost of the metadata transaction every write ends in
 * (`FilesService.commit`: revision check, quota check, row upsert and the triggers that keep the
 * search index, folder counters, account usage and summary counters), without blob I/O. Inserts
 * N new files into an account that already holds them, then writes a new revision of each.
 *
 *   bun bench/commit.ts [--files 20000] [--concurrency 1] [--owners C] [--database-url postgres://…] [--out bench/results/commit.json]
 *
 * With `--concurrency C`, C writers commit at once, as concurrent requests do; file i belongs to
 * account i mod `--owners` (default C: each writer its own account; `--owners 1`: one account
 * uploading C files at a time, as `bench/small-files.ts` does). On SQLite concurrent commits share
 * group transactions (`FilesService.commit`). The figures are wall-clock µs per commit over all
 * writers, and the process's CPU µs per commit. On SQLite it also counts the WAL frames (pages)
 * written per commit (automatic checkpoints off during the run; the WAL is truncated between
 * the two phases).
 * Runs on a SQLite file in a temporary directory (WAL, as the server), or with `--database-url`
 * on that PostgreSQL database (migrated first; it should be empty), prints µs per operation and
 * writes JSON.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { Manifest } from "@esync/protocol/manifest.ts";
import { loadConfig } from "../src/config/config.ts";
import { openMetadataStore } from "../src/db/open.ts";
import { sqliteDb } from "../src/db/sqlite/store.ts";
import { buildServices } from "../src/services.ts";
import { createBlobStore } from "../src/storage/index.ts";
import { systemClock } from "../src/util/clock.ts";
import { silentLogger } from "../src/util/log.ts";

const { values } = parseArgs({
  options: {
    files: { type: "string" },
    concurrency: { type: "string" },
    owners: { type: "string" },
    out: { type: "string" },
    "database-url": { type: "string" },
  },
});
const n = Number(values.files ?? 20000);
const c = Math.max(1, Number(values.concurrency ?? 1));
const owners = Math.max(1, Number(values.owners ?? c));
const dir = mkdtempSync(join(tmpdir(), "esync-commit-bench-"));
try {
  const config = loadConfig({
    ESYNC_DATA_DIR: dir,
    ESYNC_DISK_FSYNC: "off",
    ESYNC_DEFAULT_QUOTA_BYTES: String(2 ** 50),
    ...(values["database-url"] ? { ESYNC_DATABASE_URL: values["database-url"] } : {}),
  });
  const store = await openMetadataStore(config);
  const s = buildServices({
    config,
    store,
    blobs: createBlobStore(config),
    clock: systemClock,
    log: silentLogger,
  });
  const owner = "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY";
  const names = ["IMG_%.jpg", "report %.pdf", "notes %.txt", "song %.mp3", "main%.ts", "archive%.zip"];
  const manifest = (i: number, seq: number, base: Uint8Array | null): Manifest => {
    const pathHash = new Uint8Array(32);
    new DataView(pathHash.buffer).setUint32(0, i);
    const name = names[i % names.length]!.replace("%", String(i));
    return {
      ss58Address: owners === 1 ? owner : `${owner}-${i % owners}`,
      folderHash: "0123456789abcdef",
      ciphertextHash: "0".repeat(64),
      sizeBytes: 1000 + i + seq,
      timestamp: 0,
      signature: new Uint8Array(64),
      signingKey: new Uint8Array(32),
      pathHash,
      saltedHash: new Uint8Array(32),
      revisionSeq: seq,
      baseRevisionId: base,
      encryptedPath: new Uint8Array(40),
      fileName: name,
      relativePath: `dir${i % 50}/${name}`,
      source: i % 3 === 0 ? "desktop" : null,
      attributes: null,
    };
  };
  const blob = (i: number) => ({
    blobId: `b${i}`,
    chunkSize: 2048,
    chunkCount: 1,
    size: 2048,
    gens: ["0"],
    ciphertextHash: "0".repeat(64),
    chunkHashes: null,
  });
  const sqlite = sqliteDb(store)?.$client ?? null;
  sqlite?.run("PRAGMA wal_autocheckpoint = 0");
  /** WAL frames written since the last call (SQLite; null on PostgreSQL), the WAL then emptied. */
  const walFrames = (): number | null => {
    if (!sqlite) return null;
    const r = sqlite.query<{ log: number }, []>("PRAGMA wal_checkpoint(PASSIVE)").get();
    sqlite.run("PRAGMA wal_checkpoint(TRUNCATE)");
    return r?.log ?? null;
  };
  /** CPU µs of this process since `from` (`process.cpuUsage`). */
  const cpuSince = (from: NodeJS.CpuUsage) => {
    const d = process.cpuUsage(from);
    return d.user + d.system;
  };
  const revisions: Uint8Array[] = [];
  /** Runs `fn(i)` for every i < n, `c` at a time, each writer on its own account's files. */
  const all = (fn: (i: number) => Promise<void>) =>
    Promise.all(
      Array.from({ length: c }, async (_, w) => {
        for (let i = w; i < n; i += c) await fn(i);
      }),
    );
  walFrames();
  let t0 = performance.now();
  let cpu0 = process.cpuUsage();
  await all(async (i) => {
    revisions[i] = Uint8Array.from((await s.files.commit(manifest(i, 1, null), blob(i))).revision_id);
  });
  const insertUs = ((performance.now() - t0) * 1000) / n;
  const insertCpuUs = cpuSince(cpu0) / n;
  const insertPages = (walFrames() ?? Number.NaN) / n;
  t0 = performance.now();
  cpu0 = process.cpuUsage();
  await all(async (i) => {
    await s.files.commit(manifest(i, 2, revisions[i]!), blob(n + i));
  });
  const reviseUs = ((performance.now() - t0) * 1000) / n;
  const reviseCpuUs = cpuSince(cpu0) / n;
  const revisePages = (walFrames() ?? Number.NaN) / n;
  await store.close();
  const pages = (p: number) => (Number.isNaN(p) ? "" : `, ${p.toFixed(1)} WAL pages`);
  console.log(
    `${store.dialect}, files ${n}, concurrency ${c}, owners ${owners}: ` +
      `new file ${insertUs.toFixed(1)} µs (CPU ${insertCpuUs.toFixed(1)} µs${pages(insertPages)}), ` +
      `new revision ${reviseUs.toFixed(1)} µs (CPU ${reviseCpuUs.toFixed(1)} µs${pages(revisePages)})`,
  );
  const out = values.out ?? "bench/results/commit.json";
  writeFileSync(
    out,
    `${JSON.stringify(
      {
        database: store.dialect,
        files: n,
        concurrency: c,
        owners,
        insert_us: insertUs,
        insert_cpu_us: insertCpuUs,
        insert_wal_pages: Number.isNaN(insertPages) ? null : insertPages,
        revise_us: reviseUs,
        revise_cpu_us: reviseCpuUs,
        revise_wal_pages: Number.isNaN(revisePages) ? null : revisePages,
        at: new Date().toISOString(),
      },
      null,
      2,
    )}\n`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
