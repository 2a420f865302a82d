/**
 * The ceiling of `bench/upload.ts --compare`: the least a server must do for a chunked upload on
 * this machine, on Bun.serve. `PUT /c/<upload>/<index>` writes the body to `<dir>/<upload>/<index>`
 * through one file handle; `POST /f/<upload>?chunks=N` reads the chunk files back in order and
 * answers their BLAKE3 (hex). No auth, no database, no checks: a yardstick, not a service.
 *
 *   bun bench/servers/ceiling.ts <port> <dir>
 */
import { mkdirSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { createBlake3 } from "../../src/util/blake3.ts";

const port = Number(process.argv[2]);
const dir = process.argv[3]!;

Bun.serve({
  hostname: "127.0.0.1",
  port,
  maxRequestBodySize: 64 * 1024 * 1024,
  idleTimeout: 255,
  async fetch(req) {
    const [, kind, upload, index] = new URL(req.url).pathname.split("/");
    if (req.method === "PUT" && kind === "c" && upload && index) {
      mkdirSync(join(dir, upload), { recursive: true });
      const fh = await open(join(dir, upload, index), "w");
      try {
        for await (const piece of req.body!) {
          let off = 0;
          while (off < piece.byteLength)
            off += (await fh.write(piece, off, piece.byteLength - off)).bytesWritten;
        }
      } finally {
        await fh.close();
      }
      return new Response("ok");
    }
    if (req.method === "POST" && kind === "f" && upload) {
      const n = Number(new URL(req.url).searchParams.get("chunks"));
      const h = createBlake3();
      for (let i = 0; i < n; i++)
        for await (const piece of Bun.file(join(dir, upload, String(i))).stream()) h.update(piece);
      return new Response(h.digestHex());
    }
    return new Response("?", { status: 404 });
  },
});
console.log("ready");
// A clean exit on SIGTERM, so that a `--cpu-prof` profile is written.
process.on("SIGTERM", () => process.exit(0));
