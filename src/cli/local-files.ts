/**
 * @module cli/local-files
 * The local side of push and pull: walking a directory tree into relative paths, the
 * `salted_hash` of a local file (to tell unchanged files from changed ones without
 * downloading anything), and the destination of a pulled file, refused when it would land
 * outside the destination directory.
 */
import { lstat, mkdir, readdir, realpath } from "node:fs/promises";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { forEachChunk } from "../client/byte-stream.ts";
import { bytesEqual } from "../client/hash.ts";
import { normalizeRelativePath, SaltedHasher } from "../client/manifest.ts";

/** A regular file found under the pushed directory. */
export interface LocalFile {
  /** Path inside the folder: NFC, `/` separators. */
  rel: string;
  /** Absolute path on disk. */
  abs: string;
  size: number;
  mtimeMs: number;
}

/** What a walk found besides regular files. */
export interface WalkResult {
  files: LocalFile[];
  /** Relative paths of symbolic links, sockets, devices and other non-regular entries (not pushed). */
  skipped: string[];
}

/** Suffix of the temporary files `downloadFile` writes before its rename; never pushed. */
const PART_FILE = /\.esync-part-[0-9a-f]+$/;

/**
 * Every regular file under `root` (depth first, names sorted), as folder-relative paths.
 * Symbolic links are not followed and are reported in `skipped`, as are other non-regular
 * entries and leftover partial downloads.
 */
export async function walkDirectory(root: string): Promise<WalkResult> {
  const files: LocalFile[] = [];
  const skipped: string[] = [];
  const visit = async (dir: string, prefix: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const abs = join(dir, e.name);
      const relRaw = prefix ? `${prefix}/${e.name}` : e.name;
      if (e.isDirectory()) {
        await visit(abs, relRaw);
      } else if (e.isFile() && !PART_FILE.test(e.name)) {
        const st = await lstat(abs);
        files.push({ rel: normalizeRelativePath(relRaw), abs, size: st.size, mtimeMs: st.mtimeMs });
      } else {
        skipped.push(relRaw);
      }
    }
  };
  await visit(resolve(root), "");
  return { files, skipped };
}

/** `salted_hash` (`BLAKE3(utf8(ss58) ‖ plaintext)`, complement §6) of a local file, streamed. */
export async function fileSaltedHash(path: string, ss58Address: string): Promise<Uint8Array> {
  const h = new SaltedHasher(ss58Address);
  await forEachChunk(Bun.file(path).stream(), (chunk) => {
    h.update(chunk);
  });
  return h.digest();
}

/** True when the local file has `size` bytes and the given `salted_hash`. */
export async function sameContent(
  path: string,
  ss58Address: string,
  size: number,
  saltedHash: readonly number[],
): Promise<boolean> {
  let st: Awaited<ReturnType<typeof lstat>>;
  try {
    st = await lstat(path);
  } catch {
    return false;
  }
  if (!st.isFile() || st.size !== size) return false;
  return bytesEqual(await fileSaltedHash(path, ss58Address), Uint8Array.from(saltedHash));
}

/** A remote path that must not be written: absolute, with `..`, or leading outside the destination. */
export class UnsafePathError extends Error {
  constructor(path: string, why: string) {
    super(`refusing to write ${JSON.stringify(path)}: ${why}`);
    this.name = "UnsafePathError";
  }
}

/** True when `child` is `parent` or inside it (both absolute, resolved). */
function inside(parent: string, child: string): boolean {
  const r = relative(parent, child);
  return r === "" || (!r.startsWith(`..${sep}`) && r !== ".." && !isAbsolute(r));
}

/**
 * The absolute destination of remote path `rel` under `destRoot` (which must exist), creating
 * its parent directories. Refuses (`UnsafePathError`) absolute paths, `..` or empty segments,
 * NUL bytes, and a parent that resolves (through a symbolic link) outside `destRoot`.
 */
export async function safeDestination(destRoot: string, rel: string): Promise<string> {
  if (rel.includes("\0")) throw new UnsafePathError(rel, "contains a NUL byte");
  if (rel.startsWith("/") || /^[A-Za-z]:[\\/]/.test(rel)) throw new UnsafePathError(rel, "absolute path");
  if (rel.split(/[\\/]/).some((s) => s === "..")) throw new UnsafePathError(rel, "contains a '..' segment");
  let norm: string;
  try {
    norm = normalizeRelativePath(rel);
  } catch (e) {
    throw new UnsafePathError(rel, (e as Error).message);
  }
  const root = await realpath(destRoot);
  const target = resolve(root, ...norm.split("/"));
  if (!inside(root, target) || target === root) throw new UnsafePathError(rel, "escapes the destination");
  const parent = resolve(target, "..");
  await mkdir(parent, { recursive: true });
  if (!inside(root, await realpath(parent)))
    throw new UnsafePathError(rel, "a parent directory is a link leading outside the destination");
  return target; // a symbolic link at `target` itself is replaced by the rename, never followed
}
