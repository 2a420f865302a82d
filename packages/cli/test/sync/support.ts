/**
 * Helpers of the sync tests: a "device" is a local directory with its own state database and
 * an `EsyncApi` of the same account (same mnemonic) against one real server, synced in-process
 * with `runSyncPass`; `snapshotTree` reads a directory as path → kind, content, mode (and mtime).
 */
import { afterAll, beforeAll, expect } from "bun:test";
import { lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EsyncApi } from "@esync/client/api.ts";
import { type Identity, identityFromMnemonic } from "@esync/client/keys.ts";
import { runSyncPass, type SyncReport } from "@esync/client/sync/engine.ts";
import { excludesFrom } from "@esync/client/sync/excludes.ts";
import { SyncState } from "@esync/client/sync/state-db.ts";
import { WalletTokenSource } from "@esync/client/token.ts";
import { type ServerProcess, startServer } from "@esync/server/test/support/server.ts";
import { runCli } from "../helpers.ts";

/** The mnemonic both devices share. */
export const MNEMONIC = `${"abandon ".repeat(11)}about`;

/** Two CLI devices of one account (`twoCliDevices`) and their server. */
export interface CliDevices {
  work: string;
  cfgA: string;
  cfgB: string;
  /** The running server. */
  server(): ServerProcess;
  /** Stops the server, runs `meanwhile`, then starts it again on the same port and data directory. */
  restartServer(meanwhile: () => Promise<void>): Promise<void>;
}

/**
 * Two CLI devices of one account for a test file: config directories `cfgA` and `cfgB` under a
 * temporary `work` directory, both `esync init --import`ed with `MNEMONIC` against one server
 * (disk store, fsync off) started before the file's tests and stopped, with `work` removed, after.
 */
export function twoCliDevices(prefix: string): CliDevices {
  const work = mkdtempSync(join(tmpdir(), prefix));
  const env = { ESYNC_DISK_FSYNC: "off" };
  let server: ServerProcess | undefined;
  const running = (): ServerProcess => {
    if (!server) throw new Error("the devices' server is not running");
    return server;
  };
  const devices: CliDevices = {
    work,
    cfgA: join(work, "cfg-a"),
    cfgB: join(work, "cfg-b"),
    server: running,
    async restartServer(meanwhile) {
      const { port, dataDir } = running();
      await running().stop();
      server = undefined;
      await meanwhile();
      server = await startServer({ port, dataDir, env });
    },
  };
  beforeAll(async () => {
    server = await startServer({ env });
    for (const cfg of [devices.cfgA, devices.cfgB]) {
      const r = await runCli(cfg, ["init", "--import", "--server", running().url], `${MNEMONIC}\n`);
      expect(r.code).toBe(0);
    }
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    rmSync(work, { recursive: true, force: true });
  });
  return devices;
}

/** One synced directory. */
export interface Device {
  name: string;
  root: string;
  identity: Identity;
  api: EsyncApi;
  label: string;
  /** Runs one sync pass; `patterns` are `--exclude` patterns. */
  sync(patterns?: string[]): Promise<SyncReport>;
}

/** A device syncing `root` with folder `label` on `serverUrl`; `jobs` as `SyncContext.jobs`. */
export async function makeDevice(
  name: string,
  root: string,
  serverUrl: string,
  label: string,
  jobs?: number,
): Promise<Device> {
  const identity = await identityFromMnemonic(MNEMONIC);
  const api = new EsyncApi({ baseUrl: serverUrl, token: new WalletTokenSource(identity) });
  const folder = identity.folder(label);
  return {
    name,
    root,
    identity,
    api,
    label,
    async sync(patterns = []) {
      const state = SyncState.open(root, { address: identity.address, folderHash: folder.folderHash });
      try {
        return await runSyncPass({
          api,
          address: identity.address,
          folder,
          root,
          device: name,
          excludes: excludesFrom(patterns),
          state,
          now: () => new Date("2026-11-24T12:00:00Z"),
          jobs,
        });
      } finally {
        state.close();
      }
    },
  };
}

/** One path of a snapshot. */
export interface Node {
  kind: "file" | "symlink" | "dir";
  /** File content (latin1 string, to compare cheaply) or link target. */
  data?: string;
  mode?: number;
  mtimeMs?: number;
}

/** Every file, link and directory under `root` (`.esync/` left out), by relative path. */
export function snapshotTree(root: string): Map<string, Node> {
  const out = new Map<string, Node>();
  const walk = (dir: string, prefix: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const rel = prefix ? `${prefix}/${e.name}` : e.name;
      if (rel === ".esync") continue;
      const abs = join(dir, e.name);
      const st = lstatSync(abs);
      if (st.isSymbolicLink())
        out.set(rel, { kind: "symlink", data: readlinkSync(abs), mtimeMs: st.mtimeMs });
      else if (st.isDirectory()) {
        out.set(rel, { kind: "dir" });
        walk(abs, rel);
      } else
        out.set(rel, {
          kind: "file",
          data: readFileSync(abs).toString("latin1"),
          mode: st.mode & 0o7777,
          mtimeMs: st.mtimeMs,
        });
    }
  };
  walk(root, "");
  return out;
}
