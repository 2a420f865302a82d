/**
 * `bun run start` (docs/operator-guide.md#commands) starts the server with 16 threads in Bun's file-system pool
 * (`UV_THREADPOOL_SIZE`, read only when a process starts) unless the environment sets its own
 * size: on the disk store every small upload holds pool threads for its fsyncs.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import type { Subprocess } from "bun";
import { freePort, REPO_ROOT } from "../support/server.ts";
import { tempDir } from "../support/tmp.ts";

const running: Subprocess[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const p of running.splice(0)) {
    p.kill("SIGTERM");
    await p.exited;
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Pids of every process below `pid` (from /proc). */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "latin1");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      // the process ended while the list was read
    }
  }
  const out: number[] = [];
  const visit = (p: number) => {
    for (const c of children.get(p) ?? []) {
      out.push(c);
      visit(c);
    }
  };
  visit(pid);
  return out;
}

/**
 * Runs `bun run start` with `env` on a free port and waits for `/health`; returns the environment
 * of the process that runs `src/main.ts`.
 */
async function startEnvironment(env: Record<string, string>): Promise<Map<string, string>> {
  const port = freePort();
  const dataDir = tempDir("esync-start-");
  dirs.push(dataDir);
  const base: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (!k.startsWith("ESYNC_") && k !== "UV_THREADPOOL_SIZE" && v !== undefined) base[k] = v;
  const proc = Bun.spawn([process.execPath, "run", "start"], {
    cwd: REPO_ROOT,
    env: {
      ...base,
      ESYNC_HOST: "127.0.0.1",
      ESYNC_PORT: String(port),
      ESYNC_DATA_DIR: dataDir,
      ESYNC_LOG_LEVEL: "warn",
      ...env,
    },
    stdin: "ignore",
    stdout: "ignore",
    stderr: "ignore",
  });
  running.push(proc);
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`bun run start exited with ${proc.exitCode}`);
    const ok = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(1000) })
      .then((r) => r.ok)
      .catch(() => false);
    if (ok) break;
    if (Date.now() > deadline) throw new Error("/health did not answer within 30 s");
    await Bun.sleep(100);
  }
  const server = [proc.pid, ...descendants(proc.pid)].find((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("src/main.ts");
    } catch {
      return false;
    }
  });
  if (server === undefined) throw new Error("no process of bun run start runs src/main.ts");
  const vars = new Map<string, string>();
  for (const entry of readFileSync(`/proc/${server}/environ`, "utf8").split("\0")) {
    const at = entry.indexOf("=");
    if (at > 0) vars.set(entry.slice(0, at), entry.slice(at + 1));
  }
  return vars;
}

describe("bun run start", () => {
  test("starts the server with UV_THREADPOOL_SIZE=16 when the environment sets none", async () => {
    const env = await startEnvironment({});
    expect(env.get("UV_THREADPOOL_SIZE")).toBe("16");
  });

  test("keeps the UV_THREADPOOL_SIZE the environment sets", async () => {
    const env = await startEnvironment({ UV_THREADPOOL_SIZE: "4" });
    expect(env.get("UV_THREADPOOL_SIZE")).toBe("4");
  });
});
