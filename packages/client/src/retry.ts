/**
 * @module client/retry
 * Retry with exponential backoff and full jitter for API calls. Only `ApiError`s that are
 * `retryable` (network errors, 5xx, 429) are retried; a `Retry-After` is honoured. A policy
 * bounds both the number of tries and the time spent: after `forMs` of failures the last
 * error is thrown marked `exhausted` (its `retriedForMs` set), and no outer `withRetry` tries it
 * again.
 */
import { ApiError } from "./api-error.ts";

/** How often and how patiently to retry. */
export interface RetryPolicy {
  /** Tries in all, the first included; default unbounded (the time budget decides). */
  attempts: number;
  /** Delay before the 2nd try, ms; doubles each time; default 250. */
  baseDelayMs: number;
  /** Cap of one delay, ms; default 10000. */
  maxDelayMs: number;
  /** Time budget from the first failure, ms: no try starts after it; default 120000 (2 min). */
  forMs: number;
}

/** Default retry budget of a call: 2 minutes. */
export const DEFAULT_RETRY_FOR_MS = 120_000;

export const DEFAULT_RETRY: RetryPolicy = {
  attempts: Number.POSITIVE_INFINITY,
  baseDelayMs: 250,
  maxDelayMs: 10_000,
  forMs: DEFAULT_RETRY_FOR_MS,
};

/** Waits `ms`, or rejects with the signal's reason when it aborts first. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export const realSleep: Sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });

/** Delay before try `attempt + 1` (attempt counts from 1): jittered exponential, or `Retry-After`. */
export function backoffDelay(policy: RetryPolicy, attempt: number, error?: ApiError): number {
  if (error?.extra.retryAfter !== undefined)
    return Math.min(error.extra.retryAfter * 1000, policy.maxDelayMs * 6);
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/** True when `e` should be tried again: retryable and not already given up on by an inner retry. */
export function shouldRetry(e: unknown): e is ApiError {
  return e instanceof ApiError && e.retryable && e.extra.retriedForMs === undefined;
}

/**
 * Runs `fn` until it succeeds, a non-retryable error is thrown, `policy.attempts` tries failed,
 * or `policy.forMs` have passed since the first failure (the wait before the last try is cut so
 * that it starts when they are up). The last error
 * is then thrown with `retriedForMs` set (how long was spent retrying, ms). `onRetry` hears
 * about each failure that will be retried; `now` is the clock (ms), for tests.
 */
export async function withRetry<T>(
  fn: (attempt: number) => Promise<T>,
  options: {
    policy?: Partial<RetryPolicy>;
    sleep?: Sleep;
    signal?: AbortSignal;
    onRetry?: (error: ApiError, attempt: number, delayMs: number) => void;
    now?: () => number;
  } = {},
): Promise<T> {
  const policy = { ...DEFAULT_RETRY, ...options.policy };
  const sleep = options.sleep ?? realSleep;
  const now = options.now ?? Date.now;
  let firstFailure: number | undefined;
  for (let attempt = 1; ; attempt++) {
    options.signal?.throwIfAborted();
    try {
      return await fn(attempt);
    } catch (e) {
      if (!shouldRetry(e)) throw e;
      if (options.signal?.aborted) throw options.signal.reason;
      const t = now();
      firstFailure ??= t;
      const remaining = firstFailure + policy.forMs - t;
      if (attempt >= policy.attempts || remaining <= 0) throw e.withRetriedFor(t - firstFailure);
      // The last wait is cut to the deadline, so that the last try comes when `forMs` is up.
      const delay = Math.min(backoffDelay(policy, attempt, e), remaining);
      options.onRetry?.(e, attempt, delay);
      await sleep(delay, options.signal);
    }
  }
}
