/**
 * @module cli/output
 * What the `esync` command prints and how it ends: human-readable sizes and rates (binary
 * units: KiB, MiB, MiB/s), durations and dates, plain-text tables, JSON for scripts, and the exit codes with the one-line error
 * messages they come with.
 *
 * Exit codes (also in `esync --help` and docs/user-guide.md#commands):
 *
 * | code | meaning |
 * |---|---|
 * | 0 | success |
 * | 1 | usage: bad arguments or options, missing configuration (`esync init` not run) |
 * | 2 | the server answered with an error, or could not be reached |
 * | 3 | local I/O or crypto: unreadable or unwritable files, tampered or undecryptable ciphertext |
 * | 130 | interrupted (Ctrl-C); a push resumes where it stopped on the next run |
 */
import { ApiError } from "@esync/client/api-error.ts";
import { IntegrityError } from "@esync/client/downloader.ts";
import { CiphertextError, PlaintextSizeError } from "@esync/client/frame.ts";
import { InvalidMnemonicError } from "@esync/client/keys.ts";
import { InvalidRelativePathError } from "@esync/client/manifest.ts";
import { FileChangedError } from "@esync/client/seal.ts";
import { formatSize } from "@esync/protocol/units.ts";
import { logEvent } from "./log.ts";

/** Process exit codes of `esync`. */
export const EXIT = {
  ok: 0,
  usage: 1,
  server: 2,
  local: 3,
  interrupted: 130,
} as const;

/** One of the `EXIT` codes. */
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** The `--help` epilogue listing the exit codes. */
export const EXIT_CODES_HELP = `Exit codes:
  0    success
  1    usage error (bad arguments; no configuration: run \`esync init\`)
  2    server error (printed with its code: \`esync: 409 conflict: ...\`) or
       server unreachable
  3    local I/O or crypto error (unreadable or unwritable file, tampered or
       undecryptable ciphertext, failed integrity check)
  130  interrupted (Ctrl-C); \`esync push\` resumes where it stopped next time`;

/** An error the CLI reports as one line and ends with `code`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly code: ExitCode,
  ) {
    super(message);
    this.name = "CliError";
  }
}

/** A usage error (exit 1). */
export function usageError(message: string): CliError {
  return new CliError(message, EXIT.usage);
}

/**
 * Prints each local path a scan cannot sync on stderr (`esync: cannot sync PATH: REASON`) and
 * returns the error a command ends with when there are any (exit 3, after everything else was
 * done), or null. The rule: docs/unicode-names.md.
 */
export function reportUnsyncable(skipped: readonly { path: string; reason: string }[]): CliError | null {
  for (const s of skipped) eprintln(`esync: cannot sync ${JSON.stringify(s.path)}: ${s.reason}`);
  return skipped.length === 0
    ? null
    : new CliError(`${skipped.length} local path(s) cannot be synced (listed above)`, EXIT.local);
}

/** The exit code an error ends the program with. */
export function exitCodeOf(e: unknown): ExitCode {
  if (e instanceof CliError) return e.code;
  if (e instanceof ApiError) return EXIT.server;
  if (isAbort(e)) return EXIT.interrupted;
  if (e instanceof InvalidMnemonicError) return EXIT.usage;
  return EXIT.local;
}

/** True for the error an aborted signal throws. */
export function isAbort(e: unknown): boolean {
  return e instanceof Error && (e.name === "AbortError" || e.name === "InterruptedError");
}

/** The error raised when the user presses Ctrl-C. */
export class InterruptedError extends Error {
  constructor() {
    super("interrupted");
    this.name = "InterruptedError";
  }
}

let outage: string | null = null;
let kind: "read" | "transfer" | "write" = "write";

/** Records what the running command does (`CommandKind` of `context.ts`): only a transfer resumes. */
export function setCommandKind(k: "read" | "transfer" | "write"): void {
  kind = k;
}

/**
 * The server of the last retryable failure (network, 5xx, 429) that `describeError` reported,
 * when the running command is a transfer that a rerun resumes, or null: `main` then ends with
 * `resumeHint`.
 */
export function lastOutage(): string | null {
  return kind === "transfer" ? outage : null;
}

let noticeSink: ((line: string) => void) | null = null;

/**
 * Routes `notice` lines to `sink` (a progress display prints them above its bars) until it is
 * called again with null.
 */
export function setNoticeSink(sink: ((line: string) => void) | null): void {
  noticeSink = sink;
}

/** Prints a notice (a retry under way, ...): above the progress display when one is drawn, else on stderr. */
export function notice(line: string): void {
  if (noticeSink) noticeSink(line);
  else eprintln(line);
}

/** The one-line hint printed after a run that failed because a server was down or failing. */
export function resumeHint(server: string): string {
  return `hint: run the same command again to resume once ${server} is back`;
}

/**
 * One line describing `e`, without the `esync: ` prefix: `server http://h:p: 409 conflict:
 * message` for a server error, `cannot reach the server http://h:p: ...` for a network
 * failure (with how long it was retried), the message otherwise.
 */
export function describeError(e: unknown): string {
  if (e instanceof CliError) return e.message;
  if (e instanceof ApiError) {
    const server = e.extra.server ?? "the server";
    if (e.retryable) outage = server;
    const retried =
      e.extra.retriedForMs !== undefined && e.extra.retriedForMs > 0
        ? ` (retried for ${formatDuration(e.extra.retriedForMs)})`
        : "";
    if (e.code === "tls_error") return `TLS handshake with ${server} failed (not retried): ${e.message}`;
    if (e.status === 0) return `cannot reach ${server}${retried}: ${e.message}`;
    return `${server}: ${e.status} ${e.code}${retried}: ${e.message || "(no message)"}`;
  }
  if (e instanceof CiphertextError) return `ciphertext rejected (${e.reason}): ${e.message}`;
  if (e instanceof IntegrityError) return `integrity check failed: ${e.message}`;
  if (e instanceof PlaintextSizeError) return `integrity check failed: ${e.message}`;
  if (e instanceof FileChangedError || e instanceof InvalidRelativePathError) return e.message;
  if (e instanceof Error) {
    const code = (e as NodeJS.ErrnoException).code;
    const line = e.message.split("\n")[0] ?? "";
    return typeof code === "string" && !line.includes(code) ? `${code}: ${line}` : line;
  }
  return String(e);
}

export { formatSize };

/** Rate in the same binary units as sizes: `45.2 MiB/s`, `512 B/s`; `- MiB/s` when unknown or 0. */
export function formatRate(bytesPerSec: number): string {
  if (!Number.isFinite(bytesPerSec) || bytesPerSec <= 0) return "- MiB/s";
  return `${formatSize(Math.round(bytesPerSec))}/s`;
}

/** Duration: `850ms`, `42s`, `3m05s`, `1h02m`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return "-";
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, "0")}m`;
}

/** ISO 8601 date-time in UTC without milliseconds, from Unix seconds: `2026-11-22T00:19:48Z`. */
export function formatDate(unixSeconds: number): string {
  if (!Number.isFinite(unixSeconds)) return "-";
  return new Date(unixSeconds * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** Parses a duration: milliseconds from `90s`, `2m`, `1h`, `500ms`, or plain seconds (`120`). */
export function parseDuration(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/i.exec(text);
  if (!m) throw usageError(`not a duration: ${JSON.stringify(text)} (try 90s, 2m, 1h, 0)`);
  const mult = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? "s").toLowerCase() as "s"];
  return Math.round(Number(m[1]) * mult);
}

/** Parses a size: bytes (`1048576`) or with a unit (`10k`, `1.5MiB`, `2GB`, `512 KiB`); binary multiples. */
export function parseSize(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?b?)\s*$/i.exec(text);
  if (!m) throw usageError(`not a size: ${JSON.stringify(text)} (try 1048576, 500K, 1.5MiB, 2G)`);
  const power = " kmgtp".indexOf((m[2] ?? "").toLowerCase() || " ");
  const value = Number(m[1]) * 1024 ** power;
  if (!Number.isSafeInteger(Math.round(value))) throw usageError(`size too large: ${text}`);
  return Math.round(value);
}

/**
 * Parses a point in time into Unix seconds: an ISO date or date-time (`2026-11-01`,
 * `2026-11-01T12:00:00Z`; a date alone is midnight UTC), Unix seconds (`1767225600`), or an
 * age (`30m`, `12h`, `7d`, `2w` ago from `now`).
 */
export function parseTime(text: string, now: number = Date.now()): number {
  const t = text.trim();
  const age = /^(\d+)\s*([smhdw])$/i.exec(t);
  if (age) {
    const mult = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 }[(age[2] as string).toLowerCase() as "s"];
    return Math.floor(now / 1000) - Number(age[1]) * mult;
  }
  if (/^\d{9,}$/.test(t)) return Number(t);
  if (/^\d{4}-\d{2}-\d{2}/.test(t)) {
    const ms = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(t) ? `${t}T00:00:00Z` : t);
    if (!Number.isNaN(ms)) return Math.floor(ms / 1000);
  }
  throw usageError(`not a date: ${JSON.stringify(text)} (try 2026-11-01, 2026-11-01T12:00:00Z, 7d, 12h)`);
}

/** A column of `table`: header and alignment. */
export interface Column {
  header: string;
  align?: "left" | "right";
}

/** Renders rows as a plain-text table with a header line; cells are padded to the widest entry. */
export function table(columns: Column[], rows: string[][]): string {
  const widths = columns.map((c, i) => Math.max(c.header.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => {
        const w = widths[i] as number;
        if (i === cells.length - 1 && columns[i]?.align !== "right") return cell;
        return columns[i]?.align === "right" ? cell.padStart(w) : cell.padEnd(w);
      })
      .join("  ")
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...rows.map(line)].join("\n");
}

let quiet = false;

/**
 * `-q/--quiet`: from now on `eprintln` notices are not shown (they still go to the log file);
 * errors (`errorln`) are. `applyOutputOptions` also silences stdout unless `--json` was asked for.
 */
export function setQuiet(on: boolean): void {
  quiet = on;
}

/** Writes one line to stdout; on a terminal, wrapped at word boundaries to its width. */
export function println(text = ""): void {
  if (text !== "") logEvent("info", "output", { text });
  const cols = process.stdout.isTTY ? process.stdout.columns : 0;
  const lines = cols > 20 ? text.split("\n").flatMap((l) => wrapWords(l, cols - 1)) : [text];
  process.stdout.write(`${lines.join("\n")}\n`);
}

/** `println` for a secret (a new mnemonic): shown like any line, never written to the log file. */
export function printSecret(text: string): void {
  process.stdout.write(`${text}\n`);
}

/**
 * Wraps `text` at word boundaries into lines of at most `width` characters; continuation
 * lines are indented by `indent` spaces. A word longer than a line is split (only then).
 */
export function wrapWords(text: string, width: number, indent = 4): string[] {
  const out: string[] = [];
  let line = "";
  const pad = " ".repeat(indent);
  for (const word of text.split(" ")) {
    const prefix = out.length === 0 && line === "" ? "" : line === "" ? pad : `${line} `;
    if ((prefix + word).length <= width) {
      line = prefix + word;
      continue;
    }
    if (line.trim() !== "") out.push(line);
    let rest = word;
    const room = width - indent;
    while (rest.length > room) {
      out.push(pad + rest.slice(0, room));
      rest = rest.slice(room);
    }
    line = pad + rest;
  }
  if (line.trim() !== "") out.push(line);
  return out.length > 0 ? out : [""];
}

/**
 * Writes a notice (a warning, a retry) to stderr, wrapped like `println`; not shown with
 * `-q`, logged as `warn` either way.
 */
export function eprintln(text = ""): void {
  if (text !== "") logEvent("warn", "notice", { text });
  if (!quiet) writeStderr(text);
}

/** Writes an error line to stderr, even with `-q`; logged as `error`. */
export function errorln(text: string): void {
  logEvent("error", "error", { text });
  writeStderr(text);
}

function writeStderr(text: string): void {
  const cols = process.stderr.isTTY ? process.stderr.columns : 0;
  const lines = cols > 20 ? text.split("\n").flatMap((l) => wrapWords(l, cols - 1)) : [text];
  process.stderr.write(`${lines.join("\n")}\n`);
}

/** Writes `value` as one line of JSON to stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}
