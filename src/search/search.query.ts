/**
 * @module search/search.query
 * Reading the query strings of `GET /search_files/{ss58}` (spec §4.9, complement §4) and
 * `GET /browse/{ss58}/{folder_hash}` (issue 3) into checked, normalised queries. Pure functions:
 * every malformed value becomes the 400 the spec names.
 */
import { fail } from "../errors/errors.ts";
import { parseFileType } from "./file-types.ts";

/** Columns results can be sorted by (spec §4.9). */
export type SortColumn = "file_name" | "size_bytes" | "created_at" | "updated_at";

/** Every sort column, in the spec's order. */
export const SORT_COLUMNS: readonly SortColumn[] = ["file_name", "size_bytes", "created_at", "updated_at"];

/** Longest `q`, in characters (Unicode code points). */
export const MAX_Q_CHARS = 256;
/** `/search_files` page size: default and cap (spec §4.9). */
export const SEARCH_DEFAULT_LIMIT = 25;
export const SEARCH_MAX_LIMIT = 10000;
/** `/browse` page size: default and cap (issue 3). */
export const BROWSE_DEFAULT_LIMIT = 50;
export const BROWSE_MAX_LIMIT = 200;

/** The filters of spec §4.9, combined with AND; null = not set. Bounds are inclusive. */
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
}

/** Sort and page of a listing: `sortBy` then `path_hash`, both in the one direction. */
export interface PageSpec {
  sortBy: SortColumn;
  descending: boolean;
  offset: number;
  limit: number;
}

/** A checked `/search_files` query. */
export interface SearchQuery extends SearchFilters, PageSpec {}

/** A checked `/browse` query: the directory (no leading or trailing `/`, `""` = root) and the rest. */
export interface BrowseQuery extends PageSpec {
  path: string;
  q: string | null;
  exts: string[] | null;
}

/**
 * The case folding of search (spec §4.9 "case-insensitive"): NFC, then JavaScript's Unicode
 * `toLowerCase` (as `search_name` is stored, so `Ä` finds `ä` and NFC `café` finds an NFD name),
 * with final sigma `ς` read as `σ` so that a word-final capital Σ still matches.
 * `search_entries.name` holds the stored name folded the same way.
 */
export function foldCase(s: string): string {
  return s.normalize("NFC").toLowerCase().normalize("NFC").replaceAll("ς", "σ");
}

/**
 * An optional non-negative integer query parameter (complement §4). Absent or empty → null.
 * Values beyond 2^53 − 1 are read as 2^53 − 1 (no size or time reaches it).
 * @throws AppError `invalid_parameter` (400) for anything but decimal digits.
 */
export function nonNegativeInt(query: URLSearchParams, name: string): number | null {
  const v = query.get(name);
  if (v === null || v === "") return null;
  if (!/^\d+$/.test(v))
    throw fail("invalid_parameter", `${name} must be a non-negative integer, got '${v.slice(0, 40)}'`);
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : Number.MAX_SAFE_INTEGER;
}

/** `offset` (default 0) and `limit` (0 or absent = `def`, at most `max`). */
function pageOf(query: URLSearchParams, def: number, max: number): { offset: number; limit: number } {
  const offset = nonNegativeInt(query, "offset") ?? 0;
  const limit = nonNegativeInt(query, "limit");
  return { offset, limit: limit === null || limit === 0 ? def : Math.min(limit, max) };
}

/** `sort_by` (unknown → `created_at`) and `sort_order` (case-insensitive; unknown → desc). */
function sortOf(query: URLSearchParams): { sortBy: SortColumn; descending: boolean } {
  const by = query.get("sort_by");
  const sortBy = SORT_COLUMNS.find((c) => c === by) ?? "created_at";
  return { sortBy, descending: (query.get("sort_order") ?? "").toLowerCase() !== "asc" };
}

/** `q`: null when absent or empty. @throws AppError `q_too_long` over 256 characters. */
function qOf(query: URLSearchParams): string | null {
  const q = query.get("q");
  if (q === null || q === "") return null;
  let chars = 0;
  for (const _ of q)
    if (++chars > MAX_Q_CHARS) throw fail("q_too_long", `q is longer than ${MAX_Q_CHARS} characters`);
  return foldCase(q);
}

/** `file_type`: null when absent or empty. @throws AppError `invalid_file_type`. */
function extsOf(query: URLSearchParams): string[] | null {
  const raw = query.get("file_type");
  return raw === null || raw === "" ? null : parseFileType(raw);
}

/**
 * Reads a `/search_files` query string (spec §4.9 with complement §4).
 * @throws AppError `invalid_parameter`, `q_too_long` or `invalid_file_type` (all 400).
 */
export function parseSearchQuery(query: URLSearchParams): SearchQuery {
  const sizeMin = nonNegativeInt(query, "size_min");
  const sizeMax = nonNegativeInt(query, "size_max");
  const dateFrom = nonNegativeInt(query, "date_from");
  const dateTo = nonNegativeInt(query, "date_to");
  const page = pageOf(query, SEARCH_DEFAULT_LIMIT, SEARCH_MAX_LIMIT);
  const q = qOf(query);
  const exts = extsOf(query);
  return { q, exts, sizeMin, sizeMax, dateFrom, dateTo, ...sortOf(query), ...page };
}

/**
 * Reads a `/browse` query string: `path` (leading and trailing `/` dropped; absent = root),
 * `offset`, `limit` (default 50, cap 200), `sort_by`, `sort_order`, `file_type` and `q` as in search.
 * @throws AppError `invalid_parameter` for a `path` containing `..` or `\` or a malformed number;
 *   `q_too_long`, `invalid_file_type`.
 */
export function parseBrowseQuery(query: URLSearchParams): BrowseQuery {
  const raw = query.get("path") ?? "";
  if (raw.includes("..") || raw.includes("\\"))
    throw fail("invalid_parameter", "path must not contain '..' or '\\'");
  const path = raw.replace(/^\/+/, "").replace(/\/+$/, "");
  const page = pageOf(query, BROWSE_DEFAULT_LIMIT, BROWSE_MAX_LIMIT);
  const q = qOf(query);
  const exts = extsOf(query);
  return { path, q, exts, ...sortOf(query), ...page };
}
