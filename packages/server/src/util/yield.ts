/**
 * @module server/util/yield
 * Letting other work run in the middle of a long task.
 */

/**
 * Resolves after the event loop has run what was waiting (timers, I/O, other requests): a long
 * loop that awaits this every few steps does not hold the loop for its whole length.
 */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Time slices for a long loop: `tick()` yields to the event loop (`yieldToEventLoop`) once
 * `sliceMs` milliseconds have passed since the last yield, else resolves at once. A loop whose
 * steps cost more on a loaded machine still holds the loop at most about one slice at a time.
 */
export class TimeSlicer {
  private last = performance.now();

  constructor(private readonly sliceMs: number) {}

  /** Yields when the current slice is used up. */
  async tick(): Promise<void> {
    if (performance.now() - this.last < this.sliceMs) return;
    await yieldToEventLoop();
    this.last = performance.now();
  }
}
