/**
 * The `esync` command installs on its own (docs/user-guide.md#installing): the tarball of
 * scripts/pack-cli.ts, installed with `bun install -g` into an empty Bun home, holds no server
 * code or server dependency, and the installed command syncs a folder with a real server from a
 * directory outside the repository. Needs the npm registry (the two native modules).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT, type ServerProcess, startServer } from "@esync/server/test/support/server.ts";
import { tempDir } from "@esync/server/test/support/tmp.ts";
import { cliEnv } from "./helpers.ts";

setDefaultTimeout(300_000);

let server: ServerProcess;
const work = tempDir("esync-install-");
const bunHome = join(work, "bun-home");

beforeAll(async () => {
  server = await startServer({ env: { ESYNC_DISK_FSYNC: "off" } });
});
afterAll(async () => {
  await server?.stop();
});

function run(cmd: string[], cwd: string, env: Record<string, string> = {}) {
  const r = Bun.spawnSync(cmd, {
    cwd,
    env: cliEnv({ BUN_INSTALL: bunHome, ...env }),
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

test("the packed CLI installs alone with bun install -g, carries no server package, and syncs a folder between two devices", async () => {
  const pack = run([process.execPath, join(REPO_ROOT, "scripts/pack-cli.ts"), join(work, "dist")], work);
  expect(pack).toMatchObject({ code: 0 });
  const tarball = join(
    work,
    "dist",
    readdirSync(join(work, "dist")).find((f) => f.endsWith(".tgz")) as string,
  );

  const install = run([process.execPath, "install", "-g", tarball], work);
  expect(install).toMatchObject({ code: 0 });
  const esync = join(bunHome, "bin", "esync");
  expect(existsSync(esync)).toBe(true);
  const installed = join(bunHome, "install", "global", "node_modules");
  for (const serverOnly of ["elysia", "drizzle-orm", "minio", "prom-client", "@esync"])
    expect({ serverOnly, present: existsSync(join(installed, serverOnly)) }).toEqual({
      serverOnly,
      present: false,
    });

  const a = join(work, "device-a");
  const b = join(work, "device-b");
  mkdirSync(join(a, "docs", "deep"), { recursive: true });
  writeFileSync(join(a, "docs", "deep", "notes.txt"), "written on device a\n");
  writeFileSync(
    join(a, "big.bin"),
    new Uint8Array(3 * 1024 * 1024).map((_, i) => (i * 31) % 251),
  );
  const cfgA = { ESYNC_CONFIG_DIR: join(work, "cfg-a") };
  const cfgB = { ESYNC_CONFIG_DIR: join(work, "cfg-b") };

  const init = run([esync, "init", "--server", server.url, "--json"], work, cfgA);
  expect(init).toMatchObject({ code: 0 });
  const { mnemonic } = JSON.parse(init.out) as { mnemonic: string };
  expect(run([esync, "folder", "add", "documents"], work, cfgA)).toMatchObject({ code: 0 });
  expect(run([esync, "sync", a, "--folder", "documents"], work, cfgA)).toMatchObject({ code: 0 });

  const importB = Bun.spawnSync([esync, "init", "--import", "--server", server.url], {
    cwd: work,
    env: cliEnv({ BUN_INSTALL: bunHome, ...cfgB }),
    stdin: new Blob([`${mnemonic}\n`]),
    stdout: "pipe",
    stderr: "pipe",
  });
  expect(importB.exitCode).toBe(0);
  mkdirSync(b);
  expect(run([esync, "sync", b, "--folder", "documents"], work, cfgB)).toMatchObject({ code: 0 });
  for (const file of ["docs/deep/notes.txt", "big.bin"])
    expect(Buffer.compare(readFileSync(join(a, file)), readFileSync(join(b, file)))).toBe(0);
});
