/**
 * The blob layout's key names (src/storage/layout.ts): chunked blobs, including every blob stored
 * before one-object blobs existed, keep their directory `b/<id[0..2]>/<id>/`; a one-object blob
 * is the single object `b/<id[1..3]>/<id>`; deletion targets and the blob id of a key agree.
 */
import { describe, expect, test } from "bun:test";
import {
  blobIdOfKey,
  blobPrefix,
  blobTarget,
  chunkKey,
  isOneObjectBlob,
  newOneObjectBlobId,
} from "../../src/storage/layout.ts";

const CHUNKED = "3f9a0c1d2e3f405162738495a6b7c8d9";

describe("blob layout keys", () => {
  test("a chunked blob's chunks live in its directory, deleted by its prefix", () => {
    expect(isOneObjectBlob(CHUNKED)).toBe(false);
    expect(chunkKey(CHUNKED, 0, "a1b2c3d4e5f6")).toBe(`b/3f/${CHUNKED}/0.a1b2c3d4e5f6`);
    expect(chunkKey(CHUNKED, 7, "00ff")).toBe(`b/3f/${CHUNKED}/7.00ff`);
    expect(blobTarget(CHUNKED)).toBe(`b/3f/${CHUNKED}/`);
    expect(blobPrefix(CHUNKED)).toBe(`b/3f/${CHUNKED}/`);
    expect(blobIdOfKey(chunkKey(CHUNKED, 2, "aa"))).toBe(CHUNKED);
  });

  test("a one-object blob is one object in its shard's folder, its own deletion target, without generation", () => {
    const id = newOneObjectBlobId();
    expect(id).toMatch(/^o[0-9a-f]{32}$/);
    expect(isOneObjectBlob(id)).toBe(true);
    const key = `b/${id.slice(1, 3)}/${id}`;
    expect(chunkKey(id, 0, "")).toBe(key);
    expect(chunkKey(id, 0, "a1b2c3")).toBe(key);
    expect(blobTarget(id)).toBe(key);
    expect(blobIdOfKey(key)).toBe(id);
    expect(() => blobPrefix(id)).toThrow(/no prefix/);
  });

  test("a one-object blob's chunk indexes past 0 name keys that are not its object, nor a chunked blob's", () => {
    const id = newOneObjectBlobId();
    const other = chunkKey(id, 1, "");
    expect(other).not.toBe(blobTarget(id));
    expect(other.startsWith(`${blobTarget(id)}/`)).toBe(false);
    expect(blobIdOfKey(other)).toBe(id);
  });

  test("keys outside the layout have no blob id", () => {
    for (const key of ["b/3f", "b/3f/", `b/3f/${CHUNKED}`, "x/3f/o00/0.a", "conf/t1/0", ".tmp/x.part"])
      expect(blobIdOfKey(key)).toBeNull();
  });
});
