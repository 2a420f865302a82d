/**
 * @module server/quota/quota.controller
 * `POST /can_upload` (docs/protocol.md#quota): whether a write of `size_bytes` plaintext bytes would
 * fit the account's allowance now. Advisory; the answer is flat (no envelope) and 200 also when
 * it is no. The write paths check again inside their committing transaction.
 * `GET /v1/quota/{ss58}` (esync extension, capability `quota_report`): the allowance and what
 * uses it, for the account itself.
 */

import { AppError } from "@esync/protocol/errors.ts";
import { CanUploadBody, CanUploadResult, OwnerParams, QuotaReport } from "@esync/protocol/schemas.ts";
import { Elysia } from "elysia";
import { authenticated, bodyAddress, doc, flatResponses, jsonBody, v1Responses } from "../http/contract.ts";
import type { Services } from "../services.ts";

/** The quota route. */
export function quotaController(s: Services) {
  return new Elysia({ name: "quota" })
    .derive(authenticated(s))
    .post(
      "/can_upload",
      async ({ caller, body }) => {
        const owner = bodyAddress(body);
        try {
          await s.access.require(caller, owner, body.folder_hash || null, "write");
        } catch (e) {
          // A frozen drive is a "no", not a refusal of the question.
          if (e instanceof AppError && e.code === "drive_frozen")
            return Response.json({ result: false, error: "drive_frozen" });
          throw e;
        }
        const ok = await s.quota.fits(owner, body.size_bytes);
        return Response.json({ result: ok, error: ok ? null : "drive_quota_exceeded" });
      },
      {
        parse: jsonBody(s),
        body: CanUploadBody,
        response: flatResponses(CanUploadResult, [400, 401, 403, 500]),
        detail: doc(
          "quota",
          "Would a write of size_bytes plaintext bytes fit the allowance now (advisory, flat answer)",
          "Replacements are charged only their growth at write time, so a refusal here can still succeed on /upload.",
        ),
      },
    )
    .get(
      "/v1/quota/:ss58",
      async ({ caller, params }) => {
        await s.access.require(caller, params.ss58, null, "account_read");
        const q = await s.quota.info(params.ss58);
        return Response.json({
          ss58_address: params.ss58,
          used_bytes: q.usedBytes,
          file_bytes: q.fileBytes,
          file_count: q.fileCount,
          share_bytes: q.shareBytes,
          version_bytes: q.versionBytes,
          quota_bytes: q.quotaBytes,
          free_bytes: q.quotaBytes === null ? null : Math.max(0, q.quotaBytes - q.usedBytes),
        });
      },
      {
        params: OwnerParams,
        response: v1Responses({ 200: QuotaReport }, [400, 401, 403, 500]),
        detail: doc(
          "quota",
          "The account's allowance and what uses it: live files, file shares, kept versions (plaintext bytes)",
          "esync extension (capability `quota_report`, docs/protocol.md#quota). The account itself only.",
        ),
      },
    );
}
