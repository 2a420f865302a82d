/**
 * @module quota/quota.controller
 * `POST /can_upload` (docs/protocol.md#quota): whether a write of `size_bytes` plaintext bytes would
 * fit the account's allowance now. Advisory; the answer is flat (no envelope) and 200 also when
 * it is no. The write paths check again inside their committing transaction.
 */

import { AppError } from "@esync/protocol/errors.ts";
import { CanUploadBody, CanUploadResult } from "@esync/protocol/schemas.ts";
import { Elysia } from "elysia";
import { authenticated, bodyAddress, doc, flatResponses, jsonBody } from "../http/contract.ts";
import type { Services } from "../services.ts";

/** The quota route. */
export function quotaController(s: Services) {
  return new Elysia({ name: "quota" }).derive(authenticated(s)).post(
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
  );
}
