/**
 * Small-file bench (issue 14, Performance): N files of 1–16 KiB through single-shot `POST /upload`
 * at concurrency C against a real server process (`src/main.ts`, a fresh data directory).
 *
 *   bun bench/small-files.ts [--files 10000] [--concurrency 8] [--fsync persist|object|off]
 *                            [--server-bun-arg=--cpu-prof ...]
 *
 * Every request body (multipart: signed manifest, then the ciphertext part) and one bearer token
 * are built before the clock starts, so the timed part is the server's work plus this process's
 * HTTP client. Reports files/s (wall), server CPU ms per file (utime + stime of the server
 * process from /proc over the run) and the server's peak RSS; the target is >= 3,000 files/s.
 * The machine may be shared: CPU ms per file is the steadier figure. Writes JSON to
 * bench/results/small-files-<time>.json.
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
import { signedSentence } from "../src/manifest/manifest.ts";
import { blake3Hex } from "../src/util/blake3.ts";
import { currentRss, peakRss, REPO_ROOT, startServer } from "../test/support/server.ts";

const { values: flags } = parseArgs({
  options: {
    files: { type: "string", default: "10000" },
    concurrency: { type: "string", default: "8" },
    fsync: { type: "string", default: "persist" },
    "server-bun-arg": { type: "string", multiple: true },
  },
});
const N = Number(flags.files);
const C = Number(flags.concurrency);

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
    size_bytes: ct.length - 48,
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

const server = await startServer({
  env: { ESYNC_DISK_FSYNC: String(flags.fsync), ESYNC_LOG_LEVEL: "warn" },
  bunArgs: flags["server-bun-arg"] ?? [],
});
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await Bun.file(`/proc/${pid}/stat`).text();
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
}
const reg = await fetch(`${server.url}/register_folder`, {
  method: "POST",
  headers: { authorization: auth, "content-type": "application/json" },
  body: JSON.stringify({ ss58_address: address, folder_hash: FOLDER, label: "bench" }),
});
if (!reg.ok) console.log(`register_folder: ${reg.status} (uploads do not need it)`);

let peak = 0;
const sampler = setInterval(async () => {
  peak = Math.max(peak, (await currentRss(server.pid)) ?? 0);
}, 50);
const cpu0 = await cpuSeconds(server.pid);
const t0 = performance.now();
let next = 0;
let failed = 0;
await Promise.all(
  Array.from({ length: C }, async () => {
    for (let i = next++; i < N; i = next++) {
      const r = await fetch(`${server.url}/upload`, {
        method: "POST",
        headers: { authorization: auth, "content-type": `multipart/form-data; boundary=${boundary}` },
        body: new Uint8Array(bodies[i]!),
      });
      await r.arrayBuffer();
      if (r.status !== 200) failed++;
    }
  }),
);
const seconds = (performance.now() - t0) / 1000;
const cpu = (await cpuSeconds(server.pid)) - cpu0;
clearInterval(sampler);
peak = Math.max(peak, (await peakRss(server.pid)) ?? 0);
await server.stop();
rmSync(server.dataDir, { recursive: true, force: true });

const result = {
  params: { files: N, concurrency: C, fsync: flags.fsync, bytes: totalBytes },
  filesPerSecond: N / seconds,
  serverCpuMsPerFile: (cpu * 1000) / N,
  serverCpuBoundFilesPerSecond: N / cpu,
  peakRssMiB: peak / 1024 / 1024,
  failed,
};
console.log(
  `${N} files (${(totalBytes / 1e6).toFixed(1)} MB) at c=${C}, fsync ${flags.fsync}: ${result.filesPerSecond.toFixed(0)} files/s, ` +
    `server ${result.serverCpuMsPerFile.toFixed(2)} CPU-ms/file (${result.serverCpuBoundFilesPerSecond.toFixed(0)} files per CPU-s), ` +
    `peak RSS ${result.peakRssMiB.toFixed(0)} MiB, ${failed} failed (target >= 3000 files/s)`,
);
mkdirSync(join(REPO_ROOT, "bench", "results"), { recursive: true });
const out = join(
  REPO_ROOT,
  "bench",
  "results",
  `small-files-${new Date().toISOString().replace(/[:.]/g, "-")}.json`,
);
writeFileSync(out, JSON.stringify(result, null, 2));
console.log(`wrote ${out}`);
process.exit(0);
