/**
 * Temporary directories of the test suite that are removed when the test process exits, even
 * when a test file forgets (or cannot, after a crash test) to clean up: the suite must not
 * leave data under /tmp.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const owned = new Set<string>();
let hooked = false;

/** Removes every directory made by `tempDir` so far (also run at process exit). */
export function removeTempDirs(): void {
  for (const dir of owned) rmSync(dir, { recursive: true, force: true });
  owned.clear();
}

/** A new directory `<tmpdir>/<prefix>XXXXXX`, removed at the latest when the process exits. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  owned.add(dir);
  if (!hooked) {
    hooked = true;
    process.on("exit", removeTempDirs);
  }
  return dir;
}
