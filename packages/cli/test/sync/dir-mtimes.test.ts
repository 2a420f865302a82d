/**
 * Directory modification times across two devices (real CLI processes, two configuration
 * directories with one mnemonic, a real server): a directory's time set on A arrives on B once
 * B's files are written (and `esync pull` restores it), a `touch` of a directory on A propagates,
 * a renamed directory leaves no stray directory behind, and `esync mv` of a directory on the
 * server keeps the times of every directory it moves (docs/attributes.md#directory-modification-times).
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, renameSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../helpers.ts";
import { twoCliDevices } from "./support.ts";

const { work, cfgA, cfgB } = twoCliDevices("esync-dir-mtimes-");

/** A directory's modification time, Unix seconds. */
const seconds = (p: string) => Math.round(statSync(p).mtimeMs / 1000);

async function sync(cfg: string, dir: string, ...extra: string[]) {
  const r = await runCli(cfg, ["sync", dir, "--folder", "dirtimes", ...extra]);
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
  return r;
}

/** What `esync status --json` says of `dir`. */
async function status(cfg: string, dir: string) {
  const r = await runCli(cfg, ["status", dir, "--folder", "dirtimes", "--json"]);
  expect(r.code).toBe(0);
  const { in_sync, actions } = r.json<{ in_sync: boolean; actions: unknown[] }>();
  return { in_sync, actions };
}

describe("directory modification times", () => {
  const a = join(work, "dev-a");
  const b = join(work, "dev-b");

  test("a directory's time set on A arrives on B (nested, with files, and empty)", async () => {
    mkdirSync(join(a, "docs/inner"), { recursive: true });
    mkdirSync(join(a, "empty"), { recursive: true });
    writeFileSync(join(a, "docs/inner/a.txt"), "a");
    writeFileSync(join(a, "docs/b.txt"), "b");
    utimesSync(join(a, "docs/inner"), 981_173_106, 981_173_106); // 2001-02-03
    utimesSync(join(a, "docs"), 915_148_800, 915_148_800); // 1999-01-01
    utimesSync(join(a, "empty"), 1_000_000_000, 1_000_000_000); // 2001-09-09
    await sync(cfgA, a, "--create");
    await sync(cfgB, b, "--create-dir");
    expect(seconds(join(b, "docs"))).toBe(915_148_800);
    expect(seconds(join(b, "docs/inner"))).toBe(981_173_106);
    expect(seconds(join(b, "empty"))).toBe(1_000_000_000);
    // A kept its own times: the pass sent them and changed nothing here.
    expect(seconds(join(a, "docs"))).toBe(915_148_800);
    // esync pull restores them too.
    const pulled = join(work, "pulled");
    expect((await runCli(cfgB, ["pull", "--folder", "dirtimes", pulled])).code).toBe(0);
    expect([
      seconds(join(pulled, "docs")),
      seconds(join(pulled, "docs/inner")),
      seconds(join(pulled, "empty")),
    ]).toEqual([915_148_800, 981_173_106, 1_000_000_000]);
  }, 60_000);

  test("a touch of a directory on A propagates to B, and a new file moves its directory's time on both", async () => {
    utimesSync(join(a, "docs/inner"), 1_100_000_000, 1_100_000_000); // 2004-11-09
    // A directory's time is a change like any other: status lists it on both sides.
    expect(await status(cfgA, a)).toEqual({
      in_sync: false,
      actions: [{ op: "dir_time_remote", path: "docs/inner" }],
    });
    await sync(cfgA, a);
    expect(await status(cfgB, b)).toEqual({
      in_sync: false,
      actions: [{ op: "dir_time_local", path: "docs/inner" }],
    });
    await sync(cfgB, b);
    expect(seconds(join(b, "docs/inner"))).toBe(1_100_000_000);
    expect(await status(cfgA, a)).toEqual({ in_sync: true, actions: [] });
    expect(seconds(join(b, "docs"))).toBe(915_148_800);

    writeFileSync(join(a, "docs/c.txt"), "c");
    utimesSync(join(a, "docs"), 1_200_000_000, 1_200_000_000); // 2008-01-10
    await sync(cfgA, a);
    await sync(cfgB, b);
    expect(existsSync(join(b, "docs/c.txt"))).toBe(true);
    // Writing c.txt into docs on B moved its time; the synced time was set after the file.
    expect(seconds(join(b, "docs"))).toBe(1_200_000_000);
    // Settled: another round on each side changes no time.
    await sync(cfgA, a);
    await sync(cfgB, b);
    expect([seconds(join(a, "docs")), seconds(join(b, "docs"))]).toEqual([1_200_000_000, 1_200_000_000]);
  }, 60_000);

  test("a time changed on B goes back to A; a directory renamed on A leaves no stray directory", async () => {
    utimesSync(join(b, "empty"), 1_300_000_000, 1_300_000_000);
    await sync(cfgB, b);
    await sync(cfgA, a);
    expect(seconds(join(a, "empty"))).toBe(1_300_000_000);

    renameSync(join(a, "docs"), join(a, "papers"));
    await sync(cfgA, a);
    await sync(cfgB, b);
    await sync(cfgA, a);
    expect(existsSync(join(a, "docs"))).toBe(false);
    expect(existsSync(join(b, "docs"))).toBe(false);
    expect(existsSync(join(b, "papers/inner/a.txt"))).toBe(true);
    expect(seconds(join(b, "papers/inner"))).toBe(1_100_000_000);
  }, 90_000);

  test("esync mv of a directory on the server keeps its time and its subdirectories' times", async () => {
    const before = join(work, "before-mv");
    expect((await runCli(cfgB, ["pull", "--folder", "dirtimes", before])).code).toBe(0);
    const times = [seconds(join(before, "papers")), seconds(join(before, "papers/inner"))];
    expect(times[1]).toBe(1_100_000_000);
    const mv = await runCli(cfgB, ["mv", "--folder", "dirtimes", "papers", "archive/papers"]);
    expect({ code: mv.code, stderr: mv.stderr }).toEqual({ code: 0, stderr: "" });
    const after = join(work, "after-mv");
    expect((await runCli(cfgB, ["pull", "--folder", "dirtimes", after])).code).toBe(0);
    expect(existsSync(join(after, "papers"))).toBe(false);
    expect([seconds(join(after, "archive/papers")), seconds(join(after, "archive/papers/inner"))]).toEqual(
      times,
    );
  }, 60_000);
});
