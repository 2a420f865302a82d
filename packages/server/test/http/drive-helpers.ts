/**
 * Helpers of the shared-drive tests (docs/drives.md): v1 calls, minting and accepting invites,
 * and a drive with one account in every role.
 */
import { expect } from "bun:test";
import { jsonInit, type TestApp } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext, type TestUser } from "../support/fixtures.ts";
import { authAt, FOLDER, type JsonAnswer, uploadSingle } from "./helpers.ts";

/** A grant blob as clients send it: standard padded base64 of opaque bytes. */
export const GRANT_BLOB = Buffer.from('{"ciphertext":"x","salt":"y"}').toString("base64");

/** A JSON request to a v1 route as `user` (null: anonymous). */
export function v1(
  t: TestApp,
  user: TestUser | null,
  method: string,
  path: string,
  body?: unknown,
): Promise<JsonAnswer> {
  const auth = user ? authAt(t, user) : null;
  if (body === undefined) {
    const headers: Record<string, string> = auth ? { authorization: auth } : {};
    return t.json(path, { method, headers });
  }
  return t.json(path, jsonInit(method, auth, body));
}

/** Asserts a flat v1 error `{"error": code, "message": ...}` with `status`. */
export function expectV1Error(r: JsonAnswer, status: number, code: string): void {
  expect({ status: r.status, body: r.body }).toEqual({
    status,
    body: { error: code, message: expect.any(String) },
  });
}

/** Registers `folder` (label `label`) for `owner`, asserting 200. */
export async function registerFolder(
  t: TestApp,
  owner: TestUser,
  folder = FOLDER,
  label = "team",
): Promise<void> {
  const r = await t.json(
    "/register_folder",
    jsonInit("POST", authAt(t, owner), { ss58_address: owner.address, folder_hash: folder, label }),
  );
  expect(r.status).toBe(200);
}

/** Mints an invite as `by` with `body` (folder_hash defaults to FOLDER), asserting 200. */
export async function mint(
  t: TestApp,
  by: TestUser,
  body: Record<string, unknown> = {},
): Promise<{ invite_token: string; invite_id: string; path_prefix?: string }> {
  const r = await v1(t, by, "POST", "/v1/drive-invites", { folder_hash: FOLDER, ...body });
  if (r.status !== 200) throw new Error(`mint: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** Accepts `token` as `user`. */
export function accept(t: TestApp, user: TestUser, token: string): Promise<JsonAnswer> {
  return v1(t, user, "POST", `/v1/drive-invites/${token}/accept`, { grant_blob: GRANT_BLOB });
}

/** Mints a `role` invite as `owner` and has `user` accept it (asserting 200). */
export async function join(
  t: TestApp,
  owner: TestUser,
  user: TestUser,
  role: string,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const inv = await mint(t, owner, { role, ...extra });
  const r = await accept(t, user, inv.invite_token);
  if (r.status !== 200) throw new Error(`accept: ${r.status} ${JSON.stringify(r.body)}`);
}

/** Uploads `path` into `owner`'s FOLDER with `as`'s token. */
export async function putAs(
  t: TestApp,
  owner: TestUser,
  as: TestUser,
  path: string,
  folder = FOLDER,
): Promise<{ answer: JsonAnswer; manifest: Record<string, unknown> }> {
  const ct = randomCiphertext(64);
  const manifest = makeManifest({ owner: owner.address, ciphertext: ct, path, folderHash: folder });
  return { answer: await uploadSingle(t, authAt(t, as), manifest, ct), manifest };
}

/** The roles of the matrix. */
export const ROLES = ["reader", "writer", "manager", "owner", "grant", "stranger", "removed"] as const;
/** A role of the matrix. */
export type Role = (typeof ROLES)[number];

/**
 * A drive on FOLDER owned by `users.owner`, with a reader, a writer and a manager, a writer
 * folder holder on `shared`, a stranger, and a writer who was removed.
 */
export async function driveWithEveryRole(t: TestApp): Promise<Record<Role, TestUser>> {
  const users = Object.fromEntries(ROLES.map((r) => [r, newUser()])) as Record<Role, TestUser>;
  await registerFolder(t, users.owner);
  await join(t, users.owner, users.reader, "reader");
  await join(t, users.owner, users.writer, "writer");
  await join(t, users.owner, users.manager, "manager");
  await join(t, users.owner, users.grant, "writer", { path_prefix: "shared", max_uses: 1 });
  await join(t, users.owner, users.removed, "writer");
  const gone = await v1(t, users.owner, "DELETE", `/v1/drives/${FOLDER}/members/${users.removed.address}`);
  expect(gone.status).toBe(204);
  return users;
}
