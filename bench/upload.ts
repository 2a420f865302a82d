/**
 * Upload bench (issue 2): N files of S bytes through upload sessions, end to end (open, chunk
 * PUTs with C in flight, finalize), against a real server process.
 *
 *   bun bench/upload.ts [--size 1GiB] [--files 1] [--chunk-size 8MiB] [--concurrency 1,4,8]
 *                       [--repeat 1] [--storage disk|s3] [--fsync persist|object|off]
 *                       [--server-env ESYNC_X=V ...] [--smol]
 *                       [--url http://127.0.0.1:8080 [--token T --owner SS58] [--pid PID]] [--out FILE]
 *
 * Without `--url` it starts `src/main.ts` itself (own process, temporary data dir, removed
 * afterwards), a fresh one for each concurrency level so that each level's peak RSS is its own.
 * `--storage s3` passes `ESYNC_STORAGE=s3` and this process's `ESYNC_S3_*` variables to it.
 * With `--url` it uses that server (its RSS only when `--pid` is given); `--token` is a bearer
 * token for it (default: a `sig1.` token of a fresh random wallet key, valid on any server).
 *
 * The ciphertext is S random bytes generated once and held by the bench (the server never
 * decrypts, so random bytes are as good as real ciphertext); every file uploads it under its own
 * path with a signed manifest. Chunk bodies are slices of that buffer (no copies on the client).
 *
 * Reports per level: MB/s end to end (total bytes / wall time from the first session open to
 * the last finalize response; MB = 10^6 bytes), finalize latency (each file's finalize call),
 * server peak RSS (VmHWM of the server process, and the highest VmRSS sampled every 20 ms).
 * Baseline (../shared/design/facts.md, same machines): raw ingest of 16 MiB PUTs into Elysia +
 * BLAKE3 + disk, no finalize: c=1 680–826, c=4 862–1109, c=8 912–1308 MB/s. Targets (issue 2):
 * ≥ 600 MB/s end to end at c=4, peak RSS < 250 MiB.
 * Prints a table and writes JSON to bench/results/upload-<time>.json (or `--out`).
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { u8aToHex } from "@polkadot/util";
import {
  cryptoWaitReady,
  ed25519PairFromSeed,
  ed25519Sign,
  encodeAddress,
  sr25519PairFromSeed,
  sr25519Sign,
} from "@polkadot/util-crypto";
import { blake3Hex } from "../src/util/blake3.ts";
import { currentRss, peakRss, REPO_ROOT, type ServerProcess, startServer } from "../test/support/server.ts";

const MiB = 1024 * 1024;
const TARGET_MBPS_C4 = 600;
const TARGET_RSS_MIB = 250;
const BASELINE =
  "facts.md raw ingest, Elysia + BLAKE3 + disk, 16 MiB PUTs, no finalize: c=1 680–826, c=4 862–1109, c=8 912–1308 MB/s";

/** Parses `1GiB`, `512MiB`, `8M`, `1000000` into bytes. */
function parseSize(s: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(b|k|kib|kb|m|mib|mb|g|gib|gb)?$/i.exec(s.trim());
  if (!m) throw new Error(`not a size: ${s}`);
  const unit = (m[2] ?? "b").toLowerCase();
  const mult: Record<string, number> = {
    b: 1,
    k: 1024,
    kib: 1024,
    kb: 1000,
    m: MiB,
    mib: MiB,
    mb: 1e6,
    g: 1024 * MiB,
    gib: 1024 * MiB,
    gb: 1e9,
  };
  const n = Math.round(Number(m[1]) * mult[unit]!);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`size out of range: ${s}`);
  return n;
}

const { values: flags } = parseArgs({
  options: {
    size: { type: "string", default: "1GiB" },
    files: { type: "string", default: "1" },
    "chunk-size": { type: "string", default: "8MiB" },
    concurrency: { type: "string", default: "4" },
    repeat: { type: "string", default: "1" },
    storage: { type: "string", default: "disk" },
    fsync: { type: "string" },
    "server-env": { type: "string", multiple: true },
    smol: { type: "boolean", default: false },
    url: { type: "string" },
    token: { type: "string" },
    owner: { type: "string" },
    pid: { type: "string" },
    out: { type: "string" },
  },
});
const SIZE = parseSize(flags.size!);
const FILES = Number(flags.files);
const CHUNK = parseSize(flags["chunk-size"]!);
const LEVELS = flags.concurrency!.split(",").map(Number);
const REPEAT = Number(flags.repeat);
if (!["disk", "s3"].includes(flags.storage!)) throw new Error("--storage must be disk or s3");
if (CHUNK > 16 * MiB) throw new Error("--chunk-size must be at most 16 MiB");
for (const n of [FILES, REPEAT, ...LEVELS])
  if (!Number.isInteger(n) || n < 1) throw new Error("counts must be positive integers");

await cryptoWaitReady();

// ---- the payload and the signer ------------------------------------------------------------
console.log(`generating ${(SIZE / MiB).toFixed(0)} MiB of random ciphertext...`);
const payload = Buffer.allocUnsafe(SIZE);
for (let o = 0; o < SIZE; o += 64 * MiB) randomBytes(Math.min(64 * MiB, SIZE - o)).copy(payload, o);
const payloadHash = blake3Hex(payload);
const folderKey = ed25519PairFromSeed(randomBytes(32));
const signature = Array.from(
  ed25519Sign(
    new TextEncoder().encode(
      `I here by declare that the file with hash ${payloadHash} that i am uploading is in par with the ToS of the provider`,
    ),
    folderKey,
  ),
);
const wallet = sr25519PairFromSeed(randomBytes(32));
const address = encodeAddress(wallet.publicKey, 42);
function walletToken(): string {
  const exp = Math.floor(Date.now() / 1000) + 3600;
  const sig = sr25519Sign(new TextEncoder().encode(`hcfs-auth:${address}:${exp}`), wallet);
  return `sig1.${address}.${exp}.${u8aToHex(sig, -1, false)}`;
}
if (flags.token && !flags.owner)
  throw new Error("--token needs --owner (the SS58 address the token resolves to)");
const auth = `Bearer ${flags.token ?? walletToken()}`;
const owner = flags.owner ?? address;

let fileSeq = 0;
function manifest(): Record<string, unknown> {
  const path = `bench/${Date.now()}-${fileSeq++}.bin`;
  return {
    ss58_address: owner,
    folder_hash: "62656e6368000000",
    ciphertext_hash: payloadHash,
    size_bytes: Math.max(0, SIZE - 48),
    timestamp: Math.floor(Date.now() / 1000),
    signature,
    signing_key: Array.from(folderKey.publicKey),
    path_hash: Array.from(randomBytes(32)),
    salted_hash: Array.from(randomBytes(32)),
    revision_seq: 1,
    base_revision_id: null,
    encrypted_path: [],
    file_name: path.split("/").pop(),
    relative_path: path,
    source: "bench",
  };
}

// ---- one file ------------------------------------------------------------------------------
async function json(url: string, init: RequestInit): Promise<Record<string, string>> {
  const r = await fetch(url, init);
  const body = (await r.json()) as { Success: Record<string, string> };
  if (r.status !== 200) throw new Error(`${init.method} ${url}: ${r.status} ${JSON.stringify(body)}`);
  return body.Success;
}

/** What the bench is doing now, so RSS samples can be attributed: chunk PUTs or finalize. */
let phase: "chunks" | "finalize" = "chunks";

/** Uploads the payload once through a session; returns wall seconds and finalize ms. */
async function uploadOne(
  base: string,
  concurrency: number,
): Promise<{ seconds: number; finalizeMs: number }> {
  const t0 = performance.now();
  const count = Math.ceil(SIZE / CHUNK);
  const s = await json(`${base}/upload/session`, {
    method: "POST",
    headers: { authorization: auth, "content-type": "application/json" },
    body: JSON.stringify({
      manifest: manifest(),
      chunk_count: count,
      chunk_size: CHUNK,
      ciphertext_size: SIZE,
    }),
  });
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      await json(`${base}/upload/session/${s.session_id}/chunk/${i}`, {
        method: "PUT",
        headers: { authorization: auth, "content-type": "application/octet-stream" },
        body: payload.subarray(i * CHUNK, Math.min(SIZE, (i + 1) * CHUNK)),
      });
    }
  };
  await Promise.all([...Array(concurrency)].map(worker));
  phase = "finalize";
  const f0 = performance.now();
  await json(`${base}/upload/session/${s.session_id}/finalize`, {
    method: "POST",
    headers: { authorization: auth, "content-length": "0" },
  });
  const end = performance.now();
  phase = "chunks";
  return { seconds: (end - t0) / 1000, finalizeMs: end - f0 };
}

// ---- a level -------------------------------------------------------------------------------
interface LevelResult {
  concurrency: number;
  runs: {
    mbps: number;
    seconds: number;
    finalizeMs: number[];
    serverCpuS: number | null;
    benchCpuS: number;
  }[];
  /** Median over runs. */
  mbps: number;
  /** Best run: the least disturbed by other load on a shared machine. */
  bestMbps: number;
  mibps: number;
  finalizeMsP50: number;
  finalizeMsMax: number;
  peakRssMiB: number | null;
  sampledRssMiB: number | null;
  /** Highest VmRSS sampled while chunks were uploading, and while finalize ran. */
  sampledRssChunksMiB: number | null;
  sampledRssFinalizeMiB: number | null;
}

/** CPU seconds (user + system) process `pid` has used so far, from /proc; null when unavailable. */
async function cpuSeconds(pid: number): Promise<number | null> {
  try {
    const stat = await Bun.file(`/proc/${pid}/stat`).text();
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return null;
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

function serverEnv(): Record<string, string> {
  const env: Record<string, string> = {
    ESYNC_STORAGE: flags.storage!,
    ESYNC_OPENAPI: "0",
    ESYNC_MAX_SESSIONS_PER_USER: "1000",
  };
  if (flags.fsync) env.ESYNC_DISK_FSYNC = flags.fsync;
  for (const kv of flags["server-env"] ?? []) {
    const eq = kv.indexOf("=");
    if (eq < 1) throw new Error(`--server-env wants KEY=VALUE, got ${kv}`);
    env[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  if (flags.storage === "s3") {
    for (const [k, v] of Object.entries(process.env)) if (k.startsWith("ESYNC_S3_") && v) env[k] = v;
  }
  return env;
}

async function runLevel(concurrency: number): Promise<LevelResult> {
  let server: ServerProcess | null = null;
  let base = flags.url?.replace(/\/+$/, "");
  let pid = flags.pid ? Number(flags.pid) : null;
  if (!base) {
    server = await startServer({ env: serverEnv(), bunArgs: flags.smol ? ["--smol"] : [] });
    base = server.url;
    pid = server.pid;
  }
  const sampled = { chunks: 0, finalize: 0 };
  let sampling = true;
  const sampler = (async () => {
    while (sampling && pid) {
      const at = phase;
      sampled[at] = Math.max(sampled[at], (await currentRss(pid)) ?? 0);
      await Bun.sleep(20);
    }
  })();
  const runs: LevelResult["runs"] = [];
  try {
    for (let r = 0; r < REPEAT; r++) {
      const t0 = performance.now();
      const serverCpu0 = pid ? await cpuSeconds(pid) : null;
      const benchCpu0 = process.cpuUsage();
      const finalizeMs: number[] = [];
      for (let f = 0; f < FILES; f++) finalizeMs.push((await uploadOne(base, concurrency)).finalizeMs);
      const seconds = (performance.now() - t0) / 1000;
      const serverCpu1 = pid ? await cpuSeconds(pid) : null;
      const benchCpu = process.cpuUsage(benchCpu0);
      const run = {
        seconds,
        mbps: (SIZE * FILES) / seconds / 1e6,
        finalizeMs,
        serverCpuS: serverCpu0 !== null && serverCpu1 !== null ? serverCpu1 - serverCpu0 : null,
        benchCpuS: (benchCpu.user + benchCpu.system) / 1e6,
      };
      runs.push(run);
      console.log(
        `  c=${concurrency} run ${r + 1}/${REPEAT}: ${run.mbps.toFixed(0)} MB/s, finalize ${finalizeMs.map((x) => x.toFixed(0)).join("/")} ms, ` +
          `CPU s: server ${run.serverCpuS?.toFixed(2) ?? "n/a"}, bench ${run.benchCpuS.toFixed(2)} (wall ${seconds.toFixed(2)} s)`,
      );
    }
  } finally {
    sampling = false;
    await sampler;
  }
  const peak = pid ? await peakRss(pid) : null;
  if (server) {
    await server.stop();
    rmSync(server.dataDir, { recursive: true, force: true });
  }
  const mbps = median(runs.map((r) => r.mbps));
  const allFinalize = runs.flatMap((r) => r.finalizeMs);
  return {
    concurrency,
    runs,
    mbps,
    bestMbps: Math.max(...runs.map((r) => r.mbps)),
    mibps: (mbps * 1e6) / MiB,
    finalizeMsP50: median(allFinalize),
    finalizeMsMax: Math.max(...allFinalize),
    peakRssMiB: peak === null ? null : peak / MiB,
    sampledRssMiB: pid ? Math.max(sampled.chunks, sampled.finalize) / MiB : null,
    sampledRssChunksMiB: pid ? sampled.chunks / MiB : null,
    sampledRssFinalizeMiB: pid ? sampled.finalize / MiB : null,
  };
}

// ---- main ----------------------------------------------------------------------------------
console.log(
  `upload bench: ${FILES} × ${(SIZE / MiB).toFixed(0)} MiB, chunks ${(CHUNK / MiB).toFixed(2)} MiB, ` +
    `concurrency ${LEVELS.join(",")}, ${REPEAT} run(s), storage ${flags.storage}${flags.url ? `, server ${flags.url}` : ""}`,
);
const results: LevelResult[] = [];
for (const c of LEVELS) results.push(await runLevel(c));

const cpuPerGiB = (r: LevelResult): number | null => {
  const cpu = r.runs.map((x) => x.serverCpuS);
  if (cpu.some((x) => x === null)) return null;
  return median(cpu as number[]) / ((SIZE * FILES) / (1024 * MiB));
};
const fmt = (n: number | null, d = 0) => (n === null ? "n/a" : n.toFixed(d));
console.log("");
console.log(
  "| concurrency | MB/s end to end (median) | best run MB/s | finalize p50 ms | finalize max ms | server CPU s/GiB | server VmHWM MiB | sampled RSS MiB: chunks / finalize |",
);
console.log("|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const r of results) {
  console.log(
    `| ${r.concurrency} | ${fmt(r.mbps)} | ${fmt(r.bestMbps)} | ${fmt(r.finalizeMsP50)} | ${fmt(r.finalizeMsMax)} | ${fmt(cpuPerGiB(r), 2)} | ${fmt(r.peakRssMiB)} | ${fmt(r.sampledRssChunksMiB)} / ${fmt(r.sampledRssFinalizeMiB)} |`,
  );
}
console.log(`baseline: ${BASELINE}`);
const c4 = results.find((r) => r.concurrency === 4);
if (c4) {
  console.log(
    `target c=4 ≥ ${TARGET_MBPS_C4} MB/s: ${c4.mbps >= TARGET_MBPS_C4 ? "met" : "MISSED"} (${fmt(c4.mbps)}); ` +
      `peak RSS < ${TARGET_RSS_MIB} MiB: ${c4.peakRssMiB === null ? "n/a" : c4.peakRssMiB < TARGET_RSS_MIB ? "met" : "MISSED"} (${fmt(c4.peakRssMiB)})`,
  );
}

const outPath =
  flags.out ??
  join(REPO_ROOT, "bench", "results", `upload-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
mkdirSync(join(outPath, ".."), { recursive: true });
writeFileSync(
  outPath,
  `${JSON.stringify(
    {
      bench: "upload",
      at: new Date().toISOString(),
      params: {
        size: SIZE,
        files: FILES,
        chunkSize: CHUNK,
        concurrency: LEVELS,
        repeat: REPEAT,
        storage: flags.storage,
        fsync: flags.fsync ?? "default",
        url: flags.url ?? null,
      },
      machine: { cpus: navigator.hardwareConcurrency, bun: Bun.version },
      baseline: BASELINE,
      targets: { mbpsAtC4: TARGET_MBPS_C4, peakRssMiB: TARGET_RSS_MIB },
      results,
    },
    null,
    2,
  )}\n`,
);
console.log(`wrote ${outPath}`);
