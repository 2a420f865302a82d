/**
 * @module files/paths
 * Plaintext relative paths of the product extensions (extensions.md §1.5, §1.6): folder-relative,
 * NFC, no leading or trailing `/`, no empty, `.` or `..` segment, at most `MAX_NAME_CHARS`
 * characters.
 */
import { MAX_NAME_CHARS } from "../manifest/manifest.ts";

/** True when `p` is a valid relative path of a file or directory (see the module comment). */
export function isRelativePath(p: string): boolean {
  if (p.length === 0 || p.length > MAX_NAME_CHARS) return false;
  if (p.normalize("NFC") !== p) return false;
  if (p.includes("\\") || p.includes("\0")) return false;
  return p.split("/").every((seg) => seg !== "" && seg !== "." && seg !== "..");
}

/** The last segment of a relative path. */
export function lastSegment(p: string): string {
  return p.slice(p.lastIndexOf("/") + 1);
}
