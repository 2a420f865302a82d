/**
 * Scan bench (issue 27): files per second of the sync scan over a tree of small files.
 *
 *   bun packages/client/bench/scan.ts [--files 5000] [--rounds 3] [--root CHECKOUT] [--out FILE]
 *
 * Builds a tree of `--files` files (1–16 KiB of random bytes, 50 per directory, two levels
 * deep) once, then per round times `walkLocalTree` (stat only: what `push` does first) and
 * `scanLocalTree` without known hashes (every file read and hashed: a first `sync`) from
 * `src/sync/local-tree.ts` of `--root` (default this checkout; another checkout measures the
 * before). Prints the best round's files/s of both and writes JSON to
 * packages/client/bench/results/scan-<time>.json (or `--out`).
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    files: { type: "string", default: "5000" },
    rounds: { type: "string", default: "3" },
    root: { type: "string", default: join(import.meta.dir, "..") },
    out: { type: "string" },
  },
});
const files = Number(values.files);
const root = resolve(values.root as string);
const tree = await import(join(root, "src", "sync", "local-tree.ts"));
const { excludesFrom } = await import(join(root, "src", "sync", "excludes.ts"));
const SS58 = "5EPCUjPxiHAcNooYipQFWr9NmmXJKpNG5RhcntXwbtUySrgH";

const dir = mkdtempSync(join(tmpdir(), "esync-bench-scan-"));
try {
  for (let i = 0; i < files; i++) {
    const sub = join(dir, `d${Math.floor(i / 500)}`, `e${Math.floor(i / 50) % 10}`);
    if (i % 50 === 0) mkdirSync(sub, { recursive: true });
    writeFileSync(join(sub, `f${i}.bin`), randomBytes(1024 + ((i * 7919) % (15 * 1024))));
  }
  const excludes = excludesFrom([]);
  const best = { walk: Number.POSITIVE_INFINITY, scan: Number.POSITIVE_INFINITY };
  for (let r = 0; r < Number(values.rounds); r++) {
    let t = performance.now();
    const walked = await tree.walkLocalTree(dir, excludes);
    best.walk = Math.min(best.walk, performance.now() - t);
    t = performance.now();
    const scanned = await tree.scanLocalTree(dir, SS58, excludes);
    best.scan = Math.min(best.scan, performance.now() - t);
    const n = (x: { entries: Map<string, unknown> }) => [...x.entries.keys()].length;
    if (n(walked) < files || n(scanned) < files) throw new Error("the scan missed files");
  }
  const result = {
    bench: "scan",
    params: { files, root },
    at: new Date().toISOString(),
    walkMs: best.walk,
    scanMs: best.scan,
    walkFilesPerSec: (files / best.walk) * 1000,
    scanFilesPerSec: (files / best.scan) * 1000,
  };
  console.log(`${files} files (${root})`);
  console.log(
    `walk (stat only): ${Math.round(result.walkFilesPerSec)} files/s (${Math.round(best.walk)} ms)`,
  );
  console.log(
    `scan (hash all):  ${Math.round(result.scanFilesPerSec)} files/s (${Math.round(best.scan)} ms)`,
  );
  const out =
    (values.out as string | undefined) ??
    join(import.meta.dir, "results", `scan-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
  writeFileSync(out, JSON.stringify(result, null, 1));
  console.log(`wrote ${out}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
