/**
 * @module server/http/conditional
 * Conditional requests on a download (RFC 9110 §13): `If-Match`, `If-None-Match` and `If-Range`
 * against the file's strong entity tag, the revision id as quoted lowercase hex. Pure: headers are
 * parsed into `Preconditions` by the controller, and the files service evaluates them against the
 * row it reads, in the same lookup that opens the download (so a replace between the two cannot
 * splice revisions).
 *
 * Evaluation order (RFC 9110 §13.2.2), for GET and HEAD:
 * 1. `If-Match` present and no listed tag strongly matches (or `*` with no file): 412.
 * 2. `If-None-Match` present and a listed tag weakly matches (or `*`): 304.
 * 3. `Range` present with `If-Range`: the range is honoured only when `If-Range` is a strong tag
 *    equal to the current one; otherwise (another tag, a weak tag or an HTTP date, since no
 *    `Last-Modified` is sent) the whole current file is sent with 200 (§13.1.5).
 */

/** One entity tag as written in a header: `"abc"` (strong) or `W/"abc"` (weak). */
export interface EntityTag {
  weak: boolean;
  /** The opaque tag without quotes. */
  opaque: string;
}

/** An `If-Match`/`If-None-Match` value: `*` or a list of tags. Malformed members are skipped. */
export type TagCondition = "*" | EntityTag[];

/** The conditional headers of one request, parsed. Null = header absent. */
export interface Preconditions {
  ifMatch: TagCondition | null;
  ifNoneMatch: TagCondition | null;
  /** An entity tag, or `"date"` when If-Range carries an HTTP date (which never matches here). */
  ifRange: EntityTag | "date" | null;
}

/** What to do with a download after its preconditions. */
export type ConditionalOutcome = "precondition_failed" | "not_modified" | "full" | "as_requested";

/** The strong entity tag of a revision: its id in lowercase hex, quoted. */
export function revisionEtag(revisionHex: string): string {
  return `"${revisionHex.toLowerCase()}"`;
}

const TAG = /^(W\/)?"([\x21\x23-\x7e\x80-\xff]*)"$/;

/** Parses one entity tag; null when malformed. */
export function parseEntityTag(raw: string): EntityTag | null {
  const m = TAG.exec(raw.trim());
  if (!m) return null;
  return { weak: m[1] !== undefined, opaque: m[2] ?? "" };
}

/** Parses an `If-Match`/`If-None-Match` value (null when absent). */
export function parseTagCondition(header: string | null): TagCondition | null {
  if (header === null) return null;
  if (header.trim() === "*") return "*";
  const tags: EntityTag[] = [];
  // Members are quoted tags (which may hold commas) or, when malformed, runs up to a comma.
  for (const part of header.match(/(?:W\/)?"[^"]*"|[^,\s][^,]*/g) ?? []) {
    const tag = parseEntityTag(part);
    if (tag) tags.push(tag);
  }
  return tags;
}

/** Parses the conditional headers of a request (values as given, null when absent). */
export function parsePreconditions(headers: {
  ifMatch: string | null;
  ifNoneMatch: string | null;
  ifRange: string | null;
}): Preconditions {
  const ifRange = headers.ifRange === null ? null : (parseEntityTag(headers.ifRange) ?? "date");
  return {
    ifMatch: parseTagCondition(headers.ifMatch),
    ifNoneMatch: parseTagCondition(headers.ifNoneMatch),
    ifRange,
  };
}

/** Strong comparison (§8.8.3.2): both strong and equal. */
function strongMatch(a: EntityTag, b: EntityTag): boolean {
  return !a.weak && !b.weak && a.opaque === b.opaque;
}

/**
 * Evaluates `p` against the current file's strong tag `etag` (as from `revisionEtag`).
 * @param hasRange whether the request carries a `Range` header.
 * @returns `precondition_failed` (412), `not_modified` (304), `full` (ignore any Range: 200 with
 *   the whole file) or `as_requested` (serve the Range, if any, as usual).
 */
export function evaluatePreconditions(p: Preconditions, etag: string, hasRange: boolean): ConditionalOutcome {
  const current = parseEntityTag(etag);
  if (!current) throw new Error(`not an entity tag: ${etag}`);
  if (p.ifMatch !== null) {
    const ok = p.ifMatch === "*" || p.ifMatch.some((t) => strongMatch(t, current));
    if (!ok) return "precondition_failed";
  }
  if (p.ifNoneMatch !== null) {
    const match = p.ifNoneMatch === "*" || p.ifNoneMatch.some((t) => t.opaque === current.opaque);
    if (match) return "not_modified";
  }
  if (hasRange && p.ifRange !== null) {
    if (p.ifRange === "date" || !strongMatch(p.ifRange, current)) return "full";
  }
  return "as_requested";
}
