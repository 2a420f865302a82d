/**
 * @module client/sync/excludes
 * Which local paths sync, push and status leave out: the patterns of `DIR/.esyncignore`
 * (gitignore syntax, matched by the `ignore` package) plus every `--exclude PATTERN` (same
 * syntax), plus what esync itself keeps in the tree: the state directory `.esync/`, the
 * temporary `*.esync-part-*` files of downloads in progress, and local files named like the
 * empty-directory marker (`.esync-dir`), which only ever exists on the server.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import ignore, { type Ignore } from "ignore";
import { DIR_MARKER } from "./attributes.ts";

/** Name of the per-directory exclude file (gitignore syntax), at the root of the synced directory. */
export const IGNORE_FILE = ".esyncignore";
/** The state directory inside a synced directory (never synced). */
export const STATE_DIR = ".esync";

const ALWAYS = [`/${STATE_DIR}/`, "*.esync-part-*", DIR_MARKER];

/** Tests folder-relative paths (`/` separators) against the exclude rules. */
export interface Excludes {
  /** True when `rel` (a file, or a directory when `isDir`) is excluded. */
  excluded(rel: string, isDir?: boolean): boolean;
  /** The user's patterns (the file's and `--exclude`'s), for display. */
  readonly patterns: readonly string[];
}

/** Rules from `patterns` (gitignore syntax) plus esync's own. */
export function excludesFrom(patterns: readonly string[]): Excludes {
  const ig: Ignore = ignore()
    .add(ALWAYS)
    .add([...patterns]);
  return {
    patterns,
    excluded(rel: string, isDir = false): boolean {
      return ig.ignores(isDir ? `${rel}/` : rel);
    },
  };
}

/**
 * Rules for the directory `root`: its `.esyncignore` (absent = none) and `extra` patterns
 * (`--exclude`). Throws only on an unreadable ignore file other than a missing one.
 */
export async function loadExcludes(root: string, extra: readonly string[] = []): Promise<Excludes> {
  let lines: string[] = [];
  try {
    lines = (await readFile(join(root, IGNORE_FILE), "utf8")).split(/\r?\n/);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
  return excludesFrom([...lines.filter((l) => l.trim() !== ""), ...extra]);
}
