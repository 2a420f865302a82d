/**
 * @module server/versions/versions.controller
 * HTTP of version history and trash (docs/versions.md), an esync extension advertised as
 * `versions` by `GET /v1/capabilities`: list a file's kept versions, list a folder's trash,
 * restore a kept version as a new revision. The v1 family's conventions: bodies as they are,
 * flat errors (`{"error", "message"}`; a 409 adds the current revision). Shapes come from
 * `packages/protocol/src/schemas.ts`.
 */

import {
  FileParams,
  FileVersionsResult,
  FolderParams,
  RestoreVersionBody,
  RestoreVersionResult,
  TRASH_DEFAULT_LIMIT,
  TRASH_MAX_LIMIT,
  TrashQuery,
  TrashResult,
} from "@esync/protocol/schemas.ts";
import type { FileVersion } from "@esync/protocol/types.ts";
import { Elysia } from "elysia";
import { toRemoteFileEntry } from "../files/file-entry.ts";
import { authenticated, doc, jsonBody, v1Responses } from "../http/contract.ts";
import { integerParams } from "../http/validate.ts";
import type { Services } from "../services.ts";
import type { VersionRow } from "./versions.repository.ts";

/** A kept version on the wire. */
function toFileVersion(v: VersionRow): FileVersion {
  return {
    version_id: v.versionId,
    reason: v.reason,
    kept_at: v.keptAt,
    expires_at: v.expiresAt,
    entry: toRemoteFileEntry(v),
  };
}

/** Version history and trash routes. */
export function versionsController(s: Services) {
  return new Elysia({ name: "versions" })
    .derive(authenticated(s))
    .get(
      "/v1/versions/:ss58/:folder_hash/:file_id",
      async ({ caller, params }) => {
        const { current, versions } = await s.versions.list(
          caller,
          params.ss58,
          params.folder_hash,
          Buffer.from(params.file_id, "hex"),
        );
        return Response.json({
          folder_hash: params.folder_hash,
          file_id: params.file_id.toLowerCase(),
          current: current ? toRemoteFileEntry(current) : null,
          versions: versions.map(toFileVersion),
        });
      },
      {
        params: FileParams,
        response: v1Responses({ 200: FileVersionsResult }, [400, 401, 403, 500]),
        detail: doc(
          "versions",
          "A file's current revision and kept versions, newest first",
          "esync extension (capability `versions`, docs/versions.md). Readers may list.",
        ),
      },
    )
    .get(
      "/v1/trash/:ss58/:folder_hash",
      async ({ caller, params, query }) => {
        const limit = !query.limit ? TRASH_DEFAULT_LIMIT : Math.min(query.limit, TRASH_MAX_LIMIT);
        const page = await s.versions.trash(
          caller,
          params.ss58,
          params.folder_hash,
          query.before ?? null,
          limit,
        );
        return Response.json({
          folder_hash: params.folder_hash,
          deleted: page.rows.map(toFileVersion),
          next: page.next,
        });
      },
      {
        params: FolderParams,
        query: TrashQuery,
        transform: integerParams({ query: TrashQuery }),
        response: v1Responses({ 200: TrashResult }, [400, 401, 403, 500]),
        detail: doc(
          "versions",
          "A folder's deleted files (keyset pages, newest first)",
          "esync extension (capability `versions`, docs/versions.md): the newest deleted version of each path that has no live file. Pass `next` as `before` for the following page.",
        ),
      },
    )
    .post(
      "/v1/versions/:ss58/:folder_hash/:file_id/restore",
      async ({ caller, params, body }) => {
        const r = await s.versions.restore(
          caller,
          params.ss58,
          params.folder_hash,
          Buffer.from(params.file_id, "hex"),
          body.version_id,
          body.base_revision_id === null ? null : Uint8Array.from(body.base_revision_id),
        );
        return Response.json({
          version_id: r.versionId,
          upload_id: r.uploadId,
          revision_id: Array.from(r.revisionId),
          revision_seq: r.revisionSeq,
          size_bytes: r.sizeBytes,
          created_at: r.createdAt,
          updated_at: r.updatedAt,
        });
      },
      {
        parse: jsonBody(s, "bad_request"),
        params: FileParams,
        body: RestoreVersionBody,
        response: v1Responses({ 200: RestoreVersionResult }, [400, 401, 402, 403, 404, 409, 500]),
        detail: doc(
          "versions",
          "Restore a kept version as the file's new revision (its blob is reused)",
          "esync extension (capability `versions`, docs/versions.md). Writers may restore. `base_revision_id` must name the current revision (null when the file is deleted): else 409 with the Conflict envelope.",
        ),
      },
    );
}
