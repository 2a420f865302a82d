#!/usr/bin/env bun
/**
 * Checks the project's documentation links: every relative link in README.md, CHANGELOG.md and
 * docs/*.md must name a file that exists, and a `#anchor` on a Markdown target must name one of
 * its headings (GitHub's slugs). Citations in code (`docs/<page>.md#<anchor>` in packages/**,
 * scripts/ and .ci/) are checked the same way. Prints `file:line: problem` for each broken link
 * and exits 1 when there is any, 0 otherwise.
 *
 *   bun scripts/check-doc-links.ts
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { treeFiles } from "./tree-files.ts";

const ROOT = resolve(import.meta.dir, "..");

/** GitHub's heading slug: lower case, punctuation other than `-` and `_` dropped, spaces to `-`. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

const anchorCache = new Map<string, Set<string>>();

/** The anchors of a Markdown file: one per heading, repeated headings numbered `-1`, `-2`, ... */
function anchorsOf(file: string): Set<string> {
  const cached = anchorCache.get(file);
  if (cached) return cached;
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const m = !fenced && /^#{1,6}\s+(.*)$/.exec(line);
    if (!m) continue;
    const base = slug(m[1] ?? "");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  anchorCache.set(file, anchors);
  return anchors;
}

/** Checks one link target relative to `from`; returns the problem or null. */
function check(from: string, target: string): string | null {
  const [path = "", anchor] = target.split("#", 2);
  const file = path === "" ? from : resolve(dirname(from), decodeURIComponent(path));
  if (!existsSync(file)) return `${target}: no such file`;
  if (anchor && file.endsWith(".md") && !anchorsOf(file).has(anchor))
    return `${target}: no heading #${anchor}`;
  return null;
}

const problems: string[] = [];
const docs = [
  join(ROOT, "README.md"),
  join(ROOT, "CHANGELOG.md"),
  ...treeFiles(join(ROOT, "docs"), (p) => p.endsWith(".md")),
];
for (const file of docs) {
  let fenced = false;
  readFileSync(file, "utf8")
    .split("\n")
    .forEach((line, i) => {
      if (line.startsWith("```")) fenced = !fenced;
      if (fenced) return;
      for (const m of line.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1] ?? "";
        if (/^[a-z]+:/i.test(target)) continue;
        const problem = check(file, target);
        if (problem) problems.push(`${relative(ROOT, file)}:${i + 1}: ${problem}`);
      }
    });
}

const code = [
  ...treeFiles(join(ROOT, "packages"), (p) => /\.(ts|tsx|js|sh)$/.test(p)),
  ...treeFiles(join(ROOT, "scripts"), () => true),
  ...treeFiles(join(ROOT, ".ci"), () => true),
];
for (const file of code) {
  readFileSync(file, "utf8")
    .split("\n")
    .forEach((line, i) => {
      for (const m of line.matchAll(/(?<!["'])\bdocs\/([\w./-]+\.md)((?:#[\w-]+)?)((?:,\s*#[\w-]+)*)/g)) {
        const page = join(ROOT, "docs", m[1] ?? "");
        const anchors = [m[2], ...(m[3] ?? "").split(",")]
          .map((a) => (a ?? "").trim())
          .filter((a) => a.startsWith("#"));
        for (const anchor of anchors.length > 0 ? anchors : [""]) {
          const problem = check(page, `${page}${anchor}`);
          if (problem) problems.push(`${relative(ROOT, file)}:${i + 1}: ${problem.replace(`${ROOT}/`, "")}`);
        }
      }
    });
}

for (const p of problems) console.log(p);
if (problems.length > 0) {
  console.error(`check-doc-links: ${problems.length} broken link(s)`);
  process.exit(1);
}
console.log(`check-doc-links: ${docs.length} docs and ${code.length} code files, every link resolves`);
