/**
 * @module server/drives/drives.time
 * Times on the v1 routes are RFC 3339 strings (docs/drives.md); the database keeps Unix seconds.
 */

/** `seconds` (Unix) as an RFC 3339 UTC string without fractions, e.g. `2026-11-28T01:30:00Z`. */
export function rfc3339(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}
