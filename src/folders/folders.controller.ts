/**
 * @module folders/folders.controller
 * HTTP of the folder registry: `POST /register_folder`, `GET /list_folders/{base_address}`,
 * `DELETE /unregister_folder` (spec §4.1–4.3).
 */
import { Elysia, t } from "elysia";
import { AuthService } from "../auth/auth.service.ts";
import { isSs58 } from "../auth/ss58.ts";
import { fail } from "../errors/errors.ts";
import { addressParam, caller } from "../http/context.ts";
import { Folder, op } from "../http/docs.ts";
import { success } from "../http/envelope.ts";
import { asObject, rawSegments, readJson } from "../http/request.ts";
import { isFolderHash } from "../manifest/manifest.ts";
import type { Services } from "../services.ts";

/** Longest label / device name, characters. */
const MAX_LABEL = 1024;

function bodyAddress(b: Record<string, unknown>): string {
  const a = b.ss58_address ?? b.user_id;
  if (typeof a !== "string" || a === "")
    throw fail("invalid_manifest", "ss58_address (alias user_id) is required and must be a string");
  if (!isSs58(a)) throw fail("invalid_manifest", "ss58_address is not a valid SS58 address");
  return a;
}

function bodyFolderHash(b: Record<string, unknown>): string {
  if (!isFolderHash(b.folder_hash))
    throw fail("invalid_manifest", "folder_hash must be 16 lowercase hex characters");
  return b.folder_hash;
}

/** The folder registry routes. */
export function foldersController(s: Services) {
  return new Elysia({ name: "folders" })
    .post(
      "/register_folder",
      async ({ request }) => {
        const who = await caller(s, request);
        const b = asObject(await readJson(request));
        const owner = bodyAddress(b);
        const folderHash = bodyFolderHash(b);
        if (typeof b.label !== "string" || b.label.length === 0 || b.label.length > MAX_LABEL) {
          throw fail(
            "invalid_manifest",
            `label is required: a non-empty string of at most ${MAX_LABEL} characters`,
          );
        }
        const device = b.device_name ?? null;
        if (device !== null && (typeof device !== "string" || device.length > MAX_LABEL)) {
          throw fail("invalid_manifest", "device_name must be a string or null");
        }
        AuthService.requireOwner(who, owner, "ss58_address");
        s.folders.register(owner, folderHash, b.label, device);
        return success({ status: "registered" });
      },
      {
        parse: "none",
        detail: op(
          "folders",
          "Register a sync folder",
          t.Object({ status: t.Literal("registered") }),
          [400, 401, 403, 409, 500],
          t.Object({
            ss58_address: t.String(),
            folder_hash: t.String(),
            label: t.String(),
            device_name: t.Optional(t.Union([t.String(), t.Null()])),
          }),
        ),
      },
    )
    .get(
      "/list_folders/:base_address",
      async ({ request }) => {
        const who = await caller(s, request);
        const address = addressParam(rawSegments(request)[1]);
        AuthService.requireOwner(who, address, "base_address");
        return success({ base_address: address, folders: s.folders.list(address) });
      },
      {
        detail: op(
          "folders",
          "List registered folders with file counts and sizes",
          t.Object({ base_address: t.String(), folders: t.Array(Folder) }),
          [400, 401, 403],
        ),
      },
    )
    .delete(
      "/unregister_folder",
      async ({ request }) => {
        const who = await caller(s, request);
        const b = asObject(await readJson(request));
        const owner = bodyAddress(b);
        const folderHash = bodyFolderHash(b);
        AuthService.requireOwner(who, owner, "ss58_address");
        const deleted = s.folders.unregister(owner, folderHash);
        return success({ status: "unregistered", files_deleted: deleted });
      },
      {
        parse: "none",
        detail: op(
          "folders",
          "Unregister a folder and delete every file in it (irreversible)",
          t.Object({ status: t.Literal("unregistered"), files_deleted: t.Integer() }),
          [400, 401, 403, 404, 500],
          t.Object({ ss58_address: t.String(), folder_hash: t.String() }),
        ),
      },
    );
}
