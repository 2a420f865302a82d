/**
 * What relaying a request body to S3 costs a Bun process, whatever the server does with it: a
 * minimal Bun.serve that PUTs each 8 MiB request body it receives to a presigned URL with
 * `fetch`, in four ways, on the same bytes, interleaved rounds:
 * - `native`: the request's own body stream handed to `fetch` (nothing in JS touches a byte);
 * - `js-pull`: a web stream whose `pull` reads the request body and enqueues each piece, the
 *   least any server that hashes or checks the bytes must do (the esync S3 store's shape);
 * - `bun-direct`: the same through Bun's `type: "direct"` stream;
 * - `buffered`: the whole body read into memory, then sent.
 * Decides docs/benchmarks.md#s3-writes: how much of the esync server's CPU per GiB on S3 is the
 * relay itself.
 *
 *   bun bench/s3-relay.ts [--mib 512] [--concurrency 4] [--rounds 2]
 * Uses the test RGW (test/support/s3-server.ts). The client runs in the same process, so the
 * CPU per GiB printed is client plus relay (the client's part is the same in every way). Writes
 * JSON to bench/results/s3-relay-<time>.json.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createS3BlobStore, createS3Client } from "../src/storage/s3.ts";
import { s3TestConfig } from "../test/support/s3-server.ts";

const { values } = parseArgs({
  options: {
    mib: { type: "string", default: "512" },
    concurrency: { type: "string", default: "4" },
    rounds: { type: "string", default: "2" },
  },
});
const MiB = 1024 * 1024;
const CHUNK = 8 * MiB;
const count = Math.ceil((Number(values.mib) * MiB) / CHUNK);
const conc = Number(values.concurrency);
const rounds = Number(values.rounds);
const data = new Uint8Array(CHUNK).map(() => (Math.random() * 256) | 0);

const cfg = await s3TestConfig("bench-s3-relay");
const store = createS3BlobStore(cfg);
await store.check();
const { client, close } = createS3Client(cfg);

type Way = (body: ReadableStream<Uint8Array>) => ReadableStream<Uint8Array> | "buffer";
const ways: Record<string, Way> = {
  native: (body) => body,
  "js-pull": (body) => {
    const reader = body.getReader();
    return new ReadableStream<Uint8Array>(
      {
        async pull(c) {
          const r = await reader.read();
          if (r.done) c.close();
          else c.enqueue(r.value);
        },
      },
      { highWaterMark: 0 },
    );
  },
  "bun-direct": (body) => {
    const reader = body.getReader();
    return new ReadableStream({
      type: "direct",
      async pull(c: { write(b: Uint8Array): void; flush(): unknown; close(): void }) {
        for (;;) {
          const r = await reader.read();
          if (r.done) break;
          c.write(r.value);
          await c.flush();
        }
        c.close();
      },
    } as unknown as UnderlyingDefaultSource<Uint8Array>);
  },
  buffered: () => "buffer",
};

let way: Way = ways.native!;
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  maxRequestBodySize: CHUNK * 2,
  async fetch(req) {
    const url = await client.presignedUrl("PUT", cfg.bucket, `relay${new URL(req.url).pathname}`, 600);
    const shaped = way(req.body as ReadableStream<Uint8Array>);
    const body = shaped === "buffer" ? await req.arrayBuffer() : shaped;
    const res = await fetch(url, {
      method: "PUT",
      headers: { "Content-Length": String(CHUNK) },
      body,
      duplex: "half",
    } as RequestInit);
    await res.arrayBuffer();
    return new Response(null, { status: res.status === 200 ? 204 : 502 });
  },
});

async function run(tag: string): Promise<{ mbps: number; cpuPerGiB: number }> {
  let next = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: conc }, async () => {
      for (let i = next++; i < count; i = next++) {
        const res = await fetch(`http://127.0.0.1:${server.port}/${tag}/${i}`, { method: "PUT", body: data });
        if (res.status !== 204) throw new Error(`relay answered ${res.status}`);
      }
    }),
  );
  const s = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await store.deletePrefix(`relay/${tag}/`);
  return {
    mbps: (count * CHUNK) / 1e6 / s,
    cpuPerGiB: ((cpu.user + cpu.system) / 1e6) * ((1024 * MiB) / (count * CHUNK)),
  };
}

const results: Record<string, { mbps: number; cpuPerGiB: number }[]> = {};
for (let r = 0; r < rounds; r++) {
  for (const [name, w] of Object.entries(ways)) {
    way = w;
    const res = await run(`${r}-${name}`);
    results[name] = [...(results[name] ?? []), res];
    console.log(`round ${r + 1} ${name}: ${res.mbps.toFixed(0)} MB/s, ${res.cpuPerGiB.toFixed(2)} CPU-s/GiB`);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`\n${values.mib} MiB in 8 MiB bodies, c=${conc}, ${rounds} interleaved rounds (medians):`);
const summary = Object.fromEntries(
  Object.entries(results).map(([k, v]) => [
    k,
    { mbps: median(v.map((x) => x.mbps)), cpuPerGiB: median(v.map((x) => x.cpuPerGiB)) },
  ]),
);
for (const [k, v] of Object.entries(summary))
  console.log(`  ${k.padEnd(12)} ${v.mbps.toFixed(0).padStart(5)} MB/s  ${v.cpuPerGiB.toFixed(2)} CPU-s/GiB`);
mkdirSync(join(import.meta.dir, "results"), { recursive: true });
const file = join(
  import.meta.dir,
  "results",
  `s3-relay-${new Date().toISOString().replace(/[:.]/g, "-")}.json`,
);
writeFileSync(file, JSON.stringify({ args: values, rounds: results, summary }, null, 2));
console.log(`wrote ${file}`);
server.stop(true);
close();
await store.deletePrefix("relay/");
await store.close();
process.exit(0);
