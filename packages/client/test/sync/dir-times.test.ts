/**
 * The directory-time comparison and the sealing of a directory's attributes
 * (docs/attributes.md#directory-modification-times).
 */
import { describe, expect, test } from "bun:test";
import { openDirAttributes, sealDirAttributes } from "@esync/client/sync/attributes.ts";
import { type DirTimeInput, planDirTimes } from "@esync/client/sync/dir-times.ts";

const none = new Map<string, number>();
function plan(p: Partial<DirTimeInput>) {
  return planDirTimes({
    scanned: none,
    base: new Map(),
    remote: none,
    entries: new Set(),
    present: none,
    ...p,
  });
}
const one = (dir: string, ms: number) => new Map([[dir, ms]]);

describe("planDirTimes", () => {
  test("a directory moved here since the base is sent, not applied", () => {
    const { steps } = plan({
      scanned: one("d", 2000),
      present: one("d", 2000),
      base: new Map([["d", { local: 1000, remote: 1000 }]]),
      remote: one("d", 1000),
    });
    expect(steps).toEqual([{ dir: "d", mtimeMs: 2000, apply: false, send: true }]);
  });

  test("a directory moved on the server is applied, not sent", () => {
    const { steps } = plan({
      scanned: one("d", 1000),
      present: one("d", 1000),
      base: new Map([["d", { local: 1000, remote: 1000 }]]),
      remote: one("d", 3000),
    });
    expect(steps).toEqual([{ dir: "d", mtimeMs: 3000, apply: true, send: false }]);
  });

  test("moved on both sides: the later time wins on both", () => {
    const base = new Map([["d", { local: 1000, remote: 1000 }]]);
    expect(
      plan({ scanned: one("d", 5000), present: one("d", 5000), base, remote: one("d", 3000) }).steps,
    ).toEqual([{ dir: "d", mtimeMs: 5000, apply: false, send: true }]);
    expect(
      plan({ scanned: one("d", 2000), present: one("d", 2000), base, remote: one("d", 3000) }).steps,
    ).toEqual([{ dir: "d", mtimeMs: 3000, apply: true, send: false }]);
  });

  test("unchanged on both sides but moved by this pass's own writes: the synced time is set back", () => {
    const { steps } = plan({
      scanned: one("d", 1000),
      present: one("d", 9000),
      base: new Map([["d", { local: 1000, remote: 1000 }]]),
      remote: one("d", 1000),
    });
    expect(steps).toEqual([{ dir: "d", mtimeMs: 1000, apply: true, send: false }]);
  });

  test("a directory the pass created takes the server's time, or sends its own when the server has none", () => {
    expect(plan({ present: one("d", 9000), remote: one("d", 1000) }).steps).toEqual([
      { dir: "d", mtimeMs: 1000, apply: true, send: false },
    ]);
    expect(plan({ present: one("d", 9000) }).steps).toEqual([
      { dir: "d", mtimeMs: 9000, apply: false, send: true },
    ]);
  });

  test("a first sync takes the server's time when it has one, else sends the local one", () => {
    expect(plan({ scanned: one("d", 2000), present: one("d", 2000), remote: one("d", 1000) }).steps).toEqual([
      { dir: "d", mtimeMs: 1000, apply: true, send: false },
    ]);
    expect(plan({ scanned: one("d", 2000), present: one("d", 2000) }).steps).toEqual([
      { dir: "d", mtimeMs: 2000, apply: false, send: true },
    ]);
  });

  test("times within a millisecond are the same time: nothing to do", () => {
    const { steps } = plan({
      scanned: one("d", 1000.4),
      present: one("d", 1000.4),
      base: new Map([["d", { local: 1000, remote: 1000 }]]),
      remote: one("d", 1000),
    });
    expect(steps).toEqual([{ dir: "d", mtimeMs: 1000, apply: false, send: false }]);
  });

  test("steps come deepest first; a base directory gone here with an entry left is listed as gone", () => {
    const present = new Map([
      ["a", 1],
      ["a/b/c", 1],
      ["z", 1],
      ["a/b", 1],
    ]);
    const r = plan({
      scanned: present,
      present,
      base: new Map([
        ["old", { local: 1, remote: 1 }],
        ["older", { local: 1, remote: 1 }],
      ]),
      entries: new Set(["old", "a"]),
    });
    expect(r.steps.map((s) => s.dir)).toEqual(["a/b/c", "a/b", "a", "z"]);
    expect(r.gone).toEqual(["old"]);
  });
});

describe("directory attributes", () => {
  const key = new Uint8Array(32).fill(7);

  test("round-trip for their path; another path, key or a flipped byte opens to null", () => {
    const sealed = sealDirAttributes(key, "docs/é", { mtimeMs: 981_173_106_123 });
    expect(sealed.length).toBeLessThan(128);
    expect(openDirAttributes(key, "docs/é", sealed)).toEqual({ mtimeMs: 981_173_106_123 });
    expect(openDirAttributes(key, "docs", sealed)).toBeNull();
    expect(openDirAttributes(new Uint8Array(32).fill(8), "docs/é", sealed)).toBeNull();
    const bad = sealed.slice();
    bad[bad.length - 1] = (bad[bad.length - 1] as number) ^ 1;
    expect(openDirAttributes(key, "docs/é", bad)).toBeNull();
    expect(openDirAttributes(key, "docs/é", null)).toBeNull();
  });
});
