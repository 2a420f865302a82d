/**
 * @module server/files/files.controller
 * HTTP of single-shot `/upload`, `/get_state`, `/delete` and `/download` (docs/protocol.md#sync-endpoints).
 * Shapes come from `packages/protocol/src/schemas.ts`; `Range` and the multipart boundary are parsed here and
 * given to the services as typed values.
 */

import { fail } from "@esync/protocol/errors.ts";
import { toHex } from "@esync/protocol/ids.ts";
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
} from "@esync/protocol/schemas.ts";
import type { Static } from "@sinclair/typebox";
import { Elysia, t } from "elysia";
import { guardedBody } from "../http/body.ts";
import { evaluatePreconditions, parsePreconditions, revisionEtag } from "../http/conditional.ts";
import { authenticated, doc, type ErrorStatus, rawBody, responses, UPLOAD_BODY } from "../http/contract.ts";
import { downloadBody, downloadRedirect } from "../http/download-body.ts";
import { success } from "../http/envelope.ts";
import { isHead } from "../http/head.ts";
import { multipartBoundary, parseRangeHeader, resolveRange } from "../http/headers.ts";
import { sentWhole } from "../http/instrument.ts";
import { integerParams } from "../http/validate.ts";
import type { Services } from "../services.ts";
import { toRemoteFileEntry } from "./file-entry.ts";
import { layoutOf } from "./files.service.ts";

const Binary = t.String({ format: "binary", description: "ciphertext bytes" });
const DOWNLOAD_ERRORS: ErrorStatus[] = [400, 401, 403, 404, 412, 416, 500, 503];

/** Response headers of a download (docs/protocol.md#sync-endpoints). */
const DOWNLOAD_HEADERS = {
  "Content-Length": { description: "bytes in this response", schema: { type: "integer" as const } },
  "Accept-Ranges": { description: "bytes", schema: { type: "string" as const } },
  "Content-Disposition": {
    description: "attachment (set so that no server-side object name is ever sent)",
    schema: { type: "string" as const },
  },
  ETag: { description: "strong entity tag: the quoted revision id", schema: { type: "string" as const } },
  "X-Size-Bytes": { description: "plaintext size of the file", schema: { type: "integer" as const } },
  "X-Revision-Id": { description: "revision id, 64 hex characters", schema: { type: "string" as const } },
  "X-Revision-Seq": { description: "revision sequence number", schema: { type: "integer" as const } },
};

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
        const upload = s.singleUpload;
        const declared = request.headers.get("content-length");
        const declaredBytes = declared === null ? null : Number(declared);
        if (declaredBytes !== null && declaredBytes > upload.maxBodyBytes()) throw upload.tooLarge();
        const body = guardedBody(request, {
          limit: upload.maxBodyBytes(),
          tooLarge: () => upload.tooLarge(),
        });
        return success(
          await upload.upload(
            caller,
            body,
            boundary,
            declaredBytes !== null && Number.isSafeInteger(declaredBytes) ? declaredBytes : null,
          ),
        );
      },
      {
        parse: rawBody(),
        headers: UploadHeaders,
        response: responses(UploadResult, [400, 401, 402, 403, 408, 409, 413, 500, 503, 507]),
        detail: {
          ...doc("files", "Single-shot upload: multipart parts 'manifest' (JSON) then 'ciphertext' (bytes)"),
          requestBody: UPLOAD_BODY,
        },
      },
    )
    .get(
      "/get_state/:ss58/:folder_hash",
      async ({ caller, params, query }) => {
        const access = await s.access.require(caller, params.ss58, params.folder_hash, "read");
        const offset = query.offset ?? 0;
        const limit = !query.limit ? STATE_DEFAULT_LIMIT : Math.min(query.limit, STATE_MAX_LIMIT);
        const { rows, total } = await s.files.state(
          params.ss58,
          params.folder_hash,
          offset,
          limit,
          access.prefixes,
        );
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
      async ({ caller, params }) => {
        const access = await s.access.require(caller, params.ss58, params.folder_hash, "write");
        const pathHash = Buffer.from(params.file_id, "hex");
        if (access.prefixes !== null)
          access.requirePath((await s.files.file(params.ss58, params.folder_hash, pathHash)).relativePath);
        await s.files.remove(params.ss58, params.folder_hash, pathHash);
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
        response: responses(DeleteFileResult, [400, 401, 402, 403, 404, 500]),
        detail: doc("files", "Delete one file"),
      },
    )
    .get(
      "/download/:ss58/:folder_hash/:file_id",
      ({ caller, params, headers, request }) => download(s, caller, params, headers, request),
      {
        params: FileParams,
        headers: DownloadHeaders,
        response: DOWNLOAD_RESPONSES,
        detail: DOWNLOAD_DOC,
      },
    );
}

/**
 * `GET`/`HEAD /download/...` (docs/protocol.md#sync-endpoints): the conditional headers are evaluated against the
 * row the bytes are read from (`src/http/conditional.ts`: a Range whose If-Range names another
 * revision gets the whole current file, never a splice), then the Range. A HEAD (the GET that
 * `src/http/head.ts` marks) answers the same status and headers without opening the bytes.
 * @throws AppError `not_found`, `precondition_failed` (412), `range_not_satisfiable` (416).
 */
async function download(
  s: Services,
  caller: string,
  params: { ss58: string; folder_hash: string; file_id: string },
  headers: Static<typeof DownloadHeaders>,
  request: Request,
): Promise<Response> {
  const access = await s.access.require(caller, params.ss58, params.folder_hash, "read");
  const row = await s.files.file(params.ss58, params.folder_hash, Buffer.from(params.file_id, "hex"));
  access.requirePath(row.relativePath);
  const size = row.ciphertextSize;
  const etag = revisionEtag(toHex(row.revisionId));
  const conditions = parsePreconditions({
    ifMatch: headers["if-match"] ?? null,
    ifNoneMatch: headers["if-none-match"] ?? null,
    ifRange: headers["if-range"] ?? null,
  });
  const outcome = evaluatePreconditions(conditions, etag, headers.range !== undefined);
  if (outcome === "precondition_failed")
    throw fail("precondition_failed", `The file's current revision is ${etag}, not the one If-Match names`, {
      headers: { etag },
    });
  if (outcome === "not_modified")
    return new Response(null, { status: 304, headers: { etag, "accept-ranges": "bytes" } });
  const range = outcome === "full" ? null : resolveRange(parseRangeHeader(headers.range), size);
  if (range === "unsatisfiable") {
    // The current ETag too: a resume (`Range: bytes=N-`) past the end of a file overwritten by a
    // shorter revision learns that the revision changed (docs/design.md#deletion).
    throw fail("range_not_satisfiable", `Range not satisfiable for ${size} bytes`, {
      headers: { "content-range": `bytes */${size}`, etag },
    });
  }
  const [start, end] = range ?? [0, size];
  const status = range ? 206 : 200;
  const out: Record<string, string> = {
    "content-type": "application/octet-stream",
    "content-length": String(end - start),
    "accept-ranges": "bytes",
    // Bun names a file body after its object (`filename="0.<gen>"`) unless this is set.
    "content-disposition": "attachment",
    etag,
    "x-size-bytes": String(row.sizeBytes),
    "x-revision-id": toHex(row.revisionId),
    "x-revision-seq": String(row.revisionSeq),
  };
  if (range) out["content-range"] = `bytes ${start}-${end - 1}/${size}`;
  if (isHead(request)) return new Response(null, { status, headers: out });
  const location = await downloadRedirect(
    s.deps.blobs,
    layoutOf(row),
    start,
    end,
    s.deps.config.s3DownloadRedirectSeconds,
  );
  if (location) {
    // The headers the 200/206 would carry (Content-Range tells the client which bytes to ask
    // the object for), except the length, which is the object's answer's.
    const { "content-length": _length, ...redirected } = out;
    return new Response(null, { status: 302, headers: { ...redirected, location } });
  }
  const d = await s.files.open(row, start, end);
  const body = await downloadBody(s.deps.blobs, d, request);
  const response = new Response(body, { status, headers: out });
  return body instanceof ReadableStream ? response : sentWhole(response);
}

const DOWNLOAD_RESPONSES = {
  200: Binary,
  206: Binary,
  302: t.Null(),
  304: t.Null(),
  ...errorsOnly(DOWNLOAD_ERRORS),
};

const DOWNLOAD_DOC = {
  ...doc(
    "files",
    "Download the ciphertext (Range: 206, 416; ETag = revision id; If-Range, If-None-Match: 304, If-Match: 412)",
  ),
  responses: {
    200: {
      description: "The ciphertext",
      headers: DOWNLOAD_HEADERS,
      content: { "application/octet-stream": { schema: Binary } },
    },
    206: {
      description: "A byte range of the ciphertext",
      headers: {
        ...DOWNLOAD_HEADERS,
        "Content-Range": { description: "bytes start-end/total", schema: { type: "string" as const } },
      },
      content: { "application/octet-stream": { schema: Binary } },
    },
    302: {
      description:
        "Only with ESYNC_S3_DOWNLOAD_REDIRECT_SECONDS set, for a body over 1 MiB on S3: the bytes are at the presigned URL in Location; GET it with the Range that Content-Range names (if any) to get them with their Content-Length",
      headers: {
        ...Object.fromEntries(Object.entries(DOWNLOAD_HEADERS).filter(([k]) => k !== "Content-Length")),
        Location: {
          description: "Presigned GET URL of the stored object",
          schema: { type: "string" as const },
        },
        "Content-Range": {
          description: "bytes start-end/total, when the answer would have been 206",
          schema: { type: "string" as const },
        },
      },
    },
    304: {
      description: "Not modified (If-None-Match names the current revision)",
      headers: { ETag: DOWNLOAD_HEADERS.ETag },
    },
    ...Object.fromEntries(
      DOWNLOAD_ERRORS.map((st) => [
        st,
        { description: `Error ${st}`, content: { "application/json": { schema: ErrorEnvelope } } },
      ]),
    ),
  },
};

function errorsOnly(statuses: ErrorStatus[]) {
  return Object.fromEntries(statuses.map((st) => [st, ErrorEnvelope]));
}
