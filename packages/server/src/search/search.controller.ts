/**
 * @module server/search/search.controller
 * HTTP of `GET /search_files/{ss58}` (docs/protocol.md#search) and `GET /browse/{ss58}/{folder_hash}` (issue 3).
 * Checks run in the order of docs/protocol.md#open-rules: 401 (token) → 400 (path, then query) → 403 (owner).
 * `X-Billing-Bypass` (docs/protocol.md#authentication) is accepted and needs nothing here. The routes without `{ss58}`
 * exist only to answer 400 `invalid_user_id` for an empty address (after the token check).
 */

import { fail } from "@esync/protocol/errors.ts";
import {
  BrowseQuery,
  BrowseResult,
  ErrorEnvelope,
  FolderParams,
  OwnerParams,
  SearchHeaders,
  SearchQuery,
  SearchResult,
} from "@esync/protocol/schemas.ts";
import { Elysia } from "elysia";
import { authenticated, doc, responses } from "../http/contract.ts";
import { success } from "../http/envelope.ts";
import { integerParams } from "../http/validate.ts";
import type { Services } from "../services.ts";
import { browseQueryOf, searchQueryOf } from "./search.query.ts";

const SEARCH_DOC = doc(
  "search",
  "Search every folder of a user: q, file_type, size and date bounds, sort, offset paging",
  "Filters combine with AND; bounds are inclusive; path_hash breaks ties in the sort order.",
);

const BROWSE_DOC = doc(
  "search",
  "One directory of a folder: sub-folders (recursive counts) then the files directly in it",
  "file_type or q list matching files only.",
);

/** The alias routes answer only errors. */
const ALIAS_RESPONSES = { 400: ErrorEnvelope, 401: ErrorEnvelope, 500: ErrorEnvelope };

const emptyAddress = () => {
  throw fail("invalid_user_id", "The address in the path is empty");
};
const emptyFolder = () => {
  throw fail("invalid_parameter", "folder_hash is missing from the path");
};

/** Search and browse routes. */
export function searchController(s: Services) {
  return new Elysia({ name: "search" })
    .derive(authenticated(s))
    .get("/search_files", emptyAddress, { response: ALIAS_RESPONSES, detail: { hide: true } })
    .get(
      "/search_files/:ss58",
      async ({ caller, params, query }) => {
        const q = searchQueryOf(query, s.profile);
        await s.access.require(caller, params.ss58, q.folderHash, "account_read");
        return success(await s.search.search(params.ss58, q));
      },
      {
        params: OwnerParams,
        query: SearchQuery,
        headers: SearchHeaders,
        transform: integerParams({ query: SearchQuery }),
        response: responses(SearchResult, [400, 401, 403, 500]),
        detail: SEARCH_DOC,
      },
    )
    .get("/browse/:ss58", emptyFolder, {
      params: OwnerParams,
      response: ALIAS_RESPONSES,
      detail: { hide: true },
    })
    .get(
      "/browse/:ss58/:folder_hash",
      async ({ caller, params, query }) => {
        const q = browseQueryOf(query, s.profile);
        (await s.access.require(caller, params.ss58, params.folder_hash, "read")).requirePath(q.path);
        return success(await s.browse.browse(params.ss58, params.folder_hash, q));
      },
      {
        params: FolderParams,
        query: BrowseQuery,
        transform: integerParams({ query: BrowseQuery }),
        response: responses(BrowseResult, [400, 401, 403, 500]),
        detail: BROWSE_DOC,
      },
    );
}
