/**
 * S3 write paths compared on the same bytes, interleaved rounds: the store's `put` (a `fetch` to
 * a URL presigned by minio's `presignedUrl`, `UNSIGNED-PAYLOAD`, the body streamed as it comes
 * through the store's length checks), the bare minimum of that request (`fetch` of a web stream,
 * no checks: the ceiling), and minio's public `putObject(bucket, key, stream, size)` (which reads
 * a body of up to 64 MiB into memory and hashes it, MD5 with payload signing off, SHA-256 with it
 * on, before sending). Decides docs/operator-guide.md#s3: which one the store uses, and why.
 *
 *   bun bench/s3-put.ts [--mib 512] [--chunk-mib 8] [--concurrency 4] [--rounds 3]
 * Uses the test RGW (test/support/s3-server.ts). Prints MB/s and this process's CPU s/GiB per
 * path (medians), and writes JSON to bench/results/s3-put-<time>.json.
 */
import { Readable } from "node:stream";
import { parseArgs } from "node:util";
import { createS3BlobStore, createS3Client } from "../src/storage/s3.ts";
import { s3TestConfig } from "../test/support/s3-server.ts";
import { interleavedRounds, measureParallel, reportMedians, webPiecesOf } from "./rounds.ts";

const { values } = parseArgs({
  options: {
    mib: { type: "string", default: "512" },
    "chunk-mib": { type: "string", default: "8" },
    concurrency: { type: "string", default: "4" },
    rounds: { type: "string", default: "3" },
  },
});
const MiB = 1024 * 1024;
const total = Number(values.mib) * MiB;
const chunk = Number(values["chunk-mib"]) * MiB;
const conc = Number(values.concurrency);
const rounds = Number(values.rounds);
const data = new Uint8Array(chunk).map(() => (Math.random() * 256) | 0);

const cfg = await s3TestConfig("bench-s3-put");
const store = createS3BlobStore(cfg);
await store.check();
const { client, close } = createS3Client(cfg);
type Put = (key: string) => Promise<void>;

/** Pieces of 64 KiB, as an HTTP request body arrives, as a Node stream (minio's `putObject`). */
function pieces(): Readable {
  return Readable.from(
    (function* () {
      for (let o = 0; o < data.length; o += 65536) yield data.subarray(o, o + 65536);
    })(),
    { objectMode: false },
  );
}
const paths: Record<string, Put> = {
  "fetch (ceiling)": async (key) => {
    const url = await client.presignedUrl("PUT", cfg.bucket, key, 600);
    const res = await fetch(url, {
      method: "PUT",
      headers: { "Content-Length": String(chunk) },
      body: webPiecesOf(data),
      duplex: "half",
    } as RequestInit);
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`PUT ${res.status}`);
  },
  "store put": async (key) => {
    await store.put(key, webPiecesOf(data), chunk);
  },
  "putObject (public)": async (key) => {
    await client.putObject(cfg.bucket, key, pieces(), chunk);
  },
  "putObject, SHA-256 on": async (key) => {
    client.enableSHA256 = true;
    try {
      await client.putObject(cfg.bucket, key, pieces(), chunk);
    } finally {
      client.enableSHA256 = false;
    }
  },
};

const results = await interleavedRounds(paths, rounds, "client CPU-s/GiB", async (put, name, r) => {
  const tag = `${r}-${name.replace(/\W+/g, "-")}`;
  const run = await measureParallel(Math.ceil(total / chunk), conc, chunk, (i) => put(`bench/${tag}/${i}`));
  await store.deletePrefix(`bench/${tag}/`);
  return run;
});
reportMedians(
  "s3-put",
  `${values.mib} MiB in ${values["chunk-mib"]} MiB objects, c=${conc}, ${rounds} interleaved rounds`,
  values,
  results,
  24,
);
close();
await store.deletePrefix("bench/");
await store.close();
process.exit(0);
