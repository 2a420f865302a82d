/**
 * @module storage/disk
 * Local-disk `BlobStore`: object `a/b/c` is the file `<root>/a/b/c`. Writes stream into a
 * temporary file beside the target (`.<name>.tmp-<random>`) and are renamed over it, so a
 * reader sees the old object or the whole new one; a failed write leaves nothing behind.
 */
import { randomBytes } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, open, readdir, rename, rm, stat, unlink } from "node:fs/promises";
import { dirname, join, relative, sep } from "node:path";
import { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import {
  type BlobStore,
  BlobNotFoundError,
  type ByteRange,
  exactLength,
  isValidKey,
  type PutOptions,
} from "./blob-store.ts";

/** Options of the disk store. */
export interface DiskBlobStoreOptions {
  /** Root directory; created if missing. */
  root: string;
  /** fsync each object before the rename (default true: nothing acknowledged is lost on a crash). */
  fsync?: boolean;
}

function checkKey(key: string): void {
  if (!isValidKey(key)) throw new Error(`invalid object key: ${JSON.stringify(key)}`);
}

/** `BlobStore` on the local file system. */
export class DiskBlobStore implements BlobStore {
  readonly kind = "disk";
  private readonly root: string;
  private readonly fsync: boolean;

  constructor(opts: DiskBlobStoreOptions) {
    this.root = opts.root;
    this.fsync = opts.fsync ?? true;
  }

  private path(key: string): string {
    checkKey(key);
    return join(this.root, ...key.split("/"));
  }

  async put(key: string, body: ReadableStream<Uint8Array>, length: number, opts: PutOptions = {}): Promise<void> {
    const target = this.path(key);
    const dir = dirname(target);
    await mkdir(dir, { recursive: true });
    const tmp = join(dir, `.${key.split("/").pop()}.tmp-${randomBytes(6).toString("hex")}`);
    const checked = exactLength(body, length, opts.onData);
    const out = createWriteStream(tmp, { flags: "wx", highWaterMark: 1 << 20 });
    try {
      await pipeline(Readable.fromWeb(checked as never), out as Writable, { signal: opts.signal });
      if (this.fsync) {
        const fh = await open(tmp, "r+");
        try {
          await fh.sync();
        } finally {
          await fh.close();
        }
      }
      await rename(tmp, target);
    } catch (e) {
      out.destroy();
      await unlink(tmp).catch(() => {});
      throw e;
    }
  }

  async get(key: string, range?: ByteRange): Promise<ReadableStream<Uint8Array>> {
    const p = this.path(key);
    const st = await stat(p).catch(() => null);
    if (!st?.isFile()) throw new BlobNotFoundError(key);
    const start = range?.start ?? 0;
    const end = Math.min(range?.end ?? st.size, st.size);
    if (end <= start) return new ReadableStream({ start: (c) => c.close() });
    const rs = createReadStream(p, { start, end: end - 1, highWaterMark: 1 << 20 });
    return Readable.toWeb(rs) as unknown as ReadableStream<Uint8Array>;
  }

  async size(key: string): Promise<number | null> {
    const st = await stat(this.path(key)).catch(() => null);
    return st?.isFile() ? st.size : null;
  }

  async list(prefix: string): Promise<string[]> {
    const out: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const e of entries) {
        const p = join(dir, e.name);
        if (e.isDirectory()) await walk(p);
        else if (e.isFile() && !e.name.startsWith(".")) {
          const key = relative(this.root, p).split(sep).join("/");
          if (key.startsWith(prefix)) out.push(key);
        }
      }
    };
    // Walk only the deepest directory fully named by the prefix.
    const slash = prefix.lastIndexOf("/");
    const base = slash >= 0 ? join(this.root, ...prefix.slice(0, slash).split("/")) : this.root;
    await walk(base);
    return out;
  }

  async delete(keys: string[]): Promise<void> {
    await Promise.all(keys.map((k) => rm(this.path(k), { force: true })));
  }

  async deletePrefix(prefix: string): Promise<void> {
    if (!prefix.endsWith("/")) throw new Error(`prefix must end in "/": ${prefix}`);
    const dir = this.path(prefix.slice(0, -1));
    await rm(dir, { recursive: true, force: true });
  }

  async check(): Promise<void> {
    await mkdir(this.root, { recursive: true });
  }

  async close(): Promise<void> {}
}
