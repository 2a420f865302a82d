/**
 * @module server/search/row-filter
 * The filters of a search or directory query as plain bounds, for the plans that test them on
 * each `files` row (the PostgreSQL index and SQLite's exact scan).
 */
import type { SearchQuery } from "./search.query.ts";
import type { DirectoryQuery } from "./search-index.ts";

/** Filters of a query; null = not set. Sizes in bytes, times in Unix seconds, ranges inclusive. */
export interface RowFilter {
  q: string | null;
  exts: readonly string[] | null;
  size: [number, number] | null;
  created: [number, number] | null;
  folderHash: string | null;
  uploader: { by: string | null } | null;
  /** Files directly in this directory of the folder (browse); null = anywhere. */
  dir: string | null;
}

/** The filter of a search (docs/protocol.md#search): an open end of a size or date range becomes the widest bound. */
export function searchFilter(q: SearchQuery): RowFilter {
  const size: [number, number] | null =
    q.sizeMin === null && q.sizeMax === null ? null : [q.sizeMin ?? 0, q.sizeMax ?? Number.MAX_SAFE_INTEGER];
  const created: [number, number] | null =
    q.dateFrom === null && q.dateTo === null
      ? null
      : [q.dateFrom ?? -Number.MAX_SAFE_INTEGER, q.dateTo ?? Number.MAX_SAFE_INTEGER];
  return { q: q.q, exts: q.exts, size, created, folderHash: q.folderHash, uploader: q.uploader, dir: null };
}

/** The filter of a directory listing (browse) of `folderHash`. */
export function directoryFilter(folderHash: string, q: DirectoryQuery): RowFilter {
  return { q: q.q, exts: q.exts, size: null, created: null, folderHash, uploader: q.uploader, dir: q.path };
}
