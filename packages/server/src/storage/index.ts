/**
 * @module server/storage/index
 * Builds the configured `BlobStore`: the local disk store under `config.blobDir`, or the S3
 * store of `config.s3` (see `src/storage/s3.ts` for the object-key layout in the bucket).
 */
import type { Config } from "../config/config.ts";
import type { BlobStore } from "./blob-store.ts";
import { DiskBlobStore } from "./disk.ts";

export {
  BlobLengthError,
  BlobNotFoundError,
  type BlobStore,
  type ByteRange,
  exactLength,
  isValidKey,
  type PutOptions,
} from "./blob-store.ts";
export { DiskBlobStore } from "./disk.ts";

/**
 * The blob store `config` asks for (`ESYNC_STORAGE`). Nothing is contacted yet: call
 * `check()` at start-up (it creates a missing S3 bucket and fails clearly when S3 is unreachable).
 * @throws Error if `storage` is `s3` but `config.s3` is missing.
 */
export function createBlobStore(config: Config): BlobStore {
  if (config.storage === "s3") {
    if (!config.s3) throw new Error("ESYNC_STORAGE=s3 but no S3 settings were loaded");
    // Loaded only when used: the minio client adds about 20 MiB to a disk-only server's memory.
    const { createS3BlobStore } = require("./s3.ts") as typeof import("./s3.ts");
    return createS3BlobStore(config.s3);
  }
  return new DiskBlobStore({ root: config.blobDir, fsync: config.diskFsync });
}
