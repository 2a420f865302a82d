/**
 * Pieces the S3 benches share (`s3-put.ts`, `s3-relay.ts`, the raw ceilings of `upload.ts` and
 * `download.ts`): a buffer as a request body arrives, a parallel run measured in MB/s and this
 * process's CPU per GiB, interleaved rounds of several ways of doing one thing, and their medians
 * printed and written as JSON.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const MiB = 1024 * 1024;
/** Size of the pieces a body is cut into, bytes: as an HTTP request body arrives. */
const PIECE = 64 * 1024;

/** `bytes` as a web stream of 64 KiB pieces (views, no copies), read on demand. */
export function webPiecesOf(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let o = 0;
  return new ReadableStream<Uint8Array>(
    {
      pull(c) {
        if (o >= bytes.length) return c.close();
        c.enqueue(bytes.subarray(o, Math.min(bytes.length, o + PIECE)));
        o += PIECE;
      },
    },
    { highWaterMark: 0 },
  );
}

/** One measured run: MB/s (MB = 10^6 B) and this process's CPU seconds (user + system) per GiB. */
export interface Run {
  mbps: number;
  cpuPerGiB: number;
}

/**
 * Calls `one(i)` for i in [0, count) with `concurrency` calls in flight, each moving `bytesEach`
 * bytes; measures the wall time and this process's CPU over all of them.
 */
export async function measureParallel(
  count: number,
  concurrency: number,
  bytesEach: number,
  one: (i: number) => Promise<void>,
): Promise<Run> {
  let next = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < count; i = next++) await one(i);
    }),
  );
  const s = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const bytes = count * bytesEach;
  return { mbps: bytes / 1e6 / s, cpuPerGiB: ((cpu.user + cpu.system) / 1e6) * ((1024 * MiB) / bytes) };
}

/**
 * Runs every way of `ways` once per round, in their order, for `rounds` rounds, printing each
 * run (`cpuLabel` names what the CPU column counts); returns the runs by way.
 */
export async function interleavedRounds<W>(
  ways: Record<string, W>,
  rounds: number,
  cpuLabel: string,
  run: (way: W, name: string, round: number) => Promise<Run>,
): Promise<Record<string, Run[]>> {
  const results: Record<string, Run[]> = {};
  for (let r = 0; r < rounds; r++) {
    for (const [name, way] of Object.entries(ways)) {
      const res = await run(way, name, r);
      results[name] = [...(results[name] ?? []), res];
      console.log(
        `round ${r + 1} ${name}: ${res.mbps.toFixed(0)} MB/s, ${res.cpuPerGiB.toFixed(2)} ${cpuLabel}`,
      );
    }
  }
  return results;
}

/**
 * Prints `title` and the median MB/s and CPU-s/GiB of each way (names padded to `nameWidth`),
 * and writes `{args, rounds, summary}` to `bench/results/<prefix>-<time>.json`.
 */
export function reportMedians(
  prefix: string,
  title: string,
  args: unknown,
  results: Record<string, Run[]>,
  nameWidth: number,
): void {
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(`\n${title} (medians):`);
  const summary = Object.fromEntries(
    Object.entries(results).map(([k, v]) => [
      k,
      { mbps: median(v.map((x) => x.mbps)), cpuPerGiB: median(v.map((x) => x.cpuPerGiB)) },
    ]),
  );
  for (const [k, v] of Object.entries(summary))
    console.log(
      `  ${k.padEnd(nameWidth)} ${v.mbps.toFixed(0).padStart(5)} MB/s  ${v.cpuPerGiB.toFixed(2)} CPU-s/GiB`,
    );
  mkdirSync(join(import.meta.dir, "results"), { recursive: true });
  const file = join(
    import.meta.dir,
    "results",
    `${prefix}-${new Date().toISOString().replace(/[:.]/g, "-")}.json`,
  );
  writeFileSync(file, JSON.stringify({ args, rounds: results, summary }, null, 2));
  console.log(`wrote ${file}`);
}
