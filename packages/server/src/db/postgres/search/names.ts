/**
 * @module server/db/postgres/search/names
 * Deep offsets in name order on PostgreSQL, from the name fences (`search_names`,
 * drizzle/postgres/0008): keys `(file_name, path_hash, folder_hash)` of some of an owner's named
 * files, each with the number of named files from it up to the next fence, kept by a trigger on
 * `files` in the transaction of every write (an interval past 4,000 files is split at its middle
 * file). Every owner with named files has the empty fence `('', '', '')`, below every key. Files
 * without a name sort before all named ones (`files_by_file_name`, nulls first).
 */
import type { SQL } from "bun";

/** Where an ascending walk of the name order starts: at key `from`, skipping `skip` files. */
export interface NameSeek {
  from: { fileName: string; pathHash: Uint8Array; folderHash: string };
  skip: number;
}

/**
 * The start of an ascending walk of `owner`'s files in `(file_name, path_hash, folder_hash)` order
 * that reaches 0-based position `pos` of all `total` files (nameless ones first), in `tx`'s
 * snapshot; `skip` is below the file count of one fence interval. Null when `pos` falls among the
 * nameless files (walk from the start) or past the last file.
 */
export async function seekName(
  tx: Pick<SQL, "unsafe">,
  owner: string,
  total: number,
  pos: number,
): Promise<NameSeek | null> {
  const [row] = (await tx.unsafe(
    `WITH fences AS (
       SELECT file_name, path_hash, folder_hash, n, sum(n) OVER (ORDER BY file_name, path_hash, folder_hash) - n AS before,
         sum(n) OVER () AS named
       FROM search_names WHERE owner = $1)
     SELECT file_name, path_hash, folder_hash, before::float8 AS before, named::float8 AS named FROM fences
     WHERE before + n > $2 - ($3 - named)
     ORDER BY file_name, path_hash, folder_hash LIMIT 1`,
    [owner, pos, total],
  )) as { file_name: string; path_hash: Uint8Array; folder_hash: string; before: number; named: number }[];
  if (row === undefined) return null;
  const at = pos - (total - row.named);
  if (at < 0) return null;
  return {
    from: { fileName: row.file_name, pathHash: row.path_hash, folderHash: row.folder_hash },
    skip: at - row.before,
  };
}
