/**
 * Starts the real server process (`bun run src/main.ts`) for end-to-end tests and benches: on a
 * free port of 127.0.0.1 picked here, with its own data directory, waiting until `/health`
 * answers 200 `{"status": "healthy"}`. The process's stderr (structured logs) is kept for error
 * messages; the caller stops it with SIGTERM or kills it with SIGKILL.
 */

import { join } from "node:path";
import type { Subprocess } from "bun";
import { storageEnv } from "./s3-server.ts";
import { tempDir } from "./tmp.ts";

/** The server package's folder (where `src/main.ts`, `bench/` and `drizzle/` are). */
export const SERVER_ROOT = join(import.meta.dir, "..", "..");

/** The workspace root (where the root `package.json` with `bun run start` is). */
export const REPO_ROOT = join(SERVER_ROOT, "..", "..");

/** A running server process. */
export interface ServerProcess {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  pid: number;
  dataDir: string;
  proc: Subprocess<"ignore", "pipe", "pipe">;
  /** Everything the process wrote to stderr and stdout so far. */
  output(): string;
  /** SIGTERM and wait for the exit (clean shutdown). */
  stop(): Promise<number>;
  /** SIGKILL and wait for the exit (a crash: nothing is flushed or closed). */
  kill(): Promise<number>;
}

/** Options of `startServer`. */
export interface StartOptions {
  /** Data directory (default: a new temporary one). */
  dataDir?: string;
  /** Port (default: a free one). */
  port?: number;
  /** Extra `ESYNC_*` variables. Every other `ESYNC_*` variable of this process is dropped. */
  env?: Record<string, string>;
  /** How long to wait for `/health`, ms (default 30 s). */
  timeoutMs?: number;
  /** Extra flags for the `bun` runtime, before `run` (e.g. `--smol`). */
  bunArgs?: string[];
  /** Checkout whose `src/main.ts` runs (default this repository; benches compare another ref). */
  root?: string;
  /**
   * Runs the server on the test stores: with `ESYNC_TEST_DATABASE=postgres` a fresh PostgreSQL
   * database, with `ESYNC_TEST_STORAGE=s3` a fresh bucket on the test S3 server (`storageEnv`),
   * both removed by `stop`; on the defaults nothing changes (SQLite and blobs in the data
   * directory). Used by the CLI tests, which then run in the PostgreSQL + S3 pass too. A string
   * names the database and bucket (default `cli`); pass the same `shared` object to several
   * servers to run them as nodes of one cluster on the same database and bucket.
   */
  testStores?: boolean | string | SharedStores;
}

/** Test stores several server processes share (`sharedStores`), as the nodes of one cluster. */
export interface SharedStores {
  env: Record<string, string>;
  remove(): Promise<void>;
}

/**
 * One fresh test database and bucket (see `StartOptions.testStores`) for several servers; the
 * caller removes them after stopping every server.
 */
export function sharedStores(label: string): Promise<SharedStores> {
  return storageEnv(label);
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export function freePort(): number {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = s.port;
  s.stop(true);
  if (!port) throw new Error("could not get a free port");
  return port;
}

/** The environment of a child server: this process's, minus every `ESYNC_*`, plus `extra`. */
function childEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (!k.startsWith("ESYNC_") && v !== undefined) env[k] = v;
  return { ...env, ...extra };
}

/** Reads a byte stream into `sink` until it ends. */
async function drain(stream: ReadableStream<Uint8Array>, sink: string[]): Promise<void> {
  const dec = new TextDecoder();
  for await (const piece of stream) sink.push(dec.decode(piece, { stream: true }));
}

/**
 * Starts `bun run src/main.ts` of the server package (or of `opts.root`) and resolves once `/health` answers 200 with `status: healthy`.
 * @throws when the process exits first or `/health` does not come up in time (with its output).
 */
export async function startServer(opts: StartOptions = {}): Promise<ServerProcess> {
  const dataDir = opts.dataDir ?? tempDir("esync-e2e-");
  const port = opts.port ?? freePort();
  const out: string[] = [];
  const root = opts.root ?? SERVER_ROOT;
  const stores =
    opts.testStores === undefined || opts.testStores === false
      ? undefined
      : typeof opts.testStores === "object"
        ? { env: opts.testStores.env, remove: async () => {} }
        : await storageEnv(typeof opts.testStores === "string" ? opts.testStores : "cli");
  const proc = Bun.spawn([process.execPath, ...(opts.bunArgs ?? []), "run", join(root, "src", "main.ts")], {
    cwd: root,
    env: childEnv({
      ESYNC_HOST: "127.0.0.1",
      ESYNC_PORT: String(port),
      ESYNC_DATA_DIR: dataDir,
      ESYNC_LOG_LEVEL: "warn",
      ...stores?.env,
      ...opts.env,
    }),
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  void drain(proc.stdout, out);
  void drain(proc.stderr, out);
  const url = `http://127.0.0.1:${port}`;
  const server: ServerProcess = {
    url,
    port,
    pid: proc.pid,
    dataDir,
    proc,
    output: () => out.join(""),
    async stop() {
      proc.kill("SIGTERM");
      const code = await proc.exited;
      await stores?.remove();
      return code;
    },
    async kill() {
      proc.kill("SIGKILL");
      return proc.exited;
    },
  };
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  let exited = false;
  void proc.exited.then(() => {
    exited = true;
  });
  while (Date.now() < deadline) {
    if (exited)
      throw new Error(`server exited with ${proc.exitCode} before /health answered:\n${server.output()}`);
    try {
      const r = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1000) });
      const body = (await r.json().catch(() => null)) as { status?: string } | null;
      if (r.status === 200 && body?.status === "healthy") return server;
    } catch {
      // not listening yet
    }
    await Bun.sleep(50);
  }
  proc.kill("SIGKILL");
  await proc.exited;
  throw new Error(`server did not answer /health within ${opts.timeoutMs ?? 30_000} ms:\n${server.output()}`);
}

/** CPU seconds (user + system) process `pid` has used so far, from /proc/<pid>/stat. */
export async function cpuSeconds(pid: number): Promise<number> {
  const stat = await Bun.file(`/proc/${pid}/stat`).text();
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
}

/** Peak resident set size (VmHWM) of process `pid` in bytes, from /proc; null when unavailable. */
export async function peakRss(pid: number): Promise<number | null> {
  try {
    const status = await Bun.file(`/proc/${pid}/status`).text();
    const m = /^VmHWM:\s+(\d+)\s+kB/m.exec(status);
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** Current resident set size (VmRSS) of process `pid` in bytes, from /proc; null when unavailable. */
export async function currentRss(pid: number): Promise<number | null> {
  try {
    const status = await Bun.file(`/proc/${pid}/status`).text();
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}
