/**
 * The role matrix of shared drives (docs/drives.md, "Who may do what"): every file route and the
 * drive management routes, called by a reader, a writer, a manager, the owner, a writer folder
 * holder (on `shared`), a stranger and a removed member, each answer checked against the table.
 * Members address the owner's folder with their own token.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { renameDeclaration } from "@esync/protocol/rename.ts";
import { ed25519Sign } from "@polkadot/util-crypto";
import { jsonInit, makeTestApp, type TestApp } from "../support/app.ts";
import { folderKey, makeManifest, pathHashOf, randomCiphertext, type TestUser } from "../support/fixtures.ts";
import { driveWithEveryRole, putAs, ROLES, type Role, v1 } from "./drive-helpers.ts";
import {
  authAt,
  createSessionRaw,
  download,
  FOLDER,
  FOLDER_B,
  fileIdOf,
  type JsonAnswer,
} from "./helpers.ts";

let t: TestApp;
let u: Record<Role, TestUser>;
let owner: string;

beforeAll(async () => {
  t = makeTestApp();
  u = await driveWithEveryRole(t);
  owner = u.owner.address;
  for (const path of ["shared/a.bin", "private/b.bin"]) {
    const { answer } = await putAs(t, u.owner, u.owner, path);
    expect(answer.status).toBe(200);
  }
  // A file per role for the deletes and renames, under the folder holder's folder.
  for (const role of ROLES)
    for (const op of ["del", "batch", "ren"])
      expect((await putAs(t, u.owner, u.owner, `shared/${op}-${role}.bin`)).answer.status).toBe(200);
});
afterAll(() => t.close());

/** Whole-drive readers and above, the owner, and the folder holder read; nobody else. */
const READ: Record<Role, number> = {
  reader: 200,
  writer: 200,
  manager: 200,
  owner: 200,
  grant: 200,
  stranger: 403,
  removed: 403,
};
/** Account-wide reads of one drive: whole-drive members and the owner only. */
const ACCOUNT_READ: Record<Role, number> = { ...READ, grant: 403 };
/** Writes: writers, managers, the owner and the writer folder holder (inside its folder). */
const WRITE: Record<Role, number> = { ...READ, reader: 403 };
/** The owner's own routes. */
const OWNER_ONLY: Record<Role, number> = {
  reader: 403,
  writer: 403,
  manager: 403,
  owner: 200,
  grant: 403,
  stranger: 403,
  removed: 403,
};
/** Seeing members: whole-drive members and the owner (403 for the rest). */
const SEE_MEMBERS: Record<Role, number> = { ...ACCOUNT_READ };
/** Invite management: managers and the owner; 404 for everyone else. */
const MANAGE: Record<Role, number> = {
  reader: 404,
  writer: 404,
  manager: 200,
  owner: 200,
  grant: 404,
  stranger: 404,
  removed: 404,
};

const get = (role: Role, path: string) => t.json(path, { headers: { authorization: authAt(t, u[role]) } });
const post = (role: Role, path: string, body: unknown, method = "POST") =>
  t.json(path, jsonInit(method, authAt(t, u[role]), body));

function renameBody(role: Role) {
  const from = pathHashOf(`shared/ren-${role}.bin`);
  const to = pathHashOf(`shared/renamed-${role}.bin`);
  const text = renameDeclaration([{ oldPathHash: Uint8Array.from(from), newPathHash: Uint8Array.from(to) }]);
  return {
    ss58_address: owner,
    folder_hash: FOLDER,
    renames: [
      {
        old_path_hash: from,
        new_path_hash: to,
        base_revision_id: Array.from(new Uint8Array(32)),
        new_encrypted_path: [1, 2, 3],
        new_file_name: `renamed-${role}.bin`,
        new_relative_path: `shared/renamed-${role}.bin`,
      },
    ],
    signature: Array.from(ed25519Sign(new TextEncoder().encode(text), folderKey)),
    signing_key: Array.from(folderKey.publicKey),
  };
}

/** Every route of the matrix: what it is called, the table it follows, and the call. */
const ROUTES: [string, Record<Role, number>, (role: Role) => Promise<JsonAnswer | Response>][] = [
  ["GET /get_state", READ, (r) => get(r, `/get_state/${owner}/${FOLDER}`)],
  ["GET /browse (path=shared)", READ, (r) => get(r, `/browse/${owner}/${FOLDER}?path=shared`)],
  [
    "GET /download (shared/a.bin)",
    READ,
    (r) =>
      download(t, authAt(t, u[r]), owner, FOLDER, Buffer.from(pathHashOf("shared/a.bin")).toString("hex")),
  ],
  ["GET /list_folder_entries", READ, (r) => get(r, `/list_folder_entries/${owner}/${FOLDER}`)],
  ["GET /list_folders/{owner}", READ, (r) => get(r, `/list_folders/${owner}`)],
  [
    "GET /search_files with folder_hash",
    ACCOUNT_READ,
    (r) => get(r, `/search_files/${owner}?folder_hash=${FOLDER}`),
  ],
  [
    "GET /get_user_summary with folder_hash",
    ACCOUNT_READ,
    (r) => get(r, `/get_user_summary/${owner}?folder_hash=${FOLDER}`),
  ],
  [
    "GET /get_file_type_summary with folder_hash",
    ACCOUNT_READ,
    (r) => get(r, `/get_file_type_summary/${owner}?folder_hash=${FOLDER}`),
  ],
  [
    "GET /get_source_summary with folder_hash",
    ACCOUNT_READ,
    (r) => get(r, `/get_source_summary/${owner}?folder_hash=${FOLDER}`),
  ],
  ["POST /upload", WRITE, async (r) => (await putAs(t, u.owner, u[r], `shared/up-${r}.bin`)).answer],
  [
    "POST /upload/session",
    WRITE,
    (r) => {
      const ct = randomCiphertext(100);
      const manifest = makeManifest({ owner, ciphertext: ct, path: `shared/session-${r}.bin` });
      return createSessionRaw(t, authAt(t, u[r]), {
        manifest,
        chunk_count: 1,
        chunk_size: 100,
        ciphertext_size: 100,
      });
    },
  ],
  [
    "POST /can_upload",
    WRITE,
    (r) => post(r, "/can_upload", { ss58_address: owner, folder_hash: FOLDER, size_bytes: 1 }),
  ],
  [
    "DELETE /delete",
    WRITE,
    (r) =>
      t.json(`/delete/${owner}/${FOLDER}/${Buffer.from(pathHashOf(`shared/del-${r}.bin`)).toString("hex")}`, {
        method: "DELETE",
        headers: { authorization: authAt(t, u[r]) },
      }),
  ],
  [
    "POST /delete_files",
    WRITE,
    (r) =>
      post(r, "/delete_files", {
        ss58_address: owner,
        folder_hash: FOLDER,
        file_ids: [Buffer.from(pathHashOf(`shared/batch-${r}.bin`)).toString("hex")],
      }),
  ],
  ["POST /rename_files", WRITE, (r) => post(r, "/rename_files", renameBody(r))],
  [
    "POST /register_folder_entries",
    WRITE,
    (r) =>
      post(r, "/register_folder_entries", {
        ss58_address: owner,
        folder_hash: FOLDER,
        relative_paths: [`shared/dir-${r}`],
      }),
  ],
  [
    "DELETE /unregister_folder_entries",
    WRITE,
    (r) =>
      post(
        r,
        "/unregister_folder_entries",
        { ss58_address: owner, folder_hash: FOLDER, relative_paths: [`shared/dir-${r}`] },
        "DELETE",
      ),
  ],
  [
    "POST /register_folder",
    OWNER_ONLY,
    (r) =>
      post(r, "/register_folder", {
        ss58_address: owner,
        folder_hash: r === "owner" ? FOLDER_B : FOLDER,
        label: "x",
      }),
  ],
  [
    "POST /register_relative_paths",
    OWNER_ONLY,
    (r) => post(r, `/register_relative_paths/${owner}/${FOLDER}`, { entries: [] }),
  ],
  ["GET /v1/drives/{fh}/members", SEE_MEMBERS, (r) => get(r, `/v1/drives/${FOLDER}/members?owner=${owner}`)],
  ["GET /v1/drives/{fh}/invites", MANAGE, (r) => get(r, `/v1/drives/${FOLDER}/invites?owner=${owner}`)],
  [
    "POST /v1/drive-invites",
    MANAGE,
    (r) =>
      v1(t, u[r], "POST", "/v1/drive-invites", { folder_hash: FOLDER, role: "reader", owner_ss58: owner }),
  ],
];

describe.each(ROUTES)("%s", (_name, table, call) => {
  test.each([...ROLES])("as %s answers the role table's status", async (role) => {
    const r = await call(role);
    const body = r instanceof Response ? null : r.body;
    expect({ role, status: r.status }).toEqual({ role, status: table[role] });
    if (table[role] === 403 && body && "Error" in body) expect(body.Error.error).toBe("forbidden");
  });
});

describe("what the matrix's answers contain", () => {
  test("a folder holder's /get_state lists only the files under its folder (200)", async () => {
    const r = await get("grant", `/get_state/${owner}/${FOLDER}`);
    const paths: string[] = r.body.Success.files.map((f: { relative_path: string }) => f.relative_path);
    expect(paths.length).toBeGreaterThan(0);
    expect(paths.every((p) => p.startsWith("shared/"))).toBe(true);
    expect(r.body.Success.total_count).toBe(paths.length);
  });

  test("a folder holder is refused (403) outside its folder: download, browse of the root, upload, delete", async () => {
    const other = Buffer.from(pathHashOf("private/b.bin")).toString("hex");
    expect((await download(t, authAt(t, u.grant), owner, FOLDER, other)).status).toBe(403);
    expect((await get("grant", `/browse/${owner}/${FOLDER}`)).status).toBe(403);
    expect((await putAs(t, u.owner, u.grant, "private/c.bin")).answer.status).toBe(403);
    const del = await t.json(`/delete/${owner}/${FOLDER}/${other}`, {
      method: "DELETE",
      headers: { authorization: authAt(t, u.grant) },
    });
    expect(del.status).toBe(403);
  });

  test("a member's upload records uploaded_by = the member, and search by uploaded_by finds it (200)", async () => {
    const { answer, manifest } = await putAs(t, u.owner, u.writer, "shared/by-writer.bin");
    expect(answer.status).toBe(200);
    const r = await get(
      "reader",
      `/search_files/${owner}?folder_hash=${FOLDER}&uploaded_by=${u.writer.address}`,
    );
    const hits = r.body.Success.files;
    expect(hits.map((h: { path_hash: number[] }) => Buffer.from(h.path_hash).toString("hex"))).toContain(
      fileIdOf(manifest),
    );
    for (const h of hits) expect(h.uploaded_by).toBe(u.writer.address);
  });

  test("a member's search without folder_hash is 403 forbidden, the owner's is 200", async () => {
    expect((await get("reader", `/search_files/${owner}`)).status).toBe(403);
    expect((await get("owner", `/search_files/${owner}`)).status).toBe(200);
  });

  test("/list_folders shows a member only its drive and the owner member_count (members, no holders)", async () => {
    const mine = (await get("reader", `/list_folders/${owner}`)).body.Success.folders;
    expect(mine.map((f: { folder_hash: string }) => f.folder_hash)).toEqual([FOLDER]);
    const all = (await get("owner", `/list_folders/${owner}`)).body.Success.folders;
    const drive = all.find((f: { folder_hash: string }) => f.folder_hash === FOLDER);
    expect(drive.member_count).toBe(3);
    const other = all.find((f: { folder_hash: string }) => f.folder_hash === FOLDER_B);
    expect(other).toBeDefined();
    expect("member_count" in other).toBe(false);
  });
});
