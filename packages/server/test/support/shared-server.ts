/**
 * @module test/support/shared-server
 * One test server (Ceph RGW, PostgreSQL) shared by every test process of a run, kept in a shared
 * directory `root`:
 * - `root/server/`: the server's data, written by the project's `scripts/<kind>/start.sh`;
 * - `root/lock`: a lock file (holding the holder's pid) that serialises finding or starting it;
 * - `root/managed`: present when a test process started the server, so that tests stop it;
 * - `root/clients/<pid>`: one empty file per live test process using it.
 * A server found running in `root/server` and answering is reused; a detached watchdog per test
 * process stops a managed server once the last process using it has exited. A server started
 * outside the tests (no `managed` file) is never stopped by them.
 */
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";

/** How to find, check and start one kind of shared test server. */
export interface SharedServerKind<T> {
  /** The shared directory (see the module comment). */
  root: string;
  /** `scripts/<kind>/`: its `stop.sh DIR` stops a server started in DIR. */
  scripts: string;
  /** Writes one progress line to stderr. */
  log(message: string): void;
  /** What `start` left in `dir` (its env file), or null when nothing is there. */
  read(dir: string): T | null;
  /** Null when `server` answers; the error otherwise. */
  probe(server: T): Promise<Error | null>;
  /** Starts a server in `dir` (installing it first if needed) and returns it. @throws Error saying why. */
  start(dir: string): Promise<T>;
  /** Names a running server in the log ("the RGW at http://…"). */
  describe(server: T): string;
}

function isAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as { code?: string }).code === "EPERM";
  }
}

/** One attempt at the lock file; clears a lock whose holder is gone. */
function tryLock(lockFile: string): boolean {
  try {
    const fd = openSync(lockFile, "wx");
    writeSync(fd, String(process.pid));
    closeSync(fd);
    return true;
  } catch (e) {
    if ((e as { code?: string }).code !== "EEXIST") throw e;
  }
  let holder = "";
  try {
    holder = readFileSync(lockFile, "utf8").trim();
  } catch {
    return false;
  }
  const stale = holder === "" ? Date.now() - statSync(lockFile).mtimeMs > 10_000 : !isAlive(Number(holder));
  if (stale) rmSync(lockFile, { force: true });
  return false;
}

/** Waits for the lock file, polling every 100 ms. @throws Error after `timeoutMs`. */
async function lock(lockFile: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!tryLock(lockFile)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for the lock ${lockFile}`);
    await Bun.sleep(100);
  }
}

/**
 * Bash run by the watchdog: waits for test process $1 to exit, then, holding the lock, stops
 * the server if a test process started it and no other test process uses it any more.
 */
const WATCHDOG = `
pid=$1 root=$2 stop=$3
while kill -0 "$pid" 2>/dev/null; do sleep 0.5; done
rm -f "$root/clients/$pid"
[ -f "$root/managed" ] || exit 0
for _ in $(seq 1 600); do
  if (set -o noclobber; echo $$ >"$root/lock") 2>/dev/null; then break; fi
  holder=$(cat "$root/lock" 2>/dev/null)
  if [ -n "$holder" ] && ! kill -0 "$holder" 2>/dev/null; then rm -f "$root/lock"; fi
  sleep 0.2
done
[ "$(cat "$root/lock" 2>/dev/null)" = "$$" ] || exit 1
for f in "$root"/clients/*; do
  [ -e "$f" ] || continue
  if kill -0 "\${f##*/}" 2>/dev/null; then rm -f "$root/lock"; exit 0; fi
done
if [ -f "$root/managed" ]; then
  bash "$stop" "$root/server"
  rm -f "$root/managed" "$root"/clients/*
fi
rm -f "$root/lock"
`;

/**
 * bun test runs no "exit" handlers, so a detached watchdog process (outside the test runner's
 * process tree) does the release once this process has gone, however it ends.
 */
function releaseWhenGone(root: string, scripts: string): void {
  const proc = Bun.spawn(
    ["setsid", "-f", "bash", "-c", WATCHDOG, "watchdog", String(process.pid), root, join(scripts, "stop.sh")],
    { stdin: "ignore", stdout: "ignore", stderr: "ignore" },
  );
  proc.unref();
}

/**
 * The shared server of `kind`: the one running in `root/server` when it answers, else a new one
 * started there (then marked managed). Registers this process as a client until it exits.
 * @throws Error when the lock is not had within 10 minutes or `kind.start` fails.
 */
export async function acquireSharedServer<T>(kind: SharedServerKind<T>): Promise<T> {
  const serverDir = join(kind.root, "server");
  const clients = join(kind.root, "clients");
  const lockFile = join(kind.root, "lock");
  mkdirSync(clients, { recursive: true });
  await lock(lockFile, 10 * 60_000);
  try {
    let server = kind.read(serverDir);
    const err = server ? await kind.probe(server) : new Error("none running");
    if (server && !err) {
      kind.log(`using ${kind.describe(server)}, already running`);
    } else {
      if (server)
        kind.log(`the server in ${serverDir} does not answer (${err?.message}); starting a new one`);
      server = await kind.start(serverDir);
      const fd = openSync(join(kind.root, "managed"), "w");
      writeSync(fd, String(process.pid));
      closeSync(fd);
    }
    closeSync(openSync(join(clients, String(process.pid)), "w"));
    releaseWhenGone(kind.root, kind.scripts);
    return server;
  } finally {
    rmSync(lockFile, { force: true });
  }
}
