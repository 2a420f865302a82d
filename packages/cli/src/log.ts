/**
 * @module cli/log
 * The `--log-file` of every `esync` command: one JSON object per line, `{"ts": ISO 8601 UTC
 * with milliseconds, "level": "info"|"warn"|"error", "event": "...", "pid": N, ...fields}`,
 * appended to a file that is rotated by size (docs/user-guide.md, "Logs").
 *
 * Rotation: before a line would take `esync.log` past `maxBytes` (10 MiB), the file is
 * renamed `esync.log.1` (an older `.1` becomes `.2`, and so on) and a new one is started; at
 * most `maxFiles` (5) files are kept, the oldest is removed. Lines are appended synchronously,
 * one `write` each, so none is lost when the CLI exits with `process.exit`, and several
 * processes may append to the same file (a rotation racing another process's may shift one
 * file out early; no line is split). This is the whole of the rotation, kept here rather than
 * in a stream library because those buffer asynchronously and assume one writing process.
 */
import { appendFileSync, mkdirSync, renameSync, rmSync, statSync } from "node:fs";
import { dirname } from "node:path";

/** Severity of a log line. */
export type LogLevel = "info" | "warn" | "error";

/** Default size at which the log file is rotated: 10 MiB. */
export const DEFAULT_LOG_MAX_BYTES = 10 * 1024 * 1024;
/** Default number of files kept (the current one and the rotated ones): 5. */
export const DEFAULT_LOG_MAX_FILES = 5;

/** An append-only JSON-lines log file rotated by size. */
export class RotatingLog {
  /**
   * `path`: the current file (its directory is created, mode 0700; the file is mode 0600).
   * `maxBytes`: bytes after which it is rotated; `maxFiles`: files kept in all (at least 1).
   */
  constructor(
    readonly path: string,
    readonly maxBytes = DEFAULT_LOG_MAX_BYTES,
    readonly maxFiles = DEFAULT_LOG_MAX_FILES,
  ) {
    if (!(maxBytes > 0)) throw new RangeError(`maxBytes must be positive, got ${maxBytes}`);
    if (!(Number.isInteger(maxFiles) && maxFiles >= 1))
      throw new RangeError(`maxFiles must be an integer >= 1, got ${maxFiles}`);
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  }

  /** Appends one line `{ts, level, event, pid, ...fields}`; rotates first when it would overflow. */
  write(level: LogLevel, event: string, fields: Record<string, unknown> = {}, now = new Date()): void {
    const line = `${JSON.stringify({ ts: now.toISOString(), level, event, pid: process.pid, ...fields })}\n`;
    const size = sizeOf(this.path);
    if (size > 0 && size + Buffer.byteLength(line) > this.maxBytes) this.rotate();
    appendFileSync(this.path, line, { mode: 0o600 });
  }

  /** Shifts `path.N` to `path.N+1` (dropping the oldest) and `path` to `path.1`. */
  rotate(): void {
    const keep = this.maxFiles - 1;
    if (keep === 0) {
      rmSync(this.path, { force: true });
      return;
    }
    rmSync(`${this.path}.${keep}`, { force: true });
    for (let n = keep - 1; n >= 1; n--) renameQuiet(`${this.path}.${n}`, `${this.path}.${n + 1}`);
    renameQuiet(this.path, `${this.path}.1`);
  }
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

function renameQuiet(from: string, to: string): void {
  try {
    renameSync(from, to);
  } catch (e) {
    // Absent (never rotated that far, or another process moved it first): nothing to shift.
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
}

let active: RotatingLog | null = null;

/** Sends every later `logEvent` of this process to `log` (null: stop logging). */
export function setLog(log: RotatingLog | null): void {
  active = log;
}

/** The log of this process, if `--log-file` was given. */
export function currentLog(): RotatingLog | null {
  return active;
}

/**
 * Writes one line to the process's log file, if any. A log that cannot be written (disk
 * full, permissions) never fails the command: logging is then turned off.
 */
export function logEvent(level: LogLevel, event: string, fields: Record<string, unknown> = {}): void {
  if (!active) return;
  try {
    active.write(level, event, fields);
  } catch (e) {
    active = null;
    process.stderr.write(`esync: cannot write the log file: ${(e as Error).message}; logging stopped\n`);
  }
}
