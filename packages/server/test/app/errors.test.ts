/** Which unknown failures the error handler reports as storage (500 storage_inconsistency) vs database (500 database_error). */
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { isStorageError } from "../../src/app.ts";
import { BlobNotFoundError } from "../../src/storage/blob-store.ts";

describe("isStorageError", () => {
  test("a missing blob object, an S3 error and file or network I/O errors are storage errors", () => {
    expect(isStorageError(new BlobNotFoundError("b/aa/x/0.g"))).toBe(true);
    expect(isStorageError(Object.assign(new Error("no bucket"), { name: "S3Error" }))).toBe(true);
    for (const code of ["EIO", "ENOSPC", "ENOENT", "ECONNREFUSED"]) {
      expect(isStorageError(Object.assign(new Error(code), { code }))).toBe(true);
    }
  });

  test("SQLite errors are database errors, even when their text mentions blobs", () => {
    const db = new Database(":memory:");
    let err: unknown;
    try {
      db.exec("INSERT INTO blob_deletions VALUES (1)");
    } catch (e) {
      err = e;
    }
    expect((err as Error).message).toContain("blob_deletions");
    expect(isStorageError(err)).toBe(false);
  });

  test("anything else (a plain Error, a non-Error value) is not a storage error", () => {
    expect(isStorageError(new Error("s3 blob EIO in the message only"))).toBe(false);
    expect(isStorageError("EIO")).toBe(false);
  });
});
