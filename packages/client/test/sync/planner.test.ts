/**
 * `planSync`, the pure three-way comparison (base vs local vs remote), rule by rule, and the
 * attributes sealing that carries modes, mtimes and link kinds.
 */
import { describe, expect, test } from "bun:test";
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { hkdf } from "@noble/hashes/hkdf.js";
import { sha256 } from "@noble/hashes/sha2.js";
import type { RemoteFileEntry } from "../../src/api-types.ts";
import { pathHash } from "../../src/manifest.ts";
import { type FileAttributes, openAttributes, sealAttributes } from "../../src/sync/attributes.ts";
import type { LocalEntry } from "../../src/sync/local-tree.ts";
import { conflictCopyName, planSync, type RemoteVersion, type SyncAction } from "../../src/sync/planner.ts";
import type { BaseEntry } from "../../src/sync/state-db.ts";

const H = (c: string) => c.repeat(64);
const REV = (c: string) => c.repeat(64);

function base(rel: string, hash: string, rev: string, mode = 0o644): BaseEntry {
  return { rel, kind: "file", hash, mode, size: 1, mtimeMs: 1000, ino: 1, revisionId: rev, revisionSeq: 1 };
}
function local(rel: string, hash: string, mode = 0o644): LocalEntry {
  return { rel, abs: `/x/${rel}`, kind: "file", hash, mode, size: 1, mtimeMs: 1000, ino: 1 };
}
function remote(rel: string, hash: string, rev: string, mode: number | null = 0o644): RemoteVersion {
  return {
    rel,
    kind: "file",
    hash,
    mode,
    mtimeMs: 1000,
    revisionId: rev,
    revisionSeq: 1,
    entry: {} as RemoteFileEntry,
  };
}
function plan(b: BaseEntry[], l: LocalEntry[], r: RemoteVersion[]): Array<Partial<SyncAction>> {
  return planSync({
    base: new Map(b.map((e) => [e.rel, e])),
    local: new Map(l.map((e) => [e.rel, e])),
    remote: new Map(r.map((e) => [e.rel, e])),
    device: "laptop",
    now: new Date("2026-11-24T10:00:00Z"),
  }).map((a) => {
    const { local: _l, remote: _r, ...rest } = a as SyncAction & { local?: unknown; remote?: unknown };
    return rest;
  });
}

describe("planSync", () => {
  test("nothing to do when neither side moved from the base", () => {
    expect(
      plan([base("a", H("1"), REV("a"))], [local("a", H("1"))], [remote("a", H("1"), REV("a"))]),
    ).toEqual([]);
  });

  test("a local change is uploaded on the remote revision", () => {
    const r = remote("a", H("1"), REV("a"));
    const actions = planSync({
      base: new Map([["a", base("a", H("1"), REV("a"))]]),
      local: new Map([["a", local("a", H("2"))]]),
      remote: new Map([["a", r]]),
      device: "d",
      now: new Date(),
    });
    expect(actions).toHaveLength(1);
    expect(actions[0]).toMatchObject({ op: "upload", path: "a", reason: "changed", remote: r });
  });

  test("a chmod alone is a local change", () => {
    expect(
      plan([base("a", H("1"), REV("a"))], [local("a", H("1"), 0o755)], [remote("a", H("1"), REV("a"))]),
    ).toEqual([{ op: "upload", path: "a", reason: "changed" }]);
  });

  test("a remote change is downloaded; a new remote file too", () => {
    expect(
      plan(
        [base("a", H("1"), REV("a"))],
        [local("a", H("1"))],
        [remote("a", H("2"), REV("b")), remote("n", H("3"), REV("c"))],
      ),
    ).toEqual([
      { op: "download", path: "a", reason: "changed" },
      { op: "download", path: "n", reason: "new" },
    ]);
  });

  test("deletions propagate both ways as tombstones (deleted since the base)", () => {
    expect(
      plan(
        [base("l", H("1"), REV("a")), base("r", H("2"), REV("b"))],
        [local("r", H("2"))],
        [remote("l", H("1"), REV("a"))],
      ),
    ).toEqual([
      { op: "delete_remote", path: "l" },
      { op: "delete_local", path: "r" },
    ]);
  });

  test("a change wins over a deletion on the other side (nothing is lost)", () => {
    expect(
      plan(
        [base("a", H("1"), REV("a")), base("b", H("1"), REV("b"))],
        [local("b", H("9"))],
        [remote("a", H("8"), REV("c"))],
      ),
    ).toEqual([
      { op: "download", path: "a", reason: "changed" },
      { op: "upload", path: "b", reason: "new" },
    ]);
  });

  test("changes on both sides are a conflict keeping both, named like the clients people know", () => {
    expect(
      plan(
        [base("doc.txt", H("1"), REV("a"))],
        [local("doc.txt", H("2"))],
        [remote("doc.txt", H("3"), REV("b"))],
      ),
    ).toEqual([
      { op: "conflict", path: "doc.txt", copyPath: "doc (conflicted copy from laptop 2026-11-24).txt" },
    ]);
  });

  test("two files created independently at one path are a conflict; identical ones are only recorded", () => {
    expect(
      plan(
        [],
        [local("x", H("1")), local("y", H("5"))],
        [remote("x", H("2"), REV("a")), remote("y", H("5"), REV("b"))],
      ),
    ).toEqual([
      { op: "conflict", path: "x", copyPath: "x (conflicted copy from laptop 2026-11-24)" },
      { op: "record", path: "y" },
    ]);
  });

  test("a local rename is one rename_remote, a remote rename one local move", () => {
    expect(
      plan(
        [base("old", H("1"), REV("a")), base("r-old", H("2"), REV("b"))],
        [local("new", H("1")), local("r-old", H("2"))],
        [remote("old", H("1"), REV("a")), remote("r-new", H("2"), REV("c"))],
      ),
    ).toEqual([
      { op: "move_local", path: "r-new", from: "r-old" },
      { op: "rename_remote", path: "new", from: "old" },
    ]);
  });

  test("a remote file without attributes matches a local one by content whatever its mode", () => {
    expect(plan([], [local("a", H("1"), 0o755)], [remote("a", H("1"), REV("a"), null)])).toEqual([
      { op: "record", path: "a" },
    ]);
  });
});

describe("conflictCopyName", () => {
  test("keeps the extension last and numbers a taken name", () => {
    const now = new Date("2026-01-02T00:00:00Z");
    expect(conflictCopyName("a/b.tar.gz", "pc", now, () => false)).toBe(
      "a/b.tar (conflicted copy from pc 2026-01-02).gz",
    );
    const taken = new Set(["n (conflicted copy from pc 2026-01-02)"]);
    expect(conflictCopyName("n", "pc", now, (c) => taken.has(c))).toBe(
      "n (conflicted copy from pc 2026-01-02 2)",
    );
  });
});

describe("attributes", () => {
  const key = new Uint8Array(32).fill(3);
  const binding = { pathHash: pathHash("bin/run"), saltedHash: new Uint8Array(32).fill(9) };
  const attrs: FileAttributes = { type: "symlink", mode: 0o755, mtimeMs: 981_173_106_500.25 };

  test("open returns what seal stored", () => {
    expect(openAttributes(key, binding, sealAttributes(key, binding, attrs))).toEqual(attrs);
  });

  test("attributes moved onto other content, tampered, or under another key are ignored (null)", () => {
    const sealed = sealAttributes(key, binding, attrs);
    expect(openAttributes(key, { ...binding, saltedHash: new Uint8Array(32) }, sealed)).toBeNull();
    const bad = Uint8Array.from(sealed);
    bad[30] = (bad[30] as number) ^ 1;
    expect(openAttributes(key, binding, bad)).toBeNull();
    expect(openAttributes(new Uint8Array(32), binding, sealed)).toBeNull();
    expect(openAttributes(key, binding, undefined)).toBeNull();
  });

  test("attributes stay readable when the row moves to another path (a /rename_files move)", () => {
    const sealed = sealAttributes(key, binding, attrs);
    expect(openAttributes(key, { ...binding, pathHash: pathHash("other") }, sealed)).toEqual(attrs);
  });

  test("version 1 attributes (path-bound) are still read, marked pathBound, and not after a move", () => {
    const nonce = new Uint8Array(24).fill(3);
    const prefix = new TextEncoder().encode("esync-attributes-v1:");
    const ad = new Uint8Array([
      ...prefix,
      ...Array.from(binding.pathHash),
      ...Array.from(binding.saltedHash),
    ]);
    const json = JSON.stringify({ v: 1, type: attrs.type, mode: attrs.mode, mtime_ms: attrs.mtimeMs });
    const k = hkdf(sha256, key, new Uint8Array(0), new TextEncoder().encode("esync attributes v1"), 32);
    const v1 = new Uint8Array([
      ...nonce,
      ...xchacha20poly1305(k, nonce, ad).encrypt(new TextEncoder().encode(json)),
    ]);
    expect(openAttributes(key, binding, v1)).toEqual({ ...attrs, pathBound: true });
    expect(openAttributes(key, { ...binding, pathHash: pathHash("other") }, v1)).toBeNull();
  });

  test("sealed attributes stay far below the server's 4 KiB limit", () => {
    expect(sealAttributes(key, binding, attrs).length).toBeLessThan(200);
  });
});
