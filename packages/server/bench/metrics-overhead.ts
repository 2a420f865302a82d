/**
 * Metrics overhead bench (issue 13): the CPU time the metrics add to each request, measured in
 * process (no sockets, so the machine's other load blurs it less than the end-to-end upload
 * bench does). Two apps on in-memory SQLite and a temporary disk store, one with a `Metrics`
 * registry and one without (`ESYNC_METRICS=off`), serve the same workload in alternating rounds:
 *
 * - `GET /healthz`: nothing but the per-request instrumentation (request id, access log to a
 *   discarding sink, HTTP metrics), so the difference is the metrics' cost per request;
 * - chunk PUTs of `--chunk-size` (default 1 MiB) into open sessions: the per-chunk cost of the
 *   metrics (HTTP counters and histograms, chunk PUT histogram, the blob store decorator).
 *
 *   bun bench/metrics-overhead.ts [--rounds 7] [--requests 2000] [--chunks 64] [--chunk-size 1MiB] [--out FILE]
 *
 * Reports the median over rounds of µs per request / per chunk, with and without metrics, and
 * the difference. Baseline: the same app without metrics, in the same run.
 * Prints a table and writes JSON to bench/results/metrics-overhead-<time>.json (or `--out`).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createApp } from "../src/app.ts";
import { loadConfig } from "../src/config/config.ts";
import { openSqliteStore } from "../src/db/sqlite/store.ts";
import { Metrics } from "../src/metrics/metrics.ts";
import { createBlobStore } from "../src/storage/index.ts";
import { ManualClock } from "../src/util/clock.ts";
import { createLogger } from "../src/util/log.ts";
import { makeManifest, newUser, randomCiphertext } from "../test/support/fixtures.ts";

const { values: flags } = parseArgs({
  options: {
    rounds: { type: "string", default: "7" },
    requests: { type: "string", default: "2000" },
    chunks: { type: "string", default: "64" },
    "chunk-size": { type: "string", default: "1MiB" },
    out: { type: "string" },
  },
});
const UNITS: Record<string, number> = { "": 1, B: 1, KiB: 1024, MiB: 1024 ** 2 };
function size(s: string): number {
  const m = /^(\d+)(B|KiB|MiB)?$/.exec(s);
  if (!m) throw new Error(`bad size: ${s}`);
  return Number(m[1]) * (UNITS[m[2] ?? ""] ?? 1);
}
const ROUNDS = Number(flags.rounds);
const REQUESTS = Number(flags.requests);
const CHUNKS = Number(flags.chunks);
const CHUNK = size(flags["chunk-size"]!);

function build(withMetrics: boolean) {
  const dir = mkdtempSync(join(tmpdir(), "esync-mbench-"));
  const config = loadConfig({
    ESYNC_DATA_DIR: dir,
    ESYNC_DB_PATH: ":memory:",
    ESYNC_OPENAPI: "0",
    ESYNC_DISK_FSYNC: "off",
    ESYNC_MAX_SESSIONS_PER_USER: "100000",
  });
  const store = openSqliteStore(config.dbPath);
  const blobs = createBlobStore(config);
  const log = createLogger("info", () => {});
  const metrics = withMetrics ? new Metrics() : undefined;
  const { handle } = createApp({ config, store, blobs, clock: new ManualClock(), log, metrics });
  return {
    handle,
    async close() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const user = newUser();
const chunk = randomCiphertext(CHUNK);

/** µs per `GET /healthz`. */
async function probes(app: ReturnType<typeof build>): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < REQUESTS; i++)
    await (await app.handle(new Request("http://127.0.0.1/healthz"))).arrayBuffer();
  return ((performance.now() - started) * 1000) / REQUESTS;
}

/** µs per chunk PUT (one session of `CHUNKS` chunks, sequential; open and finalize not timed). */
async function chunks(app: ReturnType<typeof build>, round: number): Promise<number> {
  const ct = Buffer.concat(Array.from({ length: CHUNKS }, () => chunk));
  const manifest = makeManifest({
    owner: user.address,
    ciphertext: ct,
    path: `bench/${round}-${Math.random()}`,
  });
  const open = await app.handle(
    new Request("http://127.0.0.1/upload/session", {
      method: "POST",
      headers: { authorization: user.auth, "content-type": "application/json" },
      body: JSON.stringify({ manifest, chunk_count: CHUNKS, chunk_size: CHUNK, ciphertext_size: ct.length }),
    }),
  );
  const sid = ((await open.json()) as { Success: { session_id: string } }).Success.session_id;
  const started = performance.now();
  for (let i = 0; i < CHUNKS; i++) {
    const r = await app.handle(
      new Request(`http://127.0.0.1/upload/session/${sid}/chunk/${i}`, {
        method: "PUT",
        headers: { authorization: user.auth, "content-length": String(CHUNK) },
        body: chunk as BodyInit,
      }),
    );
    if (r.status !== 200) throw new Error(`chunk PUT answered ${r.status}: ${await r.text()}`);
  }
  return ((performance.now() - started) * 1000) / CHUNKS;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
};

const on = build(true);
const off = build(false);
const samples = {
  probe: { on: [] as number[], off: [] as number[] },
  chunk: { on: [] as number[], off: [] as number[] },
};
await probes(on);
await probes(off);
for (let r = 0; r < ROUNDS; r++) {
  // Alternate which goes first, so that drift on a shared machine hits both alike.
  const order =
    r % 2 === 0
      ? ([
          ["on", on],
          ["off", off],
        ] as const)
      : ([
          ["off", off],
          ["on", on],
        ] as const);
  for (const [name, app] of order) {
    samples.probe[name].push(await probes(app));
    samples.chunk[name].push(await chunks(app, r));
  }
}
await on.close();
await off.close();

const rows = (["probe", "chunk"] as const).map((k) => {
  const a = median(samples[k].on);
  const b = median(samples[k].off);
  return { workload: k, onUs: a, offUs: b, diffUs: a - b, diffPct: ((a - b) / b) * 100 };
});
console.log(`metrics overhead, in process, median of ${ROUNDS} alternating rounds (chunk ${CHUNK} bytes)`);
console.log("| workload | with metrics µs | without µs | difference µs | difference % |");
console.log("|---|---:|---:|---:|---:|");
for (const r of rows)
  console.log(
    `| ${r.workload === "probe" ? "GET /healthz" : "chunk PUT"} | ${r.onUs.toFixed(1)} | ${r.offUs.toFixed(1)} | ${r.diffUs.toFixed(1)} | ${r.diffPct.toFixed(1)} |`,
  );
const out =
  flags.out ??
  join(import.meta.dir, "results", `metrics-overhead-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
mkdirSync(join(out, ".."), { recursive: true });
writeFileSync(
  out,
  JSON.stringify(
    {
      bench: "metrics-overhead",
      at: new Date().toISOString(),
      params: { ROUNDS, REQUESTS, CHUNKS, CHUNK },
      samples,
      rows,
    },
    null,
    2,
  ),
);
console.log(`wrote ${out}`);
