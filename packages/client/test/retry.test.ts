/** Retries with a time budget (`withRetry`) and the API client's own retries (`EsyncApi` `retry`). */
import { describe, expect, test } from "bun:test";
import { EsyncApi } from "../src/api.ts";
import { ApiError } from "../src/api-error.ts";
import { withRetry } from "../src/retry.ts";

/** A fake clock whose `sleep` advances it. */
function fakeClock() {
  let t = 1_000_000;
  return {
    now: () => t,
    sleep: async (ms: number) => {
      t += ms;
    },
  };
}

describe("withRetry", () => {
  test("retries a 503 until it succeeds", async () => {
    const clock = fakeClock();
    let n = 0;
    const out = await withRetry(
      async () => {
        if (++n < 4) throw new ApiError(503, "storage_unavailable", "down");
        return "ok";
      },
      { ...clock },
    );
    expect(out).toBe("ok");
    expect(n).toBe(4);
  });

  test("gives up once the time budget is spent and marks the error retriedForMs", async () => {
    const clock = fakeClock();
    let n = 0;
    const err = await withRetry(
      async () => {
        n++;
        throw new ApiError(0, "network_error", "refused");
      },
      { ...clock, policy: { forMs: 60_000 } },
    ).catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err.extra.retriedForMs).toBe(60_000);
    expect(n).toBeGreaterThan(5);
  });

  test("does not retry a 4xx, nor an error an inner retry already gave up on", async () => {
    const clock = fakeClock();
    let n = 0;
    await withRetry(async () => {
      n++;
      throw new ApiError(404, "not_found", "no");
    }, clock).catch(() => {});
    expect(n).toBe(1);
    n = 0;
    await withRetry(async () => {
      n++;
      throw new ApiError(503, "x", "y").withRetriedFor(120_000);
    }, clock).catch(() => {});
    expect(n).toBe(1);
  });
});

describe("EsyncApi retry option", () => {
  test("retries 5xx and network errors, then succeeds; onRetry hears each", async () => {
    let n = 0;
    const fakeFetch = (async () => {
      n++;
      if (n === 1) throw new TypeError("connection refused");
      if (n === 2) return new Response("{}", { status: 502 });
      return Response.json({ Success: { folders: [] } });
    }) as unknown as typeof fetch;
    const retries: number[] = [];
    const api = new EsyncApi({
      baseUrl: "http://127.0.0.1:9",
      token: "t",
      fetch: fakeFetch,
      retry: { baseDelayMs: 1, maxDelayMs: 2 },
      onRetry: (e) => retries.push(e.status),
    });
    expect((await api.listFolders("x")).folders).toEqual([]);
    expect(retries).toEqual([0, 502]);
  });

  test("an error names the server it came from", async () => {
    const e = await new EsyncApi({ baseUrl: "http://127.0.0.1:1", token: "t", retry: { forMs: 0 } })
      .listFolders("x")
      .catch((x) => x);
    expect(e).toBeInstanceOf(ApiError);
    expect(e.extra.server).toBe("http://127.0.0.1:1");
    expect(e.extra.retriedForMs).toBe(0);
  });
});
