/**
 * @module search/search.controller
 * HTTP of `GET /search_files/{ss58}` (spec §4.9) and `GET /browse/{ss58}/{folder_hash}` (issue 3).
 * Checks run in the order of complement §4: 401 (token) → 400 (path, then query) → 403 (owner).
 * `X-Billing-Bypass` (spec §5.5) is accepted and needs nothing here.
 */
import { Elysia, t } from "elysia";
import { AuthService } from "../auth/auth.service.ts";
import { addressParam, caller, folderHashParam, queryOf } from "../http/context.ts";
import { op, RemoteFileEntry } from "../http/docs.ts";
import { success } from "../http/envelope.ts";
import { rawSegments } from "../http/request.ts";
import type { Services } from "../services.ts";
import { parseBrowseQuery, parseSearchQuery } from "./search.query.ts";

const Page = { total_count: t.Integer(), has_more: t.Boolean(), offset: t.Integer(), limit: t.Integer() };

const SearchFileHit = t.Composite([
  t.Object({
    folder_hash: t.String(),
    folder_label: t.String({ description: '"" when the folder is not registered' }),
  }),
  RemoteFileEntry,
]);

const SearchResult = t.Object({ ss58_address: t.String(), files: t.Array(SearchFileHit), ...Page });

const BrowseResult = t.Object({
  ss58_address: t.String(),
  folder_hash: t.String(),
  path: t.String(),
  folders: t.Array(t.Object({ name: t.String(), file_count: t.Integer(), total_bytes: t.Integer() })),
  files: t.Array(RemoteFileEntry),
  ...Page,
});

const SEARCH_DOC = op(
  "search",
  "Search every folder of a user: q, file_type, size and date bounds, sort, offset paging",
  SearchResult,
  [400, 401, 403],
  undefined,
  "Query: q (substring of file_name, or relative_path when file_name is null; case-insensitive; ≤ 256 characters), " +
    "file_type (category image|video|audio|document|pdf|archive|code or an extension like .png; comma-separated list), " +
    "size_min, size_max (bytes), date_from, date_to (created_at, Unix seconds), all inclusive; offset (0), limit (25, ≤ 10000); " +
    "sort_by file_name|size_bytes|created_at|updated_at (else created_at); sort_order asc|desc (else desc). path_hash breaks ties.",
);

const BROWSE_DOC = op(
  "search",
  "One directory of a folder: sub-folders (recursive counts) then the files directly in it",
  BrowseResult,
  [400, 401, 403],
  undefined,
  "Query: path (directory inside the folder, default the root; no '..' or '\\'), offset (0), limit (50, ≤ 200), " +
    "sort_by, sort_order, file_type and q as in /search_files (file_type or q lists matching files only).",
);

/** Search and browse routes. An empty `{ss58}` is 400 `invalid_user_id` (after the token check). */
export function searchController(s: Services) {
  const search = async ({ request }: { request: Request }) => {
    const who = await caller(s, request);
    const address = addressParam(rawSegments(request)[1]);
    const query = parseSearchQuery(queryOf(request));
    AuthService.requireOwner(who, address, "this address");
    return success(s.search.search(address, query));
  };
  const browse = async ({ request }: { request: Request }) => {
    const who = await caller(s, request);
    const seg = rawSegments(request);
    const address = addressParam(seg[1]);
    const folderHash = folderHashParam(seg[2]);
    const query = parseBrowseQuery(queryOf(request));
    AuthService.requireOwner(who, address, "this address");
    return success(s.browse.browse(address, folderHash, query));
  };
  return new Elysia({ name: "search" })
    .get("/search_files", search, { detail: { ...SEARCH_DOC, hide: true } })
    .get("/search_files/:ss58", search, { detail: SEARCH_DOC })
    .get("/browse/:ss58", browse, { detail: { ...BROWSE_DOC, hide: true } })
    .get("/browse/:ss58/:folder_hash", browse, { detail: BROWSE_DOC });
}
