/** The disk backend passes the shared BlobStore conformance suite on a temporary directory. */
import { describe, expect, spyOn, test } from "bun:test";
import * as fs from "node:fs";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  watch,
  writeFileSync,
} from "node:fs";
import * as fsp from "node:fs/promises";
import { type FileHandle, mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BlobLengthError } from "../../src/storage/blob-store.ts";
import { DiskBlobStore } from "../../src/storage/disk.ts";
import { ownPieces, piecesOwned } from "../../src/util/release.ts";
import { blobStoreConformance } from "./conformance.ts";

blobStoreConformance("disk", async () => {
  const root = await mkdtemp(join(tmpdir(), "esync-disk-"));
  const store = new DiskBlobStore({ root });
  await store.check();
  return {
    store,
    cleanup: async () => {
      await store.close();
      await rm(root, { recursive: true, force: true });
    },
  };
});

describe("DiskBlobStore start-up", () => {
  test("check() on a new instance deletes staged writes a crash left behind, and keeps objects", async () => {
    const root = mkdtempSync(join(tmpdir(), "esync-disk-tmp-"));
    try {
      const first = new DiskBlobStore({ root, fsync: "off" });
      await first.check();
      await first.put(
        "b/aa/blob/0.g",
        new Blob([new Uint8Array([1, 2, 3])]).stream() as ReadableStream<Uint8Array>,
        3,
      );
      mkdirSync(join(root, ".tmp"), { recursive: true });
      writeFileSync(join(root, ".tmp", "dead.part"), "half a chunk");
      const restarted = new DiskBlobStore({ root, fsync: "off" });
      await restarted.check();
      expect(existsSync(join(root, ".tmp", "dead.part"))).toBe(false);
      expect(await restarted.size("b/aa/blob/0.g")).toBe(3);
      expect(await restarted.list("")).toEqual(["b/aa/blob/0.g"]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("DiskBlobStore directories", () => {
  const bytes = (...b: number[]) => new Blob([new Uint8Array(b)]).stream() as ReadableStream<Uint8Array>;

  test("put creates a missing staging directory and blob directory (no check() first, or removed since)", async () => {
    const root = mkdtempSync(join(tmpdir(), "esync-disk-dirs-"));
    try {
      const store = new DiskBlobStore({ root, fsync: "off" });
      await store.put("b/aa/blob/0.g", bytes(1, 2), 2);
      rmSync(join(root, ".tmp"), { recursive: true, force: true });
      await store.delete(["b/aa/blob/0.g"]);
      expect(existsSync(join(root, "b"))).toBe(false);
      await store.put("b/aa/blob/1.g", bytes(3), 1);
      await store.put("b/aa/blob/2.g", bytes(4, 5, 6), 3);
      expect(await store.size("b/aa/blob/1.g")).toBe(1);
      expect(await store.size("b/aa/blob/2.g")).toBe(3);
      expect(await store.list("b/aa/blob/")).toHaveLength(2);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("DiskBlobStore memory of body pieces", () => {
  /** A body of `n` pieces of `size` bytes, each a fresh buffer kept by the test to inspect. */
  function pieces(n: number, size: number): Uint8Array[] {
    return Array.from({ length: n }, (_, i) => new Uint8Array(size).fill(i + 1));
  }
  function streamOf(list: Uint8Array[]): ReadableStream<Uint8Array> {
    let i = 0;
    return new ReadableStream<Uint8Array>({
      pull(c) {
        const p = list[i++];
        if (p) c.enqueue(p);
        else c.close();
      },
    });
  }

  test("put frees each piece of a body marked ownPieces once written, and stores every byte", async () => {
    const root = mkdtempSync(join(tmpdir(), "esync-disk-own-"));
    try {
      const store = new DiskBlobStore({ root, fsync: "off" });
      await store.check();
      const list = pieces(4, 1000);
      const expected = Buffer.concat(list.map((p) => Buffer.from(p)));
      const seen: number[] = [];
      await store.put("b/aa/blob/0.g", ownPieces(streamOf(list)), 4000, {
        onData: (p) => seen.push(p[0]!),
      });
      expect(seen).toEqual([1, 2, 3, 4]);
      expect(list.every((p) => p.byteLength === 0)).toBe(true);
      const back = new Uint8Array(await new Response(await store.get("b/aa/blob/0.g")).arrayBuffer());
      expect(Buffer.from(back).equals(expected)).toBe(true);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("put leaves the pieces of an unmarked body untouched", async () => {
    const root = mkdtempSync(join(tmpdir(), "esync-disk-own-"));
    try {
      const store = new DiskBlobStore({ root, fsync: "off" });
      await store.check();
      const list = pieces(3, 500);
      await store.put("b/aa/blob/0.g", streamOf(list), 1500);
      expect(list.map((p) => [p.byteLength, p[0]])).toEqual([
        [500, 1],
        [500, 2],
        [500, 3],
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("get marks its stream as owning its pieces (fresh buffers a reader may free)", async () => {
    const root = mkdtempSync(join(tmpdir(), "esync-disk-own-"));
    try {
      const store = new DiskBlobStore({ root, fsync: "off" });
      await store.check();
      await store.put("b/aa/blob/0.g", streamOf(pieces(1, 10)), 10);
      const s = await store.get("b/aa/blob/0.g");
      expect(piecesOwned(s)).toBe(true);
      const { value } = await s.getReader().read();
      expect(value!.byteOffset).toBe(0);
      expect(value!.buffer.byteLength).toBe(value!.byteLength);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("DiskBlobStore durable puts", () => {
  /**
   * The paths synced while `fn` runs, in order: `FileHandle.sync` and `fs.fsync` calls (the path
   * read from /proc/self/fd at each call) and files written by `writeFile` with `flush`.
   */
  async function syncedDuring(root: string, fn: () => Promise<void>): Promise<string[]> {
    const probe = await open(root, "r");
    const proto = Object.getPrototypeOf(probe) as { sync: () => Promise<void> };
    await probe.close();
    const original = proto.sync;
    const originalFsync = fs.fsync;
    const originalWriteFile = fsp.writeFile;
    const paths: string[] = [];
    const spies = [
      spyOn(proto, "sync").mockImplementation(function (this: FileHandle) {
        paths.push(readlinkSync(`/proc/self/fd/${this.fd}`));
        return original.call(this);
      }),
      spyOn(fs, "fsync").mockImplementation(((fd: number, cb: (e: Error | null) => void) => {
        paths.push(readlinkSync(`/proc/self/fd/${fd}`));
        return originalFsync(fd, cb);
      }) as typeof fs.fsync),
      spyOn(fsp, "writeFile").mockImplementation((async (...args: Parameters<typeof fsp.writeFile>) => {
        await originalWriteFile(...args);
        if ((args[2] as { flush?: boolean } | undefined)?.flush) paths.push(String(args[0]));
      }) as typeof fsp.writeFile),
    ];
    try {
      await fn();
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    return paths;
  }

  const body = () => new Blob([new Uint8Array([1, 2, 3])]).stream() as ReadableStream<Uint8Array>;

  test("with durable, put in persist mode syncs the file before its rename and the object's directory before resolving", async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "esync-disk-durable-")));
    try {
      const store = new DiskBlobStore({ root, fsync: "persist" });
      await store.check();
      const synced = await syncedDuring(root, () => store.put("b/aa/blob/0.g", body(), 3, { durable: true }));
      expect(synced).toHaveLength(2);
      expect(synced[0]).toStartWith(join(root, ".tmp"));
      expect(synced[1]).toBe(join(root, "b", "aa", "blob"));
      expect(await store.size("b/aa/blob/0.g")).toBe(3);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("without durable, put in persist mode leaves the directory to persist()", async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "esync-disk-durable-")));
    try {
      const store = new DiskBlobStore({ root, fsync: "persist" });
      await store.check();
      const synced = await syncedDuring(root, () => store.put("b/aa/blob/0.g", body(), 3));
      expect(synced).not.toContain(join(root, "b", "aa", "blob"));
      const persisted = await syncedDuring(root, () => store.persist(["b/aa/blob/0.g"]));
      expect(persisted).toEqual([join(root, "b", "aa", "blob", "0.g"), join(root, "b", "aa", "blob")]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("a small fresh durable put syncs its file before resolving, then its directory, and stages nothing", async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "esync-disk-durable-")));
    try {
      const store = new DiskBlobStore({ root, fsync: "persist" });
      await store.check();
      const synced = await syncedDuring(root, () =>
        store.put("b/aa/oblob", body(), 3, { durable: true, fresh: true }),
      );
      expect(synced).toEqual([join(root, "b", "aa", "oblob"), join(root, "b", "aa")]);
      expect(readFileSync(join(root, "b", "aa", "oblob"))).toEqual(Buffer.from([1, 2, 3]));
      const persisted = await syncedDuring(root, () => store.persist(["b/aa/oblob"]));
      expect(persisted).toEqual([join(root, "b", "aa", "oblob"), join(root, "b", "aa")]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("a small fresh put over an existing object fails with EEXIST and leaves that object as it was", async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "esync-disk-durable-")));
    try {
      const store = new DiskBlobStore({ root, fsync: "persist" });
      await store.check();
      await store.put("b/aa/oblob", body(), 3, { durable: true, fresh: true });
      const other = new Blob([new Uint8Array([9, 9])]).stream() as ReadableStream<Uint8Array>;
      await expect(store.put("b/aa/oblob", other, 2, { durable: true, fresh: true })).rejects.toMatchObject({
        code: "EEXIST",
      });
      expect(readFileSync(join(root, "b", "aa", "oblob"))).toEqual(Buffer.from([1, 2, 3]));
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("a small fresh durable put whose directory sync fails rejects and leaves no object", async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "esync-disk-durable-")));
    const spy = spyOn(fs, "fsync").mockImplementation(((_fd: number, cb: (e: Error | null) => void) =>
      cb(Object.assign(new Error("EIO: i/o error, fsync (injected)"), { code: "EIO" }))) as typeof fs.fsync);
    try {
      const store = new DiskBlobStore({ root, fsync: "persist" });
      await store.check();
      await expect(store.put("b/aa/oblob", body(), 3, { durable: true, fresh: true })).rejects.toMatchObject({
        code: "EIO",
      });
      expect(await store.size("b/aa/oblob")).toBeNull();
    } finally {
      spy.mockRestore();
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("with fsync off, a durable put syncs nothing", async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "esync-disk-durable-")));
    try {
      const store = new DiskBlobStore({ root, fsync: "off" });
      await store.check();
      expect(
        await syncedDuring(root, () => store.put("b/aa/blob/0.g", body(), 3, { durable: true })),
      ).toEqual([]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("DiskBlobStore fresh puts", () => {
  const bytes = (n: number, fill: number) => new Uint8Array(n).fill(fill);
  const streamOf = (b: Uint8Array) =>
    new Blob([b as Uint8Array<ArrayBuffer>]).stream() as ReadableStream<Uint8Array>;

  test("a fresh put writes the object in place: nothing passes through the temporary directory", async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "esync-disk-fresh-")));
    try {
      const store = new DiskBlobStore({ root, fsync: "off" });
      await store.check();
      const created: string[] = [];
      const watcher = watch(join(root, ".tmp"), (_event, name) => name && created.push(name));
      try {
        await store.put("b/aa/blob/0.g", streamOf(bytes(5000, 7)), 5000, { fresh: true });
        await Bun.sleep(20);
      } finally {
        watcher.close();
      }
      expect(created).toEqual([]);
      expect(readFileSync(join(root, "b", "aa", "blob", "0.g")).equals(Buffer.from(bytes(5000, 7)))).toBe(
        true,
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("a fresh put to a key that exists fails with EEXIST and leaves the object unchanged", async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "esync-disk-fresh-")));
    try {
      const store = new DiskBlobStore({ root, fsync: "off" });
      await store.check();
      await store.put("b/aa/blob/0.g", streamOf(bytes(10, 1)), 10);
      const err = await store.put("b/aa/blob/0.g", streamOf(bytes(20, 2)), 20, { fresh: true }).then(
        () => null,
        (e: unknown) => e,
      );
      expect((err as { code?: string } | null)?.code).toBe("EEXIST");
      expect(readFileSync(join(root, "b", "aa", "blob", "0.g")).equals(Buffer.from(bytes(10, 1)))).toBe(true);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test("a fresh put whose body is short throws BlobLengthError and leaves no object", async () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), "esync-disk-fresh-")));
    try {
      const store = new DiskBlobStore({ root, fsync: "off" });
      await store.check();
      await expect(store.put("b/aa/blob/0.g", streamOf(bytes(10, 1)), 11, { fresh: true })).rejects.toThrow(
        BlobLengthError,
      );
      expect(await store.size("b/aa/blob/0.g")).toBeNull();
      expect(await store.list("b/")).toEqual([]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
