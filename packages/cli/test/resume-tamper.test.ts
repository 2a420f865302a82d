/**
 * Failure paths of `esync push` / `esync pull` against the real server process:
 * - a push SIGKILLed while a file over 24 MiB is being sent (with no encrypted copy of it on
 *   disk meanwhile) resumes on the next run from the session the server kept, sending fewer bytes than the whole ciphertext, and the file then
 *   pulls back byte for byte;
 * - Ctrl-C (SIGINT) mid-upload exits 130 with an `interrupted` summary and resumes likewise;
 * - ciphertext altered on the server's disk is caught on pull (exit 3) and nothing is written
 *   at the destination.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EsyncApi } from "@esync/client/api.ts";
import { identityFromMnemonic } from "@esync/client/keys.ts";
import { WalletTokenSource } from "@esync/client/token.ts";
import type { PendingUpload } from "@esync/client/upload-state.ts";
import { ciphertextSizeFor } from "@esync/protocol/framing.ts";
import { type ServerProcess, startServer } from "@esync/server/test/support/server.ts";
import { copyHead, expectSameTree, realFileOver8MiB, runCli, spawnCli } from "./helpers.ts";

// Real CLI processes against a real server: seconds each on a loaded machine.
setDefaultTimeout(120_000);

const MiB = 1024 * 1024;
const MNEMONIC = `${"abandon ".repeat(11)}about`;
const work = mkdtempSync(join(tmpdir(), "esync-cli-fail-"));
const cfg = join(work, "config");
let server: ServerProcess;

beforeAll(async () => {
  server = await startServer({ env: { ESYNC_DISK_FSYNC: "off" } });
  const r = await runCli(cfg, ["init", "--import", "--server", server.url], `${MNEMONIC}\n`);
  if (r.code !== 0) throw new Error(r.stderr);
});
afterAll(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** Bytes of the regular files under `dir`, recursively. */
function treeBytes(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) n += treeBytes(p);
    else if (e.isFile()) n += statSync(p).size;
  }
  return n;
}

/** Paths of the one-object blobs on the server's disk store (`b/xx/o…` files). */
function oneObjectBlobs(): Set<string> {
  const root = join(server.dataDir, "blobs", "b");
  const out = new Set<string>();
  for (const xx of readdirSync(root, { withFileTypes: true })) {
    if (!xx.isDirectory()) continue;
    for (const id of readdirSync(join(root, xx.name), { withFileTypes: true }))
      if (id.isFile() && id.name.startsWith("o")) out.add(join(root, xx.name, id.name));
  }
  return out;
}

/** Waits until the push in flight has a session (from `uploads.json`) holding `min` chunks; returns the count. */
async function waitForChunks(min: number): Promise<number> {
  const identity = await identityFromMnemonic(MNEMONIC);
  const api = new EsyncApi({ baseUrl: server.url, token: new WalletTokenSource(identity) });
  const deadline = Date.now() + 30_000;
  let received = 0;
  while (Date.now() < deadline) {
    const state = Bun.file(join(cfg, "uploads.json"));
    if (await state.exists()) {
      const uploads = (
        (await state.json().catch(() => ({ uploads: {} }))) as { uploads: Record<string, PendingUpload> }
      ).uploads;
      const pending = Object.values(uploads)[0];
      if (pending) {
        received = (await api.sessionStatus(pending.sessionId)).chunks_received.length;
        if (received >= min) break;
      }
    }
    await Bun.sleep(20);
  }
  return received;
}

describe("esync push resumes after being killed mid-upload", () => {
  test("SIGKILL while a 40 MiB file is being sent (config dir under 1 MiB meanwhile); the next push sends only what the server lacks", async () => {
    const src = join(work, "big");
    mkdirSync(src, { recursive: true });
    const file = join(src, "real-40MiB.bin");
    await copyHead(process.execPath, file, 40 * MiB); // real bytes: the head of the Bun binary
    const total = ciphertextSizeFor(40 * MiB); // 5 chunks of 8 MiB

    // Throttled to ~16 MiB/s so the upload is in flight long enough to be killed mid-way.
    const first = spawnCli(cfg, [
      "push",
      src,
      "--folder",
      "resume",
      "--create",
      "--json",
      "--limit-rate",
      "16MiB",
      "--parallel",
      "2",
    ]);
    const received = await waitForChunks(2);
    // Chunks are encrypted from the file as they are sent: nothing near the file's size is on disk.
    expect(treeBytes(cfg)).toBeLessThan(MiB);
    first.kill("SIGKILL");
    await first.exited;
    expect(received).toBeGreaterThanOrEqual(2);
    expect(received).toBeLessThan(5);

    const second = await runCli(cfg, ["push", src, "--folder", "resume", "--json"]);
    expect(second.code).toBe(0);
    const s = second.json<{
      uploaded: number;
      bytes_sent: number;
      bytes_resumed: number;
      files: Array<{ resumed: boolean; mode: string }>;
    }>();
    expect(s.uploaded).toBe(1);
    expect(s.files[0]).toMatchObject({ resumed: true, mode: "session" });
    expect(s.bytes_resumed).toBeGreaterThanOrEqual(2 * 8 * MiB);
    expect(s.bytes_sent).toBeLessThan(total);
    expect(s.bytes_sent + s.bytes_resumed).toBe(total);
    expect(await Bun.file(join(cfg, "uploads.json")).json()).toMatchObject({ uploads: {} });
    expect(readdirSync(join(cfg, "spill"))).toEqual([]); // the spill file went with the session

    const dest = join(work, "big-restored");
    const pulled = await runCli(cfg, ["pull", "--folder", "resume", dest]);
    expect(pulled.code).toBe(0);
    expect(await expectSameTree(src, dest)).toBe(1);
  });
});

describe("esync push after Ctrl-C", () => {
  test("SIGINT mid-upload exits 130 with an interrupted summary; the next push resumes the session", async () => {
    const src = join(work, "ctrl-c");
    mkdirSync(src, { recursive: true });
    await copyHead(process.execPath, join(src, "real-32MiB.bin"), 32 * MiB);
    const total = ciphertextSizeFor(32 * MiB);
    const proc = spawnCli(cfg, [
      "push",
      src,
      "--folder",
      "ctrl-c",
      "--create",
      "--json",
      "--limit-rate",
      "16MiB",
      "--parallel",
      "1",
    ]);
    const stdout = new Response(proc.stdout).text();
    expect(await waitForChunks(1)).toBeGreaterThanOrEqual(1);
    proc.kill("SIGINT");
    expect(await proc.exited).toBe(130);
    const s = JSON.parse(await stdout) as { interrupted: boolean; files: Array<{ action: string }> };
    expect(s.interrupted).toBe(true);
    expect(s.files[0]?.action).toBe("interrupted");

    const again = await runCli(cfg, ["push", src, "--folder", "ctrl-c", "--json"]);
    expect(again.code).toBe(0);
    const r = again.json<{ bytes_sent: number; bytes_resumed: number; files: Array<{ resumed: boolean }> }>();
    expect(r.files[0]?.resumed).toBe(true);
    expect(r.bytes_resumed).toBeGreaterThan(0);
    expect(r.bytes_sent + r.bytes_resumed).toBe(total);
  });
});

describe("esync pull detects ciphertext tampered with on the server", () => {
  test("one byte changed inside the stored object (in its second chunk): exit 3, a one-line error, nothing written", async () => {
    const src = join(work, "tamper");
    mkdirSync(src, { recursive: true });
    await copyHead(realFileOver8MiB(), join(src, "victim.bin"), 8 * MiB + 4096); // two chunks
    const before = oneObjectBlobs();
    const pushed = await runCli(cfg, ["push", src, "--folder", "tamper", "--create", "--json"]);
    expect(pushed.code).toBe(0);
    // Finalize assembled the two chunks into one object (src/storage/layout.ts).
    const fresh = [...oneObjectBlobs()].filter((p) => !before.has(p));
    expect(fresh).toHaveLength(1);
    const path = fresh[0] as string;
    const fh = await open(path, "r+");
    const one = new Uint8Array(1);
    await fh.read(one, 0, 1, 8 * MiB + 100);
    one[0] = (one[0] as number) ^ 0x01;
    await fh.write(one, 0, 1, 8 * MiB + 100);
    await fh.close();
    expect(statSync(path).size).toBe(ciphertextSizeFor(8 * MiB + 4096));

    const dest = join(work, "tamper-restored");
    const r = await runCli(cfg, ["pull", "--folder", "tamper", dest]);
    expect(r.code).toBe(3);
    expect(r.stdout).toContain("FAILED    victim.bin: ciphertext rejected (authentication_failed)");
    expect(r.stderr).toMatch(/^esync: 1 file\(s\) failed to download or verify\n$/);
    expect(readdirSync(dest)).toEqual([]); // no partial or unverified file left behind
  });

  test("an untouched folder still pulls fine from the same server (the check is per file)", async () => {
    const r = await runCli(cfg, ["pull", "--folder", "resume", join(work, "again"), "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toMatchObject({ downloaded: 1, failed: 0 });
  });
});
