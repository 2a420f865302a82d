/** The disk backend passes the shared BlobStore conformance suite on a temporary directory. */
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
