/**
 * Small-file bench (issue 14, Performance), two parts per round, each against a fresh real server
 * process (`src/main.ts`, a new data directory):
 * 1. upload: N files of 1–16 KiB through single-shot `POST /upload` at concurrency C. Every
 *    request body (multipart: signed manifest, then the ciphertext part) and one bearer token are
 *    built before the clock starts, so the timed part is the server's work plus this process's
 *    HTTP client (target >= 3,000 files/s);
 * 2. push: `esync push` of a real directory tree of thousands of small files (default a copy of
 *    `node_modules/drizzle-orm`) by the CLI of the same checkout (target >= 1,000 files/s).
 *
 *   bun bench/small-files.ts [--files 10000] [--concurrency 8] [--fsync persist|object|off]
 *                            [--rounds 1] [--compare <git-ref>] [--tree DIR] [--skip-push]
 *                            [--push-arg=--jobs=8 ...] [--server-bun-arg=--cpu-prof ...]
 *                            [--server-env NAME=VALUE ...] [--ceiling]
 *
 * Each checkout's server runs with the environment its `bun run start` script sets (the
 * `NAME=value` assignments before `bun run src/main.ts` in its package.json, evaluated by bash,
 * e.g. the file-system pool size), plus every `--server-env`: a bench measures what a user who
 * starts the server as docs/operator-guide.md#commands says gets.
 *
 * `--compare REF` extracts REF (`git archive`, its own directory, this checkout's node_modules)
 * and runs both checkouts' server and CLI (`worktree` is this checkout as it is on disk) in
 * interleaved rounds (the order alternates from round
 * to round), so that the load of a shared machine hits both alike; it prints the medians of both
 * and the ratios. Figures per run: files/s (wall), server CPU ms per file (utime + stime of the
 * server process from /proc over the timed part), the server's peak RSS (upload), and the CLI
 * process's CPU ms per file (push, the whole process), and from the server's `/metrics` over the
 * push: HTTP requests per file pushed, and the mean server-side time of an `/upload` and of its
 * blob store `put` (ms; the put's share is the wait for the file-system pool and the disk). The machine may be shared: CPU ms per file
 * is the steadier figure. The upload part also measures this process (its HTTP client: utime + stime
 * of all its threads over the timed part) and the server per thread name (/proc/<pid>/task): on
 * one machine the rate is bounded by 2 cores / (server + bench client CPU per file).
 *
 * `--ceiling` adds the upload part against `bench/servers/small-ceiling.ts` (a minimal Bun.serve
 * that parses the same bodies, checks BLAKE3, writes the file as `--fsync` says and inserts one
 * SQLite row; no auth, no signature, no revision rules), interleaved with the checkouts' rounds:
 * what this machine gives any receiver that keeps small files durably.
 * Writes JSON to bench/results/small-files-<time>.json.
 */
import { randomBytes } from "node:crypto";
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join, resolve } from "node:path";
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
import {
  cpuSeconds,
  currentRss,
  freePort,
  peakRss,
  REPO_ROOT,
  SERVER_ROOT,
  type ServerProcess,
  startServer,
} from "../test/support/server.ts";
import { tempDir } from "../test/support/tmp.ts";
import { plaintextSizeOf } from "./framing.ts";

const { values: flags } = parseArgs({
  options: {
    files: { type: "string", default: "10000" },
    concurrency: { type: "string", default: "8" },
    fsync: { type: "string", default: "persist" },
    rounds: { type: "string", default: "1" },
    compare: { type: "string" },
    tree: { type: "string", default: realpathSync(join(SERVER_ROOT, "node_modules", "drizzle-orm")) },
    "skip-push": { type: "boolean", default: false },
    "push-arg": { type: "string", multiple: true },
    "server-bun-arg": { type: "string", multiple: true },
    "server-env": { type: "string", multiple: true },
    ceiling: { type: "boolean", default: false },
  },
});
const N = Number(flags.files);
const C = Number(flags.concurrency);
const ROUNDS = Number(flags.rounds);

/** `NAME=VALUE` pairs of `--server-env`. */
const serverEnv: Record<string, string> = {};
for (const pair of flags["server-env"] ?? []) {
  const at = pair.indexOf("=");
  if (at < 1) throw new Error(`--server-env ${pair}: expected NAME=VALUE`);
  serverEnv[pair.slice(0, at)] = pair.slice(at + 1);
}

/**
 * The variables that checkout `root`'s `bun run start` sets for its server: the assignments
 * before `bun run src/main.ts` in its package.json's `start` script, evaluated by bash in this
 * process's environment (so `${NAME:-default}` keeps a value set here). Empty when the script
 * sets none.
 */
function startScriptEnv(root: string): Record<string, string> {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    scripts?: Record<string, string>;
  };
  const script = pkg.scripts?.start ?? "";
  const prefix = script.replace(/\s*bun run src\/main\.ts\s*$/, "");
  if (prefix === script) throw new Error(`${root}: its start script does not end in bun run src/main.ts`);
  if (prefix.trim() === "") return {};
  const out = Bun.spawnSync(["bash", "-c", `${prefix} env -0`], { env: process.env });
  if (out.exitCode !== 0) throw new Error(`${root}: evaluating its start script: ${out.stderr.toString()}`);
  const names = new Set([...prefix.matchAll(/(?:^|\s)([A-Za-z_]\w*)=/g)].map((m) => m[1] as string));
  const env: Record<string, string> = {};
  for (const line of out.stdout.toString().split("\0")) {
    const at = line.indexOf("=");
    if (at > 0 && names.has(line.slice(0, at))) env[line.slice(0, at)] = line.slice(at + 1);
  }
  return env;
}

/** A checkout whose server and CLI run. */
interface Variant {
  name: string;
  root: string;
  /** Its server's environment beyond `ESYNC_*`: its start script's, then `--server-env`. */
  env: Record<string, string>;
  /** Its `esync` configuration directory (initialised on first use). */
  configDir: string;
  initialised: boolean;
}

const variants: Variant[] = [
  {
    name: "worktree",
    root: SERVER_ROOT,
    env: { ...startScriptEnv(REPO_ROOT), ...serverEnv },
    configDir: tempDir("esync-bench-cfg-"),
    initialised: false,
  },
];
if (flags.compare) {
  const dir = tempDir("esync-bench-ref-");
  const archive = Bun.spawnSync(["git", "-C", REPO_ROOT, "archive", "--format=tar", flags.compare]);
  if (archive.exitCode !== 0) throw new Error(`git archive ${flags.compare}: ${archive.stderr.toString()}`);
  const untar = Bun.spawnSync(["tar", "-x", "-C", dir], { stdin: archive.stdout });
  if (untar.exitCode !== 0) throw new Error(`tar: ${untar.stderr.toString()}`);
  const install = Bun.spawnSync([process.execPath, "install", "--frozen-lockfile"], { cwd: dir });
  if (install.exitCode !== 0)
    throw new Error(`bun install in ${flags.compare}: ${install.stderr.toString()}`);
  // A ref from before the workspace has `src/main.ts` at its root; later ones in packages/server.
  const serverDir = existsSync(join(dir, "packages", "server", "src", "main.ts"))
    ? join(dir, "packages", "server")
    : dir;
  variants.unshift({
    name: flags.compare,
    root: serverDir,
    env: { ...startScriptEnv(dir), ...serverEnv },
    configDir: tempDir("esync-bench-cfg-"),
    initialised: false,
  });
}

for (const v of variants) console.log(`${v.name}: server environment ${JSON.stringify(v.env)}`);

await cryptoWaitReady();
const folderKey = ed25519PairFromSeed(randomBytes(32));
const wallet = sr25519PairFromSeed(randomBytes(32));
const address = encodeAddress(wallet.publicKey, 42);
const exp = Math.floor(Date.now() / 1000) + 24 * 3600;
const auth = `Bearer sig1.${address}.${exp}.${u8aToHex(sr25519Sign(new TextEncoder().encode(`hcfs-auth:${address}:${exp}`), wallet), -1, false)}`;
const FOLDER = "0123456789abcdef";

console.log(`building ${N} multipart bodies of 1-16 KiB...`);
const boundary = "----esyncbench7c1f";
const enc = new TextEncoder();
const bodies: Buffer[] = [];
let totalBytes = 0;
for (let i = 0; i < N; i++) {
  const ct = randomBytes(1024 + Math.floor(Math.random() * 15 * 1024));
  totalBytes += ct.length;
  const hash = blake3Hex(ct);
  const path = `small/${Math.floor(i / 100)}/f${i}.bin`;
  const manifest = {
    ss58_address: address,
    folder_hash: FOLDER,
    ciphertext_hash: hash,
    size_bytes: plaintextSizeOf(ct.length),
    timestamp: Math.floor(Date.now() / 1000),
    signature: Array.from(ed25519Sign(enc.encode(signedSentence(hash)), folderKey)),
    signing_key: Array.from(folderKey.publicKey),
    path_hash: Array.from(Buffer.from(blake3Hex(enc.encode(path)), "hex")),
    salted_hash: Array.from(randomBytes(32)),
    encrypted_path: Array.from(randomBytes(40)),
    file_name: path.split("/").pop(),
    relative_path: path,
    revision_seq: 1,
    base_revision_id: null,
  };
  bodies.push(
    Buffer.concat([
      enc.encode(
        `--${boundary}\r\nContent-Disposition: form-data; name="manifest"\r\nContent-Type: application/json\r\n\r\n${JSON.stringify(manifest)}\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="ciphertext"\r\nContent-Type: application/octet-stream\r\n\r\n`,
      ),
      ct,
      enc.encode(`\r\n--${boundary}--\r\n`),
    ]),
  );
}

/** The tree `esync push` sends: a copy, so that every round and checkout reads the same files. */
const tree = join(tempDir("esync-bench-tree-"), "tree");
let treeFiles = 0;
if (!flags["skip-push"]) {
  cpSync(resolve(flags.tree), tree, { recursive: true, dereference: true });
  const count = (dir: string): number =>
    readdirSync(dir, { withFileTypes: true }).reduce(
      (n, e) => n + (e.isDirectory() ? count(join(dir, e.name)) : e.isFile() ? 1 : 0),
      0,
    );
  treeFiles = count(tree);
  console.log(`push tree: ${flags.tree} (${treeFiles} files)`);
}

/** CPU seconds (utime + stime) of each thread of process `pid`, summed by thread name. */
function threadCpuSeconds(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "latin1");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      out.set(name, (out.get(name) ?? 0) + (Number(f[11]) + Number(f[12])) / 100);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return out;
}

interface UploadRun {
  filesPerSecond: number;
  serverCpuMsPerFile: number;
  /** utime + stime of this bench process (its HTTP client, all threads) over the timed part. */
  clientCpuMsPerFile: number;
  /** Server CPU ms per file by thread name (threads of one name summed), over the timed part. */
  serverThreadCpuMsPerFile: Record<string, number>;
  peakRssMiB: number;
  failed: number;
}

interface PushRun {
  files: number;
  filesPerSecond: number;
  serverCpuMsPerFile: number;
  clientCpuMsPerFile: number;
  /** HTTP requests the server answered during the push, per file uploaded. */
  requestsPerFile: number;
  /** Mean server-side time of one `/upload` (ms), and of its blob store `put` within it. */
  serverUploadMs: number;
  serverPutMs: number;
  failed: number;
}

/** Sums of the server's `/metrics` samples that the push figures need. */
interface MetricSums {
  requests: number;
  uploadSeconds: number;
  uploads: number;
  putSeconds: number;
  puts: number;
}

/** Reads the server's `/metrics` (Prometheus text) into `MetricSums`. */
async function metricSums(server: ServerProcess): Promise<MetricSums> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const sum = (name: string, label = "") =>
    text
      .split("\n")
      .filter((l) => l.startsWith(name) && l.includes(label))
      .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
  return {
    requests: sum("esync_http_requests_total{"),
    uploadSeconds: sum("esync_single_upload_duration_seconds_sum"),
    uploads: sum("esync_single_upload_duration_seconds_count"),
    putSeconds: sum("esync_blob_operation_duration_seconds_sum", 'op="put"'),
    puts: sum("esync_blob_operation_duration_seconds_count", 'op="put"'),
  };
}

/** A running receiver of `/upload`: an esync server, or the ceiling. */
type Receiver = Pick<ServerProcess, "url" | "pid" | "dataDir" | "stop">;

/**
 * Starts `bench/servers/small-ceiling.ts` on a free port with a new directory, as `--fsync` says
 * (`persist` or `object`: durable writes; `off`: none), with this checkout's server environment
 * (its start script's file-system pool size included).
 * @throws when it exits before printing `ready`.
 */
async function startCeiling(): Promise<Receiver> {
  const dataDir = tempDir("esync-bench-ceiling-");
  const port = freePort();
  const proc = Bun.spawn(
    [
      process.execPath,
      ...(flags["server-bun-arg"] ?? []),
      join(SERVER_ROOT, "bench", "servers", "small-ceiling.ts"),
      String(port),
      dataDir,
      flags.fsync === "off" ? "off" : "persist",
    ],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, ...(variants.find((v) => v.name === "worktree")?.env ?? {}) },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "inherit",
    },
  );
  const reader = proc.stdout.getReader();
  let seen = "";
  while (!seen.includes("ready")) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`small-ceiling exited before it was ready: ${seen}`);
    seen += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return {
    url: `http://127.0.0.1:${port}`,
    pid: proc.pid,
    dataDir,
    async stop() {
      proc.kill("SIGTERM");
      return proc.exited;
    },
  };
}

/** Part 1: the prepared bodies through `/upload`, C at a time. */
async function uploadRun(server: Receiver, register = true): Promise<UploadRun> {
  if (register) {
    const reg = await fetch(`${server.url}/register_folder`, {
      method: "POST",
      headers: { authorization: auth, "content-type": "application/json" },
      body: JSON.stringify({ ss58_address: address, folder_hash: FOLDER, label: "bench" }),
    });
    if (!reg.ok) console.log(`register_folder: ${reg.status} (uploads do not need it)`);
  }
  let peak = 0;
  const sampler = setInterval(async () => {
    peak = Math.max(peak, (await currentRss(server.pid)) ?? 0);
  }, 50);
  const cpu0 = await cpuSeconds(server.pid);
  const threads0 = threadCpuSeconds(server.pid);
  const self0 = process.cpuUsage();
  const t0 = performance.now();
  let next = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: C }, async () => {
      for (let i = next++; i < N; i = next++) {
        const r = await fetch(`${server.url}/upload`, {
          method: "POST",
          headers: { authorization: auth, "content-type": `multipart/form-data; boundary=${boundary}` },
          body: new Uint8Array(bodies[i] as Buffer),
        });
        await r.arrayBuffer();
        if (r.status !== 200) failed++;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const self = process.cpuUsage(self0);
  const cpu = (await cpuSeconds(server.pid)) - cpu0;
  const threads: Record<string, number> = {};
  for (const [name, s] of threadCpuSeconds(server.pid)) {
    const ms = ((s - (threads0.get(name) ?? 0)) * 1000) / N;
    if (ms >= 0.005) threads[name] = Math.round(ms * 1000) / 1000;
  }
  clearInterval(sampler);
  peak = Math.max(peak, (await peakRss(server.pid)) ?? 0);
  return {
    filesPerSecond: N / seconds,
    serverCpuMsPerFile: (cpu * 1000) / N,
    clientCpuMsPerFile: (self.user + self.system) / 1000 / N,
    serverThreadCpuMsPerFile: threads,
    peakRssMiB: peak / 1024 / 1024,
    failed,
  };
}

/**
 * Runs the variant's CLI with its configuration directory; returns its output and resource use.
 * Its stdout goes to a file (a CLI that exits before a pipe is drained cannot cut it there).
 */
async function cli(v: Variant, server: ServerProcess, args: string[]) {
  const out = join(v.configDir, "stdout.json");
  const proc = Bun.spawn([process.execPath, join(v.root, "src", "cli", "esync.ts"), ...args], {
    cwd: v.root,
    env: { ...process.env, ESYNC_CONFIG_DIR: v.configDir, ESYNC_SERVER: server.url },
    stdin: "ignore",
    stdout: Bun.file(out),
    stderr: "pipe",
  });
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`esync ${args.join(" ")} exited ${code}:\n${stderr}`);
  return { stdout: await Bun.file(out).text(), usage: proc.resourceUsage() };
}

/** Part 2: `esync push` of the tree into a new folder. */
async function pushRun(v: Variant, server: ServerProcess): Promise<PushRun> {
  if (!v.initialised) {
    await cli(v, server, ["init", "--server", server.url, "--json"]);
    v.initialised = true;
  }
  const m0 = await metricSums(server);
  const cpu0 = await cpuSeconds(server.pid);
  const t0 = performance.now();
  const { stdout, usage } = await cli(v, server, [
    "push",
    tree,
    "--folder",
    "bench",
    "--create",
    "--json",
    ...(flags["push-arg"] ?? []),
  ]);
  const seconds = (performance.now() - t0) / 1000;
  const cpu = (await cpuSeconds(server.pid)) - cpu0;
  const m1 = await metricSums(server);
  const out = JSON.parse(stdout) as { uploaded: number; failed: number };
  const clientCpuUs = usage ? Number(usage.cpuTime.user + usage.cpuTime.system) : Number.NaN;
  return {
    files: out.uploaded,
    filesPerSecond: out.uploaded / seconds,
    serverCpuMsPerFile: (cpu * 1000) / out.uploaded,
    clientCpuMsPerFile: clientCpuUs / 1000 / out.uploaded,
    // Less the one `/metrics` request that read m0.
    requestsPerFile: (m1.requests - m0.requests - 1) / out.uploaded,
    serverUploadMs: ((m1.uploadSeconds - m0.uploadSeconds) * 1000) / (m1.uploads - m0.uploads),
    serverPutMs: ((m1.putSeconds - m0.putSeconds) * 1000) / (m1.puts - m0.puts),
    failed: out.failed,
  };
}

const runs: Record<string, { upload: UploadRun[]; push: PushRun[] }> = {};
for (const v of variants) runs[v.name] = { upload: [], push: [] };
/** Every row of the tables: the checkouts, then the ceiling with `--ceiling`. */
const rows = [...variants.map((v) => v.name), ...(flags.ceiling ? ["ceiling"] : [])];
if (flags.ceiling) runs.ceiling = { upload: [], push: [] };

/** Prints the figures of one upload run. */
function printUpload(round: number, name: string, u: UploadRun): void {
  console.log(
    `round ${round + 1} ${name.padEnd(12)} upload ${u.filesPerSecond.toFixed(0).padStart(5)} files/s, ` +
      `server ${u.serverCpuMsPerFile.toFixed(2)} CPU-ms/file, bench client ${u.clientCpuMsPerFile.toFixed(2)} CPU-ms/file, peak RSS ${u.peakRssMiB.toFixed(0)} MiB, ${u.failed} failed`,
  );
  console.log(
    `        server threads (CPU-ms/file): ${Object.entries(u.serverThreadCpuMsPerFile)
      .sort((a, b) => b[1] - a[1])
      .map(([thread, ms]) => `${thread} ${ms.toFixed(2)}`)
      .join(", ")}`,
  );
}

for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? variants : [...variants].reverse();
  for (const v of order) {
    const server = await startServer({
      root: v.root,
      env: { ...v.env, ESYNC_DISK_FSYNC: String(flags.fsync), ESYNC_LOG_LEVEL: "warn" },
      bunArgs: flags["server-bun-arg"] ?? [],
    });
    try {
      const u = await uploadRun(server);
      runs[v.name]?.upload.push(u);
      printUpload(round, v.name, u);
      if (!flags["skip-push"]) {
        const p = await pushRun(v, server);
        runs[v.name]?.push.push(p);
        console.log(
          `round ${round + 1} ${v.name.padEnd(12)} push   ${p.filesPerSecond.toFixed(0).padStart(5)} files/s ` +
            `(${p.files} files), server ${p.serverCpuMsPerFile.toFixed(2)} CPU-ms/file, ` +
            `CLI ${p.clientCpuMsPerFile.toFixed(2)} CPU-ms/file, ${p.requestsPerFile.toFixed(3)} requests/file, ` +
            `server /upload ${p.serverUploadMs.toFixed(2)} ms of which put ${p.serverPutMs.toFixed(2)} ms, ${p.failed} failed`,
        );
      }
    } finally {
      await server.stop();
      rmSync(server.dataDir, { recursive: true, force: true });
    }
  }
  if (flags.ceiling) {
    const ceiling = await startCeiling();
    try {
      const u = await uploadRun(ceiling, false);
      runs.ceiling?.upload.push(u);
      printUpload(round, "ceiling", u);
    } finally {
      await ceiling.stop();
      rmSync(ceiling.dataDir, { recursive: true, force: true });
    }
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length === 0
    ? Number.NaN
    : s.length % 2
      ? (s[m] as number)
      : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

const medians: Record<string, Record<string, number>> = {};
for (const name of rows) {
  const r = runs[name] as { upload: UploadRun[]; push: PushRun[] };
  medians[name] = {
    uploadFilesPerSecond: median(r.upload.map((x) => x.filesPerSecond)),
    uploadServerCpuMsPerFile: median(r.upload.map((x) => x.serverCpuMsPerFile)),
    uploadClientCpuMsPerFile: median(r.upload.map((x) => x.clientCpuMsPerFile)),
    uploadPeakRssMiB: median(r.upload.map((x) => x.peakRssMiB)),
    pushFilesPerSecond: median(r.push.map((x) => x.filesPerSecond)),
    pushServerCpuMsPerFile: median(r.push.map((x) => x.serverCpuMsPerFile)),
    pushClientCpuMsPerFile: median(r.push.map((x) => x.clientCpuMsPerFile)),
    pushRequestsPerFile: median(r.push.map((x) => x.requestsPerFile)),
    pushServerUploadMs: median(r.push.map((x) => x.serverUploadMs)),
    pushServerPutMs: median(r.push.map((x) => x.serverPutMs)),
  };
}
console.log(
  `\nmedians of ${ROUNDS} round(s): ${N} files (${(totalBytes / 1e6).toFixed(1)} MB) at c=${C}, fsync ${flags.fsync}` +
    (flags["skip-push"] ? "" : `; push of ${treeFiles} files`),
);
console.log(
  "| checkout | upload files/s | server CPU-ms/file | bench client CPU-ms/file | peak RSS MiB | push files/s | push server CPU-ms/file | CLI CPU-ms/file | push requests/file | push /upload ms | push put ms |",
);
console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const name of rows) {
  const m = medians[name] as Record<string, number>;
  const f = (x: number | undefined, d: number) => (x === undefined || Number.isNaN(x) ? "" : x.toFixed(d));
  console.log(
    `| ${name} | ${f(m.uploadFilesPerSecond, 0)} | ${f(m.uploadServerCpuMsPerFile, 2)} | ${f(m.uploadClientCpuMsPerFile, 2)} | ${f(m.uploadPeakRssMiB, 0)} | ` +
      `${f(m.pushFilesPerSecond, 0)} | ${f(m.pushServerCpuMsPerFile, 2)} | ${f(m.pushClientCpuMsPerFile, 2)} | ` +
      `${f(m.pushRequestsPerFile, 3)} | ${f(m.pushServerUploadMs, 2)} | ${f(m.pushServerPutMs, 2)} |`,
  );
}
if (variants.length === 2) {
  const [base, head] = variants.map((v) => medians[v.name] as Record<string, number>) as [
    Record<string, number>,
    Record<string, number>,
  ];
  console.log(
    `worktree / ${flags.compare}: upload files/s x${((head.uploadFilesPerSecond ?? 0) / (base.uploadFilesPerSecond ?? 1)).toFixed(2)}, ` +
      `server CPU-ms/file x${((head.uploadServerCpuMsPerFile ?? 0) / (base.uploadServerCpuMsPerFile ?? 1)).toFixed(2)}` +
      (flags["skip-push"]
        ? ""
        : `, push files/s x${((head.pushFilesPerSecond ?? 0) / (base.pushFilesPerSecond ?? 1)).toFixed(2)}`),
  );
}
if (flags.ceiling) {
  const c = medians.ceiling as Record<string, number>;
  for (const v of variants) {
    const m = medians[v.name] as Record<string, number>;
    console.log(
      `${v.name} / ceiling: upload files/s x${((m.uploadFilesPerSecond ?? 0) / (c.uploadFilesPerSecond ?? 1)).toFixed(2)}, ` +
        `server CPU-ms/file x${((m.uploadServerCpuMsPerFile ?? 0) / (c.uploadServerCpuMsPerFile ?? 1)).toFixed(2)}`,
    );
  }
}
console.log("targets: upload >= 3000 files/s, push >= 1000 files/s");

const result = {
  params: {
    files: N,
    concurrency: C,
    fsync: flags.fsync,
    bytes: totalBytes,
    rounds: ROUNDS,
    compare: flags.compare ?? null,
    ceiling: flags.ceiling,
    tree: flags["skip-push"] ? null : flags.tree,
    treeFiles,
    pushArgs: flags["push-arg"] ?? [],
    serverEnv: Object.fromEntries(variants.map((v) => [v.name, v.env])),
  },
  medians,
  runs,
};
mkdirSync(join(SERVER_ROOT, "bench", "results"), { recursive: true });
const out = join(
  SERVER_ROOT,
  "bench",
  "results",
  `small-files-${new Date().toISOString().replace(/[:.]/g, "-")}.json`,
);
writeFileSync(out, JSON.stringify(result, null, 2));
console.log(`wrote ${out}`);
process.exit(0);
