/**
 * @module server/http/headers
 * Request headers the controllers parse into typed values for the services: single-range
 * `Range` (RFC 9110 §14.2: `bytes=a-b`, `bytes=a-`, `bytes=-n`) and the multipart boundary of
 * `Content-Type` (RFC 7578).
 */

/** A parsed `Range`: bytes `start`..`end` inclusive (`end` absent: to the end), or the last `suffix` bytes. */
export type ByteRange = { start: number; end?: number } | { suffix: number };

/**
 * Parses a `Range` header value. Absent, malformed and multi-range values give null (the whole
 * body is served, as RFC 9110 allows), as does `a-b` with `b < a`.
 */
export function parseRangeHeader(header: string | undefined | null): ByteRange | null {
  if (header === undefined || header === null) return null;
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m) return null;
  const [, a, b] = m as unknown as [string, string, string];
  if (a === "" && b === "") return null;
  if (a === "") return { suffix: Number(b) };
  if (b !== "" && Number(b) < Number(a)) return null;
  return b === "" ? { start: Number(a) } : { start: Number(a), end: Number(b) };
}

/**
 * Resolves `range` against a body of `size` bytes: `[start, end)` (end clamped to `size`), null
 * for the whole body, or `"unsatisfiable"` (start at or past the end, an empty suffix, any range
 * of an empty body).
 */
export function resolveRange(
  range: ByteRange | null,
  size: number,
): [number, number] | null | "unsatisfiable" {
  if (range === null) return null;
  if ("suffix" in range) {
    if (range.suffix === 0 || size === 0) return "unsatisfiable";
    return [Math.max(0, size - range.suffix), size];
  }
  if (range.start >= size) return "unsatisfiable";
  return [range.start, range.end === undefined ? size : Math.min(range.end + 1, size)];
}

/**
 * The `boundary` parameter of a `multipart/form-data` Content-Type (quotes removed), or null
 * when the type is another one or has no boundary.
 */
export function multipartBoundary(contentType: string | undefined | null): string | null {
  if (!contentType || !/^\s*multipart\/form-data\s*;/i.test(contentType)) return null;
  const m = /;\s*boundary\s*=\s*(?:"([^"]{1,200})"|([^\s;"]{1,200}))/i.exec(contentType);
  return m ? (m[1] ?? m[2] ?? null) : null;
}
