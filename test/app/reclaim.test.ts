/**
 * BodyMemoryReclaimer and its setting: a full collection after every ESYNC_GC_INTERVAL_BYTES of
 * request body stored (default 256 MiB, 0 = never), counted across chunk PUTs.
 */
import { describe, expect, spyOn, test } from "bun:test";
import { ConfigError, loadConfig } from "../../src/config/config.ts";
import { silentLogger } from "../../src/util/log.ts";
import { BodyMemoryReclaimer } from "../../src/util/reclaim.ts";
import { expectSuccess, finalize, openSession, putChunks, UPLOAD_RESULT_KEYS } from "../http/helpers.ts";
import { makeTestApp } from "../support/app.ts";
import { newUser, randomCiphertext } from "../support/fixtures.ts";

describe("BodyMemoryReclaimer", () => {
  test("collects once per interval of stored bytes, counting across calls, and never when 0", () => {
    let runs = 0;
    const r = new BodyMemoryReclaimer(1000, silentLogger, () => runs++);
    r.stored(400);
    r.stored(599);
    expect(runs).toBe(0);
    r.stored(1);
    expect(runs).toBe(1);
    r.stored(999);
    expect(runs).toBe(1);
    r.stored(5000); // one collection, however far past the interval
    expect(runs).toBe(2);
    r.stored(0);
    expect(runs).toBe(2);

    let off = 0;
    const never = new BodyMemoryReclaimer(0, silentLogger, () => off++);
    for (let i = 0; i < 10; i++) never.stored(1 << 30);
    expect(off).toBe(0);
  });
});

describe("chunk PUTs through the app", () => {
  test("stored chunk bytes count towards a full GC (Bun.gc(true)) every ESYNC_GC_INTERVAL_BYTES", async () => {
    const t = makeTestApp({ ESYNC_GC_INTERVAL_BYTES: "2500" });
    const gc = spyOn(Bun, "gc").mockImplementation(() => 0);
    try {
      const u = newUser();
      const ct = randomCiphertext(10_000);
      const s = await openSession(t, u, ct, { chunkSize: 1000 });
      await putChunks(t, s, ct);
      // 10 chunks of 1000 bytes: a full collection after the 3rd, 6th and 9th (the runtime makes
      // calls of its own with `false`).
      expect(gc.mock.calls.filter(([full]) => full === true)).toHaveLength(3);
      expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
    } finally {
      gc.mockRestore();
      await t.close();
    }
  });
});

describe("ESYNC_GC_INTERVAL_BYTES", () => {
  test("defaults to 256 MiB, takes 0 and whole numbers, and rejects anything else", () => {
    expect(loadConfig({}).gcIntervalBytes).toBe(256 * 1024 * 1024);
    expect(loadConfig({ ESYNC_GC_INTERVAL_BYTES: "0" }).gcIntervalBytes).toBe(0);
    expect(loadConfig({ ESYNC_GC_INTERVAL_BYTES: "1048576" }).gcIntervalBytes).toBe(1048576);
    expect(() => loadConfig({ ESYNC_GC_INTERVAL_BYTES: "64MiB" })).toThrow(ConfigError);
    expect(() => loadConfig({ ESYNC_GC_INTERVAL_BYTES: "-1" })).toThrow(ConfigError);
  });
});
