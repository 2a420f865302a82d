/** The disk backend passes the shared BlobStore conformance suite on a temporary directory. */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DiskBlobStore } from "../../src/storage/disk.ts";
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
