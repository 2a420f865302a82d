/**
 * @module files/files.controller
 * HTTP of single-shot `/upload`, `/get_state`, `/delete` and `/download` (complement §5).
 */
import { Elysia, t } from "elysia";
import { AuthService } from "../auth/auth.service.ts";
import { parsePreconditions } from "../http/conditional.ts";
import { addressParam, caller, fileIdParam, folderHashParam, queryOf, uintQuery } from "../http/context.ts";
import { op, RemoteFileEntry, UploadResult } from "../http/docs.ts";
import { success } from "../http/envelope.ts";
import { rawSegments } from "../http/request.ts";
import type { Services } from "../services.ts";
import { toHex } from "../util/ids.ts";
import { toRemoteFileEntry } from "./file-entry.ts";

/** `/get_state` page size: default and cap (complement §5). */
export const STATE_DEFAULT_LIMIT = 1000;
export const STATE_MAX_LIMIT = 5000;

/** Checks `{ss58}/{folder_hash}[/{file_id}]` path parameters and ownership (401 → 400 → 403). */
function pathTarget(request: Request, who: string, withFile: boolean) {
  const seg = rawSegments(request);
  const address = addressParam(seg[1]);
  const folderHash = folderHashParam(seg[2]);
  const pathHash = withFile ? fileIdParam(seg[3]) : new Uint8Array(0);
  AuthService.requireOwner(who, address, "this address");
  return { address, folderHash, pathHash };
}

/** File routes. */
export function filesController(s: Services) {
  return new Elysia({ name: "files" })
    .post(
      "/upload",
      async ({ request }) => {
        const who = await caller(s, request);
        return success(await s.singleUpload.upload(who, request));
      },
      {
        parse: "none",
        detail: {
          ...op(
            "files",
            "Single-shot upload: multipart parts 'manifest' (JSON) then 'ciphertext' (bytes)",
            UploadResult,
            [400, 401, 403, 409, 413],
          ),
          requestBody: {
            required: true,
            content: {
              "multipart/form-data": {
                schema: {
                  type: "object",
                  properties: {
                    manifest: { type: "string", description: "manifest JSON" },
                    ciphertext: { type: "string", format: "binary" },
                  },
                },
              },
            },
          },
        } as never,
      },
    )
    .get(
      "/get_state/:ss58/:folder_hash",
      async ({ request }) => {
        const who = await caller(s, request);
        const { address, folderHash } = pathTarget(request, who, false);
        const q = queryOf(request);
        const offset = uintQuery(q, "offset") ?? 0;
        const limitRaw = uintQuery(q, "limit");
        const limit = Math.min(
          limitRaw === null || limitRaw === 0 ? STATE_DEFAULT_LIMIT : limitRaw,
          STATE_MAX_LIMIT,
        );
        const { rows, total } = s.files.state(address, folderHash, offset, limit);
        return success({
          ss58_address: address,
          folder_hash: folderHash,
          files: rows.map(toRemoteFileEntry),
          total_count: total,
          has_more: offset + rows.length < total,
          offset,
          limit,
        });
      },
      {
        detail: op(
          "files",
          "A page of a folder's files",
          t.Object({
            ss58_address: t.String(),
            folder_hash: t.String(),
            files: t.Array(RemoteFileEntry),
            total_count: t.Integer(),
            has_more: t.Boolean(),
            offset: t.Integer(),
            limit: t.Integer(),
          }),
          [400, 401, 403],
        ),
      },
    )
    .delete(
      "/delete/:ss58/:folder_hash/:file_id",
      async ({ request }) => {
        const who = await caller(s, request);
        const { address, folderHash, pathHash } = pathTarget(request, who, true);
        s.files.remove(address, folderHash, pathHash);
        return success({
          status: "deleted",
          file_id: toHex(pathHash),
          ss58_address: address,
          folder_hash: folderHash,
        });
      },
      {
        parse: "none",
        detail: op(
          "files",
          "Delete one file",
          t.Object({
            status: t.Literal("deleted"),
            file_id: t.String(),
            ss58_address: t.String(),
            folder_hash: t.String(),
          }),
          [400, 401, 403, 404],
        ),
      },
    )
    .get("/download/:ss58/:folder_hash/:file_id", ({ request }) => downloadFile(s, request), {
      detail: {
        ...op(
          "files",
          "Download the ciphertext (Range: 206, 416; ETag = revision id; If-Range, If-None-Match: 304, If-Match: 412)",
          null,
          [400, 401, 403, 404, 412, 416],
        ),
        responses: {
          "200": {
            description: "The ciphertext",
            content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } },
          },
          "206": { description: "A byte range of the ciphertext" },
        },
      } as never,
    })
    .onRequest(({ request }) => {
      if (request.method === "HEAD" && rawSegments(request)[0] === "download")
        return downloadFile(s, request);
    });
}

/**
 * `GET`/`HEAD /download/...`: the same status and headers for both; HEAD sends no body. HEAD is
 * answered before routing because Elysia answers HEAD on a GET route with the Content-Length of
 * the body it reads in full (0 for none).
 */
async function downloadFile(s: Services, request: Request): Promise<Response> {
  const who = await caller(s, request);
  const { address, folderHash, pathHash } = pathTarget(request, who, true);
  const h = request.headers;
  const d = await s.files.download(
    address,
    folderHash,
    pathHash,
    h.get("range"),
    parsePreconditions({
      ifMatch: h.get("if-match"),
      ifNoneMatch: h.get("if-none-match"),
      ifRange: h.get("if-range"),
    }),
  );
  if (d.notModified)
    return new Response(null, { status: 304, headers: { etag: d.etag, "accept-ranges": "bytes" } });
  const headers: Record<string, string> = {
    "content-type": "application/octet-stream",
    "content-length": String(d.end - d.start),
    "accept-ranges": "bytes",
    etag: d.etag,
    "x-size-bytes": String(d.row.sizeBytes),
    "x-revision-id": toHex(d.row.revisionId),
    "x-revision-seq": String(d.row.revisionSeq),
  };
  if (d.partial) headers["content-range"] = `bytes ${d.start}-${d.end - 1}/${d.row.ciphertextSize}`;
  if (request.method === "HEAD") {
    await d.body?.cancel();
    return new Response(null, { status: d.partial ? 206 : 200, headers });
  }
  return new Response(d.body, { status: d.partial ? 206 : 200, headers });
}
