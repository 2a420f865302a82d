/**
 * Names that are not in NFC (decomposed, as macOS writes them) on the real CLI against a real
 * server: they are synced under their NFC wire form while every file-system call uses the
 * on-disk name, and two names of one directory equal after NFC (twins) are reported by name
 * with a non-zero exit status (docs/unicode-names.md).
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../helpers.ts";
import { twoCliDevices } from "./support.ts";

const { work, cfgA, cfgB } = twoCliDevices("esync-unicode-");

/** "café.txt" decomposed (e + U+0301) and composed (U+00E9). */
const CAFE_NFD = "cafe\u0301.txt";
const CAFE_NFC = "caf\u00e9.txt";
const AMELIE_NFD = "Ame\u0301lie";
const AMELIE_NFC = "Am\u00e9lie";

describe("decomposed (NFD) names", () => {
  test("are uploaded under their NFC form, and a remote change lands on the on-disk name without a twin", async () => {
    const a = join(work, "nfd-a");
    const b = join(work, "nfd-b");
    mkdirSync(join(a, AMELIE_NFD), { recursive: true });
    writeFileSync(join(a, CAFE_NFD), "v1");
    writeFileSync(join(a, AMELIE_NFD, "notes.txt"), "notes");

    const up = await runCli(cfgA, ["sync", a, "--folder", "nfd", "--create"]);
    expect(up.stderr).not.toContain("cannot sync");
    expect(up.code).toBe(0);
    mkdirSync(b);
    const down = await runCli(cfgB, ["sync", b, "--folder", "nfd"]);
    expect(down.code).toBe(0);
    expect(readFileSync(join(b, CAFE_NFC), "utf8")).toBe("v1");
    expect(readFileSync(join(b, AMELIE_NFC, "notes.txt"), "utf8")).toBe("notes");

    writeFileSync(join(b, CAFE_NFC), "v2 from b");
    writeFileSync(join(b, AMELIE_NFC, "new.txt"), "new");
    expect((await runCli(cfgB, ["sync", b, "--folder", "nfd"])).code).toBe(0);
    const again = await runCli(cfgA, ["sync", a, "--folder", "nfd"]);
    expect(again.code).toBe(0);
    // The change went into the decomposed file; no composed twin appeared beside it.
    expect(readFileSync(join(a, CAFE_NFD), "utf8")).toBe("v2 from b");
    expect(
      readdirSync(a)
        .filter((n) => n !== ".esync")
        .sort(),
    ).toEqual([AMELIE_NFD, CAFE_NFD].sort());
    expect(readdirSync(join(a, AMELIE_NFD)).sort()).toEqual(["new.txt", "notes.txt"]);

    const status = await runCli(cfgA, ["status", a, "--folder", "nfd", "--json"]);
    expect(status.code).toBe(0);
    expect(status.json()).toMatchObject({ in_sync: true, skipped: [] });
  }, 60_000);

  test("NFC and NFD twins: the NFC one is synced, the other named on stderr and in --json, exit 3", async () => {
    const dir = join(work, "twins");
    mkdirSync(dir);
    writeFileSync(join(dir, CAFE_NFC), "composed");
    writeFileSync(join(dir, CAFE_NFD), "decomposed");

    const synced = await runCli(cfgA, ["sync", dir, "--folder", "twins", "--create", "--json"]);
    expect(synced.code).toBe(3);
    expect(synced.stderr).toContain(`cannot sync ${JSON.stringify(CAFE_NFD)}`);
    expect(synced.stderr).toContain(JSON.stringify(CAFE_NFC));
    const report = synced.json<{ uploaded: number; skipped: { path: string; reason: string }[] }>();
    expect(report.uploaded).toBe(1);
    expect(report.skipped).toEqual([{ path: CAFE_NFD, reason: expect.stringContaining(CAFE_NFC) }]);

    const status = await runCli(cfgA, ["status", dir, "--folder", "twins", "--json"]);
    expect(status.code).toBe(3);
    expect(status.json()).toMatchObject({ in_sync: false, skipped: [{ path: CAFE_NFD }] });

    const pushed = await runCli(cfgA, ["push", dir, "--folder", "twins", "--json"]);
    expect(pushed.code).toBe(3);
    expect(pushed.json()).toMatchObject({ skipped: [{ path: CAFE_NFD }] });

    // The composed one went up: another device gets its content.
    const b = join(work, "twins-b");
    expect((await runCli(cfgB, ["pull", "--folder", "twins", b])).code).toBe(0);
    expect(readFileSync(join(b, CAFE_NFC), "utf8")).toBe("composed");
  }, 60_000);
});
