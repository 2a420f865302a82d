/**
 * @module cli/output-options
 * The global `-q/--quiet` and `--log-file PATH` options, applied before any command runs
 * (docs/user-guide.md, "Quiet runs and logs").
 *
 * - `-q`: nothing on stdout (progress, per-file lines, summaries, listings; a `--json`
 *   document is still printed, since it was asked for) and no notices on stderr; errors are
 *   still printed on stderr and the exit code is unchanged.
 * - `--log-file PATH`: JSON lines (`log.ts`) for the command's start and end, every line it
 *   prints or would have printed (`output`), every notice (`notice`, level `warn`) and error.
 */
import { resolve } from "node:path";
import { logEvent, RotatingLog, setLog } from "./log.ts";
import { setQuiet } from "./output.ts";

/** The global options this module reads. */
export interface OutputOptions {
  quiet?: boolean;
  logFile?: string;
  json?: boolean;
}

/** Drops everything written to stdout from now on (for `-q` without `--json`). */
export function silenceStdout(): void {
  const sink = (_chunk: unknown, encoding?: unknown, callback?: unknown): boolean => {
    const done = typeof encoding === "function" ? encoding : callback;
    if (typeof done === "function") queueMicrotask(() => (done as () => void)());
    return true;
  };
  process.stdout.write = sink as typeof process.stdout.write;
}

/**
 * Applies `-q` and `--log-file` for this process and logs `command.start` with `started`:
 * the command's name (e.g. `sync add`), its arguments and its own options.
 */
export function applyOutputOptions(
  opts: OutputOptions,
  started: { command: string; args: string[]; options: Record<string, unknown> },
): void {
  if (opts.logFile !== undefined) setLog(new RotatingLog(resolve(opts.logFile)));
  if (opts.quiet) {
    setQuiet(true);
    if (!opts.json) silenceStdout();
  }
  logEvent("info", "command.start", started);
}
