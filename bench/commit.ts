/**
 * File-commit bench (issue 15): the cost of the metadata transaction every write ends in
 * (`FilesService.commit`: revision check, quota check, row upsert and the triggers that keep the
 * search index, folder counters, account usage and summary counters), without blob I/O. Inserts
 * N new files into an account that already holds them, then writes a new revision of each.
 *
 *   bun bench/commit.ts [--files 20000] [--concurrency 1] [--database-url postgres://…] [--out bench/results/commit.json]
 *
 * With `--concurrency C`, C writers of C different accounts commit at once (file i belongs to
 * account i mod C), as requests of several users do; the figures are then wall-clock µs per
 * commit over all writers.
 * Runs on a SQLite file in a temporary directory (WAL, as the server), or with `--database-url`
 * on that PostgreSQL database (migrated first; it should be empty), prints µs per operation and
 * writes JSON.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadConfig } from "../src/config/config.ts";
import { openMetadataStore } from "../src/db/open.ts";
import type { Manifest } from "../src/manifest/manifest.ts";
import { buildServices } from "../src/services.ts";
import { createBlobStore } from "../src/storage/index.ts";
import { systemClock } from "../src/util/clock.ts";
import { silentLogger } from "../src/util/log.ts";

const { values } = parseArgs({
  options: {
    files: { type: "string" },
    concurrency: { type: "string" },
    out: { type: "string" },
    "database-url": { type: "string" },
  },
});
const n = Number(values.files ?? 20000);
const c = Math.max(1, Number(values.concurrency ?? 1));
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
      ss58Address: c === 1 ? owner : `${owner}-${i % c}`,
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
  const revisions: Uint8Array[] = [];
  /** Runs `fn(i)` for every i < n, `c` at a time, each writer on its own account's files. */
  const all = (fn: (i: number) => Promise<void>) =>
    Promise.all(
      Array.from({ length: c }, async (_, w) => {
        for (let i = w; i < n; i += c) await fn(i);
      }),
    );
  let t0 = performance.now();
  await all(async (i) => {
    revisions[i] = Uint8Array.from((await s.files.commit(manifest(i, 1, null), blob(i))).revision_id);
  });
  const insertUs = ((performance.now() - t0) * 1000) / n;
  t0 = performance.now();
  await all(async (i) => {
    await s.files.commit(manifest(i, 2, revisions[i]!), blob(n + i));
  });
  const reviseUs = ((performance.now() - t0) * 1000) / n;
  await store.close();
  console.log(
    `${store.dialect}, files ${n}, concurrency ${c}: new file ${insertUs.toFixed(1)} µs, new revision ${reviseUs.toFixed(1)} µs`,
  );
  const out = values.out ?? "bench/results/commit.json";
  writeFileSync(
    out,
    `${JSON.stringify({ database: store.dialect, files: n, concurrency: c, insert_us: insertUs, revise_us: reviseUs, at: new Date().toISOString() }, null, 2)}\n`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
