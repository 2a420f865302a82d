/**
 * @module client/jobs
 * Runs many transfers with a bound on how many run at once, and a lower bound on how many of
 * them are large: small items fill every job, large ones take at most `largeJobs` of them.
 */

/**
 * Runs `run` on every item of `small` and `large`, at most `jobs` at once, of which at most
 * `largeJobs` on items of `large`. Stops starting new items once `stop()` is true. A job that
 * finds only large items left while `largeJobs` are running ends: those jobs take the rest.
 * Resolves when every started item has finished; `run` should not throw (a throw rejects after
 * the other jobs end their current item).
 */
export async function runJobs<T>(
  small: readonly T[],
  large: readonly T[],
  jobs: number,
  largeJobs: number,
  run: (item: T) => Promise<void>,
  stop: () => boolean = () => false,
): Promise<void> {
  const smallLeft = [...small];
  const largeLeft = [...large];
  const largeCap = Math.min(jobs, largeJobs);
  let largeRunning = 0;
  const job = async () => {
    while (!stop()) {
      if (largeLeft.length > 0 && largeRunning < largeCap) {
        largeRunning++;
        try {
          await run(largeLeft.shift() as T);
        } finally {
          largeRunning--;
        }
      } else if (smallLeft.length > 0) await run(smallLeft.shift() as T);
      else return;
    }
  };
  await Promise.all(Array.from({ length: Math.min(jobs, small.length + large.length) }, job));
}
