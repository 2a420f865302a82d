/**
 * @module server/db/postgres/search/suffixes
 * The suffix index of `PgSearchIndex` (drizzle/postgres/0009_search_suffixes.sql): one row of
 * `search_suffixes` per distinct suffix of a file's folded name `replace(search_name, 'ς', 'σ')`
 * that starts where 3 or more characters are left, cut to `SUFFIX_CHARS` characters, in a b-tree
 * `(owner_id, suffix, file_id) INCLUDE (next_lcp, ext, created_at)`. A name contains a term `t` of
 * 3 to `SUFFIX_CHARS` characters exactly when one of its suffixes starts with `t`: the b-tree range
 * from `t` to `t` followed by U+10FFFF (C order; a suffix has at most `SUFFIX_CHARS` characters, so
 * the bound repeats U+10FFFF past that length and nothing starting with `t` is above it). The
 * suffixes of one file that start with `t` are neighbours in that order and only the last has
 * `next_lcp` (common prefix with the next one of the same file) below `length(t)`, so the rows
 * with `next_lcp < length(t)` are the matching files, each once: a count or a page in creation
 * order reads only the index. A longer term narrows to the rows whose suffix is its first
 * `SUFFIX_CHARS` characters, each file then rechecked against its name in `files`.
 *
 * A second b-tree (drizzle/postgres/0010) orders the same rows by `(owner_id, left(suffix, 3),
 * created_at)`: the route `prefix_dates` reads the rows whose suffix starts with the term's first 3
 * characters in creation order, testing the rest of the term in the index. With a date range it
 * reads only the range (a term held by many names over all time may be held by few in it:
 * `suffixRoute` picks the route that reads fewer rows); a page in creation order reads from its
 * end of the order up to the page's last match (`readsInCreationOrder`).
 */
import type { SQL } from "bun";
import type { RowFilter } from "../../../search/row-filter.ts";
import { countRange } from "./histogram.ts";
import { likeContains, NAME_SQL } from "./match.ts";

/** Most characters of a suffix row (`search_suffixes.suffix`). */
export const SUFFIX_CHARS = 16;

/** The highest code point: above every character in C (byte) order. */
const TOP = "\u{10FFFF}";

/**
 * The filters the suffix rows answer by themselves: `q` of 3 or more characters, with at most
 * `file_type` and a creation date range (both carried in the index).
 */
export function suffixable(f: RowFilter): boolean {
  return (
    f.q !== null &&
    [...f.q].length >= 3 &&
    f.size === null &&
    f.folderHash === null &&
    f.uploader === null &&
    f.dir === null
  );
}

/**
 * Which b-tree a suffix-index query reads:
 * - `term`: `search_suffixes_key`, the range of suffixes starting with the term (every date);
 * - `prefix_dates`: `search_suffixes_by_created`, the suffixes starting with the term's first 3
 *   characters in creation order (of files created in the date range, if any), the rest of the
 *   term tested on each entry.
 */
export type SuffixRoute = "term" | "prefix_dates";

/**
 * Files of `owner` whose folded name holds the first 3 (`first3`) and the first 4 (`first4`)
 * characters of `q` (gram counters; a `q` of 3 characters has both the same).
 */
export async function gramCounts(
  tx: Pick<SQL, "unsafe">,
  owner: string,
  q: string,
): Promise<{ first3: number; first4: number }> {
  const chars = [...q];
  const [c] = await tx.unsafe(
    `SELECT (SELECT coalesce(sum(n), 0) FROM search_grams WHERE owner = $1 AND gram = $2) AS g3,
            (SELECT coalesce(sum(n), 0) FROM search_grams WHERE owner = $1 AND gram = $3) AS g4`,
    [owner, chars.slice(0, 3).join(""), chars.slice(0, 4).join("")],
  );
  return { first3: Number(c?.g3 ?? 0), first4: Number(c?.g4 ?? 0) };
}

/**
 * The route that reads fewer index entries for `f` (`suffixable(f)`): with a date range,
 * `prefix_dates` when the files holding the term's first 3 characters (gram counters) times the
 * share of the owner's files created in the range (histogram) are fewer than the files holding its
 * first 4 (those the term's range reads at most); otherwise `term`.
 */
export async function suffixRoute(
  tx: Pick<SQL, "unsafe">,
  owner: string,
  f: RowFilter,
): Promise<SuffixRoute> {
  if (f.created === null) return "term";
  const [c] = await tx.unsafe("SELECT coalesce(sum(n), 0) AS files FROM search_ext_counts WHERE owner = $1", [
    owner,
  ]);
  const files = Number(c?.files ?? 0);
  if (files === 0) return "term";
  const grams = await gramCounts(tx, owner, f.q ?? "");
  const inRange = await countRange(tx, owner, "created_at", null, f.created[0], f.created[1]);
  return (grams.first3 * inRange) / files < grams.first4 ? "prefix_dates" : "term";
}

/**
 * Whether a page in creation order whose last match is the `end`-th (skip + limit) of `total`
 * matches of `f` (`suffixable(f)`, q of at most `SUFFIX_CHARS` characters) reads fewer entries by
 * `prefix_dates` from its end of the order than by the term's range. With the matches spread
 * evenly among the files holding the term's first 3 characters (gram counters), the ordered read
 * crosses about end × that count / total entries; the term's range reads about as many as files
 * hold its first 4 characters (every date and extension). Names and dates correlate, so the
 * ordered read is taken only when 4 times its estimate is below the term's range.
 */
export async function readsInCreationOrder(
  tx: Pick<SQL, "unsafe">,
  owner: string,
  f: RowFilter,
  end: number,
  total: number,
): Promise<boolean> {
  const q = f.q ?? "";
  if ([...q].length > SUFFIX_CHARS || total === 0) return false;
  const grams = await gramCounts(tx, owner, q);
  return (4 * end * grams.first3) / total < grams.first4;
}

/**
 * `SELECT file_id, created_at` of the files of `owner` passing `f` (`suffixable(f)`), each once,
 * read by `route`: the SQL and its parameters `$1…` (`$1` = owner). `upTo` (route `prefix_dates`,
 * q of at most `SUFFIX_CHARS` characters): only the matches up to the one at `position` (from 0)
 * in creation order (`descending`: newest first), ties included, found by reading the b-tree in
 * that order.
 */
function suffixMatches(
  owner: string,
  f: RowFilter,
  route: SuffixRoute,
  upTo?: { descending: boolean; position: number },
): { sql: string; params: unknown[] } {
  const q = f.q ?? "";
  const chars = [...q];
  const params: unknown[] = [owner];
  const p = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const where = ["s.owner_id = (SELECT id FROM search_owners WHERE owner = $1)"];
  const long = chars.length > SUFFIX_CHARS;
  if (route === "prefix_dates") {
    // The expression of search_suffixes_by_created, written as it is there (with the literal 3)
    // so that the planner matches it.
    where.push(`left(s.suffix, 3) = ${p(chars.slice(0, 3).join(""))}`);
  }
  if (long) {
    // Distinct suffixes per file: at most one row per file has exactly these characters.
    where.push(`s.suffix = ${p(chars.slice(0, SUFFIX_CHARS).join(""))}`);
  } else if (route === "prefix_dates") {
    // Not a range on suffix: the planner would read the term's range of search_suffixes_key.
    if (chars.length > 3) where.push(`left(s.suffix, ${chars.length}) = ${p(q)}`);
    where.push(`s.next_lcp < ${p(chars.length)}`);
  } else {
    where.push(
      `s.suffix >= ${p(q)}`,
      `s.suffix < ${p(q + TOP.repeat(SUFFIX_CHARS + 1 - chars.length))}`,
      `s.next_lcp < ${p(chars.length)}`,
    );
  }
  if (f.exts !== null) where.push(`s.ext IN (${f.exts.map((e) => p(e)).join(", ")})`);
  if (f.created) where.push(`s.created_at BETWEEN ${p(f.created[0])} AND ${p(f.created[1])}`);
  const from = long
    ? `search_suffixes AS s JOIN search_files AS sf ON sf.id = s.file_id
       JOIN files AS f ON f.owner = sf.owner AND f.folder_hash = sf.folder_hash AND f.path_hash = sf.path_hash`
    : "search_suffixes AS s";
  if (long) where.push(`${NAME_SQL} LIKE ${p(likeContains(q))}`);
  if (upTo && route === "prefix_dates" && !long) {
    const [cmp, dir, none] = upTo.descending
      ? [">=", "DESC", "-9223372036854775808"]
      : ["<=", "ASC", "9223372036854775807"];
    where.push(`s.created_at ${cmp} coalesce((SELECT s.created_at FROM ${from} WHERE ${where.join(" AND ")}
      ORDER BY s.created_at ${dir} OFFSET ${p(upTo.position)} LIMIT 1), ${none})`);
  }
  return { sql: `SELECT s.file_id, s.created_at FROM ${from} WHERE ${where.join(" AND ")}`, params };
}

/** The `files` rows of the matches `m` (of `suffixMatches`), with their folders. */
const MATCH_ROWS = `FROM m
     JOIN search_files AS sf ON sf.id = m.file_id
     JOIN files AS f ON f.owner = sf.owner AND f.folder_hash = sf.folder_hash AND f.path_hash = sf.path_hash
     LEFT JOIN folders AS fo ON fo.owner = f.owner AND fo.folder_hash = f.folder_hash`;

/**
 * The matches of `m` created no later (`descending`: no earlier) than the one at position
 * `position` (a parameter, from 0) in that creation order; all of them when there are fewer.
 */
function upToPosition(descending: boolean, position: string): string {
  return `m.created_at ${descending ? ">=" : "<="} coalesce((SELECT m.created_at FROM m
         ORDER BY m.created_at ${descending ? "DESC" : "ASC"} OFFSET ${position} LIMIT 1), ${
           descending ? "-9223372036854775808" : "9223372036854775807"
         })`;
}

/** Number of files of `owner` passing `f` (`suffixable(f)`), from the suffix rows read by `route`. */
export async function countSuffixMatches(
  tx: Pick<SQL, "unsafe">,
  owner: string,
  f: RowFilter,
  route: SuffixRoute,
): Promise<number> {
  const m = suffixMatches(owner, f, route);
  const [c] = await tx.unsafe(`SELECT count(*) AS n FROM (${m.sql}) AS m`, m.params);
  return Number(c?.n ?? 0);
}

/**
 * The page of files passing `f` (`suffixable(f)`) in the order `sort` (on `files AS f`, ending in
 * `path_hash` and `folder_hash`), rows `skip … skip + limit - 1`, read from the suffix rows by `route`:
 * - `byCreated` (the order is `created_at` in direction `descending`): the creation time of the
 *   (skip + limit)-th match in the index (route `prefix_dates`: read in that order up to it), then
 *   only the matches up to that time (ties included) are read in `files` and sorted;
 * - otherwise every match is read in `files` and sorted.
 * `columns` are the selected columns on `files AS f` left-joined to `folders AS fo`.
 */
export async function suffixPage<R>(
  tx: Pick<SQL, "unsafe">,
  owner: string,
  f: RowFilter,
  route: SuffixRoute,
  columns: string,
  sort: string,
  byCreated: boolean,
  descending: boolean,
  skip: number,
  limit: number,
): Promise<R[]> {
  const m = suffixMatches(
    owner,
    f,
    route,
    byCreated ? { descending, position: skip + limit - 1 } : undefined,
  );
  const n = m.params.length;
  const bound = byCreated ? `WHERE ${upToPosition(descending, `$${n + 3}`)}` : "";
  return (await tx.unsafe(
    `WITH m AS MATERIALIZED (${m.sql})
     SELECT ${columns}
     ${MATCH_ROWS}
     ${bound}
     ORDER BY ${sort} OFFSET $${n + 1} LIMIT $${n + 2}`,
    [...m.params, skip, limit, ...(byCreated ? [skip + limit - 1] : [])],
  )) as R[];
}

/**
 * The number of files of `owner` passing `f` (`suffixable(f)`) and the page `skip … skip + limit - 1`
 * of them in creation order (`descending` or not; ties by `path_hash` then `folder_hash` in the
 * same direction, `sort` on `files AS f`), from one read of the suffix rows by `route`: the matches are
 * counted, the (skip + limit)-th creation time found among them, and only the matches up to that
 * time (ties included) are read in `files` and sorted. `columns` as in `suffixPage`.
 */
export async function suffixCountAndPage<R>(
  tx: Pick<SQL, "unsafe">,
  owner: string,
  f: RowFilter,
  route: SuffixRoute,
  columns: string,
  sort: string,
  descending: boolean,
  skip: number,
  limit: number,
): Promise<{ total: number; rows: R[] }> {
  const m = suffixMatches(owner, f, route);
  const n = m.params.length;
  const rows = (await tx.unsafe(
    `WITH m AS MATERIALIZED (${m.sql})
     SELECT c.total, p.*
     FROM (SELECT count(*) AS total FROM m) AS c
     LEFT JOIN LATERAL (
       SELECT ${columns}
       ${MATCH_ROWS}
       WHERE ${upToPosition(descending, `$${n + 3}`)}
       ORDER BY ${sort} OFFSET $${n + 1} LIMIT $${n + 2}) AS p ON true`,
    [...m.params, skip, limit, skip + limit - 1],
  )) as (R & { total: number | bigint | string; path_hash: unknown })[];
  return {
    total: Number(rows[0]?.total ?? 0),
    rows: rows.filter((r) => r.path_hash !== null),
  };
}
