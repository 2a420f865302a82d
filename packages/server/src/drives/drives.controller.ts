/**
 * @module server/drives/drives.controller
 * HTTP of shared drives (docs/drives.md): the invite, membership and invite-key routes under
 * `/v1/`. v1 family: bare JSON bodies, 204 without a body, flat `{"error", "message"}` errors
 * (src/app.ts renders every error in the `/v1/` space flat). Shapes come from
 * `packages/protocol/src/schemas.ts`; rules live in `DrivesService`.
 */

import {
  AcceptInviteBody,
  AcceptResult,
  ChangeRoleBody,
  DriveInviteParams,
  DriveInvites,
  DriveMember,
  DriveMemberParams,
  DriveMembers,
  DriveOwnerQuery,
  DriveParams,
  InviteKeyBody,
  InviteKeyResult,
  InviteMeta,
  InviteMinted,
  InviteTokenParams,
  Memberships,
  MintInviteBody,
  SealedTokenBody,
} from "@esync/protocol/schemas.ts";
import { Elysia, t } from "elysia";
import { authenticated, doc, jsonBody, rawBody, v1Responses } from "../http/contract.ts";
import type { Services } from "../services.ts";

/** 204 No Content. */
const noContent = () => new Response(null, { status: 204 });

/** The anonymous invite preview (no bearer token). */
export function drivePreviewController(s: Services) {
  return new Elysia({ name: "drive-preview" }).get(
    "/v1/drive-invites/:token/meta",
    async ({ params }) => Response.json(await s.drives.meta(params.token)),
    {
      params: InviteTokenParams,
      response: v1Responses({ 200: InviteMeta }, [404, 500]),
      detail: { tags: ["drives"], summary: "Preview an invite before joining (anonymous)" },
    },
  );
}

/** The authenticated shared-drive routes. */
export function drivesController(s: Services) {
  return new Elysia({ name: "drives" })
    .derive(authenticated(s))
    .post("/v1/drive-invites", async ({ caller, body }) => Response.json(await s.drives.mint(caller, body)), {
      parse: jsonBody(s, "bad_request"),
      body: MintInviteBody,
      response: v1Responses({ 200: InviteMinted }, [400, 401, 404, 408, 413, 500]),
      detail: doc("drives", "Mint a drive invite (owner or manager); the token is returned only here"),
    })
    .put(
      "/v1/drives/:folder_hash/invites/:invite_id/sealed-token",
      async ({ caller, params, query, body }) => {
        const drive = { owner: query.owner ?? caller, folderHash: params.folder_hash };
        await s.drives.sealToken(caller, drive, params.invite_id, body.sealed_token);
        return noContent();
      },
      {
        parse: jsonBody(s, "bad_request"),
        params: DriveInviteParams,
        query: DriveOwnerQuery,
        body: SealedTokenBody,
        response: v1Responses({ 204: t.Null() }, [400, 401, 403, 404, 408, 409, 413, 500]),
        detail: doc("drives", "Park the invite token sealed under the drive key (minter, write-once)"),
      },
    )
    .get(
      "/v1/drives/:folder_hash/invites",
      async ({ caller, params, query }) =>
        Response.json(
          await s.drives.listInvites(caller, {
            owner: query.owner ?? caller,
            folderHash: params.folder_hash,
          }),
        ),
      {
        params: DriveParams,
        query: DriveOwnerQuery,
        response: v1Responses({ 200: DriveInvites }, [400, 401, 404, 500]),
        detail: doc("drives", "The drive's invites, newest first (owner or manager)"),
      },
    )
    .delete(
      "/v1/drives/:folder_hash/invites/:invite_id",
      async ({ caller, params, query }) => {
        const drive = { owner: query.owner ?? caller, folderHash: params.folder_hash };
        await s.drives.revokeInvite(caller, drive, params.invite_id);
        return noContent();
      },
      {
        parse: rawBody(),
        params: DriveInviteParams,
        query: DriveOwnerQuery,
        response: v1Responses({ 204: t.Null() }, [400, 401, 404, 500]),
        detail: doc("drives", "Revoke an invite (owner or manager); members who joined keep access"),
      },
    )
    .post(
      "/v1/drive-invites/:token/accept",
      async ({ caller, params, body }) =>
        Response.json(await s.drives.accept(caller, params.token, body.grant_blob)),
      {
        parse: jsonBody(s, "bad_request"),
        params: InviteTokenParams,
        body: AcceptInviteBody,
        response: v1Responses({ 200: AcceptResult }, [400, 401, 404, 408, 409, 410, 413, 500]),
        detail: doc("drives", "Join a drive through an invite, with the sealed grant blob"),
      },
    )
    .get("/v1/drive-memberships", async ({ caller }) => Response.json(await s.drives.memberships(caller)), {
      response: v1Responses({ 200: Memberships }, [401, 500]),
      detail: doc("drives", "The caller's drives and folder grants with their sealed grants"),
    })
    .get(
      "/v1/drives/:folder_hash/members",
      async ({ caller, params, query }) =>
        Response.json(
          await s.drives.members(caller, { owner: query.owner ?? caller, folderHash: params.folder_hash }),
        ),
      {
        params: DriveParams,
        query: DriveOwnerQuery,
        response: v1Responses({ 200: DriveMembers }, [400, 401, 403, 404, 500]),
        detail: doc("drives", "The drive's members and folder holders (owner or any member)"),
      },
    )
    .delete(
      "/v1/drives/:folder_hash/members/:member_ss58",
      async ({ caller, params, query }) => {
        await s.drives.removeMember(caller, query.owner ?? null, params.folder_hash, params.member_ss58);
        return noContent();
      },
      {
        parse: rawBody(),
        params: DriveMemberParams,
        query: DriveOwnerQuery,
        response: v1Responses({ 204: t.Null() }, [400, 401, 403, 404, 500]),
        detail: doc("drives", "Remove a member (owner or manager), or leave (member_ss58 = the caller)"),
      },
    )
    .patch(
      "/v1/drives/:folder_hash/members/:member_ss58",
      async ({ caller, params, query, body }) =>
        Response.json(
          await s.drives.changeRole(
            caller,
            { owner: query.owner ?? caller, folderHash: params.folder_hash },
            params.member_ss58,
            body.role,
          ),
        ),
      {
        parse: jsonBody(s, "bad_request"),
        params: DriveMemberParams,
        query: DriveOwnerQuery,
        body: ChangeRoleBody,
        response: v1Responses({ 200: DriveMember }, [400, 401, 403, 404, 408, 413, 500]),
        detail: doc("drives", "Change a member's role (owner or manager); effective on the next request"),
      },
    )
    .put(
      "/v1/account/invite-key",
      async ({ caller, body }) => {
        await s.drives.publishInviteKey(caller, body.pubkey);
        return Response.json({ status: "ok" });
      },
      {
        parse: jsonBody(s, "bad_request"),
        body: InviteKeyBody,
        response: v1Responses({ 200: InviteKeyResult }, [400, 401, 408, 413, 500]),
        detail: doc("drives", "Publish the account's X25519 invite public key (idempotent)"),
      },
    );
}
