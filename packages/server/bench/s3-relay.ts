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
import { parseArgs } from "node:util";
import { createS3BlobStore, createS3Client } from "../src/storage/s3.ts";
import { s3TestConfig } from "../test/support/s3-server.ts";
import { interleavedRounds, measureParallel, reportMedians } from "./rounds.ts";

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

const results = await interleavedRounds(ways, rounds, "CPU-s/GiB", async (w, name, r) => {
  way = w;
  const tag = `${r}-${name}`;
  const run = await measureParallel(count, conc, CHUNK, async (i) => {
    const res = await fetch(`http://127.0.0.1:${server.port}/${tag}/${i}`, { method: "PUT", body: data });
    if (res.status !== 204) throw new Error(`relay answered ${res.status}`);
  });
  await store.deletePrefix(`relay/${tag}/`);
  return run;
});
reportMedians(
  "s3-relay",
  `${values.mib} MiB in 8 MiB bodies, c=${conc}, ${rounds} interleaved rounds`,
  values,
  results,
  12,
);
server.stop(true);
close();
await store.deletePrefix("relay/");
await store.close();
process.exit(0);
