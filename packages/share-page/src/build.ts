/**
 * @module share-page/build
 * Builds the recipient page's scripts from this directory's TypeScript with Bun's bundler, in
 * memory: once per process, on first use (the server serves them; nothing is written to disk,
 * so a fresh clone works with `bun run start`). `bun run build:share-page` runs the same build
 * and fails on any error, for CI.
 */
import { join } from "node:path";

/** The page's static files: name (as served under `/share/assets/`, or `sw.js`) → body. */
export interface SharePageAssets {
  "page.js": string;
  "argon2-worker.js": string;
  "sw.js": string;
  "page.css": string;
}

const ENTRIES = ["page.ts", "argon2-worker.ts", "sw.ts"] as const;

let built: Promise<SharePageAssets> | null = null;

/** Bundles the three scripts (browser target, minified); throws with the bundler's messages on failure. */
export async function buildSharePage(): Promise<SharePageAssets> {
  const result = await Bun.build({
    entrypoints: ENTRIES.map((e) => join(import.meta.dir, e)),
    target: "browser",
    format: "esm",
    minify: true,
    splitting: false,
    naming: "[name].[ext]",
  });
  if (!result.success) throw new AggregateError(result.logs, "the share page did not build");
  const out: Record<string, string> = {};
  for (const artifact of result.outputs) out[artifact.path.replace(/^.*\//, "")] = await artifact.text();
  for (const e of ENTRIES) {
    const name = e.replace(/\.ts$/, ".js");
    if (out[name] === undefined) throw new Error(`the share page build produced no ${name}`);
  }
  return {
    "page.js": out["page.js"] as string,
    "argon2-worker.js": out["argon2-worker.js"] as string,
    "sw.js": out["sw.js"] as string,
    "page.css": await Bun.file(join(import.meta.dir, "page.css")).text(),
  };
}

/** `buildSharePage` once per process (a failed build is retried on the next call). */
export function sharePageAssets(): Promise<SharePageAssets> {
  built ??= buildSharePage().catch((e) => {
    built = null;
    throw e;
  });
  return built;
}

if (import.meta.main) {
  const assets = await buildSharePage();
  for (const [name, body] of Object.entries(assets)) console.log(`${name}: ${body.length} bytes`);
}
