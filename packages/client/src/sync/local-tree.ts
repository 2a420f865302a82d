/**
 * @module client/sync/local-tree
 * The local side of a sync: every regular file and symbolic link under the synced directory
 * (excludes applied), each with its fingerprint (size, mtime, mode, inode) and its content
 * hash, the `salted_hash` of docs/protocol.md#client-keys (of the file's bytes, or of a link's target path).
 * A hash is reused from the state database when the fingerprint has not moved since the last
 * sync, so an unchanged tree is not read again. Directories are listed too (empty ones are kept),
 * with their modification times.
 * `walkLocalTree` finds the same entries without hashing any (push hashes only the files the
 * server already has, to tell unchanged ones; a new file is hashed once, while it is sealed).
 *
 * Names (docs/unicode-names.md): a path goes on the wire in NFC, but every file-system call
 * uses the name as it is on disk (`LocalTree.disk` maps the NFC form to it when they differ,
 * as with the decomposed names macOS writes). Two names of one directory equal after NFC are
 * twins: the one already in NFC (else the first in byte order) is synced, the other is listed in
 * `skipped` with the reason.
 */
import { lstatSync, readlinkSync, type Stats } from "node:fs";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { toHex } from "../hash.ts";
import { type DiskNames, fileSaltedHash, onDiskPath } from "../local-files.ts";
import { normalizeRelativePath, saltedHash } from "../manifest.ts";
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

/** A file, symbolic link or empty-directory marker found locally, before its content is hashed. */
export interface LocalFile extends Fingerprint {
  /** Folder-relative path: NFC, `/` separators (the wire form). */
  rel: string;
  /** Absolute path as it is on disk (its name possibly not in NFC). */
  abs: string;
  kind: EntryKind;
  /** A link's target; undefined for files. */
  target?: string;
}

/** A file or symbolic link found locally, with its content hash. */
export interface LocalEntry extends LocalFile {
  /** `salted_hash`, 64 lowercase hex. */
  hash: string;
}

/** What a scan found (`E`: entries with their hash, or `LocalFile` from a walk without one). */
export interface LocalTree<E extends LocalFile = LocalEntry> {
  /** Files, links, and a `dir` marker entry (`DIR/.esync-dir`) for every empty directory. */
  entries: Map<string, E>;
  /** Every directory (relative), empty or not. */
  dirs: Set<string>;
  /** Each directory's modification time when scanned, Unix ms (docs/attributes.md#directory-modification-times). */
  dirTimes: Map<string, number>;
  /** What the scan cannot sync (sockets, devices, invalid paths, twins), by on-disk name. */
  skipped: SkippedPath[];
  /** NFC relative path → on-disk relative path, for the paths whose names differ. */
  disk: DiskNames;
}

/** A path a scan found and cannot sync. */
export interface SkippedPath {
  /** Relative path as it is on disk. */
  path: string;
  /** Why, in words ("not a regular file, link or directory", ...). */
  reason: string;
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

/**
 * The absolute on-disk path of `rel` (NFC) under `root`: the directory itself for an
 * empty-directory marker path; each name as `names` (from a scan) has it on disk.
 */
export function diskPath(root: string, rel: string, names?: DiskNames): string {
  return join(root, ...onDiskPath(markerDir(rel) ?? rel, names).split("/"));
}

/** The marker path of directory `dir` (`a/b` → `a/b/.esync-dir`). */
export function markerPath(dir: string): string {
  return `${dir}/${DIR_MARKER}`;
}

/**
 * Reads one path's entry without hashing it (null when absent, or not a file or link): one
 * `lstat` (and `readlink` for a link). A marker path reads the directory (an entry of kind `dir`
 * when it exists; whether it is empty is the scan's business).
 */
export function statLocalFile(root: string, rel: string, names?: DiskNames): LocalFile | null {
  const abs = diskPath(root, rel, names);
  const st = lstatOrNull(abs);
  if (!st) return null;
  if (markerDir(rel) !== null) {
    if (!st.isDirectory()) return null;
    return { rel, abs, kind: "dir", size: 0, mtimeMs: st.mtimeMs, mode: st.mode & 0o7777, ino: st.ino };
  }
  if (!(st.isFile() || st.isSymbolicLink())) return null;
  const fp: Fingerprint = { size: st.size, mtimeMs: st.mtimeMs, mode: st.mode & 0o7777, ino: st.ino };
  if (st.isSymbolicLink()) return { rel, abs, kind: "symlink", ...fp, target: readlinkSync(abs) };
  return { rel, abs, kind: "file", ...fp };
}

/** `lstat` of `abs`, or null when it cannot be read (gone since it was listed, or unreadable). */
function lstatOrNull(abs: string): Stats | null {
  try {
    return lstatSync(abs);
  } catch {
    return null;
  }
}

/**
 * The entry of `file` with its content hash: a link's and a directory marker's from the target
 * (empty for a marker), a file's reused from `known` when its fingerprint has not moved, else
 * read from disk.
 */
export async function hashLocalFile(file: LocalFile, ss58: string, known?: KnownHash): Promise<LocalEntry> {
  if (file.kind !== "file") return { ...file, hash: linkHash(ss58, file.target ?? "") };
  const k = known?.(file.rel);
  const hash =
    k && k.kind === file.kind && sameFingerprint(k, file)
      ? k.hash
      : toHex(await fileSaltedHash(file.abs, ss58, file.size));
  return { ...file, hash };
}

/**
 * Reads one path's entry with its hash (null when absent, or not a file or link); see
 * `statLocalFile` and `hashLocalFile`.
 */
export async function readLocalEntry(
  root: string,
  rel: string,
  ss58: string,
  known?: KnownHash,
  names?: DiskNames,
): Promise<LocalEntry | null> {
  const file = statLocalFile(root, rel, names);
  return file ? hashLocalFile(file, ss58, known) : null;
}

/**
 * Walks `root` (depth first, names sorted), applying `excludes`, without reading any file's
 * content: what `esync push` needs to decide which files to hash at all.
 */
export function walkLocalTree(root: string, excludes: Excludes): Promise<LocalTree<LocalFile>> {
  return walk(root, excludes, async (rel, names) => statLocalFile(root, rel, names));
}

/** Scans `root` (depth first, names sorted), applying `excludes`; each entry hashed as it is found. */
export function scanLocalTree(
  root: string,
  ss58: string,
  excludes: Excludes,
  known?: KnownHash,
): Promise<LocalTree> {
  return walk(root, excludes, (rel, names) => readLocalEntry(root, rel, ss58, known, names));
}

/** The walk of `walkLocalTree` and `scanLocalTree`: `load` reads the entry of a path, or null. */
async function walk<E extends LocalFile>(
  root: string,
  excludes: Excludes,
  load: (rel: string, names: DiskNames) => Promise<E | null>,
): Promise<LocalTree<E>> {
  const entries = new Map<string, E>();
  const dirs = new Set<string>();
  const dirTimes = new Map<string, number>();
  const skipped: SkippedPath[] = [];
  const disk = new Map<string, string>();
  /** Visits a directory (`prefix` NFC, `rawPrefix` on disk); returns how many entries under it are synced. */
  const visit = async (dir: string, prefix: string, rawPrefix: string): Promise<number> => {
    let count = 0;
    const list = await readdir(dir, { withFileTypes: true }).catch((e: NodeJS.ErrnoException) => {
      if (e.code === "ENOENT") return [];
      throw e;
    });
    list.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const kept = keptTwins(list.map((d) => d.name));
    for (const d of list) {
      const raw = rawPrefix ? `${rawPrefix}/${d.name}` : d.name;
      let rel: string;
      try {
        rel = normalizeRelativePath(prefix ? `${prefix}/${d.name}` : d.name);
      } catch (e) {
        skipped.push({ path: raw, reason: (e as Error).message });
        continue;
      }
      const twin = kept.get(d.name.normalize("NFC"));
      if (twin !== undefined && twin !== d.name) {
        if (!excludes.excluded(rel, d.isDirectory())) {
          const other = rawPrefix ? `${rawPrefix}/${twin}` : twin;
          skipped.push({
            path: raw,
            reason: `same name as ${JSON.stringify(other)} after Unicode normalisation (NFC); only that one is synced`,
          });
        }
        continue;
      }
      if (raw !== rel) disk.set(rel, raw);
      if (d.isDirectory()) {
        if (excludes.excluded(rel, true)) continue;
        dirs.add(rel);
        const st = lstatOrNull(join(dir, d.name));
        if (st?.isDirectory()) dirTimes.set(rel, st.mtimeMs);
        count++;
        if ((await visit(join(dir, d.name), rel, raw)) === 0) {
          const e = await load(markerPath(rel), disk);
          if (e) entries.set(e.rel, e);
        }
      } else if (d.isFile() || d.isSymbolicLink()) {
        if (excludes.excluded(rel)) continue;
        const e = await load(rel, disk);
        if (e) {
          entries.set(rel, e);
          count++;
        }
      } else if (!excludes.excluded(rel)) {
        skipped.push({ path: raw, reason: "not a regular file, symbolic link or directory" });
      }
    }
    return count;
  };
  await visit(root, "", "");
  return { entries, dirs, dirTimes, skipped, disk };
}

/**
 * For each NFC name shared by several of `names` (one directory's listing, sorted): the name
 * that is synced, the one already in NFC, else the first. Names without a twin are not in it.
 */
function keptTwins(names: readonly string[]): Map<string, string> {
  const groups = new Map<string, string[]>();
  for (const n of names) {
    const k = n.normalize("NFC");
    const g = groups.get(k);
    if (g) g.push(n);
    else groups.set(k, [n]);
  }
  const kept = new Map<string, string>();
  for (const [k, g] of groups) if (g.length > 1) kept.set(k, g.includes(k) ? k : (g[0] as string));
  return kept;
}
