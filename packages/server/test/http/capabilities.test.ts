/** `GET /v1/capabilities` (docs/protocol.md#capabilities). */
import { afterAll, expect, test } from "bun:test";
import { makeTestApp } from "../support/app.ts";

const t = makeTestApp();
afterAll(() => t.close());

test("GET /v1/capabilities answers 200 without a token: the share flags and folder invites (reader and writer) true", async () => {
  const r = await t.json("/v1/capabilities");
  expect(r.status).toBe(200);
  expect(r.headers.get("content-type")).toContain("application/json");
  expect(r.body).toEqual({
    shares: true,
    folder_shares: true,
    folder_share_revoke_by_hash: true,
    share_owner_wrap: true,
    folder_grants: true,
    folder_grant_writes: true,
    member_folder_shares: false,
    upload_folder_shares: false,
    versions: false,
    share_max_downloads: true,
    share_access_log: true,
    quota_report: true,
    folder_entry_attributes: true,
  });
});
