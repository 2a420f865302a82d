/**
 * The `--log-file` log (`packages/cli/src/log.ts`): JSON lines with timestamp, level and event,
 * rotated by size with a bounded number of files, and a log that cannot be written turning
 * itself off instead of failing the command.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  currentLog,
  DEFAULT_LOG_MAX_BYTES,
  DEFAULT_LOG_MAX_FILES,
  logEvent,
  RotatingLog,
  setLog,
} from "../src/log.ts";

const work = mkdtempSync(join(tmpdir(), "esync-log-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));
afterEach(() => setLog(null));

const lines = (path: string) =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe("RotatingLog", () => {
  test("defaults to 10 MiB per file and 5 files", () => {
    const log = new RotatingLog(join(work, "defaults", "esync.log"));
    expect(log.maxBytes).toBe(DEFAULT_LOG_MAX_BYTES);
    expect(DEFAULT_LOG_MAX_BYTES).toBe(10 * 1024 * 1024);
    expect(log.maxFiles).toBe(DEFAULT_LOG_MAX_FILES);
    expect(DEFAULT_LOG_MAX_FILES).toBe(5);
  });

  test("writes one JSON object per line with an ISO timestamp, the level, the event and the fields", () => {
    const path = join(work, "a", "nested", "esync.log");
    const log = new RotatingLog(path);
    log.write("info", "command.start", { command: "sync" }, new Date(Date.UTC(2026, 10, 28, 1, 2, 3, 4)));
    log.write("error", "error", { text: "esync: boom" });
    const [first, second] = lines(path);
    expect(first).toEqual({
      ts: "2026-11-28T01:02:03.004Z",
      level: "info",
      event: "command.start",
      pid: process.pid,
      command: "sync",
    });
    expect(second?.level).toBe("error");
    expect(second?.text).toBe("esync: boom");
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(work, "a", "nested")).mode & 0o777).toBe(0o700);
  });

  test("rotates before a line would pass maxBytes and keeps at most maxFiles files, oldest dropped", () => {
    const path = join(work, "rot", "esync.log");
    const log = new RotatingLog(path, 400, 3);
    // Each line is about 100 bytes: 3 lines fit in a 400-byte file, the 4th starts a new one.
    for (let i = 0; i < 20; i++) log.write("info", "tick", { i, pad: "x".repeat(40) });
    expect(existsSync(path)).toBe(true);
    expect(existsSync(`${path}.1`)).toBe(true);
    expect(existsSync(`${path}.2`)).toBe(true);
    expect(existsSync(`${path}.3`)).toBe(false);
    for (const p of [path, `${path}.1`, `${path}.2`]) expect(statSync(p).size).toBeLessThanOrEqual(400);
    const current = lines(path).map((l) => l.i);
    const prev = lines(`${path}.1`).map((l) => l.i);
    const older = lines(`${path}.2`).map((l) => l.i);
    // Newest in the current file, in order, with no line lost between the kept files.
    expect(current.at(-1)).toBe(19);
    expect([...older, ...prev, ...current]).toEqual(
      Array.from(
        { length: older.length + prev.length + current.length },
        (_, k) => 20 - older.length - prev.length - current.length + k,
      ),
    );
  });

  test("with maxFiles 1 the file is truncated instead of rotated", () => {
    const path = join(work, "one", "esync.log");
    const log = new RotatingLog(path, 200, 1);
    for (let i = 0; i < 10; i++) log.write("info", "tick", { i, pad: "y".repeat(40) });
    expect(existsSync(`${path}.1`)).toBe(false);
    expect(statSync(path).size).toBeLessThanOrEqual(200);
    expect(lines(path).at(-1)?.i).toBe(9);
  });

  test("refuses a non-positive size or a file count below 1", () => {
    expect(() => new RotatingLog(join(work, "bad.log"), 0)).toThrow(RangeError);
    expect(() => new RotatingLog(join(work, "bad.log"), 100, 0)).toThrow(RangeError);
  });
});

describe("logEvent", () => {
  test("writes nothing when no log is set", () => {
    expect(currentLog()).toBeNull();
    expect(() => logEvent("info", "nothing")).not.toThrow();
  });

  test("goes to the log set with setLog", () => {
    const path = join(work, "set", "esync.log");
    setLog(new RotatingLog(path));
    logEvent("warn", "notice", { text: "retrying" });
    expect(lines(path)).toMatchObject([{ level: "warn", event: "notice", text: "retrying" }]);
  });

  test("a log that cannot be written turns logging off instead of throwing", () => {
    const path = join(work, "unwritable", "esync.log");
    setLog(new RotatingLog(path));
    mkdirSync(path); // appending to a directory fails (EISDIR), even as root
    expect(() => logEvent("info", "x")).not.toThrow();
    expect(currentLog()).toBeNull();
  });
});
