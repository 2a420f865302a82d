/**
 * The files under a folder that the repository's check scripts read: a depth-first walk that
 * leaves out `node_modules`, git metadata (`.git*`) and benchmark `results` folders, whose
 * contents are installed, generated or measured rather than written.
 */
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

/**
 * Paths (joined onto `dir`) of every file under `dir` for which `keep(path)` is true; a missing
 * `dir` gives none.
 */
export function treeFiles(dir: string, keep: (path: string) => boolean, out: string[] = []): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of names) {
    if (name === "node_modules" || name === "results" || name.startsWith(".git")) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) treeFiles(path, keep, out);
    else if (keep(path)) out.push(path);
  }
  return out;
}
