/**
 * @module client/sync/watch
 * `esync sync --watch`: runs sync passes for as long as it is not stopped. A pass starts
 * `debounceMs` after the last filesystem event under the directory (chokidar), or when the
 * remote poll interval elapses; a pass never overlaps another (events during a pass schedule
 * one more). A pass that fails because the server is unreachable or failing (network error,
 * 5xx) is retried with backoff (1 s doubling to 30 s), so a server restart only delays sync.
 */

import { relative, sep } from "node:path";
import { type FSWatcher, watch } from "chokidar";
import { ApiError } from "../api-error.ts";
import type { Excludes } from "./excludes.ts";

/** Options of `watchLoop`. */
export interface WatchOptions {
  root: string;
  excludes: Excludes;
  /** Runs one pass; throwing a retryable error triggers a backoff retry, others end the loop. */
  pass: () => Promise<void>;
  /** Quiet time after the last local event before a pass, ms (default 300). */
  debounceMs?: number;
  /** Remote poll interval, ms (default 5000). */
  pollMs?: number;
  signal: AbortSignal;
  /** A pass failed and will be retried in `delayMs`. */
  onRetry?: (error: unknown, delayMs: number) => void;
}

/** True for failures that a later attempt can get past: no connection, 5xx, 429. */
export function isRetryable(e: unknown): boolean {
  return e instanceof ApiError && (e.status === 0 || e.status >= 500 || e.status === 429);
}

/** Runs passes until `signal` aborts (resolves) or a pass fails with a non-retryable error (rejects). */
export async function watchLoop(o: WatchOptions): Promise<void> {
  const debounce = o.debounceMs ?? 300;
  const poll = o.pollMs ?? 5000;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let running = false;
  let again = false;
  let backoff = 0;
  let finish: (e?: unknown) => void = () => {};
  const done = new Promise<void>((resolve, reject) => {
    finish = (e) => (e === undefined ? resolve() : reject(e));
  });

  const schedule = (delay: number) => {
    if (o.signal.aborted) return;
    if (running) {
      again = true;
      return;
    }
    if (timer) clearTimeout(timer);
    timer = setTimeout(run, delay);
  };
  const run = async () => {
    timer = null;
    running = true;
    again = false;
    let next = poll;
    try {
      await o.pass();
      backoff = 0;
    } catch (e) {
      if (o.signal.aborted) return finish();
      if (!isRetryable(e)) return finish(e);
      backoff = Math.min(backoff === 0 ? 1000 : backoff * 2, 30_000);
      next = backoff;
      o.onRetry?.(e, backoff);
    } finally {
      running = false;
    }
    schedule(again && backoff === 0 ? debounce : next);
  };

  const watcher: FSWatcher = watch(o.root, {
    ignoreInitial: true,
    followSymlinks: false,
    ignored: (path: string) => {
      const rel = relative(o.root, path).split(sep).join("/");
      if (rel === "" || rel.startsWith("..")) return false;
      // Without stats a path may be a file or a directory: a match either way is not watched.
      return o.excludes.excluded(rel) || o.excludes.excluded(rel, true);
    },
  });
  watcher.on("all", () => schedule(debounce));
  watcher.on("error", () => schedule(debounce));
  const stop = () => {
    if (timer) clearTimeout(timer);
    finish();
  };
  o.signal.addEventListener("abort", stop, { once: true });
  schedule(0);
  try {
    await done;
  } finally {
    o.signal.removeEventListener("abort", stop);
    if (timer) clearTimeout(timer);
    await watcher.close();
  }
}
