/**
 * The API client on the shared-drive routes (docs/drives.md) against a real server, with two
 * accounts: mint, seal, list, preview, accept, memberships, members, role change, removal,
 * invite key, and the flat v1 errors read as `ApiError` codes.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type ServerProcess, startServer } from "@esync/server/test/support/server.ts";
import { ApiError, EsyncApi, identityFromMnemonic, WalletTokenSource } from "../src/index.ts";

let server: ServerProcess;
const owner = await identityFromMnemonic(`${"abandon ".repeat(11)}about`);
const member = await identityFromMnemonic(
  "legal winner thank year wave sausage worth useful legal winner thank yellow",
);
const folder = owner.folder("team");
let asOwner: EsyncApi;
let asMember: EsyncApi;
const blob = Buffer.from("sealed grant").toString("base64");

beforeAll(async () => {
  server = await startServer();
  asOwner = new EsyncApi({ baseUrl: server.url, token: new WalletTokenSource(owner) });
  asMember = new EsyncApi({ baseUrl: server.url, token: new WalletTokenSource(member) });
  await asOwner.registerFolder({ ss58Address: owner.address, folderHash: folder.folderHash, label: "team" });
});
afterAll(async () => {
  await server?.stop();
});

async function codeOf(p: Promise<unknown>): Promise<string> {
  const e = await p.then(
    () => null,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(ApiError);
  return (e as ApiError).code;
}

test("two accounts: invite, preview, join, members, role change and removal through the client", async () => {
  expect(member.address).not.toBe(owner.address);
  const inv = await asOwner.mintInvite({ folder_hash: folder.folderHash, role: "writer", max_uses: 2 });
  await asOwner.sealInviteToken(folder.folderHash, inv.invite_id, Buffer.from("sealed").toString("base64"));
  expect(await codeOf(asOwner.sealInviteToken(folder.folderHash, inv.invite_id, "c2VhbGVk"))).toBe(
    "conflict",
  );
  const listed = await asOwner.listInvites(folder.folderHash);
  expect(listed.invites[0]).toMatchObject({
    invite_id: inv.invite_id,
    sealed_token: "c2VhbGVk",
    valid: true,
  });
  const meta = await new EsyncApi({ baseUrl: server.url }).inviteMeta(inv.invite_token);
  expect(meta).toMatchObject({
    owner_ss58: owner.address,
    display_label: "team",
    role: "writer",
    valid: true,
  });
  expect(await asMember.acceptInvite(inv.invite_token, blob)).toEqual({
    owner_ss58: owner.address,
    folder_hash: folder.folderHash,
    role: "writer",
  });
  const mine = await asMember.memberships();
  expect(mine.memberships.map((m) => [m.owner_ss58, m.folder_hash, m.role, m.grant_blob])).toEqual([
    [owner.address, folder.folderHash, "writer", blob],
  ]);
  const seen = await asMember.driveMembers(folder.folderHash, owner.address);
  expect(seen.members.map((m) => m.member_ss58)).toEqual([member.address]);
  const lowered = await asOwner.changeMemberRole(folder.folderHash, member.address, "reader");
  expect(lowered.role).toBe("reader");
  expect(
    await codeOf(asMember.mintInvite({ folder_hash: folder.folderHash, owner_ss58: owner.address })),
  ).toBe("not_found");
  await asMember.publishInviteKey(Buffer.alloc(32, 1).toString("base64"));
  await asMember.removeMember(folder.folderHash, member.address, owner.address);
  expect((await asMember.memberships()).memberships).toEqual([]);
  expect(await codeOf(asMember.driveMembers(folder.folderHash, owner.address))).toBe("forbidden");
  // Lowering the member below the writer invite that admitted it revoked that invite.
  expect(await codeOf(asOwner.revokeInvite(folder.folderHash, inv.invite_id))).toBe("not_found");
  expect(await codeOf(asMember.acceptInvite(inv.invite_token, blob))).toBe("gone");
});
