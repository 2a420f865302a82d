/**
 * @module sync/local-tree
 * The local side of a sync: every regular file and symbolic link under the synced directory
 * (excludes applied), each with its fingerprint (size, mtime, mode, inode) and its content
 * hash, the `salted_hash` of complement §6 (of the file's bytes, or of a link's target path).
 * A hash is reused from the state database when the fingerprint has not moved since the last
 * sync, so an unchanged tree is not read again. Directories are listed too (empty ones are kept).
 */
import { lstat, readdir, readlink } from "node:fs/promises";
import { join } from "node:path";
import { fileSaltedHash } from "../cli/local-files.ts";
import { toHex } from "../client/hash.ts";
import { normalizeRelativePath, saltedHash } from "../client/manifest.ts";
import { DIR_MARKER, type EntryKind, markerDir } from "./attributes.ts";
import type { Excludes } from "./excludes.ts";

/** What identifies a local file's state without reading it. */
export interface Fingerprint {
  size: number;
  /** Unix milliseconds. */
  mtimeMs: number;
  /** Permission bits (`mode & 0o7777`). */
  mode: number;
  ino: number;
}

/** A file or symbolic link found locally. */
export interface LocalEntry extends Fingerprint {
  /** Folder-relative path: NFC, `/` separators. */
  rel: string;
  abs: string;
  kind: EntryKind;
  /** `salted_hash`, 64 lowercase hex. */
  hash: string;
  /** A link's target; undefined for files. */
  target?: string;
}

/** What a scan found. */
export interface LocalTree {
  /** Files, links, and a `dir` marker entry (`DIR/.esync-dir`) for every empty directory. */
  entries: Map<string, LocalEntry>;
  /** Every directory (relative), empty or not. */
  dirs: Set<string>;
  /** Sockets, devices and paths that are not valid folder paths; never synced. */
  skipped: string[];
}

/** A previously seen fingerprint and its hash, to skip rehashing (the state database provides it). */
export type KnownHash = (rel: string) => (Fingerprint & { kind: EntryKind; hash: string }) | undefined;

/** True when two fingerprints describe the same on-disk state. */
export function sameFingerprint(a: Fingerprint, b: Fingerprint): boolean {
  return a.size === b.size && Math.abs(a.mtimeMs - b.mtimeMs) < 1 && a.mode === b.mode && a.ino === b.ino;
}

/** `salted_hash` (hex) of a symbolic link's content: its target path in UTF-8. */
export function linkHash(ss58: string, target: string): string {
  return toHex(saltedHash(ss58, new TextEncoder().encode(target)));
}

/** The on-disk path of `rel`: the directory itself for an empty-directory marker path. */
export function diskPath(root: string, rel: string): string {
  return join(root, ...(markerDir(rel) ?? rel).split("/"));
}

/** The marker path of directory `dir` (`a/b` → `a/b/.esync-dir`). */
export function markerPath(dir: string): string {
  return `${dir}/${DIR_MARKER}`;
}

/**
 * Reads one path's entry (null when absent, or not a file or link). A marker path reads the
 * directory (an entry of kind `dir` when it exists; whether it is empty is the scan's business).
 */
export async function readLocalEntry(
  root: string,
  rel: string,
  ss58: string,
  known?: KnownHash,
): Promise<LocalEntry | null> {
  const abs = diskPath(root, rel);
  const st = await lstat(abs).catch(() => null);
  if (!st) return null;
  if (markerDir(rel) !== null) {
    if (!st.isDirectory()) return null;
    const fp: Fingerprint = { size: 0, mtimeMs: st.mtimeMs, mode: st.mode & 0o7777, ino: st.ino };
    return { rel, abs, kind: "dir", ...fp, hash: linkHash(ss58, "") };
  }
  if (!(st.isFile() || st.isSymbolicLink())) return null;
  const kind: EntryKind = st.isSymbolicLink() ? "symlink" : "file";
  const fp: Fingerprint = { size: st.size, mtimeMs: st.mtimeMs, mode: st.mode & 0o7777, ino: st.ino };
  const k = known?.(rel);
  if (kind === "symlink") {
    const target = await readlink(abs);
    return { rel, abs, kind, ...fp, hash: linkHash(ss58, target), target };
  }
  const hash =
    k && k.kind === kind && sameFingerprint(k, fp) ? k.hash : toHex(await fileSaltedHash(abs, ss58, st.size));
  return { rel, abs, kind, ...fp, hash };
}

/** Scans `root` (depth first, names sorted), applying `excludes`. */
export async function scanLocalTree(
  root: string,
  ss58: string,
  excludes: Excludes,
  known?: KnownHash,
): Promise<LocalTree> {
  const entries = new Map<string, LocalEntry>();
  const dirs = new Set<string>();
  const skipped: string[] = [];
  /** Visits a directory; returns how many entries under it are synced. */
  const visit = async (dir: string, prefix: string): Promise<number> => {
    let count = 0;
    const list = await readdir(dir, { withFileTypes: true }).catch((e: NodeJS.ErrnoException) => {
      if (e.code === "ENOENT") return [];
      throw e;
    });
    list.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const d of list) {
      const raw = prefix ? `${prefix}/${d.name}` : d.name;
      let rel: string;
      try {
        rel = normalizeRelativePath(raw);
      } catch {
        skipped.push(raw);
        continue;
      }
      if (d.isDirectory()) {
        if (excludes.excluded(rel, true)) continue;
        dirs.add(rel);
        count++;
        if ((await visit(join(dir, d.name), rel)) === 0) {
          const e = await readLocalEntry(root, markerPath(rel), ss58);
          if (e) entries.set(e.rel, e);
        }
      } else if (d.isFile() || d.isSymbolicLink()) {
        if (excludes.excluded(rel)) continue;
        const e = await readLocalEntry(root, rel, ss58, known);
        if (e) {
          entries.set(rel, e);
          count++;
        }
      } else if (!excludes.excluded(rel)) {
        skipped.push(rel);
      }
    }
    return count;
  };
  await visit(root, "");
  return { entries, dirs, skipped };
}
