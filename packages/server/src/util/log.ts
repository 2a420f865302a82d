/**
 * @module server/util/log
 * Structured logs: one JSON object per line on stderr with a fixed event name
 * (`session.created`, `chunk.stored`, `finalize.hash_mismatch`, ...). A line written while an HTTP
 * request is being served carries that request's `request_id`.
 */
import { currentRequest } from "./request-context.ts";

/** Log levels in increasing severity. */
export type LogLevel = "debug" | "info" | "warn" | "error";
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Fields attached to a log event. */
export type LogFields = Record<string, unknown>;

/** A structured logger. */
export interface Logger {
  debug(event: string, fields?: LogFields): void;
  info(event: string, fields?: LogFields): void;
  warn(event: string, fields?: LogFields): void;
  error(event: string, fields?: LogFields): void;
}

/** Logger writing JSON lines at `level` and above to `write` (default: stderr). */
export function createLogger(
  level: LogLevel = "info",
  write: (line: string) => void = (line) => void process.stderr.write(line),
): Logger {
  const min = ORDER[level];
  const emit = (lvl: LogLevel, event: string, fields?: LogFields) => {
    if (ORDER[lvl] < min) return;
    const rec: LogFields = { t: new Date().toISOString(), level: lvl, event };
    const requestId = currentRequest()?.id;
    if (requestId !== undefined) rec.request_id = requestId;
    Object.assign(rec, fields);
    for (const [k, v] of Object.entries(rec))
      if (v instanceof Error) rec[k] = { name: v.name, message: v.message, stack: v.stack };
    write(`${JSON.stringify(rec)}\n`);
  };
  return {
    debug: (e, f) => emit("debug", e, f),
    info: (e, f) => emit("info", e, f),
    warn: (e, f) => emit("warn", e, f),
    error: (e, f) => emit("error", e, f),
  };
}

/** A logger that drops everything (tests). */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
