/**
 * @module server/db/sqlite/search/name-histogram
 * Deep offsets in `file_name` order without walking the name index from one end, from the
 * `search_names` buckets (drizzle/sqlite/0004_search_names.sql): the rows without a name (which sort
 * first), then `file_name` counted by its first 2, 4, 6, 8, 11, 14 and 20 characters. Prefixes
 * sort as the index does (BINARY), so the rows before a bucket are the sum of the buckets before
 * it; each level narrows the bucket holding the wanted position to its children at the next
 * level (small steps, so that no bucket has too many children to sum).
 */
import type { SearchRepository } from "./repository.ts";

/** Deepest level of `search_names`. */
const LEVELS = 7;

/** Where an ascending walk of the name index starts: `file_name >= from`, skipping `skip` rows. */
export interface NameSeek {
  from: string;
  skip: number;
}

/**
 * The start of an ascending walk (in `file_name`, `path_hash` order, over all of an owner's
 * rows) that reaches the row at 0-based position `pos`; `skip` is below the row count of one
 * deepest-level bucket. Null when `pos` falls among the rows without a name (they come first:
 * walk from the start) or past the last row.
 */
export function seekName(repo: SearchRepository, oid: number, pos: number): NameSeek | null {
  let before = repo.namelessRows(oid);
  if (pos < before) return null;
  let lo: string | null = null;
  let hi: string | null = null;
  let seek: NameSeek | null = null;
  for (let level = 1; level <= LEVELS; level++) {
    const b = repo.nameBucket(oid, level, lo, hi, pos - before);
    if (!b) break;
    before += b.before;
    seek = { from: b.prefix, skip: pos - before };
    // Its children at the next level: the prefixes from it up to the next bucket of this level
    // (or, for the last bucket of its range, the end of that range).
    lo = b.prefix;
    hi = b.next ?? hi;
  }
  return seek;
}
