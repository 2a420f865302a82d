/**
 * @module util/yield
 * Letting other work run in the middle of a long task.
 */

/**
 * Resolves after the event loop has run what was waiting (timers, I/O, other requests): a long
 * loop that awaits this every few steps does not hold the loop for its whole length.
 */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
