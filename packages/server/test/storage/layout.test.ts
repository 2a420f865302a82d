/**
 * The blob layout's key names (src/storage/layout.ts): chunked blobs, including every blob stored
 * before one-object blobs existed, keep their directory `b/<id[0..2]>/<id>/`; a one-object blob
 * is the single object `b/<id[1..3]>/<id>` holding every chunk at its offset; deletion targets and the blob id of a key agree.
 */
import { describe, expect, test } from "bun:test";
import {
  blobIdOfKey,
  blobObjects,
  blobPrefix,
  blobTarget,
  chunkKey,
  isOneObjectBlob,
  newOneObjectBlobId,
  objectAt,
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

  test("every chunk of a one-object blob is in its one object, at offset index × chunk_size", () => {
    const id = newOneObjectBlobId();
    expect(chunkKey(id, 3, "")).toBe(blobTarget(id));
    const layout = { blobId: id, chunkSize: 1000, chunkCount: 3, size: 2500, gens: [""] };
    expect(blobObjects(layout)).toEqual([{ key: blobTarget(id), start: 0, end: 2500 }]);
    expect(objectAt(layout, 2499)).toEqual({ key: blobTarget(id), start: 0, end: 2500 });
  });

  test("a chunked blob's objects are its chunks, the last one shorter", () => {
    const layout = { blobId: CHUNKED, chunkSize: 1000, chunkCount: 3, size: 2500, gens: ["a", "b", "c"] };
    expect(blobObjects(layout)).toEqual([
      { key: `b/3f/${CHUNKED}/0.a`, start: 0, end: 1000 },
      { key: `b/3f/${CHUNKED}/1.b`, start: 1000, end: 2000 },
      { key: `b/3f/${CHUNKED}/2.c`, start: 2000, end: 2500 },
    ]);
    expect(objectAt(layout, 1999)).toEqual({ key: `b/3f/${CHUNKED}/1.b`, start: 1000, end: 2000 });
  });

  test("keys outside the layout have no blob id", () => {
    for (const key of ["b/3f", "b/3f/", `b/3f/${CHUNKED}`, "x/3f/o00/0.a", "conf/t1/0", ".tmp/x.part"])
      expect(blobIdOfKey(key)).toBeNull();
  });
});
