/**
 * Upload bench (issue 2): N files of S bytes through upload sessions, end to end (open, chunk
 * PUTs with C in flight, finalize), against a real server process.
 *
 *   bun bench/upload.ts [--size 1GiB] [--files 1] [--chunk-size 8MiB] [--concurrency 1,4,8]
 *                       [--repeat 1] [--storage disk|s3] [--fsync persist|object|off]
 *                       [--nodes N [--spread chunk|session]]
 *                       [--server-env ESYNC_X=V ...] [--smol] [--server-bun-arg=--cpu-prof ...]
 *                       [--s3-cpus LIST --server-cpus LIST]
 *                       [--url http://127.0.0.1:8080 [--token T --owner SS58] [--pid PID]] [--out FILE]
 *
 * Without `--url` it starts `src/main.ts` itself (own process, temporary data dir, removed
 * afterwards), a fresh one for each concurrency level so that each level's peak RSS is its own.
 * `--storage s3` passes `ESYNC_STORAGE=s3` and the S3 settings to it: this process's `ESYNC_S3_*`
 * variables when `ESYNC_S3_ENDPOINT` is set, else a Ceph RGW that the bench starts for itself
 * (`scripts/s3/start.sh` in a temporary directory, stopped and deleted at the end). With S3, each
 * run is followed by the raw ceiling: the same chunks PUT straight to S3 from this process, the
 * fastest way known from Bun (`bench/s3-put.ts`): one `fetch` per chunk to a URL presigned by
 * the store's client (`createS3Client`), the body a web stream of known length (unsigned
 * payload; not minio's buffered `putObject`), at the same concurrency; the table gives end to
 * end / raw per level. Objects are deleted after each level.
 * With `--url` it uses that server (its RSS only when `--pid` is given); `--token` is a bearer
 * token for it (default: a `sig1.` token of a fresh random wallet key, valid on any server).
 *
 * `--server-bun-arg=X` (repeatable) passes flags to the `bun` runtime of the server it starts,
 * e.g. `--server-bun-arg=--cpu-prof --server-bun-arg=--cpu-prof-dir=/tmp/prof` for a CPU profile
 * written when the server stops at the end of each level.
 *
 * `--s3-cpus LIST` and `--server-cpus LIST` (CPU lists as `taskset -c` takes them: `0`, `1-3`,
 * `0,2`) pin processes to CPUs with `taskset -a -p` (util-linux; every thread of the process,
 * and the threads it starts later inherit it): `--s3-cpus` the RGW the bench started (monitor,
 * OSD, radosgw; not allowed with an external `ESYNC_S3_ENDPOINT`), `--server-cpus` the server
 * (the one the bench starts, or `--pid`) and this bench process itself, so that end to end and
 * the raw ceiling run their client on the same CPUs and neither competes with S3, as in
 * production where S3 is other hardware. E.g. `--s3-cpus 0 --server-cpus 1` on 2 cores. The
 * table and the JSON (`params.pinning`) say which pinning was used.
 *
 * The ciphertext is S random bytes generated once and held by the bench (the server never
 * decrypts, so random bytes are as good as real ciphertext); every file uploads it under its own
 * path with a signed manifest. Chunk bodies are slices of that buffer (no copies on the client).
 *
 * Reports per level: MB/s end to end (total bytes / wall time from the first session open to
 * the last finalize response; MB = 10^6 bytes), finalize latency (each file's finalize call),
 * server peak RSS (VmHWM of the server process, and the highest VmRSS sampled every 20 ms).
 * Baselines and current figures: docs/benchmarks.md (with S3 the baseline is the raw ceiling
 * measured in the same run).
 * Prints a table and writes JSON to bench/results/upload-<time>.json (or `--out`).
 *
 * `--nodes N` (N ≥ 2; S3 only, so `--storage s3` is implied) measures several nodes against one, on
 * this machine: for each concurrency level, a cluster of 1 node and then one of N nodes
 * (`test/support/cluster.ts`: server processes sharing one metadata database and the bucket)
 * upload the same files, the bench acting as a round-robin load balancer. `--spread chunk` (the
 * default) sends every request to the next node, as a balancer without affinity does (finalize
 * then mostly reads chunks back: no node saw them all); `--spread session` sends all requests of
 * one session to one node and the sessions round-robin. Reported per row: aggregate MB/s, and
 * server CPU seconds per GiB summed over the nodes' processes; the 1-node row of each level is
 * the baseline. A request answered 5xx or 429 is retried (as real clients do) and counted
 * (`retries`).
 *
 * `--compare` runs bench/compare.ts instead: esync, the ceiling and @tus/server, interleaved.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import { u8aToHex } from "@polkadot/util";
import {
  cryptoWaitReady,
  ed25519PairFromSeed,
  ed25519Sign,
  encodeAddress,
  sr25519PairFromSeed,
  sr25519Sign,
} from "@polkadot/util-crypto";
import { loadConfig, type S3Config } from "../src/config/config.ts";
import { createS3BlobStore, createS3Client } from "../src/storage/s3.ts";
import { type Cluster, startCluster } from "../test/support/cluster.ts";
import { type DedicatedS3, s3Env, startDedicatedS3 } from "../test/support/s3-server.ts";
import { currentRss, peakRss, SERVER_ROOT, type ServerProcess, startServer } from "../test/support/server.ts";
import { plaintextSizeOf } from "./framing.ts";
import { webPiecesOf } from "./rounds.ts";

// `--compare`: interleaved rounds of esync, the ceiling and @tus/server (see bench/compare.ts).
if (process.argv.includes("--compare")) {
  await import("./compare.ts");
  process.exit(0);
}

const MiB = 1024 * 1024;
const TARGET_MBPS_C4 = 600;
const TARGET_RSS_MIB = 250;
/** Issue 4: end to end to S3 at c=4 at least this share of the raw S3 PUT ceiling. */
const TARGET_S3_RATIO_C4 = 0.8;
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
    "server-bun-arg": { type: "string", multiple: true },
    url: { type: "string" },
    token: { type: "string" },
    owner: { type: "string" },
    pid: { type: "string" },
    out: { type: "string" },
    "s3-cpus": { type: "string" },
    "server-cpus": { type: "string" },
    nodes: { type: "string", default: "1" },
    spread: { type: "string", default: "chunk" },
  },
});
const NODES = Number(flags.nodes);
if (!Number.isInteger(NODES) || NODES < 1) throw new Error("--nodes must be a positive integer");
if (flags.spread !== "chunk" && flags.spread !== "session")
  throw new Error("--spread must be chunk or session");
if (NODES > 1) {
  if (flags.url) throw new Error("--nodes starts its own clusters: not with --url");
  if (flags.storage !== "s3") console.log(`--nodes ${NODES}: the nodes share one bucket, so --storage s3`);
  flags.storage = "s3";
}
const SIZE = parseSize(flags.size!);
const FILES = Number(flags.files);
const CHUNK = parseSize(flags["chunk-size"]!);
const LEVELS = flags.concurrency!.split(",").map(Number);
const REPEAT = Number(flags.repeat);
if (!["disk", "s3"].includes(flags.storage!)) throw new Error("--storage must be disk or s3");
if (CHUNK > 16 * MiB) throw new Error("--chunk-size must be at most 16 MiB");
for (const n of [FILES, REPEAT, ...LEVELS])
  if (!Number.isInteger(n) || n < 1) throw new Error("counts must be positive integers");
const S3_CPUS = flags["s3-cpus"] ?? null;
const SERVER_CPUS = flags["server-cpus"] ?? null;
for (const [name, list] of [
  ["--s3-cpus", S3_CPUS],
  ["--server-cpus", SERVER_CPUS],
] as const) {
  if (list !== null && !/^\d+(-\d+)?(,\d+(-\d+)?)*$/.test(list))
    throw new Error(`${name} wants a CPU list such as 0, 1-3 or 0,2; got ${list}`);
}
if ((S3_CPUS !== null || SERVER_CPUS !== null) && !Bun.which("taskset"))
  throw new Error("--s3-cpus/--server-cpus need taskset (util-linux)");
if (S3_CPUS !== null && (flags.storage !== "s3" || process.env.ESYNC_S3_ENDPOINT))
  throw new Error("--s3-cpus pins the RGW the bench starts: needs --storage s3 without ESYNC_S3_ENDPOINT");

/** Pins every thread of process `pid` (and threads it starts later) to CPUs `cpus`. */
function pin(pid: number, cpus: string): void {
  const r = Bun.spawnSync(["taskset", "-a", "-p", "-c", cpus, String(pid)], { stdout: "ignore" });
  if (r.exitCode !== 0)
    throw new Error(`taskset -a -p -c ${cpus} ${pid} failed: ${r.stderr.toString().trim()}`);
}
const pinning =
  S3_CPUS === null && SERVER_CPUS === null
    ? "unpinned"
    : `S3 on CPUs ${S3_CPUS ?? "any"}, server and bench on CPUs ${SERVER_CPUS ?? "any"}`;

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

// ---- S3 (--storage s3) ----------------------------------------------------------------------
let s3: S3Config | null = null;
let rgw: DedicatedS3 | null = null;
let rgwDir: string | null = null;
if (flags.storage === "s3") {
  if (process.env.ESYNC_S3_ENDPOINT) {
    s3 = loadConfig({ ...process.env, ESYNC_STORAGE: "s3" }).s3;
  } else {
    rgwDir = mkdtempSync(join(tmpdir(), "esync-bench-rgw-"));
    // RGW frees deleted objects' data hours later: room for every byte this run writes.
    const written = SIZE * FILES * REPEAT * 2 * LEVELS.length;
    rgw = await startDedicatedS3(rgwDir, { osdBytes: Math.max(8 * 1024 * MiB, 2 * written) });
    s3 = { ...rgw.server, bucket: "esync-bench", prefix: "" };
    if (S3_CPUS !== null) for (const p of rgw.pids()) pin(p, S3_CPUS);
  }
  if (!s3) throw new Error("no S3 settings");
  const store = createS3BlobStore(s3);
  await store.check(); // creates the bucket, for the raw PUTs too
  await store.close();
}

/** Deletes every object the level wrote (under the configured prefix). */
async function emptyBucket(cfg: S3Config): Promise<void> {
  const store = createS3BlobStore(cfg);
  try {
    await store.delete(await store.list(""));
  } finally {
    await store.close();
  }
}

/**
 * The raw ceiling: every chunk of FILES uploads PUT straight to S3 with `fetch` to a URL the
 * store's client presigns (streamed body of known length, unsigned payload, one PUT per chunk),
 * `concurrency` in flight. Returns wall seconds.
 */
async function rawPuts(cfg: S3Config, concurrency: number, tag: string): Promise<number> {
  const { client, close } = createS3Client(cfg);
  const count = Math.ceil(SIZE / CHUNK);
  const t0 = performance.now();
  try {
    for (let f = 0; f < FILES; f++) {
      let next = 0;
      const worker = async () => {
        for (let i = next++; i < count; i = next++) {
          const bytes = payload.subarray(i * CHUNK, Math.min(SIZE, (i + 1) * CHUNK));
          const key = `raw/${tag}/${f}/${i}`;
          const url = await client.presignedUrl(
            "PUT",
            cfg.bucket,
            cfg.prefix === "" ? key : `${cfg.prefix}/${key}`,
          );
          const res = await fetch(url, {
            method: "PUT",
            headers: { "Content-Length": String(bytes.length) },
            body: webPiecesOf(bytes),
            duplex: "half",
          } as RequestInit);
          await res.arrayBuffer();
          if (res.status !== 200) throw new Error(`raw PUT of ${key}: ${res.status}`);
        }
      };
      await Promise.all([...Array(concurrency)].map(worker));
    }
  } finally {
    close();
  }
  return (performance.now() - t0) / 1000;
}

let fileSeq = 0;
function manifest(): Record<string, unknown> {
  const path = `bench/${Date.now()}-${fileSeq++}.bin`;
  return {
    ss58_address: owner,
    folder_hash: "62656e6368000000",
    ciphertext_hash: payloadHash,
    size_bytes: plaintextSizeOf(SIZE),
    timestamp: Math.floor(Date.now() / 1000),
    signature,
    signing_key: Array.from(folderKey.publicKey),
    path_hash: Array.from(Buffer.from(blake3Hex(new TextEncoder().encode(path.normalize("NFC"))), "hex")),
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
/** Requests answered 5xx or 429 and retried, this run. */
let retries = 0;

/**
 * `init` to `url` until it is not answered 5xx or 429 (each such answer counted in `retries`);
 * `init.body` must be re-sendable. @returns the Success object. @throws on any other non-200.
 */
async function json(url: string, init: RequestInit): Promise<Record<string, string>> {
  for (;;) {
    const r = await fetch(url, init);
    const text = await r.text();
    if (r.status === 200) return (JSON.parse(text) as { Success: Record<string, string> }).Success;
    if (r.status < 500 && r.status !== 429) throw new Error(`${init.method} ${url}: ${r.status} ${text}`);
    retries++;
    await Bun.sleep(20);
  }
}

/** What the bench is doing now, so RSS samples can be attributed: chunk PUTs or finalize. */
let phase: "chunks" | "finalize" = "chunks";

/**
 * Uploads the payload once through a session on the nodes `bases` (one URL: a single server):
 * the session opened on `bases[first]`, then each request to the next node (`--spread chunk`) or
 * all to that one (`--spread session`). Returns wall seconds and finalize ms.
 */
async function uploadOne(
  bases: string[],
  concurrency: number,
  first = 0,
): Promise<{ seconds: number; finalizeMs: number }> {
  const t0 = performance.now();
  const count = Math.ceil(SIZE / CHUNK);
  let turn = first;
  const node = () => bases[(flags.spread === "chunk" ? turn++ : first) % bases.length]!;
  const s = await json(`${node()}/upload/session`, {
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
      await json(`${node()}/upload/session/${s.session_id}/chunk/${i}`, {
        method: "PUT",
        headers: { authorization: auth, "content-type": "application/octet-stream" },
        body: payload.subarray(i * CHUNK, Math.min(SIZE, (i + 1) * CHUNK)),
      });
    }
  };
  await Promise.all([...Array(concurrency)].map(worker));
  phase = "finalize";
  const f0 = performance.now();
  await json(`${node()}/upload/session/${s.session_id}/finalize`, {
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
  /** Server processes (1 unless `--nodes`). */
  nodes: number;
  runs: {
    mbps: number;
    seconds: number;
    finalizeMs: number[];
    serverCpuS: number | null;
    benchCpuS: number;
    /** S3 only: the raw ceiling measured right after this run. */
    rawMbps: number | null;
    /** CPU seconds of the S3 server (RGW started by the bench: mon + OSD + radosgw), this run and its raw PUTs. */
    s3CpuS: number | null;
    rawS3CpuS: number | null;
    /** S3 only: CPU seconds of this process's raw PUTs (the minio client alone). */
    rawClientCpuS: number | null;
    /** Requests answered 5xx or 429 and retried. */
    retries: number;
  }[];
  /** Median over runs. */
  mbps: number;
  /** Best run: the least disturbed by other load on a shared machine. */
  bestMbps: number;
  /** S3 only: median raw ceiling, and median end to end / median raw. */
  rawMbps: number | null;
  ratio: number | null;
  mibps: number;
  finalizeMsP50: number;
  finalizeMsMax: number;
  peakRssMiB: number | null;
  sampledRssMiB: number | null;
  /** Highest VmRSS of one server process sampled while chunks were uploading, and while finalize ran. */
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

/** CPU seconds of the RGW the bench started (all its daemons), or null. */
async function s3Cpu(): Promise<number | null> {
  if (!rgw) return null;
  let sum = 0;
  for (const p of rgw.pids()) sum += (await cpuSeconds(p)) ?? 0;
  return sum;
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
  return s3 ? { ...env, ...s3Env(s3) } : env;
}

/** CPU seconds used so far by all of `pids`, or null when one is unreadable. */
async function cpuOf(pids: number[]): Promise<number | null> {
  if (pids.length === 0) return null;
  let sum = 0;
  for (const p of pids) {
    const c = await cpuSeconds(p);
    if (c === null) return null;
    sum += c;
  }
  return sum;
}

/**
 * One concurrency level: against a server the bench starts (or `--url`), or with `nodes`, a
 * cluster of that many nodes (`--nodes`), all its files uploaded at once.
 */
async function runLevel(concurrency: number, nodes: number | null = null): Promise<LevelResult> {
  let server: ServerProcess | null = null;
  let cluster: Cluster | null = null;
  let bases = flags.url ? [flags.url.replace(/\/+$/, "")] : [];
  let pids = flags.pid ? [Number(flags.pid)] : [];
  const bunArgs = [...(flags.smol ? ["--smol"] : []), ...(flags["server-bun-arg"] ?? [])];
  if (nodes !== null) {
    if (!s3) throw new Error("--nodes needs S3");
    cluster = await startCluster({
      nodes,
      label: "bench",
      s3,
      env: { ...serverEnv(), ESYNC_LOG_LEVEL: "warn" },
      bunArgs,
    });
    bases = cluster.nodes.map((n) => n.url);
    pids = cluster.nodes.map((n) => n.process?.pid ?? 0);
  } else if (bases.length === 0) {
    server = await startServer({ env: serverEnv(), bunArgs });
    bases = [server.url];
    pids = [server.pid];
  }
  if (SERVER_CPUS !== null) {
    for (const pid of pids) pin(pid, SERVER_CPUS);
    pin(process.pid, SERVER_CPUS);
  }
  const sampled = { chunks: 0, finalize: 0 };
  let sampling = true;
  const sampler = (async () => {
    while (sampling && pids.length > 0) {
      const at = phase;
      for (const pid of pids) sampled[at] = Math.max(sampled[at], (await currentRss(pid)) ?? 0);
      await Bun.sleep(20);
    }
  })();
  const runs: LevelResult["runs"] = [];
  try {
    for (let r = 0; r < REPEAT; r++) {
      const s3Cpu0 = await s3Cpu();
      const t0 = performance.now();
      const serverCpu0 = await cpuOf(pids);
      const benchCpu0 = process.cpuUsage();
      const finalizeMs: number[] = [];
      retries = 0;
      if (nodes !== null) {
        const done = await Promise.all([...Array(FILES).keys()].map((f) => uploadOne(bases, concurrency, f)));
        finalizeMs.push(...done.map((d) => d.finalizeMs));
      } else {
        for (let f = 0; f < FILES; f++) finalizeMs.push((await uploadOne(bases, concurrency)).finalizeMs);
      }
      const seconds = (performance.now() - t0) / 1000;
      const serverCpu1 = await cpuOf(pids);
      const benchCpu = process.cpuUsage(benchCpu0);
      const s3Cpu1 = await s3Cpu();
      const rawCpu0 = process.cpuUsage();
      // With --nodes the baseline is the 1-node row, not the raw ceiling.
      const rawSeconds =
        s3 && nodes === null ? await rawPuts(s3, concurrency, `c${concurrency}-r${r}`) : null;
      const s3Cpu2 = await s3Cpu();
      const rawCpu = process.cpuUsage(rawCpu0);
      const run = {
        seconds,
        mbps: (SIZE * FILES) / seconds / 1e6,
        finalizeMs,
        serverCpuS: serverCpu0 !== null && serverCpu1 !== null ? serverCpu1 - serverCpu0 : null,
        benchCpuS: (benchCpu.user + benchCpu.system) / 1e6,
        rawMbps: rawSeconds === null ? null : (SIZE * FILES) / rawSeconds / 1e6,
        s3CpuS: s3Cpu0 !== null && s3Cpu1 !== null ? s3Cpu1 - s3Cpu0 : null,
        rawS3CpuS: rawSeconds !== null && s3Cpu1 !== null && s3Cpu2 !== null ? s3Cpu2 - s3Cpu1 : null,
        rawClientCpuS: rawSeconds === null ? null : (rawCpu.user + rawCpu.system) / 1e6,
        retries,
      };
      runs.push(run);
      console.log(
        `  ${nodes === null ? "" : `${nodes} node${nodes > 1 ? "s" : ""}, `}c=${concurrency} run ${r + 1}/${REPEAT}: ${run.mbps.toFixed(0)} MB/s, finalize ${finalizeMs.map((x) => x.toFixed(0)).join("/")} ms, ` +
          `CPU s: server ${run.serverCpuS?.toFixed(2) ?? "n/a"}, bench ${run.benchCpuS.toFixed(2)} (wall ${seconds.toFixed(2)} s)` +
          (run.s3CpuS === null ? "" : `, S3 server ${run.s3CpuS.toFixed(2)}`) +
          (run.rawMbps === null ? "" : `; raw S3 PUT ${run.rawMbps.toFixed(0)} MB/s`) +
          (run.rawS3CpuS === null ? "" : ` (CPU s: S3 server ${run.rawS3CpuS.toFixed(2)}`) +
          (run.rawClientCpuS === null ? "" : `, client ${run.rawClientCpuS.toFixed(2)})`) +
          (retries > 0 ? `; ${retries} requests retried (5xx/429)` : ""),
      );
    }
  } finally {
    sampling = false;
    await sampler;
  }
  let peak: number | null = null;
  for (const pid of pids) {
    const p = await peakRss(pid);
    if (p !== null) peak = Math.max(peak ?? 0, p);
  }
  if (server) {
    await server.stop();
    rmSync(server.dataDir, { recursive: true, force: true });
  }
  await cluster?.close();
  if (s3) await emptyBucket(s3);
  const mbps = median(runs.map((r) => r.mbps));
  const rawMbps = s3 ? median(runs.map((r) => r.rawMbps ?? 0)) : null;
  const allFinalize = runs.flatMap((r) => r.finalizeMs);
  return {
    concurrency,
    nodes: nodes ?? 1,
    runs,
    mbps,
    bestMbps: Math.max(...runs.map((r) => r.mbps)),
    rawMbps,
    ratio: rawMbps ? mbps / rawMbps : null,
    mibps: (mbps * 1e6) / MiB,
    finalizeMsP50: median(allFinalize),
    finalizeMsMax: Math.max(...allFinalize),
    peakRssMiB: peak === null ? null : peak / MiB,
    sampledRssMiB: pids.length ? Math.max(sampled.chunks, sampled.finalize) / MiB : null,
    sampledRssChunksMiB: pids.length ? sampled.chunks / MiB : null,
    sampledRssFinalizeMiB: pids.length ? sampled.finalize / MiB : null,
  };
}

// ---- main ----------------------------------------------------------------------------------
console.log(
  `upload bench: ${FILES} × ${(SIZE / MiB).toFixed(0)} MiB, chunks ${(CHUNK / MiB).toFixed(2)} MiB, ` +
    `concurrency ${LEVELS.join(",")}, ${REPEAT} run(s), storage ${flags.storage}${flags.url ? `, server ${flags.url}` : ""}; ${pinning}`,
);
const results: LevelResult[] = [];
try {
  for (const c of LEVELS) {
    if (NODES === 1) results.push(await runLevel(c));
    else results.push(await runLevel(c, 1), await runLevel(c, NODES));
  }
} finally {
  if (rgw) await rgw.stop();
  if (rgwDir) rmSync(rgwDir, { recursive: true, force: true });
}

const cpuPerGiB = (r: LevelResult): number | null => {
  const cpu = r.runs.map((x) => x.serverCpuS);
  if (cpu.some((x) => x === null)) return null;
  return median(cpu as number[]) / ((SIZE * FILES) / (1024 * MiB));
};
const fmt = (n: number | null, d = 0) => (n === null ? "n/a" : n.toFixed(d));
const nodesCol = (text: string) => (NODES > 1 ? `| ${text} ` : "");
console.log("");
console.log(
  `${nodesCol("nodes")}| concurrency | MB/s end to end (median) | best run MB/s | finalize p50 ms | finalize max ms | server CPU s/GiB | server VmHWM MiB | sampled RSS MiB: chunks / finalize |`,
);
console.log(`${NODES > 1 ? "|---:" : ""}|---:|---:|---:|---:|---:|---:|---:|---:|`);
for (const r of results) {
  console.log(
    `${nodesCol(String(r.nodes))}| ${r.concurrency} | ${fmt(r.mbps)} | ${fmt(r.bestMbps)} | ${fmt(r.finalizeMsP50)} | ${fmt(r.finalizeMsMax)} | ${fmt(cpuPerGiB(r), 2)} | ${fmt(r.peakRssMiB)} | ${fmt(r.sampledRssChunksMiB)} / ${fmt(r.sampledRssFinalizeMiB)} |`,
  );
}
if (NODES > 1) {
  console.log("");
  console.log(
    `${NODES} nodes against 1 on this machine (${navigator.hardwareConcurrency} CPUs), ${FILES} file(s) at once, --spread ${flags.spread}:`,
  );
  console.log(
    "| concurrency per file | nodes | aggregate MB/s (median) | vs 1 node | server CPU s/GiB (all nodes) | finalize p50 ms | retried requests |",
  );
  console.log("|---:|---:|---:|---:|---:|---:|---:|");
  for (const r of results) {
    const one = results.find((x) => x.concurrency === r.concurrency && x.nodes === 1);
    console.log(
      `| ${r.concurrency} | ${r.nodes} | ${fmt(r.mbps)} | ${one ? fmt((r.mbps / one.mbps) * 100) : "n/a"}% | ${fmt(cpuPerGiB(r), 2)} | ${fmt(r.finalizeMsP50)} | ${r.runs.reduce((a, x) => a + x.retries, 0)} |`,
    );
  }
} else if (s3) {
  console.log("");
  console.log(
    `S3 ${s3.endpoint}, bucket ${s3.bucket}${rgw ? " (Ceph RGW started by the bench)" : ""}; ${pinning}:`,
  );
  console.log(
    "| concurrency | MB/s end to end (median) | raw S3 PUT MB/s (median) | end to end / raw | server CPU s/GiB | finalize p50 ms | server VmHWM MiB |",
  );
  console.log("|---:|---:|---:|---:|---:|---:|---:|");
  for (const r of results)
    console.log(
      `| ${r.concurrency} | ${fmt(r.mbps)} | ${fmt(r.rawMbps)} | ${fmt(r.ratio === null ? null : r.ratio * 100)}% | ${fmt(cpuPerGiB(r), 2)} | ${fmt(r.finalizeMsP50)} | ${fmt(r.peakRssMiB)} |`,
    );
}
console.log(
  `baseline: ${NODES > 1 ? "the 1-node row of each level" : s3 ? "the raw S3 PUT ceiling of the same run (above)" : BASELINE}`,
);
const c4 = NODES === 1 ? results.find((r) => r.concurrency === 4) : undefined;
if (c4?.ratio != null) {
  console.log(
    `target c=4 ≥ ${TARGET_S3_RATIO_C4 * 100}% of the raw S3 ceiling: ${c4.ratio >= TARGET_S3_RATIO_C4 ? "met" : "MISSED"} (${fmt(c4.ratio * 100)}%)`,
  );
} else if (c4) {
  console.log(
    `target c=4 ≥ ${TARGET_MBPS_C4} MB/s: ${c4.mbps >= TARGET_MBPS_C4 ? "met" : "MISSED"} (${fmt(c4.mbps)}); ` +
      `peak RSS < ${TARGET_RSS_MIB} MiB: ${c4.peakRssMiB === null ? "n/a" : c4.peakRssMiB < TARGET_RSS_MIB ? "met" : "MISSED"} (${fmt(c4.peakRssMiB)})`,
  );
}

const outPath =
  flags.out ??
  join(SERVER_ROOT, "bench", "results", `upload-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
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
        s3: s3 ? { endpoint: s3.endpoint, bucket: s3.bucket, startedByBench: rgw !== null } : null,
        fsync: flags.fsync ?? "default",
        url: flags.url ?? null,
        pinning: { s3Cpus: S3_CPUS, serverAndBenchCpus: SERVER_CPUS },
        nodes: NODES,
        spread: NODES > 1 ? flags.spread : null,
      },
      machine: { cpus: navigator.hardwareConcurrency, bun: Bun.version },
      baseline: NODES > 1 ? "1 node, same level" : s3 ? "raw S3 PUT ceiling of the same run" : BASELINE,
      targets: s3
        ? { s3RatioAtC4: TARGET_S3_RATIO_C4 }
        : { mbpsAtC4: TARGET_MBPS_C4, peakRssMiB: TARGET_RSS_MIB },
      results,
    },
    null,
    2,
  )}\n`,
);
console.log(`wrote ${outPath}`);
