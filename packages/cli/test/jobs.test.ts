/** The job scheduler of `esync push` (src/cli/jobs.ts): how many transfers run at once. */
import { describe, expect, test } from "bun:test";
import { runJobs } from "@esync/client/jobs.ts";

/** Runs `runJobs` on items that take `ms` each, recording the most running at once. */
async function measure(small: number, large: number, jobs: number, largeJobs: number, stopAfter = Infinity) {
  let running = 0;
  let runningLarge = 0;
  let most = 0;
  let mostLarge = 0;
  const done: string[] = [];
  const items = (n: number, kind: string) => Array.from({ length: n }, (_, i) => `${kind}${i}`);
  await runJobs(
    items(small, "s"),
    items(large, "L"),
    jobs,
    largeJobs,
    async (item) => {
      const isLarge = item.startsWith("L");
      running++;
      if (isLarge) runningLarge++;
      most = Math.max(most, running);
      mostLarge = Math.max(mostLarge, runningLarge);
      await Bun.sleep(isLarge ? 15 : 2);
      running--;
      if (isLarge) runningLarge--;
      done.push(item);
    },
    () => done.length >= stopAfter,
  );
  return { most, mostLarge, done };
}

describe("runJobs", () => {
  test("runs every item once, never more than `jobs` at once nor more than `largeJobs` large ones", async () => {
    const r = await measure(60, 10, 8, 3);
    expect(r.done.length).toBe(70);
    expect(new Set(r.done).size).toBe(70);
    expect(r.most).toBe(8);
    expect(r.mostLarge).toBe(3);
  });

  test("only large items: `largeJobs` of them at once, all done", async () => {
    const r = await measure(0, 7, 8, 3);
    expect(r.done.length).toBe(7);
    expect(r.mostLarge).toBe(3);
  });

  test("fewer jobs than `largeJobs` bound the large items too", async () => {
    const r = await measure(5, 5, 2, 3);
    expect(r.done.length).toBe(10);
    expect(r.most).toBe(2);
  });

  test("starts nothing new once stop() is true", async () => {
    const r = await measure(100, 0, 4, 3, 10);
    expect(r.done.length).toBeLessThan(10 + 4);
  });
});
