/**
 * @module protocol/paths
 * Plaintext relative paths of directory entries: an upload's path rules (`relativePathProblem`:
 * folder-relative, no leading or trailing `/`, no empty, `.` or `..` segment, no backslash, NUL or
 * other control character; at most `MAX_NAME_CHARS` characters), in NFC as well. Paths written on
 * file rows also agree with their hash and name (`pathRuleViolation`, docs/paths.md).
 */
import { MAX_NAME_CHARS, relativePathProblem } from "./manifest.ts";

/**
 * True when `p` passes the checks of an upload's `relative_path` (docs/protocol.md#manifest): "validated like
 * upload paths" (docs/protocol.md#relative-path-backfill).
 */
export function isUploadPath(p: string): boolean {
  return p.length <= MAX_NAME_CHARS && relativePathProblem(p) === null;
}

/** True when `p` is a valid directory entry: an upload path, in NFC (docs/protocol.md#folder-entries). */
export function isDirectoryPath(p: string): boolean {
  return isUploadPath(p) && p.normalize("NFC") === p;
}

/** The last segment of a relative path. */
export function lastSegment(p: string): string {
  return p.slice(p.lastIndexOf("/") + 1);
}
