/**
 * @module client/retry
 * Retry with exponential backoff and full jitter for API calls. Only `ApiError`s that are
 * `retryable` (network errors, 5xx, 429) are retried; a `Retry-After` is honoured.
 */
import { ApiError } from "./api-error.ts";

/** How often and how patiently to retry. */
export interface RetryPolicy {
  /** Tries in all, the first included; default 5. */
  attempts: number;
  /** Delay before the 2nd try, ms; doubles each time; default 250. */
  baseDelayMs: number;
  /** Cap of one delay, ms; default 10000. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, baseDelayMs: 250, maxDelayMs: 10_000 };

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

/**
 * Runs `fn` until it succeeds, a non-retryable error is thrown, or `policy.attempts` tries
 * failed (the last error is thrown). `onRetry` hears about each failure that will be retried.
 */
export async function withRetry<T>(
  fn: (attempt: number) => Promise<T>,
  options: {
    policy?: RetryPolicy;
    sleep?: Sleep;
    signal?: AbortSignal;
    onRetry?: (error: ApiError, attempt: number, delayMs: number) => void;
  } = {},
): Promise<T> {
  const policy = options.policy ?? DEFAULT_RETRY;
  const sleep = options.sleep ?? realSleep;
  for (let attempt = 1; ; attempt++) {
    options.signal?.throwIfAborted();
    try {
      return await fn(attempt);
    } catch (e) {
      if (!(e instanceof ApiError) || !e.retryable || attempt >= policy.attempts) throw e;
      if (options.signal?.aborted) throw options.signal.reason;
      const delay = backoffDelay(policy, attempt, e);
      options.onRetry?.(e, attempt, delay);
      await sleep(delay, options.signal);
    }
  }
}
