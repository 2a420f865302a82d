/**
 * @module cli/progress
 * Progress of a transfer of many files (push, pull), shown one of three ways:
 *
 * - `bars`: stdout is a terminal: a `cli-progress` MultiBar with an overall line (bar,
 *   percentage, bytes, files, rate, ETA) and one line per file in flight for more than
 *   `FILE_BAR_DELAY_MS` (bar, percentage, phase, bytes, rate): a small file done sooner only
 *   prints its finished line, so a tree of thousands of small files is not redrawn once per
 *   file. Every line is composed to fit the terminal's width at each redraw
 *   (80 columns and up keep every field; narrower drops the least useful ones), and lines
 *   printed above the bars (finished files, errors) are wrapped at word boundaries.
 * - `lines`: stdout is not a terminal (a pipe, a log): one line per finished file and an
 *   overall progress line every few seconds, never wrapped or cut.
 * - `silent`: `--json`: nothing until the command prints its JSON summary.
 *
 * The numbers tell the truth: a file's percentage is the bytes of its current phase over
 * that phase's total (a file that has sent 0 B shows 0%); rates are moving averages over a
 * sliding window and count only bytes moved in this run (bytes found on the server by a
 * resume, or otherwise credited without a transfer, are excluded); the ETA is the remaining
 * bytes over that moving average. Sizes and rates use one unit system, binary (IEC):
 * `KiB`, `MiB`, `MiB/s`.
 */
import { MultiBar, type MultiBar as MultiBarType, type SingleBar } from "cli-progress";
import { logEvent } from "./log.ts";
import { formatDuration, formatRate, formatSize, setNoticeSink, wrapWords } from "./output.ts";

export { wrapWords };

/** A file gets its own bar once it has been in flight this long: 300 ms. */
export const FILE_BAR_DELAY_MS = 300;

/** How progress is shown. */
export type ProgressMode = "bars" | "lines" | "silent";

/** `silent` for `--json`, `bars` when stdout is a terminal, `lines` otherwise. */
export function progressMode(json: boolean): ProgressMode {
  if (json) return "silent";
  return process.stdout.isTTY ? "bars" : "lines";
}

/** Nothing moved for this long: the rate is shown as 0 and the ETA as unknown (a stall, an outage). */
export const STALL_MS = 3_000;

/** Bytes per second as a moving average over a sliding window of `windowMs`. */
export class RateMeter {
  private readonly samples: Array<[number, number]> = [];
  private movedAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly windowMs = 10_000) {}

  /** Records that `total` bytes were moved by now (a count that only grows). */
  add(total: number, now = performance.now()): void {
    const last = this.samples.at(-1);
    if (!last || total > last[1]) this.movedAt = now;
    this.samples.push([now, total]);
    while (this.samples.length > 2 && now - (this.samples[1] as [number, number])[0] > this.windowMs)
      this.samples.shift();
  }

  /**
   * Current rate in bytes per second over the window: 0 until samples span 500 ms, and 0
   * once nothing has moved for `STALL_MS` (it does not keep falling while a transfer waits).
   */
  rate(now = performance.now()): number {
    const first = this.samples[0];
    const last = this.samples.at(-1);
    if (!first || !last) return 0;
    if (now - this.movedAt >= STALL_MS) return 0;
    const span = Math.max(now, last[0]) - first[0];
    return span < 500 ? 0 : Math.max(0, last[1] - first[1]) / (span / 1000);
  }
}

/** One file's bar (or line) while it transfers. */
export interface FileProgress {
  /**
   * `bytes` of `total` done in phase `phase` (`encrypting`, `uploading`, `receiving`, ...);
   * `skipped` of those bytes were not moved in this run (resumed): they count towards the
   * percentage, not the rate. A new phase restarts the rate.
   */
  update(phase: string, bytes: number, total: number, skipped?: number): void;
  /** Removes the bar and prints `line` (above the bars, or as a plain line). */
  done(line: string): void;
}

/**
 * Progress of a whole transfer. `bytesDone` and the total are in whatever unit the command
 * chooses (push: ciphertext bytes on the server; pull: ciphertext received); rate and ETA
 * follow from them. cli-progress's own `{eta}`/`{value}` tokens are not used.
 */
export interface TransferProgress {
  /** Starts a file's bar. */
  file(name: string, size: number): FileProgress;
  /**
   * Sets the overall bytes done (of the total given at creation) and files finished;
   * `bytesSkipped` of `bytesDone` were credited without a transfer (resumed) and are kept
   * out of the rate.
   */
  overall(bytesDone: number, filesDone: number, bytesSkipped?: number): void;
  /** Prints a line above the bars (or plainly). */
  log(line: string): void;
  /** Stops drawing; the bars are left as they last were. */
  stop(): void;
}

/** Fits `name` into `width` characters, eliding the middle. */
export function fitName(name: string, width: number): string {
  if (width <= 0) return "";
  if (name.length <= width) return name.padEnd(width);
  const keep = width - 1;
  const head = Math.ceil(keep / 3);
  return `${name.slice(0, head)}…${name.slice(name.length - (keep - head))}`;
}

/** `floor(done / total * 100)` clamped to 0..100; an empty total is 100% once `finished`. */
export function percent(done: number, total: number, finished = false): number {
  if (total <= 0) return finished ? 100 : 0;
  return Math.max(0, Math.min(100, Math.floor((done / total) * 100)));
}

function bar(width: number, pct: number): string {
  if (width <= 0) return "";
  const full = Math.round((pct / 100) * width);
  return "█".repeat(full) + "░".repeat(width - full);
}

/** The fields of a progress line; `fields` are printed after the bar, in order of importance. */
interface LineSpec {
  name: string;
  /** Minimum width the name keeps before fields are dropped. */
  minName: number;
  pct: number;
  fields: string[];
  /**
   * Aligned columns: the name exactly this wide and a 12-cell bar, so that lines of several
   * files line up; used when everything fits, else the line is composed as usual.
   */
  column?: number;
}

/**
 * Composes `name bar pct% field field ...` in at most `width` characters: the bar shrinks
 * from 24 to 6 cells, the name is elided in the middle down to `minName`, then fields are
 * dropped from the end (least important), then the bar.
 */
export function composeLine(spec: LineSpec, width: number): string {
  const pctText = `${String(spec.pct).padStart(3)}%`;
  if (spec.column !== undefined) {
    const line = `${fitName(spec.name, spec.column)} ${bar(12, spec.pct)} ${[pctText, ...spec.fields].join("  ")}`;
    if (line.length <= width) return line;
  }
  for (let keep = spec.fields.length; keep >= 0; keep--) {
    const tail = [pctText, ...spec.fields.slice(0, keep)].join("  ");
    for (const barWidth of [24, 20, 16, 12, 8, 6]) {
      const nameRoom = width - tail.length - barWidth - 2;
      if (nameRoom >= Math.min(spec.minName, spec.name.length)) {
        const name = fitName(spec.name, Math.min(nameRoom, Math.max(spec.name.length, spec.minName)));
        return `${name} ${bar(barWidth, spec.pct)} ${tail}`;
      }
    }
  }
  return fitName(`${spec.name} ${pctText}`, width).trimEnd();
}

/** The drawable width of terminal `out`: its columns less one (the last column wraps on some). */
function terminalWidthOf(out: NodeJS.WriteStream): number {
  return Math.max(40, (out.columns || 80) - 1);
}

/**
 * A transfer display for `totalBytes` in `totalFiles` files on `out` (default stdout). `label`
 * heads the overall bar (`push docs`, `pull docs`).
 */
export function transferProgress(
  mode: ProgressMode,
  label: string,
  totalBytes: number,
  totalFiles: number,
  out: NodeJS.WriteStream = process.stdout,
): TransferProgress {
  const terminalWidth = () => terminalWidthOf(out);
  if (mode === "silent") {
    return { file: () => ({ update() {}, done() {} }), overall() {}, log() {}, stop() {} };
  }
  const meter = new RateMeter();
  let done = 0;
  let skipped = 0;
  let files = 0;
  // No ETA until enough has moved for the moving average to mean something (1% or 1 MiB).
  const eta = () => {
    if (done >= totalBytes) return "0s";
    const rate = meter.rate();
    if (rate <= 0 || done - skipped < Math.min(totalBytes / 100, 1024 * 1024)) return "-";
    return formatDuration(Math.ceil((totalBytes - done) / rate) * 1000);
  };
  const record = (bytesDone: number, filesDone: number, bytesSkipped: number) => {
    done = bytesDone;
    files = filesDone;
    skipped = bytesSkipped;
    meter.add(done - skipped);
  };

  if (mode === "lines") {
    const output = (l: string) => {
      logEvent("info", "output", { text: l });
      out.write(`${l}\n`);
    };
    let lastLine = performance.now();
    const line = () =>
      `${label}: ${percent(done, totalBytes)}% ${formatSize(done)}/${formatSize(totalBytes)}, ` +
      `${files}/${totalFiles} files, ${formatRate(meter.rate())}, ETA ${eta()}`;
    return {
      file: () => ({ update() {}, done: (l) => output(l) }),
      overall(bytesDone, filesDone, bytesSkipped = 0) {
        record(bytesDone, filesDone, bytesSkipped);
        const now = performance.now();
        if (now - lastLine >= 5000 && done < totalBytes) {
          lastLine = now;
          out.write(`${line()}\n`);
        }
      },
      log: output,
      stop() {},
    };
  }

  const overallLine = () =>
    composeLine(
      {
        name: label,
        minName: Math.min(label.length, 12),
        pct: percent(done, totalBytes, files >= totalFiles),
        fields: [
          `${formatSize(done)}/${formatSize(totalBytes)}`,
          `ETA ${eta()}`,
          formatRate(meter.rate()),
          `${files}/${totalFiles} files`,
        ],
      },
      terminalWidth(),
    );
  const multi: MultiBarType = new MultiBar({
    stream: out,
    hideCursor: true,
    clearOnComplete: false,
    stopOnComplete: false,
    gracefulExit: false,
    fps: 8,
    format: (_options, _params, payload: { line?: () => string }) => payload.line?.() ?? "",
  });
  const overall: SingleBar = multi.create(1, 0, { line: overallLine });
  /** Files in flight without a bar yet, each with what makes its bar when it is due. */
  const waiting = new Map<object, { since: number; show: () => void }>();
  const tick = setInterval(() => {
    const now = performance.now();
    for (const w of waiting.values()) if (now - w.since >= FILE_BAR_DELAY_MS) w.show();
    overall.update(0, { line: overallLine });
  }, 100);
  const log = (l: string) => {
    const w = terminalWidth();
    // Padded to the width: a line drawn where a bar was must cover all of it.
    const lines = l.split("\n").flatMap((part) => wrapWords(part, w));
    multi.log(`${lines.map((x) => x.padEnd(w)).join("\n")}\n`);
  };
  // Notices (retries) go above the bars while they are drawn, not over them.
  setNoticeSink(log);
  /** A line of the command's own output (a finished file): shown above the bars and logged. */
  const output = (l: string) => {
    logEvent("info", "output", { text: l });
    log(l);
  };
  return {
    file(name, size) {
      const fm = { meter: new RateMeter(5000), phase: "", bytes: 0, total: size };
      const line = () =>
        composeLine(
          {
            name: `  ${name}`,
            minName: 16,
            column: Math.max(12, Math.min(40, terminalWidth() - 60)),
            pct: percent(fm.bytes, fm.total),
            fields: [
              `${fm.phase.padEnd(10)} ${formatSize(fm.bytes)}/${formatSize(fm.total)}`,
              formatRate(fm.meter.rate()),
            ],
          },
          terminalWidth(),
        );
      const key = {};
      const since = performance.now();
      let b: SingleBar | null = null;
      const show = () => {
        waiting.delete(key);
        b = multi.create(1, 0, { line });
      };
      waiting.set(key, { since, show });
      return {
        update(phase, bytes, total, skippedBytes = 0) {
          if (phase !== fm.phase) {
            fm.meter = new RateMeter(5000);
            fm.phase = phase;
          }
          fm.bytes = bytes;
          fm.total = total;
          fm.meter.add(bytes - skippedBytes);
          if (!b && performance.now() - since >= FILE_BAR_DELAY_MS) show();
          b?.update(0, { line });
        },
        done(l) {
          waiting.delete(key);
          output(l); // flushed by the next redraw: at once when a bar is removed, else the next frame
          if (b) multi.remove(b);
        },
      };
    },
    overall(bytesDone, filesDone, bytesSkipped = 0) {
      record(bytesDone, filesDone, bytesSkipped);
      overall.update(0, { line: overallLine });
    },
    log: output,
    stop() {
      clearInterval(tick);
      setNoticeSink(null);
      overall.update(0, { line: overallLine });
      multi.stop();
    },
  };
}
