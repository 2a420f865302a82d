/**
 * @module server/summaries/summaries.controller
 * HTTP of `GET /get_user_summary/{ss58}`, `/get_file_type_summary/{ss58}` and
 * `/get_source_summary/{ss58}` (docs/protocol.md#summaries), enveloped; `?folder_hash=` limits each to
 * one folder. Owner only until shared drives exist.
 */

import {
  FileTypeSummary,
  OwnerParams,
  SourceSummary,
  SummaryQuery,
  UserSummary,
} from "@esync/protocol/schemas.ts";
import { Elysia } from "elysia";
import { authenticated, doc, responses } from "../http/contract.ts";
import { success } from "../http/envelope.ts";
import type { Services } from "../services.ts";

/** Summary routes. */
export function summariesController(s: Services) {
  const hooks = { params: OwnerParams, query: SummaryQuery };
  return new Elysia({ name: "summaries" })
    .derive(authenticated(s))
    .get(
      "/get_user_summary/:ss58",
      async ({ caller, params, query }) => {
        await s.access.require(caller, params.ss58, query.folder_hash ?? null, "account_read");
        return success(await s.summaries.user(params.ss58, query.folder_hash ?? null));
      },
      {
        ...hooks,
        response: responses(UserSummary, [400, 401, 403, 500]),
        detail: doc("summaries", "Plaintext bytes and files stored by the account (or one folder)"),
      },
    )
    .get(
      "/get_file_type_summary/:ss58",
      async ({ caller, params, query }) => {
        await s.access.require(caller, params.ss58, query.folder_hash ?? null, "account_read");
        return success(await s.summaries.fileTypes(params.ss58, query.folder_hash ?? null));
      },
      {
        ...hooks,
        response: responses(FileTypeSummary, [400, 401, 403, 500]),
        detail: doc(
          "summaries",
          "Files and plaintext bytes per file_type category of the file name's extension",
        ),
      },
    )
    .get(
      "/get_source_summary/:ss58",
      async ({ caller, params, query }) => {
        await s.access.require(caller, params.ss58, query.folder_hash ?? null, "account_read");
        return success(await s.summaries.sources(params.ss58, query.folder_hash ?? null));
      },
      {
        ...hooks,
        response: responses(SourceSummary, [400, 401, 403, 500]),
        detail: doc("summaries", "Files and plaintext bytes per client family (manifest source)"),
      },
    );
}
