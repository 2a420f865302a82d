/**
 * The CLI's pure parts: human-readable sizes, rates and dates, parsing of sizes and times,
 * tables, exit codes of errors, search filters from options, and the destination check that
 * keeps `pull` inside DEST whatever paths the server sends.
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { ApiError } from "@esync/client/api-error.ts";
import { CiphertextError } from "@esync/client/frame.ts";
import { safeDestination, UnsafePathError } from "@esync/client/local-files.ts";
import { excludesFrom } from "@esync/client/sync/excludes.ts";
import {
  hashLocalFile,
  type LocalEntry,
  scanLocalTree,
  walkLocalTree,
} from "@esync/client/sync/local-tree.ts";
import { searchFilters } from "../src/commands/search.ts";
import {
  CliError,
  describeError,
  EXIT,
  exitCodeOf,
  formatDate,
  formatDuration,
  formatRate,
  formatSize,
  InterruptedError,
  parseDuration,
  parseSize,
  parseTime,
  table,
} from "../src/output.ts";
import {
  composeLine,
  FILE_BAR_DELAY_MS,
  fitName,
  percent,
  RateMeter,
  transferProgress,
  wrapWords,
} from "../src/progress.ts";

// Real CLI processes against a real server: seconds each on a loaded machine.
setDefaultTimeout(120_000);

const work = mkdtempSync(join(tmpdir(), "esync-cli-unit-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("formatting", () => {
  test("sizes are binary with up to three significant digits", () => {
    expect(formatSize(0)).toBe("0 B");
    expect(formatSize(1023)).toBe("1023 B");
    expect(formatSize(1536)).toBe("1.5 KiB");
    expect(formatSize(1.5 * 1024 * 1024)).toBe("1.5 MiB");
    expect(formatSize(123.4 * 1024 ** 3)).toBe("123 GiB");
    expect(formatSize(10.25 * 1024 ** 4)).toBe("10.3 TiB");
  });

  test("rates use the binary units of sizes (MiB/s), durations compact, dates ISO 8601 UTC", () => {
    expect(formatRate(123 * 1024 ** 2)).toBe("123 MiB/s");
    expect(formatRate(45.6 * 1024 ** 2)).toBe("45.6 MiB/s");
    expect(formatRate(512)).toBe("512 B/s");
    expect(formatRate(0)).toBe("- MiB/s");
    expect(formatDuration(850)).toBe("850ms");
    expect(formatDuration(185_000)).toBe("3m05s");
    expect(formatDuration(3_720_000)).toBe("1h02m");
    expect(formatDate(1_767_225_600)).toBe("2026-01-01T00:00:00Z");
  });

  test("tables pad columns and right-align numbers", () => {
    const t = table(
      [{ header: "SIZE", align: "right" }, { header: "PATH" }],
      [
        ["1.5 MiB", "a/b.txt"],
        ["12 B", "c"],
      ],
    );
    expect(t).toBe("   SIZE  PATH\n1.5 MiB  a/b.txt\n   12 B  c");
  });

  test("the rate meter is a moving average over its sliding window", () => {
    const m = new RateMeter(1000);
    m.add(1000, 0);
    expect(m.rate(100)).toBe(0); // under 500 ms of samples: no rate yet
    m.add(11_000, 500);
    expect(m.rate(500)).toBe(20_000);
    m.add(21_000, 1000);
    m.add(31_000, 1600); // the sample at 0 ms falls out: the window starts at 500 ms
    expect(m.rate(1600)).toBeCloseTo(20_000 / 1.1, 3);
  });

  test("the rate drops to 0 and stays there while nothing moves for 3 s (a stalled transfer does not tick)", () => {
    const m = new RateMeter(10_000);
    m.add(0, 0);
    m.add(10_000, 1000);
    expect(m.rate(1000)).toBe(10_000);
    m.add(10_000, 2000); // progress reported again, nothing new moved
    expect(m.rate(3_999)).toBeGreaterThan(0);
    expect(m.rate(4_000)).toBe(0);
    expect(m.rate(9_000)).toBe(0);
    m.add(20_000, 9_500);
    expect(m.rate(9_500)).toBeGreaterThan(0);
  });

  test("a percentage is bytes over the phase's total: 0 B of 30 MiB is 0%, an empty file 100% once done", () => {
    expect(percent(0, 30 * 1024 ** 2)).toBe(0);
    expect(percent(15, 30)).toBe(50);
    expect(percent(29.99, 30)).toBe(99);
    expect(percent(30, 30)).toBe(100);
    expect(percent(0, 0)).toBe(0);
    expect(percent(0, 0, true)).toBe(100);
  });

  test("a progress line fits the width: every field at 80 columns, fewer at 50, never longer", () => {
    const spec = {
      name: "push docs",
      minName: 9,
      pct: 53,
      fields: ["120 MiB/395 MiB", "ETA 1m05s", "45.2 MiB/s", "1234/5745 files"],
    };
    const at80 = composeLine(spec, 79);
    expect(at80.length).toBeLessThanOrEqual(79);
    for (const f of spec.fields) expect(at80).toContain(f);
    expect(at80).toContain(" 53%");
    const at50 = composeLine(spec, 50);
    expect(at50.length).toBeLessThanOrEqual(50);
    expect(at50).toContain("120 MiB/395 MiB");
    for (let w = 20; w <= 200; w += 7) expect(composeLine(spec, w).length).toBeLessThanOrEqual(w);
    const file = composeLine(
      { name: `  ${"deep/".repeat(20)}name.bin`, minName: 16, pct: 0, fields: ["uploading  0 B/30 MiB"] },
      79,
    );
    expect(file.length).toBeLessThanOrEqual(79);
    expect(file).toContain("name.bin");
    // Aligned columns: two files with names of different lengths put their bars at one column.
    const row = (name: string) =>
      composeLine(
        { name, minName: 16, pct: 40, fields: ["uploading  8 MiB/20 MiB", "4.5 MiB/s"], column: 19 },
        79,
      );
    expect(row("  a.txt").indexOf("█")).toBe(row("  a/much/longer/name/of/a/file.bin").indexOf("█"));
  });

  test("lines above the bars are wrapped at word boundaries, never cut mid-word", () => {
    const text =
      "FAILED    photos/2024/holiday.jpg: cannot reach http://127.0.0.1:8080 (retried for 2m00s): POST /upload/session: Unable to connect. Is the computer able to access the url?";
    const lines = wrapWords(text, 79);
    expect(lines.length).toBeGreaterThan(1);
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(79);
    expect(lines.map((l) => l.trim()).join(" ")).toBe(text);
    expect(wrapWords("short", 79)).toEqual(["short"]);
  });

  test("in a terminal, files done within FILE_BAR_DELAY_MS print only their lines, without a redraw each; one in flight longer gets a bar", async () => {
    let screen = "";
    const sink = new Writable({
      write(chunk, _encoding, callback) {
        screen += String(chunk);
        callback();
      },
    });
    const tty = Object.assign(sink, {
      isTTY: true,
      columns: 100,
      rows: 40,
    }) as unknown as NodeJS.WriteStream;
    const p = transferProgress("bars", "push t", 52_000, 51, tty);
    for (let i = 0; i < 50; i++) {
      const quick = p.file(`quick${i}.txt`, 1000);
      quick.update("uploading", 1000, 1000);
      quick.done(`uploaded  quick${i}.txt  1000 B`);
      p.overall(1000 * (i + 1), i + 1);
    }
    const slow = p.file("slow.bin", 2000);
    slow.update("uploading", 500, 2000);
    await Bun.sleep(FILE_BAR_DELAY_MS + 250);
    const during = screen;
    slow.done("uploaded  slow.bin  2000 B");
    p.stop();
    for (let i = 0; i < 50; i++) expect(screen).toContain(`uploaded  quick${i}.txt  1000 B`);
    expect(screen).not.toMatch(/ {2}quick\d+\.txt +\S* +\d+%/);
    // The overall line is drawn by the frames (8 a second, and at the end), not once per file.
    expect(screen.split("push t ").length - 1).toBeLessThan(15);
    expect(during).toMatch(/ {2}slow\.bin +\S* +25% +uploading/);
    expect(screen).toContain("uploaded  slow.bin  2000 B");
  });

  test("long file names are elided in the middle to fit a bar", () => {
    expect(fitName("short", 8)).toBe("short   ");
    const f = fitName("a/very/long/path/to/some/file.txt", 16);
    expect(f).toHaveLength(16);
    expect(f).toContain("…");
    expect(f.endsWith("file.txt")).toBe(true);
  });
});

describe("parsing", () => {
  test("sizes take bytes or binary units", () => {
    expect(parseSize("1048576")).toBe(1048576);
    expect(parseSize("500K")).toBe(512_000);
    expect(parseSize("1.5MiB")).toBe(1.5 * 1024 * 1024);
    expect(parseSize("2 GB")).toBe(2 * 1024 ** 3);
    expect(() => parseSize("lots")).toThrow(CliError);
  });

  test("times take ISO dates, Unix seconds and ages", () => {
    const now = Date.parse("2026-11-22T00:00:00Z");
    expect(parseTime("2026-11-01", now)).toBe(Date.parse("2026-11-01T00:00:00Z") / 1000);
    expect(parseTime("2026-11-01T12:00:00Z", now)).toBe(Date.parse("2026-11-01T12:00:00Z") / 1000);
    expect(parseTime("1767225600", now)).toBe(1767225600);
    expect(parseTime("7d", now)).toBe(now / 1000 - 7 * 86400);
    expect(parseTime("12h", now)).toBe(now / 1000 - 12 * 3600);
    expect(() => parseTime("yesterday", now)).toThrow(CliError);
  });

  test("search options map onto /search_files filters", () => {
    const now = Date.parse("2026-11-22T00:00:00Z");
    expect(
      searchFilters(
        "report",
        {
          type: "pdf,.md",
          minSize: "1MiB",
          since: "2026-11-01",
          sort: "size",
          asc: true,
          limit: "10",
          offset: "20",
        },
        now,
      ),
    ).toEqual({
      q: "report",
      fileType: "pdf,.md",
      sizeMin: 1024 * 1024,
      sizeMax: undefined,
      dateFrom: Date.parse("2026-11-01T00:00:00Z") / 1000,
      dateTo: undefined,
      sortBy: "size_bytes",
      sortOrder: "asc",
      limit: 10,
      offset: 20,
    });
    expect(() => searchFilters(undefined, { sort: "colour", limit: "25", offset: "0" })).toThrow(CliError);
    expect(() => searchFilters("x".repeat(257), { sort: "name", limit: "25", offset: "0" })).toThrow(
      CliError,
    );
  });
});

describe("errors and exit codes", () => {
  test("server errors are `status code: message` with exit 2; network failures say the server is unreachable", () => {
    const e = new ApiError(409, "conflict", "folder already registered", { server: "http://h:8080" });
    expect(describeError(e)).toBe("http://h:8080: 409 conflict: folder already registered");
    expect(exitCodeOf(e)).toBe(EXIT.server);
    const down = new ApiError(0, "network_error", "GET /health: Unable to connect", {
      server: "http://h:8080",
      retriedForMs: 120_000,
    });
    expect(describeError(down)).toBe(
      "cannot reach http://h:8080 (retried for 2m00s): GET /health: Unable to connect",
    );
    expect(exitCodeOf(down)).toBe(EXIT.server);
  });

  test("parseDuration reads ms, s, m, h and plain seconds; rejects words", () => {
    expect(parseDuration("2m")).toBe(120_000);
    expect(parseDuration("90s")).toBe(90_000);
    expect(parseDuration("500ms")).toBe(500);
    expect(parseDuration("1h")).toBe(3_600_000);
    expect(parseDuration("0")).toBe(0);
    expect(parseDuration("45")).toBe(45_000);
    expect(() => parseDuration("soon")).toThrow(CliError);
  });

  test("crypto and file errors exit 3, Ctrl-C 130, usage 1", () => {
    expect(exitCodeOf(new CiphertextError("authentication_failed", "frame 3"))).toBe(EXIT.local);
    expect(describeError(new CiphertextError("authentication_failed", "frame 3"))).toBe(
      "ciphertext rejected (authentication_failed): frame 3",
    );
    const enoent = Object.assign(new Error("open failed"), { code: "ENOENT" });
    expect(describeError(enoent)).toBe("ENOENT: open failed");
    expect(exitCodeOf(enoent)).toBe(EXIT.local);
    expect(exitCodeOf(new InterruptedError())).toBe(EXIT.interrupted);
    expect(exitCodeOf(new CliError("bad", EXIT.usage))).toBe(EXIT.usage);
  });
});

describe("pull destinations", () => {
  const dest = join(work, "dest");
  mkdirSync(dest, { recursive: true });

  test("a plain relative path lands inside DEST, parents created", async () => {
    expect(await safeDestination(dest, "a/b/c.txt")).toBe(join(dest, "a/b/c.txt"));
  });

  test.each([
    ["../outside.txt"],
    ["a/../../outside.txt"],
    ["/etc/passwd"],
    ["a/\0b"],
    [".."],
    ["a\\..\\..\\x"],
  ])("refuses %p", async (rel) => {
    await expect(safeDestination(dest, rel)).rejects.toBeInstanceOf(UnsafePathError);
  });

  test("refuses a path whose parent is a symbolic link leading outside DEST", async () => {
    const outside = join(work, "outside");
    mkdirSync(outside, { recursive: true });
    symlinkSync(outside, join(dest, "escape"));
    await expect(safeDestination(dest, "escape/x.txt")).rejects.toThrow(/leading outside the destination/);
  });

  test("push stores a symbolic link as a link and does not follow it", async () => {
    const tree = await scanLocalTree(
      dest,
      "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY",
      excludesFrom([]),
    );
    expect(tree.entries.get("escape")).toMatchObject({ kind: "symlink", target: join(work, "outside") });
    expect([...tree.entries.keys()].some((rel) => rel.startsWith("escape/"))).toBe(false);
  });

  test("push's walk finds what a scan finds, with the same fingerprints and no hash; hashing one gives the scan's entry", async () => {
    const root = mkdtempSync(join(tmpdir(), "esync-walk-"));
    mkdirSync(join(root, "a", "b"), { recursive: true });
    mkdirSync(join(root, "empty"));
    writeFileSync(join(root, "a", "b", "c.txt"), "hello");
    writeFileSync(join(root, "top.bin"), new Uint8Array(70_000));
    symlinkSync("a/b/c.txt", join(root, "link"));
    const ss58 = "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY";
    const walked = await walkLocalTree(root, excludesFrom([]));
    const scanned = await scanLocalTree(root, ss58, excludesFrom([]));
    expect([...walked.entries.keys()]).toEqual([...scanned.entries.keys()]);
    expect([...walked.entries.keys()].sort()).toEqual(["a/b/c.txt", "empty/.esync-dir", "link", "top.bin"]);
    expect(walked.dirs).toEqual(scanned.dirs);
    for (const [rel, file] of walked.entries) {
      expect(file).not.toHaveProperty("hash");
      expect(await hashLocalFile(file, ss58)).toEqual(scanned.entries.get(rel) as LocalEntry);
    }
    rmSync(root, { recursive: true, force: true });
  });
});

describe("notices and network errors", () => {
  test("a retry notice goes above the progress display while one is drawn, to stderr otherwise", async () => {
    const { notice, setNoticeSink } = await import("../src/output.ts");
    const seen: string[] = [];
    setNoticeSink((l) => seen.push(l));
    try {
      notice("esync: cannot reach X; retrying");
    } finally {
      setNoticeSink(null);
    }
    expect(seen).toEqual(["esync: cannot reach X; retrying"]);
  });

  test("a download that cannot reach the server names the file's path, not its hex id", async () => {
    const { EsyncApi } = await import("@esync/client/api.ts");
    const api = new EsyncApi({
      baseUrl: "http://127.0.0.1:9",
      token: "t",
      fetch: (async () => {
        throw Object.assign(new Error("Unable to connect. Is the computer able to access the url?"), {
          code: "ECONNREFUSED",
        });
      }) as unknown as typeof fetch,
    });
    const id = "ab".repeat(32);
    const e = await api.download("addr", "cd".repeat(32), id, { label: "photos/cat.jpg" }).catch((x) => x);
    expect(e).toBeInstanceOf(ApiError);
    expect(e.message).toBe(
      "photos/cat.jpg: ECONNREFUSED: Unable to connect. Is the computer able to access the url?",
    );
    expect(e.message).not.toContain(id);
    expect(e.extra.request).toContain(id);
  });
});
