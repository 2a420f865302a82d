/** @module server/util/clock  Time source, passed in so tests can move time. */

/** Gives the current time in Unix seconds. */
export interface Clock {
  /** Current Unix time in whole seconds. */
  now(): number;
}

/** The real clock. */
export const systemClock: Clock = { now: () => Math.floor(Date.now() / 1000) };

/** A clock tests can set and advance; starts at `start` Unix seconds. */
export class ManualClock implements Clock {
  constructor(private t: number = Math.floor(Date.now() / 1000)) {}
  now(): number {
    return this.t;
  }
  /** Moves time forward by `seconds`. */
  advance(seconds: number): void {
    this.t += seconds;
  }
}
