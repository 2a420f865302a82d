/**
 * The keeper of a file-backed download body (src/http/response-timer.ts `fileBodyTimer`): it keeps
 * the connection timer armed while the body is being sent, stops when the response is done, and
 * gives up after the time the body takes at the minimum rate, leaving the header timeout.
 */
import { expect, test } from "bun:test";
import {
  FILE_BODY_KEEPER_MS,
  fileBodyTimer,
  MAX_TIMER_SECONDS,
  registerTimer,
  timerClaimed,
} from "../../src/http/response-timer.ts";

function control(opts: { headerTimeoutSeconds: number; minBytesPerSecond: number }) {
  const sets: number[] = [];
  const state = { live: true };
  const request = new Request("http://127.0.0.1/download/x");
  registerTimer(request, {
    set: (s) => sets.push(s),
    live: () => state.live,
    ...opts,
  });
  return { request, sets, state };
}

test("a file body claims the timer and re-arms it to the longest timer until the response is done", async () => {
  const c = control({ headerTimeoutSeconds: 1, minBytesPerSecond: 0 });
  fileBodyTimer(c.request, 1024 * 1024 * 1024);
  expect(timerClaimed(c.request)).toBe(true);
  await Bun.sleep(FILE_BODY_KEEPER_MS * 3 + 100);
  expect(c.sets.length).toBeGreaterThanOrEqual(3);
  expect(c.sets.every((s) => s === MAX_TIMER_SECONDS)).toBe(true);
  c.state.live = false;
  await Bun.sleep(FILE_BODY_KEEPER_MS + 100);
  const after = c.sets.length;
  await Bun.sleep(FILE_BODY_KEEPER_MS * 2 + 100);
  expect(c.sets.length).toBe(after);
});

test("the keeper gives up after the body's time at the minimum rate plus a header timeout, leaving the header timeout", async () => {
  // 1 s of header timeout + 1000 bytes at 1000 B/s: about 2 s of keeping.
  const c = control({ headerTimeoutSeconds: 1, minBytesPerSecond: 1000 });
  fileBodyTimer(c.request, 1000);
  await Bun.sleep(1500);
  expect(c.sets.at(-1)).toBe(MAX_TIMER_SECONDS);
  await Bun.sleep(1500);
  expect(c.sets.at(-1)).toBe(1);
  const after = c.sets.length;
  await Bun.sleep(FILE_BODY_KEEPER_MS * 2 + 100);
  expect(c.sets.length).toBe(after);
});

test("a request without a registered timer is left alone", () => {
  const request = new Request("http://127.0.0.1/download/y");
  fileBodyTimer(request, 10);
  expect(timerClaimed(request)).toBe(false);
});
