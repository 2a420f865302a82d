/**
 * Helpers of the `esync` command-line tests: run the real CLI (`bun src/cli/esync.ts`) as a
 * child process against a real server started by `packages/server/test/support/server.ts`, each test file
 * with its own temporary configuration directory, and build a directory tree out of real
 * files of this machine.
 */
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  realpathSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { open } from "node:fs/promises";
import { join, relative } from "node:path";
import { REPO_ROOT } from "@esync/server/test/support/server.ts";

/** The CLI entry point. */
export const CLI = join(REPO_ROOT, "packages", "cli", "src", "esync.ts");

/** The end of one CLI run. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  /** `stdout` parsed as JSON (throws with the output when it is not). */
  json<T = Record<string, unknown>>(): T;
}

/** Environment of a CLI child: this process's without any `ESYNC_*`, plus `extra`. */
export function cliEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (!k.startsWith("ESYNC_") && v !== undefined) env[k] = v;
  return { ...env, ...extra };
}

/**
 * Starts `esync args...` with `ESYNC_CONFIG_DIR=configDir` and the `env` given; stdin gets
 * `input` (or nothing).
 */
export function spawnCli(
  configDir: string,
  args: string[],
  input?: string,
  env: Record<string, string> = {},
) {
  return Bun.spawn([process.execPath, CLI, ...args], {
    cwd: REPO_ROOT,
    env: cliEnv({ ESYNC_CONFIG_DIR: configDir, ...env }),
    stdin: input === undefined ? "ignore" : new Blob([input]),
    stdout: "pipe",
    stderr: "pipe",
  });
}

/** Runs `esync args...` to the end. */
export async function runCli(
  configDir: string,
  args: string[],
  input?: string,
  env: Record<string, string> = {},
): Promise<CliRun> {
  const proc = spawnCli(configDir, args, input, env);
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return {
    code,
    stdout,
    stderr,
    json<T>() {
      try {
        return JSON.parse(stdout) as T;
      } catch {
        throw new Error(`stdout is not JSON (exit ${code}):\n${stdout}\nstderr:\n${stderr}`);
      }
    },
  };
}

/** Every regular file under `root` as relative path → absolute path, sorted. */
export function listTree(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out.set(relative(root, p), p);
    }
  };
  walk(root);
  return out;
}

/** Copies the first `bytes` bytes of a real file `from` to `to` (streamed). */
export async function copyHead(from: string, to: string, bytes: number): Promise<void> {
  const src = await open(from, "r");
  const dst = await open(to, "w");
  try {
    const buf = new Uint8Array(1024 * 1024);
    let left = bytes;
    while (left > 0) {
      const { bytesRead } = await src.read(buf, 0, Math.min(buf.byteLength, left), null);
      if (bytesRead === 0) throw new Error(`${from} has fewer than ${bytes} bytes`);
      await dst.write(buf.subarray(0, bytesRead));
      left -= bytesRead;
    }
  } finally {
    await src.close();
    await dst.close();
  }
}

/** A real file of this machine larger than 8 MiB (so its ciphertext takes the session path). */
export function realFileOver8MiB(): string {
  const candidates = [join(REPO_ROOT, "node_modules/typescript/lib/typescript.js"), process.execPath];
  for (const p of candidates) {
    if (existsSync(p) && statSync(p).size > 8 * 1024 * 1024 + 1024) return p;
  }
  throw new Error(`no file over 8 MiB among ${candidates.join(", ")}`);
}

/**
 * Builds a tree of real files under `root`: a couple of package documentation directories
 * (from /usr/share/doc when present, else the repository's node_modules), a nested copy of a
 * package's sources, an empty file in a nested directory, a file name with spaces and
 * non-ASCII letters, and a real file over 8 MiB.
 */
export function buildRealTree(root: string): void {
  mkdirSync(root, { recursive: true });
  const docs = ["/usr/share/doc/bash", "/usr/share/doc/apt", "/usr/share/doc/tar"].filter((d) =>
    existsSync(d),
  );
  for (const d of docs.slice(0, 2))
    cpSync(d, join(root, "doc", d.split("/").at(-1) as string), { recursive: true, dereference: false });
  cpSync(realpathSync(join(REPO_ROOT, "packages/cli/node_modules/commander")), join(root, "src/commander"), {
    recursive: true,
  });
  mkdirSync(join(root, "deep/er/still"), { recursive: true });
  writeFileSync(join(root, "deep/er/still/empty.txt"), "");
  cpSync(join(REPO_ROOT, "package.json"), join(root, "deep/Résumé final.json"));
  mkdirSync(join(root, "large"));
  cpSync(realFileOver8MiB(), join(root, "large/real-over-8MiB.bin"));
  // Copied files keep their modes; make every copy readable (docs of root-only packages).
  for (const p of listTree(root).values()) chmodSync(p, 0o644);
}

/** Every regular file of `a` and `b`, with paths and bytes equal; returns the number compared. */
export async function expectSameTree(a: string, b: string): Promise<number> {
  const ta = listTree(a);
  const tb = listTree(b);
  const names = (m: Map<string, string>) => [...m.keys()].map((k) => k.normalize("NFC")).sort();
  if (JSON.stringify(names(ta)) !== JSON.stringify(names(tb)))
    throw new Error(`trees differ:\n${names(ta).join("\n")}\n---\n${names(tb).join("\n")}`);
  for (const [rel, pa] of ta) {
    const pb = tb.get(rel) as string;
    const [x, y] = await Promise.all([Bun.file(pa).bytes(), Bun.file(pb).bytes()]);
    if (Buffer.compare(x, y) !== 0) throw new Error(`${rel} differs`);
  }
  return ta.size;
}
