/**
 * Client upload bench (issue 27): one large file pushed by the real CLI (`esync push`) to a real
 * server process, through a forwarding proxy in this process that notes when the first chunk
 * request reaches it.
 *
 *   bun packages/cli/bench/client-upload.ts [--size 1GiB] [--repeat 1] [--cli packages/cli/src/esync.ts] [--out FILE]
 *
 * Reports per run: first-byte latency (ms from the CLI's start to the first
 * `PUT /upload/session/{id}/chunk/{i}` arriving at the proxy), total time (ms from the CLI's start
 * to its exit), and the largest size the CLI's configuration directory reached during the run
 * (sampled every 100 ms; a whole-file spill shows up there). `--cli` runs another checkout's CLI
 * (e.g. a worktree of an older commit), so before and after are measured by the same bench.
 * The file is random bytes written once per run. Prints a table and writes JSON to
 * packages/cli/bench/results/client-upload-<time>.json (or `--out`).
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { REPO_ROOT, startServer } from "@esync/server/test/support/server.ts";

const { values } = parseArgs({
  options: {
    size: { type: "string", default: "1GiB" },
    repeat: { type: "string", default: "1" },
    cli: { type: "string", default: join(REPO_ROOT, "packages", "cli", "src", "esync.ts") },
    out: { type: "string" },
  },
});

function parseSize(s: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(B|KiB|MiB|GiB)?$/i.exec(s);
  if (!m) throw new Error(`bad size ${s}`);
  const unit = { b: 1, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3 }[(m[2] ?? "B").toLowerCase()] as number;
  return Math.round(Number(m[1]) * unit);
}

const size = parseSize(values.size as string);
const cli = resolve(values.cli as string);
const MNEMONIC = `${"abandon ".repeat(11)}about`;

/** Bytes under `dir`, recursively (0 when it is gone). */
function duBytes(dir: string): number {
  let n = 0;
  let entries: import("node:fs").Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    try {
      if (e.isDirectory()) n += duBytes(p);
      else n += statSync(p).size;
    } catch {
      // removed while we looked
    }
  }
  return n;
}

function cliEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (!k.startsWith("ESYNC_") && v !== undefined) env[k] = v;
  return { ...env, ...extra };
}

async function writeRandomFile(path: string, bytes: number): Promise<void> {
  const fh = await open(path, "w");
  const block = randomBytes(8 * 1024 * 1024);
  for (let at = 0; at < bytes; at += block.byteLength) {
    await fh.write(block.subarray(0, Math.min(block.byteLength, bytes - at)));
    block[0] = (block[0] as number) ^ 1; // no two blocks alike
  }
  await fh.close();
}

interface Run {
  firstByteMs: number | null;
  totalMs: number;
  peakConfigDirBytes: number;
  exitCode: number;
}

async function once(work: string): Promise<Run> {
  const server = await startServer({ env: { ESYNC_DISK_FSYNC: "off" } });
  let firstChunkAt: number | null = null;
  const target = new URL(server.url);
  const proxy = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      if (firstChunkAt === null && req.method === "PUT" && /\/chunk\/\d+$/.test(url.pathname))
        firstChunkAt = performance.now();
      url.host = target.host;
      return fetch(url, {
        method: req.method,
        headers: req.headers,
        body: req.body,
        redirect: "manual",
        decompress: false,
      } as RequestInit);
    },
  });
  const cfg = join(work, "config");
  const src = join(work, "src");
  try {
    const init = Bun.spawn([process.execPath, cli, "init", "--import", "--server", proxy.url.origin], {
      env: cliEnv({ ESYNC_CONFIG_DIR: cfg }),
      stdin: new Blob([`${MNEMONIC}\n`]),
      stdout: "ignore",
      stderr: "inherit",
    });
    if ((await init.exited) !== 0) throw new Error("esync init failed");
    mkdirSync(src, { recursive: true });
    await writeRandomFile(join(src, "big.bin"), size);
    let peak = duBytes(cfg);
    const t0 = performance.now();
    const push = Bun.spawn([process.execPath, cli, "push", src, "--folder", "bench", "--create", "--json"], {
      env: cliEnv({ ESYNC_CONFIG_DIR: cfg }),
      stdout: "ignore",
      stderr: "inherit",
    });
    const sampler = setInterval(() => {
      peak = Math.max(peak, duBytes(cfg));
    }, 100);
    const exitCode = await push.exited;
    const totalMs = performance.now() - t0;
    clearInterval(sampler);
    return {
      firstByteMs: firstChunkAt === null ? null : (firstChunkAt as number) - t0,
      totalMs,
      peakConfigDirBytes: peak,
      exitCode,
    };
  } finally {
    proxy.stop(true);
    await server.stop();
    rmSync(cfg, { recursive: true, force: true });
    rmSync(src, { recursive: true, force: true });
  }
}

const runs: Run[] = [];
for (let i = 0; i < Number(values.repeat); i++) {
  const work = mkdtempSync(join(tmpdir(), "esync-bench-client-upload-"));
  try {
    runs.push(await once(work));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
console.log(`esync push of ${size} bytes (${cli})`);
console.log("run  first byte ms  total ms  MB/s   peak config dir MiB  exit");
runs.forEach((r, i) => {
  console.log(
    `${String(i + 1).padEnd(4)} ${String(r.firstByteMs === null ? "-" : Math.round(r.firstByteMs)).padStart(13)} ${String(Math.round(r.totalMs)).padStart(9)}  ${((size / r.totalMs) * 1e-3).toFixed(1).padStart(5)}  ${(r.peakConfigDirBytes / 1024 ** 2).toFixed(1).padStart(19)}  ${r.exitCode}`,
  );
});
const out =
  (values.out as string | undefined) ??
  join(import.meta.dir, "results", `client-upload-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
mkdirSync(join(out, ".."), { recursive: true });
writeFileSync(
  out,
  JSON.stringify(
    { bench: "client-upload", params: { size, cli }, at: new Date().toISOString(), runs },
    null,
    1,
  ),
);
console.log(`wrote ${out}`);
