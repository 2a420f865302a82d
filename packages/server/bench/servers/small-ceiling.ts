/**
 * The ceiling of `bench/small-files.ts --ceiling`: the least a server must do to keep a small
 * file durably on this machine, on Bun.serve. `POST /upload` (the bench's multipart bodies) is
 * read into memory, split by `@remix-run/multipart-parser` (the parser esync uses), the manifest
 * part parsed as JSON, the ciphertext part's BLAKE3 compared with its `ciphertext_hash`, the
 * ciphertext written to `<dir>/b/<hash[0..2]>/<hash>` (with `fsync` `persist`: fsynced before it
 * is closed, then its directory fsynced) and one row inserted into a bun:sqlite database in WAL
 * mode with `synchronous = NORMAL` (esync's settings). No auth, no signature check, no revision
 * rules, no search index: a yardstick, not a service. Every other request answers 404.
 *
 *   bun bench/servers/small-ceiling.ts <port> <dir> <persist|off>
 */
import { Database } from "bun:sqlite";
import { closeSync, fsync, mkdirSync, openSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import { parseMultipart } from "@remix-run/multipart-parser";

const port = Number(process.argv[2]);
const dir = process.argv[3]!;
const durable = process.argv[4] === "persist";

for (let i = 0; i < 256; i++) mkdirSync(join(dir, "b", i.toString(16).padStart(2, "0")), { recursive: true });
const db = new Database(join(dir, "meta.sqlite"), { create: true, strict: true });
db.exec("PRAGMA journal_mode = WAL");
db.exec("PRAGMA synchronous = NORMAL");
db.exec(
  "CREATE TABLE IF NOT EXISTS files (path_hash TEXT PRIMARY KEY, blob TEXT NOT NULL, size INTEGER NOT NULL, manifest TEXT NOT NULL)",
);
const insert = db.prepare(
  "INSERT INTO files (path_hash, blob, size, manifest) VALUES (?, ?, ?, ?) " +
    "ON CONFLICT (path_hash) DO UPDATE SET blob = excluded.blob, size = excluded.size, manifest = excluded.manifest",
);

/** fsyncs directory `path` in the file-system pool. */
function syncDirectory(path: string): Promise<void> {
  const fd = openSync(path, "r");
  return new Promise((resolve, reject) =>
    fsync(fd, (e) => {
      closeSync(fd);
      if (e) reject(e);
      else resolve();
    }),
  );
}

Bun.serve({
  hostname: "127.0.0.1",
  port,
  idleTimeout: 255,
  async fetch(req) {
    if (req.method !== "POST" || new URL(req.url).pathname !== "/upload")
      return new Response("?", { status: 404 });
    const boundary = /boundary=([^;]+)/.exec(req.headers.get("content-type") ?? "")?.[1];
    if (!boundary) return new Response("no boundary", { status: 400 });
    const body = new Uint8Array(await req.arrayBuffer());
    let manifestText = "";
    let ciphertext: Uint8Array | undefined;
    for (const part of parseMultipart(body, { boundary })) {
      if (part.name === "manifest") manifestText = part.text;
      else if (part.name === "ciphertext") ciphertext = part.bytes;
    }
    const manifest = JSON.parse(manifestText) as { ciphertext_hash: string; path_hash: number[] };
    if (!ciphertext || blake3Hex(ciphertext) !== manifest.ciphertext_hash)
      return new Response("hash mismatch", { status: 400 });
    const hash = manifest.ciphertext_hash;
    const shard = join(dir, "b", hash.slice(0, 2));
    await writeFile(join(shard, hash), ciphertext, { flush: durable });
    if (durable) await syncDirectory(shard);
    insert.run(Buffer.from(manifest.path_hash).toString("hex"), hash, ciphertext.byteLength, manifestText);
    return Response.json({ ciphertext_hash: hash, size_bytes: ciphertext.byteLength });
  },
});
console.log("ready");
// A clean exit on SIGTERM, so that a `--cpu-prof` profile is written.
process.on("SIGTERM", () => process.exit(0));
