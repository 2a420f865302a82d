/**
 * @module server/db/postgres/search/match
 * How `PgSearchIndex` and its suffix index match a `q` on PostgreSQL: the folded name it is
 * tested against and the LIKE patterns built from it.
 */

/** The folded name `q` is matched against, on `files AS f` (`foldCase` reads ς as σ). */
export const NAME_SQL = "replace(f.search_name, 'ς', 'σ')";

/** `s` with the LIKE wildcards `%` and `_` (and the escape `\\`) escaped. */
export function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** `q` as a LIKE pattern matching any name that contains it. */
export function likeContains(q: string): string {
  return `%${escapeLike(q)}%`;
}
