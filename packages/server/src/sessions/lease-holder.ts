/**
 * @module server/sessions/lease-holder
 * Who holds a finalize lease, and whether that holder is provably dead.
 *
 * A finalize records its holder next to its lease (`upload_sessions.finalizing_holder`): the
 * string `<boot id>:<pid namespace inode>:<pid>:<start time>` of the process running it (the
 * kernel's `/proc/sys/kernel/random/boot_id`, the inode of `/proc/self/ns/pid`, the pid and the
 * process's start time in clock ticks after boot, field 22 of `/proc/<pid>/stat`). The four
 * together name one process for the life of the machine: a pid is reused only with another start
 * time.
 *
 * A holder is provably dead when its boot id and pid namespace are ours and its pid is gone, is
 * another process (another start time) or is a zombie. On a local metadata database (SQLite: a
 * file on this machine by definition) a holder of another boot id is dead too: the machine
 * rebooted since. Anything else (another machine or container, an unreadable `/proc`, a holder
 * in an unknown format, no holder) is not provably dead, and its lease ends only by expiry.
 * Where `/proc` is missing this process records no holder and proves nothing: leases then end by
 * expiry alone, as without holders.
 */
import { readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";

/** Options of `LeaseHolders`. */
export interface LeaseHolderOptions {
  /**
   * True when the metadata database is on this machine by definition (SQLite), so that a holder
   * of another boot of this machine is dead.
   */
  localDatabase: boolean;
  /** Where procfs is mounted (default `/proc`; tests point it elsewhere). */
  procRoot?: string;
  /** This process's pid (default `process.pid`). */
  pid?: number;
  /** Whether process `pid` exists in our pid namespace (default `processExists`). */
  exists?: (pid: number) => boolean;
}

/**
 * False only when no process `pid` exists in this pid namespace: `kill(pid, 0)` fails with ESRCH
 * (unlike a missing `/proc/<pid>`, which `hidepid` also produces).
 */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/** One parsed holder string. */
interface Holder {
  boot: string;
  pidNs: string;
  pid: number;
  start: string;
}

/** Reads a text file, or null when it cannot be read. */
function readText(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

/**
 * State (field 3) and start time (field 22) of process `pid` from `<proc>/<pid>/stat`. The
 * command name (field 2) may hold spaces and parentheses, so the fields are counted after its
 * last `)`.
 * @throws Error when the file cannot be read (no such process, or hidden by `hidepid`) or parsed.
 */
function processStat(procRoot: string, pid: number): { state: string; start: string } {
  const text = readFileSync(join(procRoot, String(pid), "stat"), "utf8");
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const state = fields[0];
  const start = fields[19];
  if (!state || !start || !/^\d+$/.test(start)) throw new Error(`unparsable ${pid}/stat`);
  return { state, start };
}

/** Parses a holder string; null for null or an unknown format. */
function parseHolder(holder: string | null): Holder | null {
  if (holder === null) return null;
  const m = /^([0-9a-f-]{8,64}):(\d+):(\d+):(\d+)$/.exec(holder);
  if (!m) return null;
  return { boot: m[1]!, pidNs: m[2]!, pid: Number(m[3]), start: m[4]! };
}

/** This process as a lease holder, and the liveness test of other holders. */
export class LeaseHolders {
  /** This process's holder string, or null when `/proc` does not tell (leases then only expire). */
  readonly self: string | null;
  private readonly boot: string | null;
  private readonly pidNs: string | null;
  private readonly procRoot: string;
  private readonly localDatabase: boolean;
  private readonly exists: (pid: number) => boolean;

  constructor(opts: LeaseHolderOptions) {
    this.procRoot = opts.procRoot ?? "/proc";
    this.localDatabase = opts.localDatabase;
    this.exists = opts.exists ?? processExists;
    this.boot = readText(join(this.procRoot, "sys/kernel/random/boot_id"))?.trim() ?? null;
    this.pidNs = this.readPidNs();
    const pid = opts.pid ?? process.pid;
    let start: string | null = null;
    try {
      start = processStat(this.procRoot, pid).start;
    } catch {
      start = null;
    }
    const self = this.boot && this.pidNs && start ? `${this.boot}:${this.pidNs}:${pid}:${start}` : null;
    this.self = parseHolder(self) ? self : null;
  }

  /** The inode of this process's pid namespace (`pid:[4026531836]` → `4026531836`), or null. */
  private readPidNs(): string | null {
    try {
      return /^pid:\[(\d+)\]$/.exec(readlinkSync(join(this.procRoot, "self/ns/pid")))?.[1] ?? null;
    } catch {
      return null;
    }
  }

  /**
   * True when `holder` (a `finalizing_holder` value) is provably dead (module docstring), so its
   * lease may be taken over at once. False whenever that cannot be proven.
   */
  isDead(holder: string | null): boolean {
    const h = parseHolder(holder);
    if (!h || this.self === null || holder === this.self) return false;
    if (h.boot !== this.boot) return this.localDatabase;
    if (h.pidNs !== this.pidNs) return false;
    if (!this.exists(h.pid)) return true;
    try {
      const st = processStat(this.procRoot, h.pid);
      return st.start !== h.start || st.state === "Z" || st.state === "X";
    } catch {
      // Unreadable (hidden by `hidepid`, or it ended just now): not proven here.
      return false;
    }
  }
}
