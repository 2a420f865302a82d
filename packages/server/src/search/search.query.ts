/**
 * @module server/search/search.query
 * Reading the query strings of `GET /search_files/{ss58}` (docs/protocol.md#search, #open-rules) and
 * `GET /browse/{ss58}/{folder_hash}` (issue 3) into checked, normalised queries. Pure functions:
 * every malformed value becomes the 400 docs/protocol.md#search names.
 */

import { fail } from "@esync/protocol/errors.ts";
import {
  BROWSE_DEFAULT_LIMIT,
  BROWSE_SORT_KEYS,
  BrowseQuery as BrowseQuerySchema,
  SEARCH_DEFAULT_LIMIT,
  SEARCH_SORT_KEYS,
  SearchQuery as SearchQuerySchema,
  type SortColumn,
} from "@esync/protocol/schemas.ts";
import type { Static } from "@sinclair/typebox";
import { type ProfileRules, profileRules } from "../config/profile.ts";
import { checkQuery } from "../http/validate.ts";
import { parseFileType } from "./file-types.ts";

export {
  BROWSE_DEFAULT_LIMIT,
  BROWSE_MAX_LIMIT,
  MAX_Q_CHARS,
  SEARCH_DEFAULT_LIMIT,
  SEARCH_MAX_LIMIT,
  SORT_COLUMNS,
  type SortColumn,
} from "@esync/protocol/schemas.ts";

/** `/search_files` query parameters as their schema (`SearchQuery` of `packages/protocol/src/schemas.ts`) checked them. */
export type SearchParams = Static<typeof SearchQuerySchema>;
/** `/browse` query parameters as their schema (`BrowseQuery` of `packages/protocol/src/schemas.ts`) checked them. */
export type BrowseParams = Static<typeof BrowseQuerySchema>;

/** The filters of docs/protocol.md#search, combined with AND; null = not set. Bounds are inclusive. */
export interface SearchFilters {
  /** `q` case-folded with `foldCase`; null when absent or empty. */
  q: string | null;
  /** Extensions `file_type` matches (lower-case, with the dot); null when absent or empty. */
  exts: string[] | null;
  /** Bytes. */
  sizeMin: number | null;
  sizeMax: number | null;
  /** `created_at` bounds, Unix seconds. */
  dateFrom: number | null;
  dateTo: number | null;
  /**
   * `uploaded_by` (docs/protocol.md#api-profiles): files whose uploader is `by` (null: files without one,
   * the value `_none`); null = not set.
   */
  uploader: { by: string | null } | null;
  /** `folder_hash`: files of this folder only; null = every folder. */
  folderHash: string | null;
  /** True when a profile rule makes the query match nothing (hcfs: `q` under 3 characters). */
  nothing: boolean;
}

/** A search sort key: a column, or `uploaded_by` (docs/protocol.md#api-profiles). */
export type SearchSortKey = (typeof SEARCH_SORT_KEYS)[number];
/** A browse sort key: a search key, or `extension` (docs/protocol.md#api-profiles). */
export type BrowseSortKey = (typeof BROWSE_SORT_KEYS)[number];

/** Sort and page of a listing: `sortBy` then `path_hash`, both in the one direction. */
export interface PageSpec<K extends string = SortColumn> {
  sortBy: K;
  descending: boolean;
  offset: number;
  limit: number;
}

/** A checked `/search_files` query. */
export interface SearchQuery extends SearchFilters, PageSpec<SearchSortKey> {}

/** A checked `/browse` query: the directory (no leading or trailing `/`, `""` = root) and the rest. */
export interface BrowseQuery extends PageSpec<BrowseSortKey> {
  path: string;
  q: string | null;
  exts: string[] | null;
  uploader: { by: string | null } | null;
  /** `folder_hash` of the query (search's filter); null when absent. */
  folderHash: string | null;
  /** As `SearchFilters.nothing`. */
  nothing: boolean;
}

/** The value of `uploaded_by` that selects files without a recorded uploader (docs/protocol.md#api-profiles). */
export const UPLOADED_BY_NONE = "_none";

/**
 * The case folding of search (docs/protocol.md#search "case-insensitive"): NFC, then JavaScript's Unicode
 * `toLowerCase` (as `search_name` is stored, so `Ä` finds `ä` and NFC `café` finds an NFD name),
 * with final sigma `ς` read as `σ` so that a word-final capital Σ still matches.
 * `search_entries.name` holds the stored name folded the same way.
 */
export function foldCase(s: string): string {
  return s.normalize("NFC").toLowerCase().normalize("NFC").replaceAll("ς", "σ");
}

/**
 * Refuses U+0000 in the text parameters (`q`, `path`, `uploaded_by`, `file_type`): no stored name
 * or address holds it (PostgreSQL cannot store it at all), so the same 400 on every database.
 * @throws AppError `invalid_parameter`.
 */
function refuseNul(p: Record<string, unknown>): void {
  for (const [name, v] of Object.entries(p))
    if (typeof v === "string" && v.includes("\u0000"))
      throw fail("invalid_parameter", `query parameter ${name} must not contain the character U+0000`);
}

/** `offset` (default 0) and `limit` (0 or absent = `def`, at most `max`). */
function pageOf(p: { offset?: number; limit?: number }, def: number, max: number) {
  return { offset: p.offset ?? 0, limit: !p.limit ? def : Math.min(p.limit, max) };
}

/**
 * `sort_by` among `keys` (unknown → `created_at`) and `sort_order` (case-insensitive; unknown →
 * desc). With `orderNeedsSortBy` (`/browse`: "sort_order, used only with sort_by", docs/protocol.md#api-profiles), a `sort_order` without a `sort_by` is ignored.
 */
function sortOf<K extends string>(
  p: { sort_by?: string; sort_order?: string },
  keys: readonly K[],
  orderNeedsSortBy = false,
): { sortBy: K; descending: boolean } {
  const sortBy = keys.find((c) => c === p.sort_by) ?? ("created_at" as K);
  if (orderNeedsSortBy && !p.sort_by) return { sortBy, descending: true };
  return { sortBy, descending: (p.sort_order ?? "").toLowerCase() !== "asc" };
}

/** `uploaded_by`: null when absent or empty; `_none` selects files without an uploader. */
function uploaderOf(v: string | undefined): { by: string | null } | null {
  if (v === undefined || v === "") return null;
  return { by: v === UPLOADED_BY_NONE ? null : v };
}

/**
 * `q` case-folded, null when absent or empty (its length is checked by the schema); with a
 * profile minimum (`rules.minQueryChars`), trimmed first, and `nothing` when shorter: a `q` of
 * only whitespace is such a term (docs/protocol.md#api-profiles: "Trimmed; a term shorter than 3 characters
 * matches nothing").
 */
function qOf(q: string | undefined, rules: ProfileRules): { q: string | null; nothing: boolean } {
  if (q === undefined || q === "") return { q: null, nothing: false };
  const v = rules.minQueryChars > 0 ? q.trim() : q;
  if (v === "") return { q: null, nothing: true };
  return { q: foldCase(v), nothing: [...v].length < rules.minQueryChars };
}

/** `file_type`: null when absent or empty. @throws AppError `invalid_file_type`. */
function extsOf(raw: string | undefined): string[] | null {
  return raw === undefined || raw === "" ? null : parseFileType(raw);
}

/**
 * A `/search_files` query (docs/protocol.md#search with docs/protocol.md#open-rules, #api-profiles) from its checked
 * parameters: defaults, the page-size cap, case folding, `file_type` categories, `uploaded_by`
 * and `folder_hash`.
 * @throws AppError `invalid_file_type` (400); `invalid_parameter` (400) for U+0000 in a text
 *   parameter.
 */
export function searchQueryOf(p: SearchParams, rules: ProfileRules = profileRules("base")): SearchQuery {
  refuseNul(p);
  const exts = extsOf(p.file_type);
  return {
    ...qOf(p.q, rules),
    exts,
    sizeMin: p.size_min ?? null,
    sizeMax: p.size_max ?? null,
    dateFrom: p.date_from ?? null,
    dateTo: p.date_to ?? null,
    uploader: uploaderOf(p.uploaded_by),
    folderHash: p.folder_hash ?? null,
    ...sortOf(p, SEARCH_SORT_KEYS),
    ...pageOf(p, SEARCH_DEFAULT_LIMIT, rules.searchMaxLimit),
  };
}

/**
 * A `/browse` query from its checked parameters: `path` without leading and trailing `/`
 * (absent = root), `offset`, `limit` (default 50, cap 200), sort (also `extension`,
 * `uploaded_by`; `sort_order` only with a `sort_by`), `file_type`, `q` and `uploaded_by` as in
 * search.
 * @throws AppError `invalid_file_type` (400); `invalid_parameter` (400) for U+0000 in a text
 *   parameter.
 */
export function browseQueryOf(p: BrowseParams, rules: ProfileRules = profileRules("base")): BrowseQuery {
  refuseNul(p);
  const path = (p.path ?? "").replace(/^\/+/, "").replace(/\/+$/, "");
  const exts = extsOf(p.file_type);
  return {
    path,
    ...qOf(p.q, rules),
    exts,
    uploader: uploaderOf(p.uploaded_by),
    folderHash: p.folder_hash ?? null,
    ...sortOf(p, BROWSE_SORT_KEYS, true),
    ...pageOf(p, BROWSE_DEFAULT_LIMIT, rules.browseMaxLimit),
  };
}

/**
 * Reads a `/search_files` query string through its schema, as the route does.
 * @throws AppError `invalid_parameter`, `q_too_long` or `invalid_file_type` (all 400).
 */
export function parseSearchQuery(query: URLSearchParams, rules?: ProfileRules): SearchQuery {
  return searchQueryOf(checkQuery(SearchQuerySchema, query), rules);
}

/**
 * Reads a `/browse` query string through its schema, as the route does.
 * @throws AppError `invalid_parameter` (a `path` with `..` or `\`, a malformed number),
 *   `q_too_long`, `invalid_file_type`.
 */
export function parseBrowseQuery(query: URLSearchParams, rules?: ProfileRules): BrowseQuery {
  return browseQueryOf(checkQuery(BrowseQuerySchema, query), rules);
}
