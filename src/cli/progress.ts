/**
 * @module cli/progress
 * Progress of a transfer of many files (push, pull), shown one of three ways:
 *
 * - `bars`: stdout is a terminal: a `cli-progress` MultiBar with an overall bar (bytes, files,
 *   rate, ETA) and one bar per file in flight (phase, bytes, rate); finished files are printed
 *   as lines above the bars.
 * - `lines`: stdout is not a terminal (a pipe, a log): one line per finished file and an
 *   overall progress line every few seconds.
 * - `silent`: `--json`: nothing until the command prints its JSON summary.
 *
 * Rates are measured over a sliding window of the last seconds, so they follow the current
 * speed; the ETA is the remaining bytes over that rate.
 */
import { MultiBar, type MultiBar as MultiBarType, type SingleBar } from "cli-progress";
import { formatDuration, formatRate, formatSize } from "./output.ts";

/** How progress is shown. */
export type ProgressMode = "bars" | "lines" | "silent";

/** `silent` for `--json`, `bars` when stdout is a terminal, `lines` otherwise. */
export function progressMode(json: boolean): ProgressMode {
  if (json) return "silent";
  return process.stdout.isTTY ? "bars" : "lines";
}

/** Bytes per second over a sliding window of `windowMs`. */
export class RateMeter {
  private readonly samples: Array<[number, number]> = [];

  constructor(private readonly windowMs = 8000) {}

  /** Records that `total` bytes were done by now. */
  add(total: number, now = performance.now()): void {
    this.samples.push([now, total]);
    while (this.samples.length > 2 && now - (this.samples[0] as [number, number])[0] > this.windowMs)
      this.samples.shift();
  }

  /** Current rate in bytes per second over the window (0 until samples span 200 ms). */
  rate(now = performance.now()): number {
    const first = this.samples[0];
    const last = this.samples.at(-1);
    if (!first || !last) return 0;
    const span = Math.max(now, last[0]) - first[0];
    return span < 200 ? 0 : (last[1] - first[1]) / (span / 1000);
  }
}

/** One file's bar (or line) while it transfers. */
export interface FileProgress {
  /** `fraction` of the file done (0..1), the current phase's name and its bytes so far. */
  update(fraction: number, phase: string, bytes: number): void;
  /** Removes the bar and prints `line` (above the bars, or as a plain line). */
  done(line: string): void;
}

/**
 * Progress of a whole transfer. `bytesDone` and the total are in whatever unit the command
 * chooses (push: plaintext bytes through encryption and upload; pull: ciphertext received);
 * rate and ETA follow from them. cli-progress's own `{eta}`/`{value}` tokens are not used.
 */
export interface TransferProgress {
  /** Starts a file's bar. */
  file(name: string, size: number): FileProgress;
  /** Sets the overall bytes done (of the total given at creation) and files finished. */
  overall(bytesDone: number, filesDone: number): void;
  /** Prints a line above the bars (or plainly). */
  log(line: string): void;
  /** Stops drawing; the bars are left as they last were. */
  stop(): void;
}

/** Fits `name` into `width` characters, eliding the middle. */
export function fitName(name: string, width: number): string {
  if (name.length <= width) return name.padEnd(width);
  const keep = width - 1;
  const head = Math.ceil(keep / 3);
  return `${name.slice(0, head)}…${name.slice(name.length - (keep - head))}`;
}

const NAME_WIDTH = 30;

/**
 * A transfer display for `totalBytes` in `totalFiles` files. `label` heads the overall bar
 * (`push`, `pull`).
 */
export function transferProgress(
  mode: ProgressMode,
  label: string,
  totalBytes: number,
  totalFiles: number,
): TransferProgress {
  if (mode === "silent") {
    return { file: () => ({ update() {}, done() {} }), overall() {}, log() {}, stop() {} };
  }
  const meter = new RateMeter();
  let done = 0;
  let files = 0;
  const overallPayload = () => {
    const rate = meter.rate();
    const eta =
      done >= totalBytes ? "0s" : rate > 0 ? formatDuration(((totalBytes - done) / rate) * 1000) : "-";
    return {
      label: label.padEnd(NAME_WIDTH),
      done: formatSize(done),
      size: formatSize(totalBytes),
      files: `${files}/${totalFiles} files`,
      speed: formatRate(rate),
      remaining: eta,
    };
  };

  if (mode === "lines") {
    const started = performance.now();
    let lastLine = started;
    const line = () => {
      const p = overallPayload();
      const pct = totalBytes > 0 ? Math.floor((done / totalBytes) * 100) : 100;
      process.stdout.write(
        `${label}: ${pct}% ${p.done}/${p.size}, ${p.files}, ${p.speed}, ETA ${p.remaining}\n`,
      );
    };
    return {
      file: () => ({ update() {}, done: (l) => process.stdout.write(`${l}\n`) }),
      overall(bytesDone, filesDone) {
        done = bytesDone;
        files = filesDone;
        meter.add(done);
        const now = performance.now();
        if (now - lastLine >= 5000 && done < totalBytes) {
          lastLine = now;
          line();
        }
      },
      log: (l) => process.stdout.write(`${l}\n`),
      stop() {},
    };
  }

  const multi: MultiBarType = new MultiBar({
    stream: process.stdout,
    hideCursor: true,
    clearOnComplete: false,
    stopOnComplete: false,
    gracefulExit: false,
    fps: 8,
    barsize: 24,
    barCompleteChar: "█",
    barIncompleteChar: "░",
    autopadding: true,
  });
  const overall: SingleBar = multi.create(Math.max(1, totalBytes), 0, overallPayload(), {
    format: "{label} {bar} {percentage}% {done}/{size}  {files}  {speed}  ETA {remaining}",
  });
  const tick = setInterval(() => overall.update(done, overallPayload()), 500);
  return {
    file(name, size) {
      let fm = new RateMeter(4000);
      let lastPhase = "";
      const payload = (phase: string, bytes: number) => ({
        name: fitName(`  ${name}`, NAME_WIDTH),
        phase: phase.padEnd(10),
        done: formatSize(bytes),
        size: formatSize(size),
        speed: formatRate(fm.rate()),
      });
      const bar = multi.create(1000, 0, payload("", 0), {
        format: "{name} {bar} {percentage}% {phase} {done}/{size}  {speed}",
      });
      return {
        update(fraction, phase, bytes) {
          if (phase !== lastPhase) {
            fm = new RateMeter(4000); // bytes restart at each phase (encrypting, uploading)
            lastPhase = phase;
          }
          fm.add(bytes);
          bar.update(Math.round(Math.min(1, Math.max(0, fraction)) * 1000), payload(phase, bytes));
        },
        done(l) {
          multi.log(`${l}\n`); // flushed by the redraw that remove() triggers
          multi.remove(bar);
        },
      };
    },
    overall(bytesDone, filesDone) {
      done = bytesDone;
      files = filesDone;
      meter.add(done);
      overall.update(done, overallPayload());
    },
    log: (l) => multi.log(`${l}\n`),
    stop() {
      clearInterval(tick);
      overall.update(done, overallPayload());
      multi.stop();
    },
  };
}
