/**
 * @module server/folders/folders.controller
 * HTTP of the folder registry: `POST /register_folder`, `GET /list_folders/{base_address}`,
 * `DELETE /unregister_folder` (docs/protocol.md#folders), and the folder entries (explicit directories) of
 * docs/protocol.md#folder-entries. Shapes come from `packages/protocol/src/schemas.ts`.
 */

import {
  FolderEntriesBody,
  FolderParams,
  ListFolderEntriesQuery,
  ListFolderEntriesResult,
  ListFoldersParams,
  ListFoldersResult,
  MAX_FOLDER_ENTRIES_BODY_BYTES,
  RegisterFolderBody,
  RegisterFolderEntriesBody,
  RegisterFolderEntriesResult,
  RegisterFolderResult,
  UnregisterFolderBody,
  UnregisterFolderEntriesResult,
  UnregisterFolderResult,
} from "@esync/protocol/schemas.ts";
import { Elysia } from "elysia";
import { authenticated, bodyAddress, doc, flatResponses, jsonBody, responses } from "../http/contract.ts";
import { success } from "../http/envelope.ts";
import { integerParams } from "../http/validate.ts";
import type { Services } from "../services.ts";
import { checkFolderEntryAttributes, checkFolderEntryPaths } from "./folders.service.ts";

/**
 * `{"relative_paths": [...]}` written page by page from `pages` (each page is read when the
 * previous one was taken by the connection), so a long list never holds the event loop. A read
 * failure midway fails the stream: the client sees the answer cut short.
 */
function entriesJson(
  pages: AsyncGenerator<string[]>,
  allowed: (path: string) => boolean,
): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  let first = true;
  return new ReadableStream<Uint8Array>(
    {
      start(c) {
        c.enqueue(enc.encode('{"relative_paths":['));
      },
      async pull(c) {
        let paths: string[] = [];
        while (paths.length === 0) {
          const next = await pages.next();
          if (next.done) {
            c.enqueue(enc.encode("]}"));
            c.close();
            return;
          }
          paths = next.value.filter(allowed);
        }
        const items = paths.map((p) => JSON.stringify(p)).join(",");
        c.enqueue(enc.encode(first ? items : `,${items}`));
        first = false;
      },
      cancel() {
        void pages.return(undefined);
      },
    },
    { highWaterMark: 0 },
  );
}

/** The folder registry routes. */
export function foldersController(s: Services) {
  return new Elysia({ name: "folders" })
    .derive(authenticated(s))
    .post(
      "/register_folder",
      async ({ caller, body }) => {
        const owner = bodyAddress(body);
        await s.access.require(caller, owner, body.folder_hash, "owner");
        await s.folders.register(owner, body.folder_hash, body.label, body.device_name ?? null);
        return success({ status: "registered" });
      },
      {
        parse: jsonBody(s),
        body: RegisterFolderBody,
        response: responses(RegisterFolderResult, [400, 401, 403, 408, 409, 413, 500]),
        detail: doc("folders", "Register a sync folder"),
      },
    )
    .get(
      "/list_folders/:base_address",
      async ({ caller, params }) => {
        const visible = await s.access.visibleFolders(caller, params.base_address);
        const folders = await s.folders.list(params.base_address);
        return success({
          base_address: params.base_address,
          folders: visible === null ? folders : folders.filter((f) => visible.has(f.folder_hash)),
        });
      },
      {
        params: ListFoldersParams,
        response: responses(ListFoldersResult, [400, 401, 403, 500]),
        detail: doc("folders", "List registered folders with file counts and sizes"),
      },
    )
    .delete(
      "/unregister_folder",
      async ({ caller, body }) => {
        const owner = bodyAddress(body);
        await s.access.require(caller, owner, body.folder_hash, "owner");
        const deleted = await s.folders.unregister(owner, body.folder_hash);
        return success({ status: "unregistered", files_deleted: deleted });
      },
      {
        parse: jsonBody(s),
        body: UnregisterFolderBody,
        response: responses(UnregisterFolderResult, [400, 401, 403, 404, 408, 413, 500]),
        detail: doc("folders", "Unregister a folder and delete every file in it (irreversible)"),
      },
    )
    .get(
      "/list_folder_entries/:ss58/:folder_hash",
      async ({ caller, params, query }) => {
        const access = await s.access.require(caller, params.ss58, params.folder_hash, "read");
        const allowed = (p: string) => access.allowsPath(p);
        if (query.limit === undefined)
          return new Response(entriesJson(s.folders.entryPages(params.ss58, params.folder_hash), allowed), {
            headers: { "content-type": "application/json" },
          });
        const page = await s.folders.listEntriesPage(
          params.ss58,
          params.folder_hash,
          query.after ?? null,
          query.limit,
        );
        const entries = page.entries.filter((e) => allowed(e.path));
        const sealed = entries.filter((e) => e.attributes !== null);
        return Response.json({
          relative_paths: entries.map((e) => e.path),
          ...(sealed.length > 0
            ? { attributes: Object.fromEntries(sealed.map((e) => [e.path, Array.from(e.attributes!)])) }
            : {}),
          next_after: page.next,
        });
      },
      {
        params: FolderParams,
        query: ListFolderEntriesQuery,
        transform: integerParams({ query: ListFolderEntriesQuery }),
        response: flatResponses(ListFolderEntriesResult, [400, 401, 403, 500]),
        detail: doc("folders", "Every registered directory of a folder (flat answer, no envelope)"),
      },
    )
    .post(
      "/register_folder_entries",
      async ({ caller, body }) => {
        const owner = bodyAddress(body);
        const paths = checkFolderEntryPaths(body.relative_paths);
        checkFolderEntryAttributes(paths, body.attributes);
        const access = await s.access.require(caller, owner, body.folder_hash, "write");
        for (const p of paths) access.requirePath(p);
        const count = await s.folders.registerEntries(owner, body.folder_hash, paths, body.attributes);
        return success({ status: "registered", count });
      },
      {
        parse: jsonBody(s, "invalid_manifest", MAX_FOLDER_ENTRIES_BODY_BYTES),
        body: RegisterFolderEntriesBody,
        response: responses(RegisterFolderEntriesResult, [400, 401, 402, 403, 500]),
        detail: doc(
          "folders",
          "Register directory entries (explicit, possibly empty directories shown by /browse)",
          "Idempotent; count = the named entries now present. At most 500 paths. esync: optional sealed attributes by path (capability folder_entry_attributes).",
        ),
      },
    )
    .delete(
      "/unregister_folder_entries",
      async ({ caller, body }) => {
        const owner = bodyAddress(body);
        const paths = checkFolderEntryPaths(body.relative_paths);
        const access = await s.access.require(caller, owner, body.folder_hash, "write");
        for (const p of paths) access.requirePath(p);
        const count = await s.folders.unregisterEntries(owner, body.folder_hash, paths);
        return success({ status: "unregistered", count });
      },
      {
        parse: jsonBody(s, "invalid_manifest", MAX_FOLDER_ENTRIES_BODY_BYTES),
        body: FolderEntriesBody,
        response: responses(UnregisterFolderEntriesResult, [400, 401, 402, 403, 500]),
        detail: doc(
          "folders",
          "Remove exactly the named directory entries (files are never touched)",
          "count = the entries removed. At most 500 paths.",
        ),
      },
    );
}
