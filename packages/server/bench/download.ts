/**
 * `bun bench/download.ts`: `GET /download` of esync against the shared yardstick
 * `download-ceiling.ts` (`GET /whole`: one file as a `Bun.file` body, sent by sendfile with
 * `Content-Length`), in one invocation, with the same client and the same ciphertext, on disk.
 * With `--storage s3` esync stores the file in a bucket of the test RGW
 * (test/support/s3-server.ts) and the ceiling is a raw GET of the same bytes stored as one
 * object in that bucket, by a presigned URL, from this process (no server of ours in between:
 * its CPU column is empty).
 *
 *   bun bench/download.ts [--cases 1:512MiB,4:256MiB] [--rounds 3] [--chunk-size 8MiB]
 *                         [--storage disk|s3] [--baseline-root DIR] [--yardsticks DIR] [--out FILE]
 *
 * Each case `C:SIZE` is C concurrent GETs of one file of SIZE bytes (uploaded once beforehand
 * through an upload session of `--chunk-size` chunks; the ceiling gets the same bytes as its
 * `whole` file). Every receiver is a process of its own: esync (`src/main.ts`, fsync off), with
 * `--baseline-root` also `esync-base` (`src/main.ts` of another checkout, e.g. main extracted
 * with `git archive`, its `node_modules` linked: before and after in one run), and the ceiling
 * (`download-ceiling.ts` of `--yardsticks`, default `../shared/bench` beside the repository
 * root, started as is). Rounds are interleaved, each starting with the next receiver.
 *
 * Per run: MB/s (C × SIZE / wall time from the first request to the last body byte; MB = 10^6 B),
 * server CPU seconds per GiB sent (utime + stime of the server process from /proc, this run
 * only). Each round also sends, untimed, four ranged GETs per receiver (within a chunk, across
 * chunks, a suffix, an open end). Every 200 and 206 answer is counted with and without an exact
 * `Content-Length` (equal to the bytes of its body) and checked byte for byte against the stored
 * ciphertext (ranges) or by length (whole bodies). Prints every run, the medians, the ratios
 * esync / ceiling, the load average at the start and end; writes JSON to
 * bench/results/download-<time>.json.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
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
import { createS3BlobStore, createS3Client } from "../src/storage/s3.ts";
import { s3Env, s3TestConfig } from "../test/support/s3-server.ts";
import { REPO_ROOT, SERVER_ROOT, startServer } from "../test/support/server.ts";
import { plaintextSizeOf } from "./framing.ts";
import { webPiecesOf } from "./rounds.ts";

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
    cases: { type: "string", default: "1:512MiB,4:256MiB" },
    rounds: { type: "string", default: "3" },
    "chunk-size": { type: "string", default: "8MiB" },
    storage: { type: "string", default: "disk" },
    "baseline-root": { type: "string" },
    yardsticks: { type: "string" },
    out: { type: "string" },
  },
  strict: true,
});
const CASES = String(flags.cases)
  .split(",")
  .map((c) => {
    const [n, size] = c.split(":");
    return { c: Number(n), size: parseSize(String(size)) };
  });
const ROUNDS = Number(flags.rounds);
const CHUNK = parseSize(String(flags["chunk-size"]));
const BASELINE_ROOT = flags["baseline-root"];
if (flags.storage !== "disk" && flags.storage !== "s3") throw new Error("--storage is disk or s3");
const S3 = flags.storage === "s3" ? await s3TestConfig("bench-download") : null;
const YARDSTICKS = flags.yardsticks ?? join(REPO_ROOT, "..", "shared", "bench");
const load0 = loadavg();

await cryptoWaitReady();
const maxSize = Math.max(...CASES.map((c) => c.size));
console.log(`generating ${(maxSize / MiB).toFixed(0)} MiB of random ciphertext...`);
const payload = Buffer.allocUnsafe(maxSize);
for (let o = 0; o < maxSize; o += 64 * MiB) randomBytes(Math.min(64 * MiB, maxSize - o)).copy(payload, o);

// ---- esync identity and upload ---------------------------------------------------------------
const folderKey = ed25519PairFromSeed(randomBytes(32));
const wallet = sr25519PairFromSeed(randomBytes(32));
const address = encodeAddress(wallet.publicKey, 42);
const exp = Math.floor(Date.now() / 1000) + 24 * 3600;
const auth = `Bearer sig1.${address}.${exp}.${u8aToHex(sr25519Sign(new TextEncoder().encode(`hcfs-auth:${address}:${exp}`), wallet), -1, false)}`;
const FOLDER = "0123456789abcdef";

async function ok(r: Response, what: string): Promise<Response> {
  if (!r.ok) throw new Error(`${what}: ${r.status} ${await r.text()}`);
  return r;
}

/** Uploads `ct` to the esync at `url` through a session (4 chunk PUTs in flight); returns its download path. */
async function esyncUpload(url: string, ct: Uint8Array, path: string): Promise<string> {
  const hash = blake3Hex(ct);
  const manifest = {
    ss58_address: address,
    folder_hash: FOLDER,
    ciphertext_hash: hash,
    size_bytes: plaintextSizeOf(ct.length),
    timestamp: Math.floor(Date.now() / 1000),
    signature: Array.from(ed25519Sign(new TextEncoder().encode(signedSentence(hash)), folderKey)),
    signing_key: Array.from(folderKey.publicKey),
    path_hash: Array.from(Buffer.from(blake3Hex(new TextEncoder().encode(path)), "hex")),
    salted_hash: Array.from(randomBytes(32)),
    encrypted_path: Array.from(randomBytes(40)),
    file_name: null,
    relative_path: null,
    revision_seq: 1,
    base_revision_id: null,
  };
  const chunks = Math.ceil(ct.length / CHUNK);
  const open = await ok(
    await fetch(`${url}/upload/session`, {
      method: "POST",
      headers: { authorization: auth, "content-type": "application/json" },
      body: JSON.stringify({ manifest, chunk_count: chunks, chunk_size: CHUNK, ciphertext_size: ct.length }),
    }),
    "open",
  );
  const sid = ((await open.json()) as { Success: { session_id: string } }).Success.session_id;
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let i = next++; i < chunks; i = next++) {
        const body = new Uint8Array(
          ct.buffer as ArrayBuffer,
          ct.byteOffset + i * CHUNK,
          Math.min(CHUNK, ct.length - i * CHUNK),
        );
        await (
          await ok(
            await fetch(`${url}/upload/session/${sid}/chunk/${i}`, {
              method: "PUT",
              headers: { authorization: auth },
              body,
            }),
            `chunk ${i}`,
          )
        ).arrayBuffer();
      }
    }),
  );
  await (
    await ok(
      await fetch(`${url}/upload/session/${sid}/finalize`, {
        method: "POST",
        headers: { authorization: auth },
      }),
      "finalize",
    )
  ).arrayBuffer();
  const fileId = blake3Hex(new TextEncoder().encode(path));
  return `/download/${address}/${FOLDER}/${fileId}`;
}

// ---- receivers -------------------------------------------------------------------------------
interface Receiver {
  name: string;
  /** The process that serves the file of `size` bytes; null when none of ours does (raw S3). */
  pidOf(size: number): number | null;
  /** Absolute URL of the file of `size` bytes. */
  urlOf(size: number): string;
  headers: Record<string, string>;
  stop(): Promise<void>;
}

/** CPU seconds (user + system) of process `pid` so far, from /proc/<pid>/stat. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await Bun.file(`/proc/${pid}/stat`).text();
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function startEsync(name: string, root?: string): Promise<Receiver> {
  const server = await startServer({
    env: { ESYNC_DISK_FSYNC: "off", ESYNC_LOG_LEVEL: "warn", ...(S3 ? s3Env(S3) : {}) },
    ...(root ? { root } : {}),
  });
  const paths = new Map<number, string>();
  for (const { size } of CASES)
    if (!paths.has(size))
      paths.set(size, await esyncUpload(server.url, payload.subarray(0, size), `dl/${size}.bin`));
  return {
    name,
    pidOf: () => server.pid,
    urlOf: (size) => `${server.url}${paths.get(size)}`,
    headers: { authorization: auth },
    async stop() {
      await server.stop();
      rmSync(server.dataDir, { recursive: true, force: true });
    },
  };
}

/** One `download-ceiling.ts` per file size (it serves the one file `DIR/whole`). */
async function startCeiling(): Promise<Receiver> {
  const procs = new Map<number, { url: string; dir: string; proc: Bun.Subprocess }>();
  for (const { size } of CASES) {
    if (procs.has(size)) continue;
    const dir = mkdtempSync(join(tmpdir(), "esync-dl-ceiling-"));
    mkdirSync(join(dir, "chunks"));
    await Bun.write(join(dir, "whole"), payload.subarray(0, size));
    const proc = Bun.spawn([process.execPath, "run", join(YARDSTICKS, "download-ceiling.ts")], {
      stdout: "pipe",
      stderr: "inherit",
      env: { ...process.env, DIR: dir, N: "0" },
    });
    const reader = proc.stdout.getReader();
    const { value } = await reader.read();
    const port = /ready (\d+)/.exec(new TextDecoder().decode(value))?.[1];
    if (!port) throw new Error("download-ceiling.ts did not start");
    reader.releaseLock();
    procs.set(size, { url: `http://127.0.0.1:${port}/whole`, dir, proc });
  }
  return {
    name: "ceiling",
    pidOf: (size) => procs.get(size)!.proc.pid,
    urlOf: (size) => procs.get(size)!.url,
    headers: {},
    async stop() {
      for (const p of procs.values()) {
        p.proc.kill("SIGTERM");
        await p.proc.exited;
        rmSync(p.dir, { recursive: true, force: true });
      }
    },
  };
}

/** The same bytes as one object per size in the esync bucket, read by presigned GET URLs. */
async function startRawS3(): Promise<Receiver> {
  if (!S3) throw new Error("no S3");
  const store = createS3BlobStore(S3);
  const { client, close } = createS3Client(S3);
  const urls = new Map<number, string>();
  for (const { size } of CASES) {
    if (urls.has(size)) continue;
    const key = `bench-download-raw/${size}`;
    const bytes = payload.subarray(0, size);
    await store.put(key, webPiecesOf(bytes), size);
    const name = S3.prefix === "" ? key : `${S3.prefix}/${key}`;
    urls.set(size, await client.presignedUrl("GET", S3.bucket, name, 24 * 3600));
  }
  return {
    name: "ceiling",
    pidOf: () => null,
    urlOf: (size) => urls.get(size)!,
    headers: {},
    async stop() {
      await store.deletePrefix("bench-download-raw/");
      close();
      await store.close();
    },
  };
}

// ---- measuring -------------------------------------------------------------------------------
interface Framing {
  withLength: number;
  without: number;
}

/** GETs `url`, reads the body to its end; checks status and length; counts the framing. */
async function get(
  r: Receiver,
  size: number,
  framing: Framing,
  range?: { header: string; start: number; end: number },
): Promise<number> {
  const res = await fetch(r.urlOf(size), {
    headers: { ...r.headers, ...(range ? { range: range.header } : {}) },
  });
  const want = range ? range.end - range.start : size;
  if (res.status !== (range ? 206 : 200)) throw new Error(`${r.name}: status ${res.status}`);
  let got = 0;
  const pieces: Uint8Array[] = [];
  for await (const piece of res.body!) {
    got += piece.byteLength;
    if (range) pieces.push(piece);
  }
  if (got !== want) throw new Error(`${r.name}: ${got} bytes, expected ${want}`);
  if (range && !Buffer.concat(pieces).equals(payload.subarray(range.start, range.end)))
    throw new Error(`${r.name}: range ${range.header} differs from the stored bytes`);
  if (res.headers.get("content-length") === String(want)) framing.withLength++;
  else framing.without++;
  return got;
}

/** The four untimed ranged GETs of a round, for a file of `size` bytes. */
function rangesOf(size: number): { header: string; start: number; end: number }[] {
  const c = Math.min(CHUNK, size);
  return [
    { header: `bytes=10-${Math.floor(c / 2)}`, start: 10, end: Math.floor(c / 2) + 1 },
    { header: `bytes=${c - 5}-${Math.min(size, 3 * c) - 1}`, start: c - 5, end: Math.min(size, 3 * c) },
    { header: "bytes=-1000", start: size - 1000, end: size },
    { header: `bytes=${size - c - 7}-`, start: size - c - 7, end: size },
  ];
}

/** `x` with two decimals, or `-` when it was not measured (NaN). */
function fixed(x: number): string {
  return Number.isNaN(x) ? "-" : x.toFixed(2);
}

interface Run {
  mbps: number;
  cpuPerGiB: number;
}

async function measure(r: Receiver, c: number, size: number, framing: Framing): Promise<Run> {
  const pid = r.pidOf(size);
  const cpu0 = pid === null ? 0 : await cpuSeconds(pid);
  const t0 = performance.now();
  const bytes = (await Promise.all(Array.from({ length: c }, () => get(r, size, framing)))).reduce(
    (a, b) => a + b,
    0,
  );
  const s = (performance.now() - t0) / 1000;
  const cpu = pid === null ? Number.NaN : (await cpuSeconds(pid)) - cpu0;
  return { mbps: bytes / 1e6 / s, cpuPerGiB: cpu / (bytes / (1024 * MiB)) };
}

const receivers: Receiver[] = [];
receivers.push(await startEsync("esync"));
if (BASELINE_ROOT) receivers.push(await startEsync("esync-base", BASELINE_ROOT));
receivers.push(S3 ? await startRawS3() : await startCeiling());
const caseName = (k: { c: number; size: number }) => `c=${k.c} ${(k.size / MiB).toFixed(0)} MiB`;
const runs: Record<string, Record<string, Run[]>> = {};
const framing: Record<string, Framing> = Object.fromEntries(
  receivers.map((r) => [r.name, { withLength: 0, without: 0 }]),
);
console.log(
  `${CASES.map(caseName).join(", ")}; esync files in ${(CHUNK / MiB).toFixed(0)} MiB chunks, ${S3 ? `S3 (${S3.endpoint}; ceiling: raw GETs)` : "disk, fsync off"}; ` +
    `${ROUNDS} interleaved rounds; load average ${load0.map((x) => x.toFixed(2)).join(" ")}`,
);
try {
  // Warm-up: one untimed whole GET per receiver and size (page cache, JIT).
  for (const r of receivers) for (const k of CASES) await get(r, k.size, { withLength: 0, without: 0 });
  for (let round = 0; round < ROUNDS; round++) {
    for (const k of CASES) {
      for (let j = 0; j < receivers.length; j++) {
        const r = receivers[(round + j) % receivers.length]!;
        const run = await measure(r, k.c, k.size, framing[r.name]!);
        for (const range of rangesOf(k.size)) await get(r, k.size, framing[r.name]!, range);
        const byReceiver = runs[caseName(k)] ?? {};
        runs[caseName(k)] = byReceiver;
        byReceiver[r.name] = [...(byReceiver[r.name] ?? []), run];
        console.log(
          `round ${round + 1} ${caseName(k).padEnd(14)} ${r.name.padEnd(10)} ${run.mbps.toFixed(0).padStart(5)} MB/s  ${fixed(run.cpuPerGiB)} CPU-s/GiB`,
        );
      }
    }
  }
} finally {
  for (const r of receivers) await r.stop();
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const load1 = loadavg();
const summary: Record<string, Record<string, Run & { mbpsRatio?: number; cpuRatio?: number }>> = {};
console.log(
  `\nload average at the start ${load0.map((x) => x.toFixed(2)).join(" ")}, at the end ${load1.map((x) => x.toFixed(2)).join(" ")}; medians:`,
);
console.log("| case | receiver | MB/s | server CPU-s/GiB | MB/s / ceiling | CPU / ceiling |");
console.log("|---|---|---:|---:|---:|---:|");
for (const [k, byReceiver] of Object.entries(runs)) {
  const ceiling = {
    mbps: median(byReceiver.ceiling!.map((x) => x.mbps)),
    cpu: median(byReceiver.ceiling!.map((x) => x.cpuPerGiB)),
  };
  for (const [name, rs] of Object.entries(byReceiver)) {
    const m = { mbps: median(rs.map((x) => x.mbps)), cpuPerGiB: median(rs.map((x) => x.cpuPerGiB)) };
    const row = { ...m, mbpsRatio: m.mbps / ceiling.mbps, cpuRatio: m.cpuPerGiB / ceiling.cpu };
    summary[k] = { ...summary[k], [name]: row };
    console.log(
      `| ${k} | ${name} | ${m.mbps.toFixed(0)} | ${fixed(m.cpuPerGiB)} | ${row.mbpsRatio.toFixed(2)} | ${fixed(row.cpuRatio)} |`,
    );
  }
}
console.log("\nContent-Length on 200/206 answers (exact length / without):");
for (const [name, f] of Object.entries(framing))
  console.log(
    `  ${name}: ${f.withLength} / ${f.without} (${((100 * f.withLength) / Math.max(1, f.withLength + f.without)).toFixed(0)}%)`,
  );
console.log("targets: MB/s / ceiling >= 0.9, CPU / ceiling <= 2, Content-Length on 100%");
const out =
  flags.out ??
  join(SERVER_ROOT, "bench", "results", `download-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
mkdirSync(join(SERVER_ROOT, "bench", "results"), { recursive: true });
writeFileSync(
  out,
  JSON.stringify(
    {
      params: {
        cases: CASES,
        rounds: ROUNDS,
        chunk: CHUNK,
        storage: flags.storage,
        baselineRoot: BASELINE_ROOT ?? null,
        yardsticks: YARDSTICKS,
      },
      loadAverage: { start: load0, end: load1 },
      runs,
      summary,
      framing,
    },
    null,
    2,
  ),
);
console.log(`wrote ${out}`);
process.exit(0);
