#!/usr/bin/env bun
/**
 * Fails when code cites a document outside the repository. The contract is written in the
 * project's own words in docs/protocol.md, and comments cite its anchors
 * (`docs/protocol.md#manifest`); a comment or string that points at the external contract
 * documents (`service-spec`, `complement.md`, `extensions.md`, `../shared/spec`) or at one of
 * their sections (`spec §4.9`, `extensions §1.5`, `complement §2`) is reported as `file:line`.
 * Scans packages/**\/*.ts, scripts/ and .ci/. Exits 1 when anything is found, 0 otherwise.
 *
 *   bun scripts/check-citations.ts
 */
import { readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { treeFiles } from "./tree-files.ts";

const ROOT = resolve(import.meta.dir, "..");

/** Citations of documents outside the repository. */
const OUTSIDE: readonly RegExp[] = [
  /service-spec/i,
  /complement\.md/i,
  /extensions\.md/i,
  /\.\.\/shared\/spec/i,
  /\b(?:spec|extensions|complement)\s*§/i,
];

/** This file names the patterns it looks for; it is the one file allowed to. */
const SELF = resolve(import.meta.path);

const files = [
  ...treeFiles(join(ROOT, "packages"), (p) => p.endsWith(".ts")),
  ...treeFiles(join(ROOT, "scripts"), () => true),
  ...treeFiles(join(ROOT, ".ci"), () => true),
].filter((p) => p !== SELF);

const found: string[] = [];
for (const file of files) {
  readFileSync(file, "utf8")
    .split("\n")
    .forEach((line, i) => {
      if (OUTSIDE.some((re) => re.test(line))) found.push(`${relative(ROOT, file)}:${i + 1}: ${line.trim()}`);
    });
}

for (const f of found) console.log(f);
if (found.length > 0) {
  console.error(
    `check-citations: ${found.length} line(s) cite a document outside the repository; cite docs/protocol.md#<anchor> (or another page under docs/) instead`,
  );
  process.exit(1);
}
console.log(`check-citations: ${files.length} files, no citation outside the repository`);
