/**
 * What Content-Length on streamed downloads would cost in server CPU (docs/internals.md,
 * "Downloads and Content-Length"). Run: `bun docs/repro/engine-cost.ts [rounds]`. Three minimal
 * receivers, each its own process, in interleaved rounds; each takes a 1 GiB upload (128 PUTs of
 * 8 MiB, 4 in flight, each written to a file), a finalize (the files read back and BLAKE3-hashed)
 * and one GET of the whole 1 GiB streamed from the 128 files:
 * - `Bun.serve`: the engine esync runs on; the GET is a stream, so Bun sends it chunked;
 * - `node:http`: Bun's `node:http` server doing the same; the GET is written piece by piece after
 *   `writeHead` with the total length, and Bun sends that `Content-Length`;
 * - `node:http+Request`: Bun's `node:http` server turning every request but the GET into a
 *   `Request` (body: the request as a web stream) for a fetch-style handler (as esync's Elysia
 *   app is), and the handler's `Response` back into the `node:http` response.
 * Prints MB/s and the receiver's CPU seconds per GiB (utime + stime from /proc) for each upload
 * and download, and whether the GET carried `Content-Length`. Nothing here touches esync.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, createReadStream } from "node:fs";
import { open } from "node:fs/promises";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { createBlake3 } from "../../src/util/blake3.ts";

const CHUNK = 8 * 1024 * 1024;
const CHUNKS = 128;
const IN_FLIGHT = 4;
const ENGINES = ["Bun.serve", "node:http", "node:http+Request"] as const;

/** PUT /c/<upload>/<index> and POST /f/<upload>?chunks=N as a fetch-style handler. */
async function handle(req: Request, dir: string): Promise<Response> {
  const url = new URL(req.url);
  const [, kind, upload, index] = url.pathname.split("/");
  if (req.method === "PUT" && kind === "c" && upload && index) {
    mkdirSync(join(dir, upload), { recursive: true });
    const fh = await open(join(dir, upload, index), "w");
    try {
      for await (const piece of req.body!) {
        let off = 0;
        while (off < piece.byteLength) off += (await fh.write(piece, off, piece.byteLength - off)).bytesWritten;
      }
    } finally {
      await fh.close();
    }
    return new Response("ok");
  }
  if (req.method === "POST" && kind === "f" && upload) {
    const h = createBlake3();
    for (let i = 0; i < Number(url.searchParams.get("chunks")); i++)
      for await (const piece of Bun.file(join(dir, upload, String(i))).stream()) h.update(piece);
    return new Response(h.digestHex());
  }
  return new Response("?", { status: 404 });
}

/** The chunk files of GET /d/<upload>?chunks=N and their total length, or null. */
function download(path: string, dir: string): { files: string[]; length: number } | null {
  const url = new URL(path, "http://x");
  const [, kind, upload] = url.pathname.split("/");
  if (kind !== "d" || !upload) return null;
  const files = Array.from({ length: Number(url.searchParams.get("chunks")) }, (_, i) => join(dir, upload, String(i)));
  return { files, length: files.reduce((n, f) => n + statSync(f).size, 0) };
}

/** Runs one receiver in this process (the child side). */
function serve(engine: string, port: number, dir: string): void {
  if (engine === "Bun.serve") {
    Bun.serve({
      hostname: "127.0.0.1",
      port,
      maxRequestBodySize: 64 * 1024 * 1024,
      idleTimeout: 255,
      fetch(req) {
        const d = req.method === "GET" ? download(req.url, dir) : null;
        if (!d) return handle(req, dir);
        const body = new ReadableStream({
          async pull(c) {
            for (const f of d.files) for await (const piece of Bun.file(f).stream()) c.enqueue(piece);
            c.close();
          },
        });
        return new Response(body, { headers: { "content-length": String(d.length) } });
      },
    });
  } else {
    http
      .createServer(async (req, res) => {
        const d = req.method === "GET" ? download(req.url!, dir) : null;
        if (d) {
          res.writeHead(200, { "content-length": String(d.length) });
          for (const f of d.files)
            for await (const piece of createReadStream(f, { highWaterMark: 1024 * 1024 }))
              if (!res.write(piece)) await new Promise((drained) => res.once("drain", drained));
          res.end();
          return;
        }
        if (engine === "node:http") {
          // The same work without a Request: the handler's two routes written for node:http.
          const url = new URL(req.url!, "http://x");
          const [, kind, upload, index] = url.pathname.split("/");
          if (req.method === "PUT" && kind === "c" && upload && index) {
            mkdirSync(join(dir, upload), { recursive: true });
            const fh = await open(join(dir, upload, index), "w");
            try {
              for await (const piece of req as AsyncIterable<Uint8Array>) {
                let off = 0;
                while (off < piece.byteLength)
                  off += (await fh.write(piece, off, piece.byteLength - off)).bytesWritten;
              }
            } finally {
              await fh.close();
            }
            res.end("ok");
            return;
          }
          const r = await handle(new Request(`http://127.0.0.1${req.url}`, { method: req.method }), dir);
          res.writeHead(r.status);
          res.end(await r.text());
          return;
        }
        const body = req.method === "PUT" ? (Readable.toWeb(req) as ReadableStream<Uint8Array>) : undefined;
        const r = await handle(
          new Request(`http://127.0.0.1${req.url}`, {
            method: req.method,
            headers: req.headers as Record<string, string>,
            body,
            duplex: "half",
          } as RequestInit),
          dir,
        );
        res.writeHead(r.status, Object.fromEntries(r.headers));
        if (r.body) for await (const piece of r.body) res.write(piece);
        res.end();
      })
      .listen(port, "127.0.0.1");
  }
  console.log("ready");
  process.on("SIGTERM", () => process.exit(0));
}

/** utime + stime of process `pid`, in seconds. */
function cpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
}

async function measure(engine: string, port: number): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "engine-cost-"));
  const child = Bun.spawn(["bun", import.meta.path, "--serve", engine, String(port), dir], {
    stdout: "pipe",
    stderr: "inherit",
  });
  await child.stdout.getReader().read();
  const base = `http://127.0.0.1:${port}`;
  const chunk = new Uint8Array(CHUNK);
  crypto.getRandomValues(chunk.subarray(0, 65536));
  const gib = (CHUNK * CHUNKS) / 2 ** 30;
  let cpu = cpuSeconds(child.pid);
  let t = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < CHUNKS) {
        const i = next++;
        await (await fetch(`${base}/c/u/${i}`, { method: "PUT", body: chunk })).text();
      }
    }),
  );
  await (await fetch(`${base}/f/u?chunks=${CHUNKS}`, { method: "POST" })).text();
  const up = `up ${((CHUNK * CHUNKS) / ((performance.now() - t) / 1000) / 1e6).toFixed(0)} MB/s ${((cpuSeconds(child.pid) - cpu) / gib).toFixed(2)} CPU-s/GiB`;
  cpu = cpuSeconds(child.pid);
  t = performance.now();
  const r = await fetch(`${base}/d/u?chunks=${CHUNKS}`);
  let bytes = 0;
  for await (const piece of r.body!) bytes += piece.byteLength;
  const down = `down ${(bytes / ((performance.now() - t) / 1000) / 1e6).toFixed(0)} MB/s ${((cpuSeconds(child.pid) - cpu) / gib).toFixed(2)} CPU-s/GiB`;
  child.kill();
  await child.exited;
  rmSync(dir, { recursive: true, force: true });
  return `| ${engine} | ${up} | ${down} | ${r.headers.get("content-length") ?? "(chunked)"} |`;
}

if (process.argv[2] === "--serve") {
  serve(process.argv[3]!, Number(process.argv[4]), process.argv[5]!);
} else {
  const rounds = Number(process.argv[2] ?? 3);
  console.log(`Bun ${Bun.version}\n\n| engine | upload | download | Content-Length of the GET |\n|---|---|---|---|`);
  for (let round = 0; round < rounds; round++)
    for (let k = 0; k < ENGINES.length; k++) {
      const engine = ENGINES[(round + k) % ENGINES.length]!;
      console.log(await measure(engine, 18200 + round * ENGINES.length + k));
    }
}
