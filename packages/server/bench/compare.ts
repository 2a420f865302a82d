/**
 * `bun bench/upload.ts --compare` (issue 14, Performance): one invocation, the same bytes,
 * interleaved rounds of the receivers on disk, each a process of its own:
 * - esync (`src/main.ts`, `ESYNC_DISK_FSYNC` from `--fsync`, default `off`): open a session, PUT
 *   the chunks with C in flight, finalize;
 * - the yardstick ceilings: `upload-ceiling.ts` of the shared yardsticks directory (`--yardsticks`,
 *   default `../shared/bench` beside the repository root), started as is, once per writer of
 *   `--ceilings` (default `bunwrite`: `await Bun.write(path, request)` per chunk, then the chunk
 *   files re-read in order with read-ahead through one BLAKE3; `sink`, `fh` also exist). Its fsync
 *   is off; ratios are printed against the best ceiling of the run (highest MB/s);
 * - @tus/server on Bun (`bench/servers/tus.ts`) with a minimal tus client: create, then sequential
 *   PATCHes of one chunk each (tus offers no parallel PATCHes on one upload).
 *
 *   bun bench/upload.ts --compare [--size 1GiB] [--chunk-size 8MiB] [--concurrency 4] [--rounds 3]
 *                                 [--latency-ms 0] [--server-bun-arg=--cpu-prof ...]
 *                                 [--baseline-root DIR] [--warmup-rounds 1] [--fsync off|persist]
 *                                 [--ceilings bunwrite,sink] [--yardsticks DIR] [--no-tus]
 *
 * Before the measured rounds, each receiver takes `--warmup-rounds` unmeasured uploads (route
 * compilation, JIT, the first use of each process's memory), and each measured round starts
 * with the next receiver in turn, so that no receiver is always first.
 *
 * `--latency-ms N` puts a TCP proxy in front of every server that delays each piece by N/2 ms in
 * each direction (an N ms round trip; netem is not in this kernel): bench/servers/delay-proxy.ts,
 * one process per receiver. It forwards each piece as it came, N/2 ms after it arrived, from one
 * queue and one timer per direction; it adds latency, not bandwidth limits or CPU beyond the
 * forwarding itself, and is the same for all receivers.
 *
 * `--server-bun-arg=X` (repeatable) passes flags to the `bun` runtime of every server process,
 * e.g. `--server-bun-arg=--cpu-prof --server-bun-arg=--cpu-prof-dir=/tmp/prof`: each writes its
 * profile when it stops at the end.
 *
 * `--baseline-root DIR` adds a fourth receiver, `esync-base`: `src/main.ts` of another checkout
 * (e.g. main, extracted with `git archive`, its `node_modules` linked), same settings, interleaved
 * with the others, so a change is measured before and after in the same run.
 *
 * Per run: MB/s (bytes / wall time from the first request to the final answer; MB = 10^6 B),
 * server CPU seconds per GiB (utime + stime of the server process from /proc, this run only;
 * also split into user and system seconds),
 * server peak RSS (the highest VmRSS sampled every 20 ms during the run), and for esync the
 * finalize latency. After each run the bench deletes the bytes that run stored (outside the
 * measured time): on the development VM, a page cache grown by gigabytes over the earlier runs
 * made a later run's kernel time 2-4x higher, whichever receiver it was. Prints every round,
 * then medians and the ratios esync/ceiling and esync/tus; writes JSON to
 * bench/results/compare-<time>.json. The machine may be shared: rounds are interleaved so that
 * load changes hit every receiver alike, and the ratios are what to read.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import { signedSentence } from "@esync/protocol/manifest.ts";
import { u8aToHex } from "@polkadot/util";
import {
  cryptoWaitReady,
  ed25519PairFromSeed,
  ed25519Sign,
  encodeAddress,
  sr25519PairFromSeed,
  sr25519Sign,
} from "@polkadot/util-crypto";
import { currentRss, freePort, REPO_ROOT, SERVER_ROOT, startServer } from "../test/support/server.ts";
import { plaintextSizeOf } from "./framing.ts";

const MiB = 1024 * 1024;

function parseSize(s: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(k|kib|m|mib|g|gib)?$/i.exec(s.trim());
  if (!m) throw new Error(`not a size: ${s}`);
  const mult: Record<string, number> = {
    k: 1024,
    kib: 1024,
    m: MiB,
    mib: MiB,
    g: 1024 * MiB,
    gib: 1024 * MiB,
  };
  return Math.round(Number(m[1]) * (mult[(m[2] ?? "").toLowerCase()] ?? 1));
}

const { values: flags } = parseArgs({
  options: {
    compare: { type: "boolean" },
    size: { type: "string", default: "1GiB" },
    "chunk-size": { type: "string", default: "8MiB" },
    concurrency: { type: "string", default: "4" },
    rounds: { type: "string", default: "3" },
    "latency-ms": { type: "string", default: "0" },
    "server-bun-arg": { type: "string", multiple: true },
    "baseline-root": { type: "string" },
    "warmup-rounds": { type: "string", default: "1" },
    fsync: { type: "string", default: "off" },
    ceilings: { type: "string", default: "bunwrite" },
    yardsticks: { type: "string" },
    "no-tus": { type: "boolean" },
    out: { type: "string" },
  },
  strict: false,
});
const SIZE = parseSize(String(flags.size));
const CHUNK = parseSize(String(flags["chunk-size"]));
const C = Number(flags.concurrency);
const ROUNDS = Number(flags.rounds);
const LATENCY = Number(flags["latency-ms"]);
const CHUNKS = Math.ceil(SIZE / CHUNK);
const BUN_ARGS = (flags["server-bun-arg"] as string[] | undefined) ?? [];
const BASELINE_ROOT = flags["baseline-root"] as string | undefined;
const WARMUP_ROUNDS = Number(flags["warmup-rounds"]);
const FSYNC = String(flags.fsync);
const CEILINGS = String(flags.ceilings).split(",").filter(Boolean);
/** The protocol package, whose dependencies include the BLAKE3 binding the yardstick loads. */
const PROTOCOL_ROOT = join(REPO_ROOT, "packages", "protocol");
const YARDSTICKS = (flags.yardsticks as string | undefined) ?? join(REPO_ROOT, "..", "shared", "bench");
const TUS = !flags["no-tus"];

await cryptoWaitReady();
console.log(`generating ${(SIZE / MiB).toFixed(0)} MiB of random ciphertext...`);
const payload = Buffer.allocUnsafe(SIZE);
for (let o = 0; o < SIZE; o += 64 * MiB) randomBytes(Math.min(64 * MiB, SIZE - o)).copy(payload, o);
const payloadHash = blake3Hex(payload);
const chunk = (i: number) =>
  new Uint8Array(payload.buffer, payload.byteOffset + i * CHUNK, Math.min(CHUNK, SIZE - i * CHUNK));

// ---- esync identity ------------------------------------------------------------------------
const folderKey = ed25519PairFromSeed(randomBytes(32));
const signature = Array.from(ed25519Sign(new TextEncoder().encode(signedSentence(payloadHash)), folderKey));
const wallet = sr25519PairFromSeed(randomBytes(32));
const address = encodeAddress(wallet.publicKey, 42);
const exp = Math.floor(Date.now() / 1000) + 24 * 3600;
const auth = `Bearer sig1.${address}.${exp}.${u8aToHex(sr25519Sign(new TextEncoder().encode(`hcfs-auth:${address}:${exp}`), wallet), -1, false)}`;
let fileNo = 0;

function manifest(path: string) {
  return {
    ss58_address: address,
    folder_hash: "0123456789abcdef",
    ciphertext_hash: payloadHash,
    size_bytes: plaintextSizeOf(SIZE),
    timestamp: Math.floor(Date.now() / 1000),
    signature,
    signing_key: Array.from(folderKey.publicKey),
    path_hash: Array.from(Buffer.from(blake3Hex(new TextEncoder().encode(path)), "hex")),
    salted_hash: Array.from(randomBytes(32)),
    encrypted_path: Array.from(randomBytes(40)),
    file_name: null,
    relative_path: null,
    revision_seq: 1,
    base_revision_id: null,
  };
}

// ---- processes -----------------------------------------------------------------------------
interface Proc {
  name: string;
  url: string;
  pid: number;
  /** Deletes the bytes the receiver stored (between runs, never during one). */
  clear(): void;
  stop(): Promise<void>;
}

/** Deletes everything inside `dir`, keeping `dir`. */
function emptyDir(dir: string): void {
  for (const name of readdirSync(dir)) rmSync(join(dir, name), { recursive: true, force: true });
}

/** CPU seconds (user, system) of process `pid` so far, from /proc/<pid>/stat. */
async function cpuSeconds(pid: number): Promise<{ user: number; sys: number }> {
  const stat = await Bun.file(`/proc/${pid}/stat`).text();
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { user: Number(fields[11]) / 100, sys: Number(fields[12]) / 100 };
}

async function spawnHelper(name: string, script: string): Promise<Proc> {
  const dir = mkdtempSync(join(tmpdir(), `esync-cmp-${name}-`));
  const port = freePort();
  const proc = Bun.spawn(
    [process.execPath, ...BUN_ARGS, "run", join(SERVER_ROOT, "bench", "servers", script), String(port), dir],
    {
      stdout: "pipe",
      stderr: "inherit",
    },
  );
  const reader = proc.stdout.getReader();
  const { value } = await reader.read();
  if (!new TextDecoder().decode(value).includes("ready")) throw new Error(`${name} did not start`);
  reader.releaseLock();
  return {
    name,
    url: `http://127.0.0.1:${port}`,
    pid: proc.pid,
    clear: () => emptyDir(dir),
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Starts the shared yardstick `upload-ceiling.ts` with `WRITER=writer` on a free port (it prints
 * `ready <port>`), storing into a new directory.
 */
async function spawnYardstick(writer: string): Promise<Proc> {
  const dir = mkdtempSync(join(tmpdir(), `esync-cmp-${writer}-`));
  const proc = Bun.spawn([process.execPath, ...BUN_ARGS, "run", join(YARDSTICKS, "upload-ceiling.ts")], {
    stdout: "pipe",
    stderr: "inherit",
    env: {
      ...process.env,
      DIR: dir,
      WRITER: writer,
      BLAKE3_MODULE: dirname(Bun.resolveSync("@napi-rs/blake-hash/package.json", PROTOCOL_ROOT)),
    },
  });
  const reader = proc.stdout.getReader();
  const { value } = await reader.read();
  const port = /ready (\d+)/.exec(new TextDecoder().decode(value))?.[1];
  if (!port) throw new Error(`upload-ceiling.ts (${writer}) did not start`);
  reader.releaseLock();
  return {
    name: `ceiling-${writer}`,
    url: `http://127.0.0.1:${port}`,
    pid: proc.pid,
    clear: () => emptyDir(dir),
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The latency link to `target` (bench/servers/delay-proxy.ts), in a process of its own. */
async function delayProxy(
  target: string,
  oneWayMs: number,
): Promise<{ url: string; close(): Promise<void> }> {
  const port = freePort();
  const proc = Bun.spawn(
    [
      process.execPath,
      "run",
      join(SERVER_ROOT, "bench", "servers", "delay-proxy.ts"),
      String(port),
      target,
      String(oneWayMs),
    ],
    { stdout: "pipe", stderr: "inherit" },
  );
  const reader = proc.stdout.getReader();
  const { value } = await reader.read();
  if (!new TextDecoder().decode(value).includes("ready")) throw new Error("delay proxy did not start");
  reader.releaseLock();
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}

// ---- the three uploads ---------------------------------------------------------------------
async function pool(n: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(C, n) }, async () => {
      for (let i = next++; i < n; i = next++) await work(i);
    }),
  );
}

async function ok(r: Response, what: string): Promise<Response> {
  if (!r.ok) throw new Error(`${what}: ${r.status} ${await r.text()}`);
  return r;
}

async function esyncUpload(url: string): Promise<{ finalizeMs: number }> {
  const path = `bench/${fileNo++}.bin`;
  const open = await ok(
    await fetch(`${url}/upload/session`, {
      method: "POST",
      headers: { authorization: auth, "content-type": "application/json" },
      body: JSON.stringify({
        manifest: manifest(path),
        chunk_count: CHUNKS,
        chunk_size: CHUNK,
        ciphertext_size: SIZE,
      }),
    }),
    "open",
  );
  const sid = ((await open.json()) as { Success: { session_id: string } }).Success.session_id;
  await pool(CHUNKS, async (i) => {
    await (
      await ok(
        await fetch(`${url}/upload/session/${sid}/chunk/${i}`, {
          method: "PUT",
          headers: { authorization: auth, "content-type": "application/octet-stream" },
          body: chunk(i),
        }),
        `chunk ${i}`,
      )
    ).arrayBuffer();
  });
  const t0 = performance.now();
  await (
    await ok(
      await fetch(`${url}/upload/session/${sid}/finalize`, {
        method: "POST",
        headers: { authorization: auth },
      }),
      "finalize",
    )
  ).arrayBuffer();
  return { finalizeMs: performance.now() - t0 };
}

async function ceilingUpload(url: string): Promise<undefined> {
  const id = `u${fileNo++}`;
  await pool(CHUNKS, async (i) => {
    await (
      await ok(await fetch(`${url}/c/${id}/${i}`, { method: "PUT", body: chunk(i) }), `chunk ${i}`)
    ).arrayBuffer();
  });
  const done = (await (
    await ok(await fetch(`${url}/c/${id}/finalize?n=${CHUNKS}`, { method: "POST" }), "finalize")
  ).json()) as { bytes: number; b3: string };
  if (done.b3 !== payloadHash || done.bytes !== SIZE) throw new Error("ceiling hash mismatch");
  return undefined;
}

async function tusUpload(url: string): Promise<undefined> {
  const created = await ok(
    await fetch(`${url}/files`, {
      method: "POST",
      headers: { "tus-resumable": "1.0.0", "upload-length": String(SIZE) },
    }),
    "tus create",
  );
  const location = new URL(created.headers.get("location")!, url).toString();
  for (let i = 0; i < CHUNKS; i++) {
    await (
      await ok(
        await fetch(location, {
          method: "PATCH",
          headers: {
            "tus-resumable": "1.0.0",
            "upload-offset": String(i * CHUNK),
            "content-type": "application/offset+octet-stream",
          },
          body: chunk(i),
        }),
        `tus patch ${i}`,
      )
    ).arrayBuffer();
  }
  return undefined;
}

// ---- rounds --------------------------------------------------------------------------------
interface Run {
  mbps: number;
  cpuPerGiB: number;
  userPerGiB: number;
  sysPerGiB: number;
  peakRssMiB: number;
  finalizeMs?: number;
}

async function measure(
  p: Proc,
  url: string,
  upload: (url: string) => Promise<{ finalizeMs: number } | undefined>,
): Promise<Run> {
  let peak = 0;
  const sampler = setInterval(async () => {
    peak = Math.max(peak, (await currentRss(p.pid)) ?? 0);
  }, 20);
  const cpu0 = await cpuSeconds(p.pid);
  const t0 = performance.now();
  const r = await upload(url);
  const s = (performance.now() - t0) / 1000;
  const cpu1 = await cpuSeconds(p.pid);
  clearInterval(sampler);
  peak = Math.max(peak, (await currentRss(p.pid)) ?? 0);
  const perGiB = (1024 * MiB) / SIZE;
  const user = (cpu1.user - cpu0.user) * perGiB;
  const sys = (cpu1.sys - cpu0.sys) * perGiB;
  return {
    mbps: SIZE / 1e6 / s,
    cpuPerGiB: user + sys,
    userPerGiB: user,
    sysPerGiB: sys,
    peakRssMiB: peak / MiB,
    ...(r ? { finalizeMs: r.finalizeMs } : {}),
  };
}

async function startEsync(name: string, root?: string): Promise<Proc> {
  const server = await startServer({
    env: { ESYNC_DISK_FSYNC: FSYNC, ESYNC_LOG_LEVEL: "warn" },
    bunArgs: BUN_ARGS,
    ...(root ? { root } : {}),
  });
  return {
    name,
    url: server.url,
    pid: server.pid,
    // The stored objects (the server's database still lists the files; the bench never
    // downloads them).
    clear: () => rmSync(join(server.dataDir, "blobs", "b"), { recursive: true, force: true }),
    async stop() {
      await server.stop();
      rmSync(server.dataDir, { recursive: true, force: true });
    },
  };
}
const esync = await startEsync("esync");
const base = BASELINE_ROOT ? await startEsync("esync-base", BASELINE_ROOT) : null;
const ceilings: Proc[] = [];
for (const writer of CEILINGS) ceilings.push(await spawnYardstick(writer));
const tus = TUS ? await spawnHelper("tus", "tus.ts") : null;
const proxies = new Map<string, { url: string; close(): Promise<void> }>();
const procs = [esync, ...(base ? [base] : []), ...ceilings, ...(tus ? [tus] : [])];
for (const p of procs)
  proxies.set(
    p.name,
    LATENCY > 0 ? await delayProxy(p.url, LATENCY / 2) : { url: p.url, close: async () => {} },
  );

const plans: [Proc, (url: string) => Promise<{ finalizeMs: number } | undefined>][] = [
  [esync, esyncUpload],
  ...(base ? [[base, esyncUpload] as [Proc, typeof esyncUpload]] : []),
  ...ceilings.map((c) => [c, ceilingUpload] as [Proc, typeof ceilingUpload]),
  ...(tus ? [[tus, tusUpload] as [Proc, typeof tusUpload]] : []),
];
const runs: Record<string, Run[]> = Object.fromEntries(procs.map((p) => [p.name, []]));
console.log(
  `${(SIZE / MiB).toFixed(0)} MiB in ${(CHUNK / MiB).toFixed(0)} MiB chunks, c=${C} (tus: sequential), disk, esync fsync ${FSYNC}, ceilings fsync off` +
    (LATENCY > 0 ? `, ${LATENCY} ms RTT proxy` : "") +
    `, ${WARMUP_ROUNDS} warm-up and ${ROUNDS} interleaved rounds, load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(" ")}`,
);
try {
  for (let r = 0; r < WARMUP_ROUNDS; r++) {
    for (const [p, upload] of plans) {
      await upload(proxies.get(p.name)!.url);
      p.clear();
    }
  }
  for (let r = 0; r < ROUNDS; r++) {
    // Each round starts with the next receiver, so that none is always first (or last).
    for (let k = 0; k < plans.length; k++) {
      const [p, upload] = plans[(r + k) % plans.length]!;
      const run = await measure(p, proxies.get(p.name)!.url, upload);
      p.clear();
      runs[p.name]!.push(run);
      console.log(
        `round ${r + 1} ${p.name.padEnd(10)} ${run.mbps.toFixed(0).padStart(5)} MB/s  ${run.cpuPerGiB.toFixed(2)} CPU-s/GiB ` +
          `(user ${run.userPerGiB.toFixed(2)}, sys ${run.sysPerGiB.toFixed(2)})  ` +
          `RSS ${run.peakRssMiB.toFixed(0)} MiB${run.finalizeMs !== undefined ? `  finalize ${run.finalizeMs.toFixed(0)} ms` : ""}`,
      );
    }
  }
} finally {
  await Promise.all([...proxies.values()].map((p) => p.close()));
  await Promise.all(procs.map((p) => p.stop()));
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const summary = Object.fromEntries(
  Object.entries(runs).map(([k, v]) => [
    k,
    {
      mbps: median(v.map((x) => x.mbps)),
      cpuPerGiB: median(v.map((x) => x.cpuPerGiB)),
      userPerGiB: median(v.map((x) => x.userPerGiB)),
      sysPerGiB: median(v.map((x) => x.sysPerGiB)),
      peakRssMiB: Math.max(...v.map((x) => x.peakRssMiB)),
      ...(k.startsWith("esync") ? { finalizeMs: median(v.map((x) => x.finalizeMs ?? 0)) } : {}),
    },
  ]),
) as Record<string, Run>;
const best = ceilings.map((c) => ({ name: c.name, ...summary[c.name]! })).sort((a, b) => b.mbps - a.mbps)[0]!;
const over = (k: string) => ({
  mbps: summary[k]!.mbps / best.mbps,
  cpu: summary[k]!.cpuPerGiB / best.cpuPerGiB,
  ...(summary.tus ? { overTus: summary[k]!.mbps / summary.tus.mbps } : {}),
});
const ratios = {
  bestCeiling: best.name,
  esync: over("esync"),
  ...(summary["esync-base"] ? { "esync-base": over("esync-base") } : {}),
};
console.log(
  `\nload average at the end ${loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")}; medians:`,
);
console.log("| receiver | MB/s | server CPU-s/GiB (user + sys) | peak RSS MiB | finalize ms |");
console.log("|---|---:|---:|---:|---:|");
for (const [k, v] of Object.entries(summary))
  console.log(
    `| ${k} | ${v.mbps.toFixed(0)} | ${v.cpuPerGiB.toFixed(2)} (${v.userPerGiB.toFixed(2)} + ${v.sysPerGiB.toFixed(2)}) | ${v.peakRssMiB.toFixed(0)} | ${v.finalizeMs?.toFixed(0) ?? ""} |`,
  );
for (const [k, r] of Object.entries(ratios)) {
  if (typeof r === "string") continue;
  console.log(
    `${k} / ${best.name}: MB/s ${r.mbps.toFixed(2)} (target >= ${FSYNC === "off" ? "0.9" : "0.8"}), CPU-s/GiB ${r.cpu.toFixed(2)} (target <= 1.2)` +
      (r.overTus !== undefined ? `, ${k} / tus MB/s ${r.overTus.toFixed(2)}` : ""),
  );
}
const out =
  (flags.out as string | undefined) ??
  join(
    SERVER_ROOT,
    "bench",
    "results",
    `compare-${LATENCY > 0 ? `rtt${LATENCY}-` : ""}${new Date().toISOString().replace(/[:.]/g, "-")}.json`,
  );
mkdirSync(join(SERVER_ROOT, "bench", "results"), { recursive: true });
writeFileSync(
  out,
  JSON.stringify(
    {
      params: {
        size: SIZE,
        chunk: CHUNK,
        concurrency: C,
        rounds: ROUNDS,
        warmupRounds: WARMUP_ROUNDS,
        latencyMs: LATENCY,
        fsync: FSYNC,
        ceilings: CEILINGS,
        yardsticks: YARDSTICKS,
        serverBunArgs: BUN_ARGS,
        baselineRoot: BASELINE_ROOT ?? null,
        loadAverage: loadavg(),
      },
      runs,
      summary,
      ratios,
    },
    null,
    2,
  ),
);
console.log(`wrote ${out}`);
process.exit(0);
