/**
 * @module client/local-files
 * The local side of push, pull and sync: the `salted_hash` of a local file (to tell unchanged
 * files from changed ones without downloading anything), and the destination of a pulled
 * file, refused when it would land outside the destination directory. Walking a tree is
 * `sync/local-tree.ts`.
 */
import { readFileSync } from "node:fs";
import { mkdir, realpath } from "node:fs/promises";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { forEachChunk } from "./byte-stream.ts";
import { normalizeRelativePath, SaltedHasher, saltedHash } from "./manifest.ts";

/** Files up to this size are hashed from one read: 1 MiB. */
const WHOLE_READ_BYTES = 1024 * 1024;

/**
 * `salted_hash` (`BLAKE3(utf8(ss58) ‖ plaintext)`, docs/protocol.md#client-keys) of a local file: read in one
 * piece when `size` (as last seen) is at most 1 MiB, else streamed.
 */
export async function fileSaltedHash(path: string, ss58Address: string, size?: number): Promise<Uint8Array> {
  if (size !== undefined && size <= WHOLE_READ_BYTES) return saltedHash(ss58Address, readFileSync(path));
  const h = new SaltedHasher(ss58Address);
  await forEachChunk(Bun.file(path).stream(), (chunk) => {
    h.update(chunk);
  });
  return h.digest();
}

/** NFC relative path → the relative path as it is on disk, for names that differ (a scan's finding). */
export type DiskNames = ReadonlyMap<string, string>;

/**
 * The on-disk form of NFC relative path `rel`: its own mapping in `names`, else its parent's
 * with its last name as given (a new file inside a directory whose name is not NFC).
 */
export function onDiskPath(rel: string, names?: DiskNames): string {
  if (!names || names.size === 0) return rel;
  const hit = names.get(rel);
  if (hit !== undefined) return hit;
  const i = rel.lastIndexOf("/");
  return i < 0 ? rel : `${onDiskPath(rel.slice(0, i), names)}/${rel.slice(i + 1)}`;
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
 * NUL bytes, and a parent that resolves (through a symbolic link) outside `destRoot`. Names are
 * the on-disk ones `names` has for the path (see `onDiskPath`).
 */
export async function safeDestination(destRoot: string, rel: string, names?: DiskNames): Promise<string> {
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
  const target = resolve(root, ...onDiskPath(norm, names).split("/"));
  if (!inside(root, target) || target === root) throw new UnsafePathError(rel, "escapes the destination");
  const parent = resolve(target, "..");
  await mkdir(parent, { recursive: true });
  if (!inside(root, await realpath(parent)))
    throw new UnsafePathError(rel, "a parent directory is a link leading outside the destination");
  return target; // a symbolic link at `target` itself is replaced by the rename, never followed
}
