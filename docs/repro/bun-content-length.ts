/**
 * Which response bodies Bun.serve sends with `Content-Length` (docs/internals.md, "Downloads and
 * Content-Length"). Run: `bun docs/repro/bun-content-length.ts`. Each case answers a GET of
 * 1,000,000 bytes (12 MiB for the large file) and declares `Content-Length` in the handler's
 * headers; the table shows the framing that reached a raw socket and how many body bytes came.
 * Nothing here touches esync; it needs no network beyond 127.0.0.1 (the S3 file is only presigned;
 * its `.stream()` is a byte stream like the `fetch()` case, measured chunked against Ceph RGW).
 * The last row is Bun's `node:http` server, for comparison: the two files written one piece at a
 * time after `writeHead` with their total length.
 */
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const N = 1_000_000;
const dir = mkdtempSync(join(tmpdir(), "bun-cl-"));
const fileA = join(dir, "a.bin");
const fileB = join(dir, "b.bin");
const big = join(dir, "big.bin");
writeFileSync(fileA, new Uint8Array(N));
writeFileSync(fileB, new Uint8Array(N));
writeFileSync(big, new Uint8Array(12 * 1024 * 1024));
const length = { "content-length": String(N) };

const upstream = Bun.serve({ port: 0, fetch: () => new Response(Bun.file(big)) });
const s3 = new Bun.S3Client({
  endpoint: "http://127.0.0.1:9",
  bucket: "b",
  accessKeyId: "k",
  secretAccessKey: "s",
});

const cases: Record<string, () => Response | Promise<Response>> = {
  "Uint8Array (in memory)": () => new Response(new Uint8Array(N), { headers: length }),
  "ReadableStream (JavaScript source)": () =>
    new Response(
      new ReadableStream({
        pull(c) {
          c.enqueue(new Uint8Array(N));
          c.close();
        },
      }),
      { headers: length },
    ),
  'ReadableStream type "bytes"': () =>
    new Response(
      new ReadableStream({
        type: "bytes",
        pull(c) {
          c.enqueue(new Uint8Array(N));
          c.close();
        },
      }),
      { headers: length },
    ),
  'ReadableStream type "direct"': () =>
    new Response(
      new ReadableStream({
        type: "direct",
        async pull(c: { write(b: Uint8Array): void; end(): Promise<void> }) {
          c.write(new Uint8Array(N));
          await c.end();
        },
      } as unknown as UnderlyingDefaultSource<Uint8Array>),
      { headers: length },
    ),
  "async generator": () =>
    new Response(
      (async function* () {
        yield new Uint8Array(N);
      })() as unknown as BodyInit,
      { headers: length },
    ),
  "fetch() body still arriving (12 MiB)": async () => {
    const r = await fetch(`http://127.0.0.1:${upstream.port}/`);
    return new Response(r.body, { headers: { "content-length": String(12 * 1024 * 1024) } });
  },
  "Bun.file(path) (12 MiB)": () => new Response(Bun.file(big)),
  "Bun.file(path).slice(a, b) (12 MiB - 2)": () =>
    new Response(Bun.file(big).slice(1, 12 * 1024 * 1024 - 1), {
      status: 206,
      headers: { "content-range": `bytes 1-${12 * 1024 * 1024 - 2}/${12 * 1024 * 1024}` },
    }),
  "Bun.file(path).stream()": () => new Response(Bun.file(fileA).stream(), { headers: length }),
  "new Blob([file slice, file slice])": () =>
    new Response(new Blob([Bun.file(fileA).slice(0, N / 2), Bun.file(fileB).slice(0, N / 2)]), {
      headers: length,
    }),
  "new Blob([file, file])": () =>
    new Response(new Blob([Bun.file(fileA), Bun.file(fileB)]), { headers: length }),
  "new Blob([file, file]).stream()": () =>
    new Response(new Blob([Bun.file(fileA), Bun.file(fileB)]).stream(), { headers: length }),
  "Bun.S3Client file": () => new Response(s3.file("key")),
};

const server = Bun.serve({
  port: 0,
  fetch(req) {
    const name = decodeURIComponent(new URL(req.url).pathname.slice(1));
    return cases[name]!();
  },
});

const nodeServer = http.createServer(async (_req, res) => {
  res.writeHead(200, { "content-length": String(2 * N) });
  for (const file of [fileA, fileB])
    for await (const piece of createReadStream(file)) {
      if (!res.write(piece)) await new Promise((drained) => res.once("drain", drained));
    }
  res.end();
});
await new Promise<void>((listening) => nodeServer.listen(0, "127.0.0.1", listening));
const nodePort = (nodeServer.address() as net.AddressInfo).port;

/** Status line, framing header and body byte count of one GET, read on a raw socket. */
function get(name: string, port = server.port): Promise<string> {
  return new Promise((resolve) => {
    const parts: Buffer[] = [];
    const s = net.connect(port, "127.0.0.1", () =>
      s.write(`GET /${encodeURIComponent(name)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`),
    );
    s.setTimeout(5000, () => s.destroy());
    s.on("data", (d: Buffer) => parts.push(d));
    s.on("error", () => {});
    s.on("close", () => {
      const all = Buffer.concat(parts);
      const end = all.indexOf("\r\n\r\n");
      const lines = all.subarray(0, end).toString("latin1").split("\r\n");
      const status = lines[0]!.split(" ").slice(1).join(" ");
      const framing =
        lines.find((l) => /^content-length:/i.test(l)) ??
        lines.find((l) => /^transfer-encoding:/i.test(l)) ??
        "(none)";
      const location = lines.some((l) => /^location:/i.test(l)) ? ", Location: (presigned URL)" : "";
      resolve(`| ${name} | ${status} | ${framing}${location} | ${all.length - end - 4} |`);
    });
  });
}

console.log(`Bun ${Bun.version}\n`);
console.log("| body | status | framing sent | body bytes on the wire |");
console.log("|---|---|---|---:|");
for (const name of Object.keys(cases)) console.log(await get(name));
console.log(await get("node:http, two files streamed after writeHead (2,000,000 bytes)", nodePort));
nodeServer.close();
server.stop(true);
upstream.stop(true);
rmSync(dir, { recursive: true, force: true });
