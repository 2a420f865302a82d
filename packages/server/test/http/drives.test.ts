/**
 * Shared-drive routes (docs/drives.md): invites (mint, seal, list, revoke), the anonymous
 * preview, accept (atomic, 410, 409), memberships, members, removal, role changes, the account
 * invite key, frozen drives, and the routes left out (404 with an empty body).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { join as joinPath } from "node:path";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import { jsonInit, makeTestApp, type TestApp, testDatabase } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext, type TestUser } from "../support/fixtures.ts";
import { pgMigratedDatabase } from "../support/pg-server.ts";
import { tempDir } from "../support/tmp.ts";
import { accept, expectV1Error, GRANT_BLOB, join, mint, putAs, registerFolder, v1 } from "./drive-helpers.ts";
import {
  authAt,
  createSessionRaw,
  expectSuccess,
  FOLDER,
  finalize,
  getState,
  openSession,
  putChunks,
  rowsOf,
} from "./helpers.ts";

let t: TestApp;
let owner: TestUser;
let alice: TestUser;
beforeEach(async () => {
  t = makeTestApp();
  owner = newUser();
  alice = newUser();
  await registerFolder(t, owner);
});
afterEach(() => t.close());

const members = (as: TestUser) => v1(t, as, "GET", `/v1/drives/${FOLDER}/members?owner=${owner.address}`);

describe("POST /v1/drive-invites", () => {
  test("returns 200 with a 43-character token and its BLAKE3 id; only the id is stored", async () => {
    const r = await v1(t, owner, "POST", "/v1/drive-invites", { folder_hash: FOLDER, role: "reader" });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(["invite_id", "invite_token"]);
    expect(r.body.invite_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(r.body.invite_id).toBe(blake3Hex(new TextEncoder().encode(r.body.invite_token)));
    const rows = await rowsOf(t, "drive_invites");
    expect(rows.map((x) => x.invite_id)).toEqual([r.body.invite_id]);
    expect(JSON.stringify(rows)).not.toContain(r.body.invite_token);
    expect(rows[0]).toMatchObject({ role: "reader", max_uses: 50, expires_at: t.clock.now() + 604800 });
  });

  test("defaults to a writer invite and echoes path_prefix for a folder invite (200)", async () => {
    expect((await rowsOf(t, "drive_invites")).length).toBe(0);
    await mint(t, owner);
    const folder = await mint(t, owner, { role: "reader", path_prefix: "a/b", max_uses: 1 });
    expect(folder.path_prefix).toBe("a/b");
    const roles = (await rowsOf(t, "drive_invites")).map((x) => x.role).sort();
    expect(roles).toEqual(["reader", "writer"]);
  });

  test.each([
    [
      { role: "reader", path_prefix: "a", role_: 0 },
      "a folder invite is a reader or writer invite",
      { role: "manager", path_prefix: "a" },
    ],
    [{}, "a folder invite is single-use", { role: "reader", path_prefix: "a", max_uses: 2 }],
    [
      {},
      "expires_in_secs exceeds the folder invite maximum of 30 days",
      { path_prefix: "a", expires_in_secs: 2592001 },
    ],
  ])("returns 400 bad_request with the message clients match (%#)", async (_x, message, body) => {
    const r = await v1(t, owner, "POST", "/v1/drive-invites", { folder_hash: FOLDER, ...body });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ error: "bad_request", message });
  });

  test.each([
    { role: "admin" },
    { role: "manager", max_uses: 2 },
    { role: "manager", expires_in_secs: 86401 },
    { role: "writer", max_uses: 51 },
    { role: "writer", expires_in_secs: 3153600001 },
    { role: "writer", max_uses: 0 },
    { path_prefix: "../x", max_uses: 1 },
    { folder_hash: "XYZ" },
  ])("returns 400 bad_request over a cap or for a bad value: %j", async (body) => {
    expectV1Error(
      await v1(t, owner, "POST", "/v1/drive-invites", { folder_hash: FOLDER, ...body }),
      400,
      "bad_request",
    );
  });

  test("returns 404 with an error body for an unregistered folder or a caller who does not manage it", async () => {
    expectV1Error(
      await v1(t, owner, "POST", "/v1/drive-invites", { folder_hash: "0123456789abcdef" }),
      404,
      "not_found",
    );
    await join(t, owner, alice, "writer");
    const body = { folder_hash: FOLDER, owner_ss58: owner.address };
    expectV1Error(await v1(t, alice, "POST", "/v1/drive-invites", body), 404, "not_found");
  });

  test("returns 401 unauthorized (flat) without a token", async () => {
    expectV1Error(
      await v1(t, null, "POST", "/v1/drive-invites", { folder_hash: FOLDER }),
      401,
      "unauthorized",
    );
  });
});

describe("sealed tokens and the invite listing", () => {
  test("PUT sealed-token is 204 for the minter, 409 the second time, 403 for another account, 400 for bad input", async () => {
    const inv = await mint(t, owner);
    const path = `/v1/drives/${FOLDER}/invites/${inv.invite_id}/sealed-token`;
    const sealed = Buffer.from('{"v":1}').toString("base64");
    await join(t, owner, alice, "manager");
    const other = await v1(t, alice, "PUT", `${path}?owner=${owner.address}`, { sealed_token: sealed });
    expectV1Error(other, 403, "forbidden");
    expect((await v1(t, owner, "PUT", path, { sealed_token: sealed })).status).toBe(204);
    expectV1Error(await v1(t, owner, "PUT", path, { sealed_token: sealed }), 409, "conflict");
    expectV1Error(await v1(t, owner, "PUT", path, { sealed_token: "not base64!" }), 400, "bad_request");
    const badId = `/v1/drives/${FOLDER}/invites/XYZ/sealed-token`;
    expectV1Error(await v1(t, owner, "PUT", badId, { sealed_token: sealed }), 400, "bad_request");
  });

  test("GET invites lists newest first with sealed_token only for the owner and the minter (200)", async () => {
    await join(t, owner, alice, "manager");
    t.clock.advance(10);
    const first = await mint(t, owner, { role: "reader" });
    t.clock.advance(10);
    const second = await mint(t, alice, { role: "writer", owner_ss58: owner.address });
    const sealed = Buffer.from("x").toString("base64");
    await v1(t, owner, "PUT", `/v1/drives/${FOLDER}/invites/${first.invite_id}/sealed-token`, {
      sealed_token: sealed,
    });
    const asOwner = await v1(t, owner, "GET", `/v1/drives/${FOLDER}/invites`);
    expect(asOwner.status).toBe(200);
    expect(asOwner.body.truncated).toBe(false);
    const ids = asOwner.body.invites.map((i: { invite_id: string }) => i.invite_id);
    expect(ids.slice(0, 2)).toEqual([second.invite_id, first.invite_id]);
    const row = asOwner.body.invites[1];
    expect(row).toMatchObject({
      sealed_token: sealed,
      role: "reader",
      minted_by: owner.address,
      revoked: false,
      valid: true,
      use_count: 0,
      max_uses: 50,
    });
    expect(row.expires_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const asManager = await v1(t, alice, "GET", `/v1/drives/${FOLDER}/invites?owner=${owner.address}`);
    expect("sealed_token" in asManager.body.invites[1]).toBe(false);
  });

  test("DELETE invite is 204, then the same id is 404; an accept after it is 410 gone, members keep access", async () => {
    const inv = await mint(t, owner);
    expect((await accept(t, alice, inv.invite_token)).status).toBe(200);
    const path = `/v1/drives/${FOLDER}/invites/${inv.invite_id}`;
    expect((await v1(t, owner, "DELETE", path)).status).toBe(204);
    expectV1Error(await v1(t, owner, "DELETE", path), 404, "not_found");
    expectV1Error(await v1(t, owner, "DELETE", `/v1/drives/${FOLDER}/invites/nothex`), 404, "not_found");
    expectV1Error(await accept(t, newUser(), inv.invite_token), 410, "gone");
    expect((await getState(t, authAt(t, alice), owner.address, FOLDER)).status).toBe(200);
  });
});

describe("GET /v1/drive-invites/{token}/meta and accept", () => {
  test("meta answers without a token: the preview with exactly the product's keys (200); unknown is 404", async () => {
    const inv = await mint(t, owner, { role: "reader" });
    const r = await v1(t, null, "GET", `/v1/drive-invites/${inv.invite_token}/meta`);
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual([
      "display_label",
      "expires_at",
      "folder_hash",
      "owner_ss58",
      "role",
      "valid",
    ]);
    expect(r.body).toMatchObject({
      owner_ss58: owner.address,
      folder_hash: FOLDER,
      display_label: "team",
      role: "reader",
      valid: true,
    });
    expectV1Error(await v1(t, null, "GET", "/v1/drive-invites/unknown/meta"), 404, "not_found");
  });

  test("accept creates the membership (200), again succeeds without a use, the owner gets already_owner", async () => {
    const inv = await mint(t, owner, { role: "reader", max_uses: 1 });
    const r = await accept(t, alice, inv.invite_token);
    expect(r.body).toEqual({ owner_ss58: owner.address, folder_hash: FOLDER, role: "reader" });
    expect((await accept(t, alice, inv.invite_token)).status).toBe(410);
    const again = await mint(t, owner, { role: "writer", max_uses: 1 });
    expect((await accept(t, alice, again.invite_token)).body.role).toBe("reader");
    expect((await rowsOf(t, "drive_invites")).find((x) => x.invite_id === again.invite_id)?.use_count).toBe(
      0,
    );
    const own = await accept(t, owner, again.invite_token);
    expect(own.body).toEqual({
      owner_ss58: owner.address,
      folder_hash: FOLDER,
      role: "writer",
      already_owner: true,
    });
    const rows = await rowsOf(t, "drive_members");
    expect(rows.map((x) => [x.member, x.role, x.grant_blob])).toEqual([
      [alice.address, "reader", GRANT_BLOB],
    ]);
  });

  test("accept is 400 for a grant blob that is not base64, 404 for an unknown token, 410 once expired", async () => {
    const inv = await mint(t, owner, { expires_in_secs: 60 });
    const bad = await v1(t, alice, "POST", `/v1/drive-invites/${inv.invite_token}/accept`, {
      grant_blob: "%%%",
    });
    expectV1Error(bad, 400, "bad_request");
    expectV1Error(await accept(t, alice, "nosuchtoken"), 404, "not_found");
    t.clock.advance(61);
    expectV1Error(await accept(t, alice, inv.invite_token), 410, "gone");
    const meta = await v1(t, null, "GET", `/v1/drive-invites/${inv.invite_token}/meta`);
    expect(meta.body.valid).toBe(false);
  });

  test("a folder invite over the whole drive is 409 already_member; an overlapping grant 409 overlapping_folder_grant", async () => {
    await join(t, owner, alice, "reader");
    const f = await mint(t, owner, { role: "reader", path_prefix: "docs", max_uses: 1 });
    expectV1Error(await accept(t, alice, f.invite_token), 409, "already_member");
    const bob = newUser();
    await join(t, owner, bob, "reader", { path_prefix: "docs", max_uses: 1 });
    const inner = await mint(t, owner, { role: "reader", path_prefix: "docs/inner", max_uses: 1 });
    expectV1Error(await accept(t, bob, inner.invite_token), 409, "overlapping_folder_grant");
    const beside = await mint(t, owner, { role: "reader", path_prefix: "docsx", max_uses: 1 });
    expect((await accept(t, bob, beside.invite_token)).body.path_prefix).toBe("docsx");
  });

  test("20 parallel accepts of a 5-use invite create exactly 5 memberships and use_count 5", async () => {
    const inv = await mint(t, owner, { max_uses: 5 });
    const users = Array.from({ length: 20 }, () => newUser());
    const answers = await Promise.all(users.map((x) => accept(t, x, inv.invite_token)));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.filter((s) => s === 200).length).toBe(5);
    expect(statuses.filter((s) => s === 410).length).toBe(15);
    expect((await rowsOf(t, "drive_members")).length).toBe(5);
    expect((await rowsOf(t, "drive_invites"))[0]?.use_count).toBe(5);
  });
});

describe("memberships, members, removal and roles", () => {
  test("GET /v1/drive-memberships lists drives and folder grants with their blobs (200), never 403", async () => {
    expect((await v1(t, alice, "GET", "/v1/drive-memberships")).body).toEqual({
      memberships: [],
      folder_grants: [],
    });
    await join(t, owner, alice, "writer");
    const other = newUser();
    await registerFolder(t, other, "0123456789abcdef", "theirs");
    const g = await mint(t, other, {
      folder_hash: "0123456789abcdef",
      role: "writer",
      path_prefix: "x",
      max_uses: 1,
    });
    await accept(t, alice, g.invite_token);
    const r = await v1(t, alice, "GET", "/v1/drive-memberships");
    expect(r.status).toBe(200);
    expect(r.body.memberships).toEqual([
      {
        owner_ss58: owner.address,
        folder_hash: FOLDER,
        display_label: "team",
        grant_blob: GRANT_BLOB,
        created_at: expect.any(String),
        role: "writer",
        member_count: 1,
      },
    ]);
    expect(r.body.folder_grants).toEqual([
      {
        owner_ss58: other.address,
        folder_hash: "0123456789abcdef",
        display_label: "theirs",
        grant_blob: GRANT_BLOB,
        created_at: expect.any(String),
        path_prefix: "x",
        role: "writer",
      },
    ]);
  });

  test("GET members: owner and members 200 without blobs; a stranger 403; an unknown drive 404", async () => {
    await join(t, owner, alice, "reader");
    const r = await members(alice);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      members: [{ member_ss58: alice.address, role: "reader", created_at: expect.any(String) }],
      folder_grants: [],
    });
    expectV1Error(await members(newUser()), 403, "forbidden");
    expectV1Error(await v1(t, owner, "GET", "/v1/drives/0123456789abcdef/members"), 404, "not_found");
  });

  test("a removed member's next read is 403 and its open session cannot finalize (403)", async () => {
    await join(t, owner, alice, "writer");
    const ct = randomCiphertext(3000);
    const s = await openSession(t, alice, ct, { owner: owner.address, path: "s.bin" } as never);
    await putChunks(t, s, ct);
    expect((await v1(t, owner, "DELETE", `/v1/drives/${FOLDER}/members/${alice.address}`)).status).toBe(204);
    expect((await getState(t, authAt(t, alice), owner.address, FOLDER)).status).toBe(403);
    expect((await finalize(t, s.auth, s.sessionId)).status).toBe(403);
    expectV1Error(
      await v1(t, owner, "DELETE", `/v1/drives/${FOLDER}/members/${alice.address}`),
      404,
      "not_found",
    );
    expectV1Error(
      await v1(t, owner, "DELETE", `/v1/drives/${FOLDER}/members/${owner.address}`),
      404,
      "not_found",
    );
  });

  test("a member leaves with ?owner= (204); a writer removing someone else is 403", async () => {
    const bob = newUser();
    await join(t, owner, alice, "writer");
    await join(t, owner, bob, "writer");
    const q = `?owner=${owner.address}`;
    expectV1Error(
      await v1(t, alice, "DELETE", `/v1/drives/${FOLDER}/members/${bob.address}${q}`),
      403,
      "forbidden",
    );
    expect((await v1(t, alice, "DELETE", `/v1/drives/${FOLDER}/members/${alice.address}${q}`)).status).toBe(
      204,
    );
    expect((await members(bob)).body.members.map((m: { member_ss58: string }) => m.member_ss58)).toEqual([
      bob.address,
    ]);
  });

  test("a writer lowered to reader is refused its next upload (403); the admitting writer invite is revoked", async () => {
    const inv = await mint(t, owner, { role: "writer" });
    await accept(t, alice, inv.invite_token);
    expect((await putAs(t, owner, alice, "w1.bin")).answer.status).toBe(200);
    const r = await v1(t, owner, "PATCH", `/v1/drives/${FOLDER}/members/${alice.address}`, {
      role: "reader",
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ member_ss58: alice.address, role: "reader", created_at: expect.any(String) });
    expect((await putAs(t, owner, alice, "w2.bin")).answer.status).toBe(403);
    expectV1Error(await accept(t, newUser(), inv.invite_token), 410, "gone");
  });

  test("demoting a manager revokes the invites it minted; own role and unknown roles are 400; the owner 404", async () => {
    await join(t, owner, alice, "manager");
    const minted = await mint(t, alice, { owner_ss58: owner.address, role: "reader" });
    const path = `/v1/drives/${FOLDER}/members`;
    const self = await v1(t, alice, "PATCH", `${path}/${alice.address}?owner=${owner.address}`, {
      role: "writer",
    });
    expectV1Error(self, 400, "bad_request");
    expectV1Error(
      await v1(t, owner, "PATCH", `${path}/${alice.address}`, { role: "boss" }),
      400,
      "bad_request",
    );
    expectV1Error(
      await v1(t, owner, "PATCH", `${path}/${newUser().address}`, { role: "reader" }),
      404,
      "not_found",
    );
    expect((await v1(t, owner, "PATCH", `${path}/${alice.address}`, { role: "writer" })).status).toBe(200);
    expectV1Error(await accept(t, newUser(), minted.invite_token), 410, "gone");
  });

  test("unregistering the folder ends the drive: members are gone (403 on the next read)", async () => {
    await join(t, owner, alice, "reader");
    const r = await t.json(
      "/unregister_folder",
      jsonInit("DELETE", authAt(t, owner), { ss58_address: owner.address, folder_hash: FOLDER }),
    );
    expect(r.status).toBe(200);
    await registerFolder(t, owner);
    expect((await getState(t, authAt(t, alice), owner.address, FOLDER)).status).toBe(403);
  });
});

describe("PUT /v1/account/invite-key", () => {
  test("stores 32 bytes of base64 (200 {status: ok}, idempotent); anything else is 400", async () => {
    const pubkey = Buffer.alloc(32, 9).toString("base64");
    for (let i = 0; i < 2; i++) {
      const r = await v1(t, alice, "PUT", "/v1/account/invite-key", { pubkey });
      expect({ status: r.status, body: r.body }).toEqual({ status: 200, body: { status: "ok" } });
    }
    expect((await rowsOf(t, "account_invite_keys")).map((x) => x.pubkey)).toEqual([pubkey]);
    const short = Buffer.alloc(31).toString("base64");
    expectV1Error(await v1(t, alice, "PUT", "/v1/account/invite-key", { pubkey: short }), 400, "bad_request");
  });
});

describe("frozen drives", () => {
  test("refuse writes with 402 drive_frozen (flat, frozen_until) for members and the owner; reads stay 200", async () => {
    await join(t, owner, alice, "writer");
    const until = t.clock.now() + 3600;
    await t.services.drives.freeze(owner.address, until);
    for (const as of [alice, owner]) {
      const { answer } = await putAs(t, owner, as, `f-${as.address.slice(0, 6)}.bin`);
      expect(answer.status).toBe(402);
      expect(answer.body).toEqual({
        error: "drive_frozen",
        message: expect.any(String),
        frozen_until: new Date(until * 1000).toISOString().replace(".000Z", "Z"),
      });
    }
    const ct = randomCiphertext(100);
    const m = makeManifest({ owner: owner.address, ciphertext: ct, path: "s.bin" });
    const session = await createSessionRaw(t, authAt(t, alice), {
      manifest: m,
      chunk_count: 1,
      chunk_size: 100,
      ciphertext_size: 100,
    });
    expect(session.status).toBe(402);
    const can = await t.json(
      "/can_upload",
      jsonInit("POST", authAt(t, alice), { ss58_address: owner.address, folder_hash: FOLDER, size_bytes: 1 }),
    );
    expect(can.body).toEqual({ result: false, error: "drive_frozen" });
    expect((await getState(t, authAt(t, alice), owner.address, FOLDER)).status).toBe(200);
    expect((await v1(t, alice, "GET", "/v1/drive-memberships")).body.memberships[0].frozen).toBe(true);
    expect(await t.services.drives.unfreeze(owner.address)).toBe(true);
    expect((await putAs(t, owner, alice, "after.bin")).answer.status).toBe(200);
  });
});

describe("routes left out", () => {
  test.each([
    ["POST", "/v1/drive-invites/email"],
    ["PUT", `/v1/drives/${FOLDER}/grants/5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY`],
    ["POST", "/v1/folder-shares/uploads"],
  ])("%s %s answers 404 with an empty body (feature off)", async (method, path) => {
    const r = await t.fetch(path, { method, headers: { authorization: authAt(t, owner) } });
    expect(r.status).toBe(404);
    expect(await r.text()).toBe("");
  });
});

test("expectSuccess stays usable for enveloped member reads", async () => {
  await join(t, owner, alice, "reader");
  expectSuccess(await getState(t, authAt(t, alice), owner.address, FOLDER), [
    "ss58_address",
    "folder_hash",
    "files",
    "total_count",
    "has_more",
    "offset",
    "limit",
  ]);
});

describe("two nodes on one database", () => {
  test("20 accepts split over both make exactly 5 members; a removal on one node is 403 on the other's next request", async () => {
    const lease = testDatabase === "postgres" ? await pgMigratedDatabase("drives") : null;
    const env: Record<string, string> = lease
      ? { ESYNC_DATABASE_URL: lease.url }
      : { ESYNC_DB_PATH: joinPath(tempDir("esync-drives-"), "esync.sqlite") };
    const a = makeTestApp(env);
    const b = makeTestApp(env);
    try {
      const boss = newUser();
      await registerFolder(a, boss);
      const inv = await mint(a, boss, { max_uses: 5 });
      const users = Array.from({ length: 20 }, () => newUser());
      const answers = await Promise.all(users.map((x, i) => accept(i % 2 ? a : b, x, inv.invite_token)));
      const joined = users.filter((_, i) => answers[i]?.status === 200);
      expect(joined.length).toBe(5);
      expect(answers.filter((r) => r.status === 410).length).toBe(15);
      const member = joined[0] as TestUser;
      expect((await getState(b, authAt(b, member), boss.address, FOLDER)).status).toBe(200);
      expect((await v1(a, boss, "DELETE", `/v1/drives/${FOLDER}/members/${member.address}`)).status).toBe(
        204,
      );
      expect((await getState(b, authAt(b, member), boss.address, FOLDER)).status).toBe(403);
    } finally {
      await Promise.all([a.close(), b.close()]);
      await lease?.release();
    }
  });
});
