/**
 * `esync sync` bench: a real directory tree of small files (default a copy of
 * `node_modules/drizzle-orm`) synced up into a new folder by one directory, then down into an
 * empty second directory, by the CLI of this checkout against a fresh real server per run, once
 * per `--jobs` value (interleaved over `--rounds`). Prints files/s of both directions, the
 * server's and the CLI's CPU ms per file, and writes JSON to bench/results/sync-<time>.json.
 *
 *   bun bench/sync.ts [--jobs 1,8] [--rounds 1] [--tree DIR] [--fsync persist|object|off]
 */
import { cpSync, mkdirSync, readdirSync, realpathSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { cpuSeconds, REPO_ROOT, type ServerProcess, startServer } from "@esync/server/test/support/server.ts";
import { tempDir } from "@esync/server/test/support/tmp.ts";

const { values: flags } = parseArgs({
  options: {
    jobs: { type: "string", default: "1,8" },
    rounds: { type: "string", default: "1" },
    tree: {
      type: "string",
      default: realpathSync(join(REPO_ROOT, "packages", "server", "node_modules", "drizzle-orm")),
    },
    fsync: { type: "string", default: "persist" },
  },
});
const JOBS = flags.jobs.split(",").map(Number);
const ROUNDS = Number(flags.rounds);

const tree = join(tempDir("esync-bench-sync-"), "tree");
cpSync(resolve(flags.tree), tree, { recursive: true, dereference: true });
/** Files under `dir`, the sync state directory `.esync/` left out. */
const count = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce(
    (n, e) => n + (e.name === ".esync" ? 0 : e.isDirectory() ? count(join(dir, e.name)) : e.isFile() ? 1 : 0),
    0,
  );
const files = count(tree);
console.log(`tree: ${flags.tree} (${files} files)`);

/** One direction of one run. */
interface Leg {
  filesPerSecond: number;
  serverCpuMsPerFile: number;
  cliCpuMsPerFile: number;
}

/** Runs `esync ARGS` with configuration directory `config`; returns its CPU seconds. */
async function cli(config: string, server: ServerProcess, args: string[]): Promise<number> {
  const proc = Bun.spawn([process.execPath, join(REPO_ROOT, "packages", "cli", "src", "esync.ts"), ...args], {
    env: { ...process.env, ESYNC_CONFIG_DIR: config, ESYNC_SERVER: server.url },
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
  });
  const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`esync ${args.join(" ")} exited ${code}:\n${stderr}`);
  const u = proc.resourceUsage();
  return u ? Number(u.cpuTime.user + u.cpuTime.system) / 1e6 : Number.NaN;
}

async function leg(config: string, server: ServerProcess, args: string[]): Promise<Leg> {
  const cpu0 = await cpuSeconds(server.pid);
  const t0 = performance.now();
  const cliCpu = await cli(config, server, args);
  const seconds = (performance.now() - t0) / 1000;
  const serverCpu = (await cpuSeconds(server.pid)) - cpu0;
  return {
    filesPerSecond: files / seconds,
    serverCpuMsPerFile: (serverCpu * 1000) / files,
    cliCpuMsPerFile: (cliCpu * 1000) / files,
  };
}

const runs = new Map<number, { up: Leg[]; down: Leg[] }>(JOBS.map((j) => [j, { up: [], down: [] }]));
for (let round = 0; round < ROUNDS; round++) {
  for (const jobs of round % 2 ? [...JOBS].reverse() : JOBS) {
    const server = await startServer({ env: { ESYNC_DISK_FSYNC: flags.fsync } });
    try {
      const config = tempDir("esync-bench-cfg-");
      await cli(config, server, ["init", "--server", server.url, "--json"]);
      // A fresh copy per run: a synced directory keeps its account's state in `.esync/`.
      const src = join(tempDir("esync-bench-up-"), "tree");
      cpSync(tree, src, { recursive: true });
      const up = await leg(config, server, ["sync", src, "-f", "bench", "--create", "--jobs", String(jobs)]);
      const down = tempDir("esync-bench-down-");
      mkdirSync(down, { recursive: true });
      const dl = await leg(config, server, ["sync", down, "-f", "bench", "--jobs", String(jobs)]);
      if (count(down) !== files) throw new Error(`downloaded ${count(down)} of ${files} files`);
      runs.get(jobs)?.up.push(up);
      runs.get(jobs)?.down.push(dl);
      console.log(
        `round ${round + 1} jobs ${String(jobs).padStart(2)}: up ${up.filesPerSecond.toFixed(0)} files/s ` +
          `(server ${up.serverCpuMsPerFile.toFixed(2)}, CLI ${up.cliCpuMsPerFile.toFixed(2)} CPU-ms/file), ` +
          `down ${dl.filesPerSecond.toFixed(0)} files/s (server ${dl.serverCpuMsPerFile.toFixed(2)}, ` +
          `CLI ${dl.cliCpuMsPerFile.toFixed(2)} CPU-ms/file)`,
      );
    } finally {
      await server.stop();
    }
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2
    ? (s[(s.length - 1) / 2] as number)
    : ((s[s.length / 2 - 1] as number) + (s[s.length / 2] as number)) / 2;
};
const medianLeg = (legs: Leg[]): Leg => ({
  filesPerSecond: median(legs.map((l) => l.filesPerSecond)),
  serverCpuMsPerFile: median(legs.map((l) => l.serverCpuMsPerFile)),
  cliCpuMsPerFile: median(legs.map((l) => l.cliCpuMsPerFile)),
});
console.log(`\nmedians of ${ROUNDS} round(s): ${files} files, fsync ${flags.fsync}`);
console.log(
  "| --jobs | up files/s | up server CPU-ms/file | up CLI CPU-ms/file | down files/s | down server CPU-ms/file | down CLI CPU-ms/file |",
);
console.log("|---:|---:|---:|---:|---:|---:|---:|");
const result: Record<string, { up: Leg; down: Leg }> = {};
for (const [jobs, r] of runs) {
  const up = medianLeg(r.up);
  const down = medianLeg(r.down);
  result[jobs] = { up, down };
  console.log(
    `| ${jobs} | ${up.filesPerSecond.toFixed(0)} | ${up.serverCpuMsPerFile.toFixed(2)} | ${up.cliCpuMsPerFile.toFixed(2)} | ` +
      `${down.filesPerSecond.toFixed(0)} | ${down.serverCpuMsPerFile.toFixed(2)} | ${down.cliCpuMsPerFile.toFixed(2)} |`,
  );
}
const out = join(
  REPO_ROOT,
  "packages",
  "cli",
  "bench",
  "results",
  `sync-${new Date().toISOString().replace(/[:.]/g, "-")}.json`,
);
mkdirSync(join(REPO_ROOT, "packages", "cli", "bench", "results"), { recursive: true });
writeFileSync(out, JSON.stringify({ files, fsync: flags.fsync, rounds: ROUNDS, medians: result }, null, 2));
console.log(`wrote ${out}`);
