/**
 * @module server/storage/disk
 * Local-disk `BlobStore`: object `a/b/c` is the file `<root>/a/b/c`. Writes stream into a
 * temporary file in `<root>/.tmp/` and are renamed over the target, so a reader sees the old
 * object or the whole new one; a failed write leaves nothing behind. A write to a fresh key
 * (`PutOptions.fresh`: a key nobody reads yet) goes straight to its file instead; a small one is
 * collected in memory first and written, synced and closed in one call.
 * `compose` builds an object from others with `copy_file_range` (through `Bun.write` of one file
 * into an open descriptor), so the bytes never enter JavaScript.
 * Deleting objects also removes the directories they leave empty (up to the root), so emptied
 * `b/xx/` directories do not pile up; a write racing that removal recreates its directory.
 */
import { randomBytes } from "node:crypto";
import { closeSync, fsync, openSync } from "node:fs";
import {
  type FileHandle,
  mkdir,
  open,
  readdir,
  rename,
  rm,
  rmdir,
  stat,
  unlink,
  writeFile,
} from "node:fs/promises";
import { dirname, join, relative, sep } from "node:path";
import { ownPieces, piecesOwned, releasePiece } from "../util/release.ts";
import {
  BlobLengthError,
  BlobNotFoundError,
  type BlobStore,
  type ByteRange,
  type Composable,
  type ComposeSource,
  type FileBacked,
  isValidKey,
  type Persistable,
  type PutOptions,
} from "./blob-store.ts";

/** See `DiskBlobStoreOptions.fsync`. */
export type DiskFsyncMode = "object" | "persist" | "off";

/** Options of the disk store. */
export interface DiskBlobStoreOptions {
  /** Root directory; created if missing. */
  root: string;
  /**
   * When objects reach the disk: `object` fsyncs every object before its rename; `persist`
   * (default) leaves that to `persist()`, which finalize calls before committing a file (a process
   * crash loses nothing either way; a power loss can lose chunks of an unfinalized session, which
   * the finalize hash check detects); `off` never fsyncs (tests, benchmarks).
   */
  fsync?: DiskFsyncMode;
}

/**
 * Creates the file `path` for writing (`EEXIST` when it exists), recreating its directory if it
 * is gone (the temporary directory, or a blob directory a delete pruned meanwhile).
 */
async function openNew(path: string): Promise<FileHandle> {
  try {
    return await open(path, "wx");
  } catch (e) {
    if ((e as { code?: string }).code !== "ENOENT") throw e;
    await mkdir(dirname(path), { recursive: true });
    return open(path, "wx");
  }
}

/**
 * Largest object a fresh `put` collects in memory and writes with one call (create, write,
 * fsync and close in one job of the file-system thread pool) instead of a write per piece.
 */
const SMALL_OBJECT_BYTES = 1024 * 1024;

/** Bytes the file sink of a `put` buffers before it must write them out. */
const SINK_BUFFER_BYTES = 1024 * 1024;

/**
 * Makes the entries of directory `dir` (a file created or renamed into it) durable. Opening and
 * closing a directory of the local file system does no I/O, so only the fsync leaves this thread.
 */
async function syncDirectory(dir: string): Promise<void> {
  const fd = openSync(dir, "r");
  try {
    await new Promise<void>((resolve, reject) => fsync(fd, (e) => (e ? reject(e) : resolve())));
  } finally {
    closeSync(fd);
  }
}

/**
 * Reads `reader` to its end, each piece checked against `length` (a `BlobLengthError` as soon as
 * more arrives, and at the end if fewer did) and against `opts.signal` (aborted: its reason is
 * thrown), shown to `opts.onData`, then handed to `take` (awaited when it returns a promise).
 */
async function readExactly(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  length: number,
  opts: PutOptions,
  take: (piece: Uint8Array) => void | Promise<void>,
): Promise<void> {
  let seen = 0;
  for (;;) {
    if (opts.signal?.aborted) throw opts.signal.reason ?? new Error("aborted");
    const { done, value } = await reader.read();
    if (done) break;
    seen += value.byteLength;
    if (seen > length) throw new BlobLengthError(length, seen);
    opts.onData?.(value);
    const taken = take(value);
    if (taken) await taken;
  }
  if (seen !== length) throw new BlobLengthError(length, seen);
}

/**
 * Creates the file `path` holding `bytes` (`EEXIST` when it exists), fsynced before it is closed
 * when `sync`, recreating its directory if it is gone (as `openNew`).
 */
async function writeNew(path: string, bytes: Uint8Array, sync: boolean): Promise<void> {
  // `flush` (Node >= 21, Bun) fsyncs the file before closing it, in the same job.
  const options = { flag: "wx", flush: sync } as const;
  try {
    await writeFile(path, bytes, options);
  } catch (e) {
    if ((e as { code?: string }).code !== "ENOENT") throw e;
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, bytes, options);
  }
}

function checkKey(key: string): void {
  if (!isValidKey(key)) throw new Error(`invalid object key: ${JSON.stringify(key)}`);
}

/** `BlobStore` on the local file system. */
export class DiskBlobStore implements BlobStore, Persistable, FileBacked, Composable {
  readonly kind = "disk";
  private readonly root: string;
  private readonly fsync: DiskFsyncMode;

  /** Where writes are staged before their rename into place. */
  private readonly tmpDir: string;
  private checked = false;

  constructor(opts: DiskBlobStoreOptions) {
    this.root = opts.root;
    this.tmpDir = join(opts.root, ".tmp");
    this.fsync = opts.fsync ?? "persist";
  }

  private path(key: string): string {
    checkKey(key);
    return join(this.root, ...key.split("/"));
  }

  async put(
    key: string,
    body: ReadableStream<Uint8Array>,
    length: number,
    opts: PutOptions = {},
  ): Promise<void> {
    const target = this.path(key);
    if (opts.fresh && length <= SMALL_OBJECT_BYTES) return this.putSmall(target, body, length, opts);
    const dir = dirname(target);
    // Temporary files live in one directory on the same file system, so a crash leaves nothing
    // inside blob folders and start-up (`check`) clears them all at once. A fresh key
    // (PutOptions.fresh) is written in place: nobody reads it before this returns, and a crash
    // leaves it under its write intent (src/workers/deletion-queue.repository.ts). `check` creates
    // the staging directory; `openNew` and the rename create a missing one, so there is no `mkdir`
    // per object.
    const file = opts.fresh ? target : join(this.tmpDir, `${randomBytes(9).toString("hex")}.part`);
    const fh = await openNew(file);
    // `durable` (PutOptions) syncs here what `persist` would otherwise open and sync again later.
    const syncFile = this.fsync === "object" || (this.fsync === "persist" && opts.durable === true);
    const syncDir = this.fsync !== "off" && opts.durable === true;
    let closed = false;
    const release = piecesOwned(body);
    const reader = body.getReader();
    // Bun's file sink on the open descriptor: it writes each piece at once from this thread (or
    // copies it into its buffer when the file does not take it all), so a piece costs one write
    // call and no round trip through the file-system thread pool. It leaves the descriptor open.
    const sink = Bun.file(fh.fd).writer({ highWaterMark: SINK_BUFFER_BYTES });
    let ended = false;
    try {
      await readExactly(reader, length, opts, (piece) => {
        const pending = sink.write(piece);
        // Written (or copied) and seen by `onData`: its memory goes back now, not at the next collection.
        if (release) releasePiece(piece);
        if (typeof pending !== "number") return pending.then(() => {});
      });
      ended = true;
      await sink.end();
      if (syncFile) await fh.sync();
      closed = true;
      if (this.fsync === "persist" && !syncFile) {
        // Start writeback now, in the background, so that the device writes overlap with the rest
        // of the upload and persist() at finalize finds the data already on disk.
        void fh
          .sync()
          .catch(() => {})
          .finally(() => fh.close().catch(() => {}));
      } else {
        await fh.close();
      }
      if (file !== target) await this.renameInto(file, target);
      if (syncDir) await syncDirectory(dir);
    } catch (e) {
      await reader.cancel(e).catch(() => {});
      // Nothing the sink still buffers may reach the descriptor after it is closed (and reused).
      if (!ended) await Promise.resolve(sink.end()).catch(() => {});
      if (!closed) await fh.close().catch(() => {});
      await unlink(file).catch(() => {});
      throw e;
    }
  }

  /**
   * `put` of a fresh key of at most `SMALL_OBJECT_BYTES`: the body is read into memory (checked
   * against `length`, seen by `onData`), then written by `writeNew`; a failed write or directory
   * sync removes the file it created, never one that was there before (`EEXIST`).
   */
  private async putSmall(
    target: string,
    body: ReadableStream<Uint8Array>,
    length: number,
    opts: PutOptions,
  ): Promise<void> {
    const release = piecesOwned(body);
    const reader = body.getReader();
    const pieces: Uint8Array[] = [];
    try {
      await readExactly(reader, length, opts, (piece) => {
        pieces.push(piece);
      });
    } catch (e) {
      await reader.cancel(e).catch(() => {});
      throw e;
    }
    const bytes = pieces.length === 1 ? (pieces[0] as Uint8Array) : Buffer.concat(pieces, length);
    const syncFile = this.fsync === "object" || (this.fsync === "persist" && opts.durable === true);
    let created = false;
    try {
      await writeNew(target, bytes, syncFile);
      created = true;
      if (this.fsync !== "off" && opts.durable === true) await syncDirectory(dirname(target));
    } catch (e) {
      if (created || (e as { code?: string }).code !== "EEXIST") await unlink(target).catch(() => {});
      throw e;
    } finally {
      // Written: the memory of pieces nobody else holds goes back now, not at the next collection.
      if (release) for (const piece of pieces) releasePiece(piece);
    }
  }

  async compose(target: string, sources: ComposeSource[], opts: { durable?: boolean } = {}): Promise<void> {
    const path = this.path(target);
    const files = sources.map((src) => ({ ...src, path: this.path(src.key) }));
    const fh = await openNew(path);
    const syncFile = this.fsync === "object" || (this.fsync === "persist" && opts.durable === true);
    try {
      // Each `Bun.write` copies one source file whole into the descriptor at its current offset
      // (`copy_file_range` on Linux, in the file-system thread pool): the sources follow one another.
      const out = Bun.file(fh.fd);
      for (const src of files) {
        const copied = await Bun.write(out, Bun.file(src.path)).catch((e: { code?: string }) => {
          throw e?.code === "ENOENT" ? new BlobNotFoundError(src.key) : e;
        });
        if (copied !== src.length) throw new BlobLengthError(src.length, copied);
      }
      if (syncFile) await fh.sync();
    } catch (e) {
      await fh.close().catch(() => {});
      await unlink(path).catch(() => {});
      throw e;
    }
    await fh.close();
    if (this.fsync !== "off" && opts.durable === true) await syncDirectory(dirname(path));
  }

  /**
   * Renames `tmp` to `target`, creating the target's directory when it is missing (the first
   * object of a blob, or a delete removed it meanwhile).
   */
  private async renameInto(tmp: string, target: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await rename(tmp, target);
        return;
      } catch (e) {
        if ((e as { code?: string }).code !== "ENOENT" || attempt >= 3) throw e;
        await mkdir(dirname(target), { recursive: true });
      }
    }
  }

  /** Removes `dir` and then its parents while they are empty, stopping below the root. */
  private async pruneEmpty(dir: string): Promise<void> {
    let d = dir;
    while (d.startsWith(this.root + sep) && d !== this.tmpDir) {
      try {
        await rmdir(d);
      } catch {
        return; // not empty (ENOTEMPTY/EEXIST), already gone, or busy: stop here
      }
      d = dirname(d);
    }
  }

  async get(key: string, range?: ByteRange): Promise<ReadableStream<Uint8Array>> {
    const p = this.path(key);
    const st = await stat(p).catch(() => null);
    if (!st?.isFile()) throw new BlobNotFoundError(key);
    const start = range?.start ?? 0;
    const end = Math.min(range?.end ?? st.size, st.size);
    if (end <= start) return new ReadableStream({ start: (c) => c.close() });
    return ownPieces(Bun.file(p).slice(start, end).stream() as ReadableStream<Uint8Array>);
  }

  fileRange(key: string, range: ByteRange): Blob {
    return Bun.file(this.path(key)).slice(range.start, range.end);
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
        if (e.isDirectory()) {
          if (!e.name.startsWith(".")) await walk(p);
        } else if (e.isFile() && !e.name.startsWith(".")) {
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
    const dirs = new Set(keys.map((k) => dirname(this.path(k))));
    for (const d of dirs) await this.pruneEmpty(d);
  }

  async deletePrefix(prefix: string): Promise<void> {
    if (!prefix.endsWith("/")) throw new Error(`prefix must end in "/": ${prefix}`);
    const dir = this.path(prefix.slice(0, -1));
    await rm(dir, { recursive: true, force: true });
    await this.pruneEmpty(dirname(dir));
  }

  async persist(keys: string[]): Promise<void> {
    if (this.fsync !== "persist") return;
    const dirs = new Set<string>();
    await Promise.all(
      keys.map(async (k) => {
        const p = this.path(k);
        dirs.add(dirname(p));
        const fh = await open(p, "r");
        try {
          await fh.sync();
        } finally {
          await fh.close();
        }
      }),
    );
    // The renames that created the objects are durable once their directories are synced.
    for (const d of dirs) await syncDirectory(d);
  }

  /**
   * Creates the root if missing. The first call on an instance (start-up) also deletes staged
   * writes a crash left in the temporary directory.
   */
  async check(): Promise<void> {
    if (!this.checked) {
      this.checked = true;
      await rm(this.tmpDir, { recursive: true, force: true });
    }
    await mkdir(this.tmpDir, { recursive: true });
  }

  async close(): Promise<void> {}
}
