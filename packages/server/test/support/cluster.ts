/**
 * @module test/support/cluster
 * Several real esync server processes (`bun run src/main.ts`) forming one cluster, for the
 * multi-node tests (`test/multinode/`) and `bench/upload.ts --nodes N`. Every node listens on its
 * own port of 127.0.0.1 with its own data directory (its spool), and all of them share one
 * metadata database and one bucket of the real S3 test server (`test/support/s3-server.ts`).
 * The nodes are configured only through the documented `ESYNC_*` variables (docs/operator-guide.md#configuration
 * table), exactly as an operator would run them behind a load balancer.
 *
 * The shared metadata database (`ClusterOptions.database`, default `ESYNC_TEST_CLUSTER_DATABASE`
 * or `postgres`):
 * - `postgres`: a fresh database on the PostgreSQL test server (`test/support/pg-server.ts`),
 *   `ESYNC_DATABASE_URL` for every node. All nodes start at once, so they race to migrate it
 *   (one migrates under the advisory lock, the others wait).
 * - `sqlite`: one SQLite file opened by every process (`ESYNC_DB_PATH`; WAL works across the
 *   processes of one machine), for machines without PostgreSQL. It exercises the same cross-node
 *   rules, since no node can see another's memory. Node 0 starts first and migrates; the others
 *   start together once it answers.
 *
 * A node can be SIGKILLed (`kill`), stopped cleanly (`stop`), frozen (`freeze`: SIGSTOP, the
 * process keeps its state but does nothing until `thaw`), and started again (`start`) on the
 * same port and data directory, optionally with other variables. `output(i)` keeps everything
 * node i wrote over all its lives, so log events can be counted across restarts.
 *
 * Should the process that started the cluster die without `close()` (a bench or test run killed
 * by a timeout), a detached watchdog SIGKILLs the nodes it left running.
 */
import { randomBytes } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { S3Config } from "../../src/config/config.ts";
import { pgTestDatabase } from "./pg-server.ts";
import { removeTestBucket, s3Env, s3TestConfig, testClient } from "./s3-server.ts";
import { freePort, type ServerProcess, startServer } from "./server.ts";
import { tempDir } from "./tmp.ts";

/** The metadata database of a cluster (see the module comment). */
export type ClusterDatabase = "postgres" | "sqlite";

/** `ESYNC_TEST_CLUSTER_DATABASE`: `postgres` (default) or `sqlite`. */
export const clusterDatabase: ClusterDatabase = (() => {
  const v = process.env.ESYNC_TEST_CLUSTER_DATABASE || "postgres";
  if (v !== "postgres" && v !== "sqlite")
    throw new Error(`ESYNC_TEST_CLUSTER_DATABASE must be postgres or sqlite, got "${v}"`);
  return v;
})();

/** Options of `startCluster`. */
export interface ClusterOptions {
  /** Number of nodes (at least 1). */
  nodes: number;
  /** Goes into the bucket name (lowercase letters, digits, `-`). */
  label: string;
  /** Extra `ESYNC_*` variables for every node (e.g. `ESYNC_SWEEP_INTERVAL_SECONDS`). */
  env?: Record<string, string>;
  /** How long each node may take to answer `/health`, ms (default 60 s: the machine is shared). */
  timeoutMs?: number;
  /**
   * A bucket to use instead of a fresh one of the S3 test server (a bench's own S3); `close()`
   * then leaves it in place.
   */
  s3?: S3Config;
  /** Extra flags for every node's `bun` runtime (e.g. `--smol`). */
  bunArgs?: string[];
  /** The shared metadata database (default `clusterDatabase`). */
  database?: ClusterDatabase;
}

/** One node of a cluster: its fixed address and data directory, and the process running now. */
export interface ClusterNode {
  readonly index: number;
  /** `http://127.0.0.1:<port>`, the same over restarts. */
  readonly url: string;
  readonly port: number;
  /** This node's own data directory (spool); the database and the bucket are shared. */
  readonly dataDir: string;
  /** The running process, or null while the node is down. */
  process: ServerProcess | null;
}

/** A running cluster (see the module comment). */
export interface Cluster {
  readonly nodes: ClusterNode[];
  /** The shared bucket (and key prefix) every node stores blobs in. */
  readonly s3: S3Config;
  /** Which metadata database the nodes share. */
  readonly database: ClusterDatabase;
  /** The `ESYNC_*` variables every node gets (database and bucket), without per-node ones. */
  readonly sharedEnv: Record<string, string>;
  /** Base URL of node `i`. */
  url(i: number): string;
  /** SIGKILL node `i` (a crash: nothing flushed or closed) and wait for its exit code. */
  kill(i: number): Promise<number>;
  /** SIGTERM node `i` (graceful shutdown) and wait for its exit code. */
  stop(i: number): Promise<number>;
  /** SIGSTOP node `i`: it keeps its connections and state but runs nothing until `thaw`. */
  freeze(i: number): void;
  /** SIGCONT node `i` after `freeze`. */
  thaw(i: number): void;
  /**
   * Starts node `i` again (it must be down) on its port and data directory, with `env` added to
   * the cluster's variables, and waits for `/health`.
   */
  start(i: number, env?: Record<string, string>): Promise<ServerProcess>;
  /** Everything node `i` wrote to stdout and stderr over all its lives. */
  output(i: number): string;
  /** Every object key of the shared bucket, sorted. */
  listObjects(): Promise<string[]>;
  /**
   * Kills every node, deletes every node's data directory, the PostgreSQL database and the bucket
   * (unless `opts.s3` gave it).
   */
  close(): Promise<void>;
}

/**
 * Starts a cluster of `opts.nodes` nodes on one SQLite file and one fresh bucket of the S3 test
 * server, and resolves once every node answers `/health` 200 `healthy`.
 * @throws when the S3 server cannot be had or a node does not come up (with its output).
 */
export async function startCluster(opts: ClusterOptions): Promise<Cluster> {
  if (opts.nodes < 1) throw new Error("a cluster has at least one node");
  const s3 = opts.s3 ?? (await s3TestConfig(`mn-${opts.label}`, "esync"));
  const database = opts.database ?? clusterDatabase;
  const shared = tempDir("esync-cluster-db-");
  const pg = database === "postgres" ? await pgTestDatabase(`mn_${opts.label}`) : null;
  const sharedEnv: Record<string, string> = {
    ...s3Env(s3),
    ...(pg ? { ESYNC_DATABASE_URL: pg.url } : { ESYNC_DB_PATH: join(shared, "esync.sqlite") }),
  };
  const nodes: ClusterNode[] = [...Array(opts.nodes).keys()].map((index) => {
    const port = freePort();
    return {
      index,
      port,
      url: `http://127.0.0.1:${port}`,
      dataDir: tempDir(`esync-node${index}-`),
      process: null,
    };
  });
  const earlier: string[][] = nodes.map(() => []);
  // The running nodes' pids, for the watchdog (see the module comment).
  const pidFile = join(tmpdir(), `esync-cluster-${process.pid}-${randomBytes(4).toString("hex")}.pids`);
  const recordPids = () =>
    writeFileSync(pidFile, nodes.flatMap((n) => (n.process ? [`${n.process.pid}\n`] : [])).join(""));
  recordPids();
  killNodesWhenGone(pidFile, [shared, ...nodes.map((n) => n.dataDir)]);
  const node = (i: number): ClusterNode => {
    const n = nodes[i];
    if (!n) throw new Error(`no node ${i} in a cluster of ${nodes.length}`);
    return n;
  };
  const running = (i: number): ServerProcess => {
    const p = node(i).process;
    if (!p) throw new Error(`node ${i} is not running`);
    return p;
  };
  const down = (i: number, proc: ServerProcess) => {
    earlier[i]?.push(proc.output());
    node(i).process = null;
    recordPids();
  };

  const start = async (i: number, env: Record<string, string> = {}): Promise<ServerProcess> => {
    const n = node(i);
    if (n.process) throw new Error(`node ${i} is already running`);
    const proc = await startServer({
      port: n.port,
      dataDir: n.dataDir,
      timeoutMs: opts.timeoutMs ?? 60_000,
      bunArgs: opts.bunArgs,
      env: { ESYNC_LOG_LEVEL: "info", ...sharedEnv, ...opts.env, ...env },
    });
    n.process = proc;
    recordPids();
    return proc;
  };

  const cluster: Cluster = {
    nodes,
    s3,
    database,
    sharedEnv,
    url: (i) => node(i).url,
    async kill(i) {
      const p = running(i);
      const code = await p.kill();
      down(i, p);
      return code;
    },
    async stop(i) {
      const p = running(i);
      const code = await p.stop();
      down(i, p);
      return code;
    },
    freeze: (i) => void running(i).proc.kill("SIGSTOP"),
    thaw: (i) => void running(i).proc.kill("SIGCONT"),
    start,
    output: (i) => [...(earlier[i] ?? []), node(i).process?.output() ?? ""].join(""),
    async listObjects() {
      const names: string[] = [];
      for await (const item of testClient(s3).listObjectsV2(s3.bucket, "", true))
        if (item.name) names.push(item.name);
      return names.sort();
    },
    async close() {
      await Promise.all(
        nodes.map(async (n) => {
          const p = n.process;
          if (!p) return;
          p.proc.kill("SIGCONT");
          await p.kill();
          n.process = null;
        }),
      );
      rmSync(pidFile, { force: true });
      for (const n of nodes) rmSync(n.dataDir, { recursive: true, force: true });
      rmSync(shared, { recursive: true, force: true });
      if (!opts.s3) await removeTestBucket(s3);
      await pg?.drop();
    },
  };

  try {
    if (pg) {
      await Promise.all(nodes.map((n) => start(n.index)));
    } else {
      // Node 0 alone first: it migrates the SQLite file the others then open.
      await start(0);
      await Promise.all(nodes.slice(1).map((n) => start(n.index)));
    }
  } catch (e) {
    await cluster.close().catch(() => {});
    throw e;
  }
  return cluster;
}

/**
 * Starts a detached watchdog (outside the test runner's process tree) that waits for this process
 * to exit, then SIGKILLs every pid listed in `pidFile` that still runs `src/main.ts`, and removes
 * the file and the directories `dirs`. Nothing happens when `close()` removed the file first.
 */
function killNodesWhenGone(pidFile: string, dirs: string[]): void {
  const script = `
while kill -0 "$1" 2>/dev/null; do sleep 0.5; done
[ -f "$2" ] || exit 0
while read -r pid; do
  tr "\\0" " " 2>/dev/null <"/proc/$pid/cmdline" | grep -q "src/main.ts" && kill -9 "$pid"
done <"$2"
rm -f "$2"
shift 2
rm -rf -- "$@"
`;
  Bun.spawn(["setsid", "-f", "bash", "-c", script, "watchdog", String(process.pid), pidFile, ...dirs], {
    stdin: "ignore",
    stdout: "ignore",
    stderr: "ignore",
  }).unref();
}

/**
 * Parses a Prometheus text exposition into series → value, each series spelled as exposed
 * (`name{label="v",...}` or a bare `name`).
 */
export function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const cut = line.lastIndexOf(" ");
    if (cut > 0) out.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return out;
}

/**
 * Sum of every series of metric `name` whose labels include all of `labels` (exact values).
 * 0 when none matches.
 */
export function sumMetric(
  series: Map<string, number>,
  name: string,
  labels: Record<string, string> = {},
): number {
  let total = 0;
  for (const [key, value] of series) {
    const brace = key.indexOf("{");
    if ((brace === -1 ? key : key.slice(0, brace)) !== name) continue;
    const labelText = brace === -1 ? "" : key.slice(brace);
    if (Object.entries(labels).every(([k, v]) => labelText.includes(`${k}="${v}"`))) total += value;
  }
  return total;
}

/** `GET /metrics` of `url`, parsed. @throws when it does not answer 200. */
export async function scrape(url: string): Promise<Map<string, number>> {
  const r = await fetch(`${url}/metrics`);
  if (r.status !== 200) throw new Error(`${url}/metrics answered ${r.status}`);
  return parseMetrics(await r.text());
}

/** Log events named `event` in `output` (the JSON lines of a node), parsed. */
export function logEvents(output: string, event: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of output.split("\n")) {
    if (!line.includes(`"${event}"`)) continue;
    try {
      const parsed = JSON.parse(line) as Record<string, unknown>;
      if (parsed.event === event) out.push(parsed);
    } catch {
      // not a log line
    }
  }
  return out;
}
