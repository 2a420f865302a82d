/** Stale spill files are removed (`cli/spill.ts`), in the directory `--spill-dir` names. */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cleanSpillDir } from "../src/spill.ts";
import { runCli } from "./helpers.ts";

// Real CLI processes against a real server: seconds each on a loaded machine.
setDefaultTimeout(120_000);

const work = mkdtempSync(join(tmpdir(), "esync-spill-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A spill file `name` in `dir` last modified `ageMs` ago. */
function blob(dir: string, name: string, ageMs: number): string {
  const path = join(dir, name);
  writeFileSync(path, "x".repeat(100));
  const t = (Date.now() - ageMs) / 1000;
  utimesSync(path, t, t);
  return path;
}

function uploadsReferencing(path: string, ...spills: string[]): void {
  const uploads = Object.fromEntries(spills.map((s, i) => [`k${i}`, { sealed: { spillPath: s } }]));
  writeFileSync(path, JSON.stringify({ version: 1, uploads }));
}

describe("spill directory cleanup", () => {
  test("removes unreferenced blobs older than 1 h and any blob older than 24 h; keeps the rest", async () => {
    const dir = join(work, "a");
    mkdirSync(dir);
    const orphanOld = blob(dir, "esync-aaaa-1.blob", 2 * 3_600_000);
    const orphanNew = blob(dir, "esync-bbbb-2.blob", 10 * 60_000);
    const referenced = blob(dir, "esync-cccc-3.blob", 5 * 3_600_000);
    const ancient = blob(dir, "esync-dddd-4.blob", 25 * 3_600_000);
    const foreign = blob(dir, "notes.txt", 48 * 3_600_000);
    const uploads = join(work, "a-uploads.json");
    uploadsReferencing(uploads, referenced, ancient);
    const r = await cleanSpillDir(dir, uploads);
    expect(r.removed.sort()).toEqual([orphanOld, ancient].sort());
    expect(r.bytes).toBe(200);
    for (const p of [orphanNew, referenced, foreign]) expect(existsSync(p)).toBe(true);
  });

  test("a missing directory or uploads.json is not an error", async () => {
    expect(await cleanSpillDir(join(work, "none"), join(work, "none.json"))).toEqual({
      removed: [],
      bytes: 0,
    });
    const dir = join(work, "b");
    mkdirSync(dir);
    const orphan = blob(dir, "esync-eeee-5.blob", 2 * 3_600_000);
    await cleanSpillDir(dir, join(work, "missing.json"));
    expect(existsSync(orphan)).toBe(false);
  });

  test("every command cleans the directory --spill-dir names", async () => {
    const cfg = join(work, "config");
    expect((await runCli(cfg, ["init", "--import"], `${"abandon ".repeat(11)}about\n`)).code).toBe(0);
    const dir = join(work, "elsewhere");
    mkdirSync(dir);
    const orphan = blob(dir, "esync-ffff-6.blob", 2 * 3_600_000);
    const r = await runCli(cfg, [
      "folder",
      "list",
      "--spill-dir",
      dir,
      "--server",
      "http://127.0.0.1:9",
      "--retry-for",
      "0",
    ]);
    expect(r.code).toBe(2);
    expect(existsSync(orphan)).toBe(false);
  });
});
