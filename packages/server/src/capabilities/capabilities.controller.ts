/**
 * @module server/capabilities/capabilities.controller
 * `GET /v1/capabilities` (docs/protocol.md#capabilities): the anonymous feature advertisement of the v1
 * routes: file shares, folder shares with revoke by hash and owner wraps (docs/sharing.md), and
 * shared drives with folder invites, reader and writer (docs/drives.md), version history and
 * trash when versions are kept (docs/versions.md), esync's own download limits and access
 * log of file shares (docs/sharing.md), the quota report (docs/protocol.md#quota), and folder
 * entries' sealed attributes (docs/protocol.md#folder-entry-attributes).
 */

import { Capabilities } from "@esync/protocol/schemas.ts";
import type { Capabilities as CapabilitiesBody } from "@esync/protocol/types.ts";
import { Elysia } from "elysia";

/** What this server advertises on `/v1/capabilities`. */
export const V1_CAPABILITIES: CapabilitiesBody = {
  shares: true,
  folder_shares: true,
  folder_share_revoke_by_hash: true,
  share_owner_wrap: true,
  folder_grants: true,
  folder_grant_writes: true,
  member_folder_shares: false,
  upload_folder_shares: false,
  share_max_downloads: true,
  share_access_log: true,
  quota_report: true,
  folder_entry_attributes: true,
};

/**
 * The capabilities route (no token, no envelope). `versions` is true when the server keeps
 * replaced and deleted revisions (`ESYNC_VERSION_RETENTION_DAYS` above 0).
 */
export function capabilitiesController(versions = false) {
  const body: CapabilitiesBody = { ...V1_CAPABILITIES, versions };
  return new Elysia({ name: "capabilities" }).get("/v1/capabilities", () => Response.json(body), {
    response: { 200: Capabilities },
    detail: {
      tags: ["health"],
      summary: "Feature flags of the v1 routes (no auth, no envelope)",
    },
  });
}
