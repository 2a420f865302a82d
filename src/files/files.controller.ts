/**
 * @module files/files.controller
 * HTTP of single-shot `/upload`, `/get_state`, `/delete` and `/download` (complement §5).
 * Shapes come from `src/wire/schemas.ts`; `Range` and the multipart boundary are parsed here and
 * given to the services as typed values.
 */
import { Elysia, t } from "elysia";
import { AuthService } from "../auth/auth.service.ts";
import { fail } from "../errors/errors.ts";
import {
  authenticated,
  doc,
  type ErrorStatus,
  integerParams,
  rawBody,
  responses,
  UPLOAD_BODY,
} from "../http/contract.ts";
import { success } from "../http/envelope.ts";
import { multipartBoundary, parseRangeHeader, resolveRange } from "../http/headers.ts";
import type { Services } from "../services.ts";
import { toHex } from "../util/ids.ts";
import {
  DeleteFileResult,
  DownloadHeaders,
  ErrorEnvelope,
  FileParams,
  FolderParams,
  STATE_DEFAULT_LIMIT,
  STATE_MAX_LIMIT,
  StateQuery,
  StateResult,
  UploadHeaders,
  UploadResult,
} from "../wire/schemas.ts";
import { toRemoteFileEntry } from "./file-entry.ts";

const Binary = t.String({ format: "binary", description: "ciphertext bytes" });
const DOWNLOAD_ERRORS: ErrorStatus[] = [400, 401, 403, 404, 416, 500];

/** File routes. */
export function filesController(s: Services) {
  return new Elysia({ name: "files" })
    .derive(authenticated(s))
    .post(
      "/upload",
      async ({ caller, headers, request }) => {
        const boundary = multipartBoundary(headers["content-type"]);
        if (boundary === null || !request.body)
          throw fail(
            "invalid_manifest",
            "Expected a multipart/form-data body with parts 'manifest' and 'ciphertext'",
          );
        return success(await s.singleUpload.upload(caller, request.body, boundary));
      },
      {
        parse: rawBody(),
        headers: UploadHeaders,
        response: responses(UploadResult, [400, 401, 402, 403, 409, 413, 500, 503]),
        detail: {
          ...doc("files", "Single-shot upload: multipart parts 'manifest' (JSON) then 'ciphertext' (bytes)"),
          requestBody: UPLOAD_BODY,
        },
      },
    )
    .get(
      "/get_state/:ss58/:folder_hash",
      ({ caller, params, query }) => {
        AuthService.requireOwner(caller, params.ss58, "this address");
        const offset = query.offset ?? 0;
        const limit = !query.limit ? STATE_DEFAULT_LIMIT : Math.min(query.limit, STATE_MAX_LIMIT);
        const { rows, total } = s.files.state(params.ss58, params.folder_hash, offset, limit);
        return success({
          ss58_address: params.ss58,
          folder_hash: params.folder_hash,
          files: rows.map(toRemoteFileEntry),
          total_count: total,
          has_more: offset + rows.length < total,
          offset,
          limit,
        });
      },
      {
        params: FolderParams,
        query: StateQuery,
        transform: integerParams({ query: StateQuery }),
        response: responses(StateResult, [400, 401, 403, 500]),
        detail: doc("files", "A page of a folder's files"),
      },
    )
    .delete(
      "/delete/:ss58/:folder_hash/:file_id",
      ({ caller, params }) => {
        AuthService.requireOwner(caller, params.ss58, "this address");
        const pathHash = Buffer.from(params.file_id, "hex");
        s.files.remove(params.ss58, params.folder_hash, pathHash);
        return success({
          status: "deleted",
          file_id: toHex(pathHash),
          ss58_address: params.ss58,
          folder_hash: params.folder_hash,
        });
      },
      {
        parse: rawBody(),
        params: FileParams,
        response: responses(DeleteFileResult, [400, 401, 403, 404, 500]),
        detail: doc("files", "Delete one file"),
      },
    )
    .get(
      "/download/:ss58/:folder_hash/:file_id",
      async ({ caller, params, headers, request }) => {
        AuthService.requireOwner(caller, params.ss58, "this address");
        const row = s.files.file(params.ss58, params.folder_hash, Buffer.from(params.file_id, "hex"));
        const size = row.ciphertextSize;
        const range = resolveRange(parseRangeHeader(headers.range), size);
        if (range === "unsatisfiable") {
          throw fail("range_not_satisfiable", `Range not satisfiable for ${size} bytes`, {
            headers: { "content-range": `bytes */${size}` },
          });
        }
        const [start, end] = range ?? [0, size];
        const d = await s.files.open(row, start, end);
        const status = range ? 206 : 200;
        const out: Record<string, string> = {
          "content-type": "application/octet-stream",
          "content-length": String(end - start),
          "accept-ranges": "bytes",
          "x-size-bytes": String(row.sizeBytes),
          "x-revision-id": toHex(row.revisionId),
          "x-revision-seq": String(row.revisionSeq),
        };
        if (range) out["content-range"] = `bytes ${start}-${end - 1}/${size}`;
        if (request.method === "HEAD") {
          await d.body.cancel();
          return new Response(null, { status, headers: out });
        }
        return new Response(d.body, { status, headers: out });
      },
      {
        params: FileParams,
        headers: DownloadHeaders,
        response: { 200: Binary, 206: Binary, ...errorsOnly(DOWNLOAD_ERRORS) },
        detail: {
          ...doc("files", "Download the ciphertext (Range supported: 206, 416)"),
          responses: {
            200: {
              description: "The ciphertext",
              content: { "application/octet-stream": { schema: Binary } },
            },
            206: {
              description: "A byte range of the ciphertext (Content-Range)",
              content: { "application/octet-stream": { schema: Binary } },
            },
            ...Object.fromEntries(
              DOWNLOAD_ERRORS.map((st) => [
                st,
                { description: `Error ${st}`, content: { "application/json": { schema: ErrorEnvelope } } },
              ]),
            ),
          },
        },
      },
    );
}

function errorsOnly(statuses: ErrorStatus[]) {
  return Object.fromEntries(statuses.map((st) => [st, ErrorEnvelope]));
}
