/**
 * @module folders/folders.controller
 * HTTP of the folder registry: `POST /register_folder`, `GET /list_folders/{base_address}`,
 * `DELETE /unregister_folder` (spec §4.1–4.3). Shapes come from `src/wire/schemas.ts`.
 */
import { Elysia } from "elysia";
import { AuthService } from "../auth/auth.service.ts";
import { authenticated, bodyAddress, doc, jsonBody, responses } from "../http/contract.ts";
import { success } from "../http/envelope.ts";
import type { Services } from "../services.ts";
import {
  ListFoldersParams,
  ListFoldersResult,
  RegisterFolderBody,
  RegisterFolderResult,
  UnregisterFolderBody,
  UnregisterFolderResult,
} from "../wire/schemas.ts";

/** The folder registry routes. */
export function foldersController(s: Services) {
  return new Elysia({ name: "folders" })
    .derive(authenticated(s))
    .post(
      "/register_folder",
      ({ caller, body }) => {
        const owner = bodyAddress(body);
        AuthService.requireOwner(caller, owner, "ss58_address");
        s.folders.register(owner, body.folder_hash, body.label, body.device_name ?? null);
        return success({ status: "registered" });
      },
      {
        parse: jsonBody(s),
        body: RegisterFolderBody,
        response: responses(RegisterFolderResult, [400, 401, 403, 409, 500]),
        detail: doc("folders", "Register a sync folder"),
      },
    )
    .get(
      "/list_folders/:base_address",
      ({ caller, params }) => {
        AuthService.requireOwner(caller, params.base_address, "base_address");
        return success({ base_address: params.base_address, folders: s.folders.list(params.base_address) });
      },
      {
        params: ListFoldersParams,
        response: responses(ListFoldersResult, [400, 401, 403, 500]),
        detail: doc("folders", "List registered folders with file counts and sizes"),
      },
    )
    .delete(
      "/unregister_folder",
      ({ caller, body }) => {
        const owner = bodyAddress(body);
        AuthService.requireOwner(caller, owner, "ss58_address");
        const deleted = s.folders.unregister(owner, body.folder_hash);
        return success({ status: "unregistered", files_deleted: deleted });
      },
      {
        parse: jsonBody(s),
        body: UnregisterFolderBody,
        response: responses(UnregisterFolderResult, [400, 401, 403, 404, 500]),
        detail: doc("folders", "Unregister a folder and delete every file in it (irreversible)"),
      },
    );
}
