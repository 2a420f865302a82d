/**
 * Finalize-lease holders (src/sessions/lease-holder.ts): which holders are provably dead. A fake
 * procfs in a temporary directory plays the machine; one test reads the real `/proc` with real
 * processes. Proves: a holder of this boot and pid namespace is dead when its pid is gone, is
 * another process or a zombie, alive otherwise; another boot is dead only on a local database;
 * another pid namespace, an unknown format, no holder, or a machine without `/proc` prove nothing.
 */
import { expect, test } from "bun:test";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LeaseHolders } from "../../src/sessions/lease-holder.ts";
import { tempDir } from "../support/tmp.ts";

const BOOT = "0f4c2b1e-5a6d-4e7f-8091-a2b3c4d5e6f7";
const OTHER_BOOT = "11111111-2222-4333-8444-555555555555";
const NS = "4026531836";

/** A fake procfs: boot id, pid namespace and `stat` files of the given processes. */
function fakeProc(procs: Record<number, { start: number; state?: string; comm?: string }>): string {
  const root = tempDir("esync-proc-");
  mkdirSync(join(root, "sys/kernel/random"), { recursive: true });
  writeFileSync(join(root, "sys/kernel/random/boot_id"), `${BOOT}\n`);
  mkdirSync(join(root, "self/ns"), { recursive: true });
  symlinkSync(`pid:[${NS}]`, join(root, "self/ns/pid"));
  for (const [pid, p] of Object.entries(procs)) {
    mkdirSync(join(root, pid));
    const rest = Array.from({ length: 40 }, (_, i) => (i === 19 ? String(p.start) : "0"));
    rest[0] = p.state ?? "S";
    writeFileSync(join(root, pid, "stat"), `${pid} (${p.comm ?? "bun"}) ${rest.join(" ")}\n`);
  }
  return root;
}

/** Holders on a fake machine where this process is pid 100 and the pids of `procs` exist. */
function holders(
  procs: Record<number, { start: number; state?: string; comm?: string }>,
  localDatabase = false,
) {
  const all = { 100: { start: 5000 }, ...procs };
  const root = fakeProc(all);
  return new LeaseHolders({
    localDatabase,
    procRoot: root,
    pid: 100,
    exists: (pid) => String(pid) in all,
  });
}

test("names this process by boot id, pid namespace, pid and start time", () => {
  expect(holders({}).self).toBe(`${BOOT}:${NS}:100:5000`);
});

test("a holder whose pid is gone, or is another process (another start time), or a zombie is dead", () => {
  const h = holders({ 200: { start: 7000 }, 300: { start: 8000, state: "Z" } });
  expect(h.isDead(`${BOOT}:${NS}:999:7000`)).toBe(true);
  expect(h.isDead(`${BOOT}:${NS}:200:6999`)).toBe(true);
  expect(h.isDead(`${BOOT}:${NS}:300:8000`)).toBe(true);
});

test("a running holder of this machine and namespace is alive, and so is this process", () => {
  const h = holders({ 200: { start: 7000, comm: "bun (worker) x" } });
  expect(h.isDead(`${BOOT}:${NS}:200:7000`)).toBe(false);
  expect(h.isDead(h.self)).toBe(false);
});

test("a holder of another boot is dead on a local database (SQLite) and unknown on a shared one", () => {
  expect(holders({}, true).isDead(`${OTHER_BOOT}:${NS}:999:1`)).toBe(true);
  expect(holders({}, false).isDead(`${OTHER_BOOT}:${NS}:999:1`)).toBe(false);
});

test("a holder in another pid namespace, an unknown format or no holder proves nothing", () => {
  const h = holders({}, true);
  expect(h.isDead(`${BOOT}:4026532000:999:1`)).toBe(false);
  expect(h.isDead("node-7")).toBe(false);
  expect(h.isDead(null)).toBe(false);
});

test("a pid that exists but whose stat cannot be read (hidepid) is not proven dead", () => {
  const root = fakeProc({ 100: { start: 5000 } });
  const h = new LeaseHolders({ localDatabase: true, procRoot: root, pid: 100, exists: () => true });
  expect(h.isDead(`${BOOT}:${NS}:200:7000`)).toBe(false);
});

test("without /proc this process names no holder and no holder is ever dead (leases end by expiry only)", () => {
  const h = new LeaseHolders({ localDatabase: true, procRoot: join(tempDir("esync-noproc-"), "proc") });
  expect(h.self).toBeNull();
  expect(h.isDead(`${BOOT}:${NS}:999:1`)).toBe(false);
  expect(h.isDead(`${OTHER_BOOT}:${NS}:999:1`)).toBe(false);
});

test("on the real /proc: a running child process is alive, and dead once SIGKILLed and reaped", async () => {
  const h = new LeaseHolders({ localDatabase: false });
  expect(h.self).not.toBeNull();
  const child = Bun.spawn(["sleep", "60"]);
  const start = readFileSync(`/proc/${child.pid}/stat`, "utf8").split(") ")[1]!.split(" ")[19];
  const holder = h.self!.replace(/:\d+:\d+$/, `:${child.pid}:${start}`);
  expect(h.isDead(holder)).toBe(false);
  child.kill("SIGKILL");
  await child.exited;
  expect(h.isDead(holder)).toBe(true);
});
