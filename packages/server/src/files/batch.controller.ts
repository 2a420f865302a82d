/**
 * @module server/files/batch.controller
 * HTTP of the product's batch file operations (docs/protocol.md#delete-files, #rename-files, #relative-path-backfill): `POST
 * /delete_files`, `POST /rename_files` and `POST /register_relative_paths/{ss58}/{folder_hash}`.
 * Each answers 200 with per-entry results, also when some entries fail. Every check of the body
 * (batch size, paths, the rename signature) comes before the ownership check: 400 before 403
 * (docs/protocol.md#open-rules).
 * Shapes come from `packages/protocol/src/schemas.ts`.
 */

import { fail } from "@esync/protocol/errors.ts";
import { pathRuleViolation } from "@esync/protocol/manifest.ts";
import { verifyRenameSignature } from "@esync/protocol/rename.ts";
import {
  DeleteFilesBody,
  DeleteFilesResult,
  FolderParams,
  MAX_BATCH_RENAME,
  MAX_RELATIVE_PATHS_BODY_BYTES,
  RegisterRelativePathsBody,
  RegisterRelativePathsResult,
  RenameFilesBody,
  RenameFilesResult,
} from "@esync/protocol/schemas.ts";
import { Elysia } from "elysia";
import { authenticated, bodyAddress, doc, jsonBody, responses } from "../http/contract.ts";
import { success } from "../http/envelope.ts";
import type { Services } from "../services.ts";
import { checkDeleteBatch, checkRelativePathsBatch } from "./files.service.ts";

/** Largest `/rename_files` body, bytes: 1000 entries with encrypted paths fit. */
const MAX_RENAME_BODY_BYTES = 4 * 1024 * 1024;

/** Batch delete and rename routes. */
export function batchController(s: Services) {
  return new Elysia({ name: "files-batch" })
    .derive(authenticated(s))
    .post(
      "/delete_files",
      async ({ caller, body }) => {
        const owner = bodyAddress(body);
        checkDeleteBatch(body.file_ids.length);
        const access = await s.access.require(caller, owner, body.folder_hash, "write");
        if (access.prefixes !== null)
          for (const row of await s.files.rowsOf(owner, body.folder_hash, body.file_ids))
            access.requirePath(row.relativePath);
        const r = await s.files.removeMany(owner, body.folder_hash, body.file_ids);
        return success({
          ...(body.quiet ? {} : { deleted: r.deleted }),
          errors: r.errors,
          files_deleted: r.filesDeleted,
        });
      },
      {
        parse: jsonBody(s),
        body: DeleteFilesBody,
        response: responses(DeleteFilesResult, [400, 401, 402, 403, 500]),
        detail: doc(
          "files",
          "Delete up to 1000 files of one folder in one transaction",
          "200 with per-id results also when some ids fail; a missing row is `already_deleted`.",
        ),
      },
    )
    .post(
      "/rename_files",
      async ({ caller, body }) => {
        const owner = bodyAddress(body);
        if (body.renames.length > MAX_BATCH_RENAME)
          throw fail(
            "batch_too_large",
            `At most ${MAX_BATCH_RENAME} renames per request, got ${body.renames.length}`,
          );
        const entries = body.renames.map((r, i) => {
          const relativePath = r.new_relative_path ?? null;
          const newPathHash = Uint8Array.from(r.new_path_hash);
          const fileName = r.new_file_name ?? null;
          // The upload's path rule (docs/paths.md), when the new plaintext path is given.
          const v = relativePath === null ? null : pathRuleViolation(relativePath, newPathHash, fileName);
          if (v) throw fail("invalid_manifest", `renames[${i}].new_${v.field} ${v.why}`);
          return {
            oldPathHash: Uint8Array.from(r.old_path_hash),
            newPathHash,
            baseRevisionId: Uint8Array.from(r.base_revision_id),
            encryptedPath: Uint8Array.from(r.new_encrypted_path ?? []),
            fileName,
            relativePath,
          };
        });
        if (
          !verifyRenameSignature(entries, Uint8Array.from(body.signature), Uint8Array.from(body.signing_key))
        )
          throw fail(
            "invalid_manifest",
            "signature does not verify the rename declaration against signing_key",
          );
        const access = await s.access.require(caller, owner, body.folder_hash, "write");
        if (access.prefixes !== null) {
          for (const e of entries) access.requirePath(e.relativePath);
          const old = entries.map((e) => Buffer.from(e.oldPathHash).toString("hex"));
          for (const row of await s.files.rowsOf(owner, body.folder_hash, old))
            access.requirePath(row.relativePath);
        }
        const r = await s.files.renameMany(owner, body.folder_hash, entries);
        return success({
          status: "ok",
          renamed_count: r.successes.length,
          successes: r.successes.map((x) => ({
            old_path_hash: Array.from(x.oldPathHash),
            new_path_hash: Array.from(x.newPathHash),
            new_revision_id: Array.from(x.revisionId),
            new_revision_seq: x.revisionSeq,
          })),
          failures: r.failures.map((x) => ({ old_path_hash: Array.from(x.oldPathHash), reason: x.reason })),
        });
      },
      {
        parse: jsonBody(s, "invalid_manifest", MAX_RENAME_BODY_BYTES),
        body: RenameFilesBody,
        response: responses(RenameFilesResult, [400, 401, 402, 403, 500]),
        detail: doc(
          "files",
          "Rename (re-key) files of one folder without touching their ciphertext",
          "One Ed25519 signature over the declaration of the entries sorted by old_path_hash; 200 with per-entry successes and failures.",
        ),
      },
    )
    .post(
      "/register_relative_paths/:ss58/:folder_hash",
      async ({ caller, params, body }) => {
        checkRelativePathsBatch(body.entries.length);
        await s.access.require(caller, params.ss58, params.folder_hash, "owner");
        return success(await s.files.registerRelativePaths(params.ss58, params.folder_hash, body.entries));
      },
      {
        parse: jsonBody(s, "invalid_manifest", MAX_RELATIVE_PATHS_BODY_BYTES, "batch_too_large"),
        params: FolderParams,
        body: RegisterRelativePathsBody,
        response: responses(RegisterRelativePathsResult, [400, 401, 403, 500]),
        detail: doc(
          "files",
          "Back-fill the plaintext relative_path of rows written without one",
          "Never overwrites a path; 200 with per-entry errors (invalid_path, not_found, path_mismatch). At most 500 entries, 4 MiB.",
        ),
      },
    );
}
