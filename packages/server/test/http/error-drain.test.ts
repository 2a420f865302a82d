/**
 * answerThenDrain (src/http/body.ts): the error answer first, then a bounded drain of the body;
 * and the server's body backstop (src/server.ts `requestBodyBackstop`) that must not cut it short.
 */
import { expect, test } from "bun:test";
import {
  answerThenDrain,
  DRAIN_BYTES,
  DRAIN_HOLD_MS,
  DRAIN_IDLE_MS,
  DRAIN_MS,
  HOLD_ABOVE_BYTES,
  MAX_DRAINING,
  MAX_HOLDING,
} from "../../src/http/body.ts";
import { MAX_JSON_BODY_BYTES } from "../../src/http/request.ts";
import { requestBodyBackstop } from "../../src/server.ts";
import { MAX_CHUNK_BYTES } from "../../src/sessions/session.engine.ts";

const ANSWER = JSON.stringify({ Error: { error: "payload_too_large", message: "too large" } });

function errorAnswer(): Response {
  return new Response(ANSWER, { status: 413, headers: { "content-type": "application/json" } });
}

/** A request whose chunked body produces `piece` bytes every `everyMs` (0: as fast as read) without end. */
function endlessRequest(piece: number, everyMs: number): { request: Request; pulled: () => number } {
  let pulled = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      if (everyMs) await Bun.sleep(everyMs);
      pulled += piece;
      c.enqueue(new Uint8Array(piece));
    },
  });
  const request = new Request("http://localhost/x", {
    method: "POST",
    headers: { "transfer-encoding": "chunked" },
    body,
    duplex: "half",
  } as RequestInit);
  return { request, pulled: () => pulled };
}

/** Reads a response body, timing its first piece and its end. */
async function timed(r: Response): Promise<{ first: number; end: number; text: string }> {
  const t0 = performance.now();
  let first = -1;
  let text = "";
  const dec = new TextDecoder();
  for await (const piece of r.body!) {
    if (first < 0) first = performance.now() - t0;
    text += dec.decode(piece, { stream: true });
  }
  return { first, end: performance.now() - t0, text };
}

test("the answer is the first piece, then a client sending without end is drained up to DRAIN_BYTES, held unread until DRAIN_HOLD_MS, and the connection closes", async () => {
  const { request, pulled } = endlessRequest(64 * 1024, 0);
  const r = await answerThenDrain(request, errorAnswer());
  expect(r.status).toBe(413);
  expect(r.headers.get("connection")).toBe("close");
  const t = await timed(r);
  expect(t.text).toBe(ANSWER);
  expect(t.first).toBeLessThan(100);
  expect(t.end).toBeGreaterThanOrEqual(DRAIN_HOLD_MS - 50);
  expect(t.end).toBeLessThan(DRAIN_MS + 500);
  expect(pulled()).toBeGreaterThanOrEqual(DRAIN_BYTES);
  expect(pulled()).toBeLessThanOrEqual(DRAIN_BYTES + 4 * 64 * 1024);
});

test("a trickling client is drained for at most DRAIN_MS", async () => {
  const { request } = endlessRequest(10, 50);
  const t = await timed(await answerThenDrain(request, errorAnswer()));
  expect(t.text).toBe(ANSWER);
  expect(t.end).toBeGreaterThanOrEqual(DRAIN_MS - 50);
  expect(t.end).toBeLessThan(DRAIN_MS + 500);
});

test("a silent client is waited for only DRAIN_IDLE_MS", async () => {
  const { request } = endlessRequest(10, 60_000);
  const t = await timed(await answerThenDrain(request, errorAnswer()));
  expect(t.end).toBeGreaterThanOrEqual(DRAIN_IDLE_MS - 50);
  expect(t.end).toBeLessThan(DRAIN_IDLE_MS + 500);
});

test(`at most ${MAX_DRAINING} connections drain at once: the next answer is sent at once, its body cancelled unread and its connection held for DRAIN_MS, then closed`, async () => {
  const drained = [...Array(MAX_DRAINING)].map(() => endlessRequest(10, 50));
  const draining = await Promise.all(drained.map((d) => answerThenDrain(d.request, errorAnswer())));
  const bodies = draining.map((r) => timed(r));
  const held = endlessRequest(10, 50);
  const extra = await answerThenDrain(held.request, errorAnswer());
  expect(extra.headers.get("connection")).toBe("close");
  const t = await timed(extra);
  expect(t.text).toBe(ANSWER);
  expect(t.first).toBeLessThan(100);
  expect(t.end).toBeGreaterThanOrEqual(DRAIN_MS - 50);
  expect(t.end).toBeLessThan(DRAIN_MS + 500);
  // Cancelled, not drained: nothing past what the stream queued before any read was taken.
  expect(held.pulled()).toBeLessThanOrEqual(10);
  for (const b of await Promise.all(bodies)) expect(b.end).toBeGreaterThanOrEqual(DRAIN_MS - 50);
  for (const d of drained) expect(d.pulled()).toBeGreaterThan(10);
  // Once they ended, a new answer drains again.
  const next = endlessRequest(10, 50);
  const again = await timed(await answerThenDrain(next.request, errorAnswer()));
  expect(again.end).toBeGreaterThanOrEqual(DRAIN_MS - 50);
  expect(next.pulled()).toBeGreaterThan(10);
}, 20_000);

test(`past ${MAX_DRAINING} draining and ${MAX_HOLDING} held connections, the next answer is sent whole with Connection: close and no drain`, async () => {
  const busy = await Promise.all(
    [...Array(MAX_DRAINING + MAX_HOLDING)].map(() =>
      answerThenDrain(endlessRequest(10, 50).request, errorAnswer()),
    ),
  );
  const bodies = busy.map((r) => timed(r));
  const extra = await answerThenDrain(endlessRequest(10, 50).request, errorAnswer());
  expect(extra.headers.get("connection")).toBe("close");
  const t = await timed(extra);
  expect(t.text).toBe(ANSWER);
  expect(t.end).toBeLessThan(200);
  for (const b of await Promise.all(bodies)) expect(b.end).toBeGreaterThanOrEqual(DRAIN_MS - 50);
}, 20_000);

test("a refused body declared longer than HOLD_ABOVE_BYTES is not drained: its answer is sent, the body cancelled and the connection held for DRAIN_MS", async () => {
  let pulled = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      pulled += 64 * 1024;
      c.enqueue(new Uint8Array(64 * 1024));
    },
  });
  const request = new Request("http://localhost/x", {
    method: "PUT",
    headers: { "content-length": String(16 * 1024 * 1024) },
    body,
    duplex: "half",
  } as RequestInit);
  expect(16 * 1024 * 1024).toBeGreaterThan(HOLD_ABOVE_BYTES);
  const r = await answerThenDrain(request, errorAnswer());
  expect(r.headers.get("connection")).toBe("close");
  const t = await timed(r);
  expect(t.text).toBe(ANSWER);
  expect(t.first).toBeLessThan(100);
  expect(t.end).toBeGreaterThanOrEqual(DRAIN_MS - 50);
  expect(t.end).toBeLessThan(DRAIN_MS + 500);
  expect(pulled).toBeLessThanOrEqual(64 * 1024);
});

test("Bun's request body backstop leaves room for the largest route limit plus a whole drain, so Bun never cuts a drain short", () => {
  for (const maxSingleUploadBytes of [1024 * 1024, 16 * 1024 * 1024, 268_435_456]) {
    const backstop = requestBodyBackstop({ maxSingleUploadBytes });
    // A refused body has been read up to its route's limit plus one piece (at most 1 MiB here)
    // when the drain starts, which then reads up to DRAIN_BYTES more.
    const largestRouteLimit = Math.max(
      maxSingleUploadBytes + 2 * 1024 * 1024,
      MAX_CHUNK_BYTES,
      MAX_JSON_BODY_BYTES,
    );
    expect(backstop).toBeGreaterThanOrEqual(largestRouteLimit + 1024 * 1024 + DRAIN_BYTES);
  }
});
