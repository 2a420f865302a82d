/** The minimum body rate of src/http/body.ts: after a short grace, over a sliding window. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { AppError, fail } from "@esync/protocol/errors.ts";
import { type BodyPolicy, bodyPolicy, guardBody, setBodyPolicy } from "../../src/http/body.ts";

let saved: BodyPolicy;
beforeAll(() => {
  saved = bodyPolicy();
  setBodyPolicy({ idleMs: 800, minBytesPerSecond: 1000, rateGraceMs: 300, rateWindowMs: 600 });
});
afterAll(() => setBodyPolicy(saved));

/** A request whose body the test feeds: `push(n)` enqueues n bytes, `end()` closes it. */
function fedRequest() {
  let ctl!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start: (c) => (ctl = c) });
  const request = new Request("http://localhost/x", { method: "PUT", body, duplex: "half" } as RequestInit);
  return {
    request,
    push: (n: number) => ctl.enqueue(new Uint8Array(n)),
    end: () => ctl.close(),
  };
}

/** Reads `stream` to its end; resolves with the error (or null) and the milliseconds taken. */
async function drainTimed(
  stream: ReadableStream<Uint8Array>,
  pauseMs = 0,
): Promise<{ error: unknown; ms: number; bytes: number }> {
  const t0 = performance.now();
  let bytes = 0;
  try {
    for await (const piece of stream) {
      bytes += piece.byteLength;
      if (pauseMs) await Bun.sleep(pauseMs);
    }
    return { error: null, ms: performance.now() - t0, bytes };
  } catch (e) {
    return { error: e, ms: performance.now() - t0, bytes };
  }
}

const tooLarge = () => fail("payload_too_large", "too large");

test("a body trickled below the minimum rate is failed with 408 request_timeout soon after the grace, before any idle timeout", async () => {
  const f = fedRequest();
  const g = guardBody(f.request, { limit: 1e9, tooLarge });
  const timer = setInterval(() => f.push(20), 100); // 200 B/s, never idle
  const r = await drainTimed(g.stream);
  clearInterval(timer);
  expect(r.error).toBeInstanceOf(AppError);
  expect((r.error as AppError).code).toBe("request_timeout");
  expect((r.error as AppError).message).toContain("below the minimum");
  expect(r.ms).toBeGreaterThanOrEqual(300);
  expect(r.ms).toBeLessThan(2000);
});

test("a body that starts fast then slows below the minimum is failed over the window, though its average since the start stays high", async () => {
  const f = fedRequest();
  const g = guardBody(f.request, { limit: 1e9, tooLarge });
  f.push(200_000); // 200 KB at once: a 200 s average at 1000 B/s
  const timer = setInterval(() => f.push(10), 100);
  const r = await drainTimed(g.stream);
  clearInterval(timer);
  expect((r.error as AppError)?.code).toBe("request_timeout");
  expect(r.ms).toBeLessThan(3000);
  expect(g.received()).toBeGreaterThanOrEqual(200_000);
});

test("a body sent faster than the minimum arrives whole", async () => {
  const f = fedRequest();
  const g = guardBody(f.request, { limit: 1e9, tooLarge });
  let sent = 0;
  const timer = setInterval(() => {
    f.push(500); // 5,000 B/s
    sent += 500;
    if (sent >= 10_000) {
      clearInterval(timer);
      f.end();
    }
  }, 100);
  const r = await drainTimed(g.stream);
  expect(r.error).toBeNull();
  expect(r.bytes).toBe(10_000);
});

test("time the reader spends elsewhere is not counted against the client", async () => {
  const f = fedRequest();
  const g = guardBody(f.request, { limit: 1e9, tooLarge });
  for (let i = 0; i < 4; i++) f.push(1000);
  f.end();
  // The consumer takes 500 ms per piece (2 s in all, past the grace, the window and the idle timeout).
  const r = await drainTimed(g.stream, 500);
  expect(r.error).toBeNull();
  expect(r.bytes).toBe(4000);
});

test("abort fails a body from outside with the error given (an evicted chunk PUT)", async () => {
  const f = fedRequest();
  const g = guardBody(f.request, { limit: 1e9, tooLarge });
  f.push(100);
  setTimeout(() => g.abort(fail("request_timeout", "evicted")), 50);
  const r = await drainTimed(g.stream);
  expect((r.error as AppError)?.message).toBe("evicted");
  expect(g.received()).toBe(100);
});
