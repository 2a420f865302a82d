/**
 * @module server/shares/shares.controller
 * HTTP of file shares (docs/sharing.md), v1 family: success bodies as they are, flat errors.
 * The owner routes take the bearer token; `meta` and `blob` are anonymous, rate limited per
 * client address. Shapes come from `packages/protocol/src/schemas.ts`; rules live in `FileSharesService`.
 */

import { AppError, fail } from "@esync/protocol/errors.ts";
import {
  FileOwnerWrapsBody,
  OwnerWrapsApplied,
  ShareAccessList,
  ShareChunkParams,
  ShareChunkStored,
  ShareList,
  ShareMeta,
  ShareMetadata,
  ShareMinted,
  ShareTokenParams,
  TtlBody,
} from "@esync/protocol/schemas.ts";
import { MaxPartsExceededError, parseMultipart } from "@remix-run/multipart-parser";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { Elysia, t, ValidationError } from "elysia";
import { withoutPreamble } from "../files/single-upload.ts";
import { bodyFailure, guardedBody } from "../http/body.ts";
import { authenticated, BINARY_BODY, doc, jsonBody, rawBody, v1Responses } from "../http/contract.ts";
import { objectBody } from "../http/download-body.ts";
import { isHead } from "../http/head.ts";
import { multipartBoundary, parseRangeHeader, resolveRange } from "../http/headers.ts";
import { sentWhole } from "../http/instrument.ts";
import type { RateLimiter } from "../http/rate-limit.ts";
import { integerParams, validationFailure } from "../http/validate.ts";
import type { Services } from "../services.ts";
import { rfc3339, SHARE_CHUNK_BYTES, type ShareTtl } from "./share-rules.ts";
import type { OpenShareChunk, ShareMetadataInput } from "./shares.service.ts";

/** Largest metadata part of `POST /v1/shares`, bytes. */
const MAX_METADATA_BYTES = 64 * 1024;
/** Bytes a multipart body may carry besides its parts (boundaries, part headers). */
const MULTIPART_OVERHEAD_BYTES = 64 * 1024;
/** Most bytes of a whole `POST /v1/shares` body. */
const MAX_SINGLE_SHARE_BODY = SHARE_CHUNK_BYTES + MAX_METADATA_BYTES + MULTIPART_OVERHEAD_BYTES;

const metadataCheck = TypeCompiler.Compile(ShareMetadata);

/** The metadata JSON of a mint, checked against its schema. @throws AppError (400). */
function parseMetadata(bytes: Uint8Array): ShareMetadataInput {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw fail("bad_request", "The metadata part is not JSON");
  }
  if (!metadataCheck.Check(value)) throw validationFailure(new ValidationError("body", ShareMetadata, value));
  return value;
}

/**
 * Parses the body of `POST /v1/shares`: exactly `metadata` (JSON) then `ciphertext` (bytes).
 * @throws AppError `bad_request` (parts missing, out of order, malformed), `payload_too_large`.
 */
function parseSingleShare(
  body: Uint8Array,
  boundary: string,
): { m: ShareMetadataInput; ciphertext: Uint8Array } {
  let m: ShareMetadataInput | null = null;
  let ciphertext: Uint8Array | null = null;
  try {
    for (const part of parseMultipart(withoutPreamble(body, boundary), {
      boundary,
      maxHeaderSize: 8 * 1024,
      maxFileSize: body.byteLength,
      maxTotalSize: body.byteLength,
      maxParts: 2,
    })) {
      if (part.name === "metadata") {
        if (m || ciphertext) throw fail("bad_request", "The 'metadata' part must come first, once");
        if (part.size > MAX_METADATA_BYTES) throw fail("bad_request", "The metadata part is over 64 KiB");
        m = parseMetadata(part.bytes);
      } else if (part.name === "ciphertext") {
        if (!m) throw fail("bad_request", "The 'metadata' part must come before the 'ciphertext' part");
        if (ciphertext) throw fail("bad_request", "Only one 'ciphertext' part is allowed");
        if (part.size > SHARE_CHUNK_BYTES)
          throw fail("payload_too_large", `ciphertext over ${SHARE_CHUNK_BYTES} bytes; use /v1/shares/init`);
        ciphertext = part.bytes;
      } else {
        throw fail("bad_request", `Unexpected part '${part.name}'; expected 'metadata' then 'ciphertext'`);
      }
    }
  } catch (e) {
    if (e instanceof AppError) throw e;
    if (e instanceof MaxPartsExceededError)
      throw fail("bad_request", "Too many parts; expected 'metadata' then 'ciphertext'");
    throw fail("bad_request", `Malformed multipart body: ${(e as Error)?.message ?? e}`);
  }
  if (!m) throw fail("bad_request", "Missing 'metadata' part");
  if (!ciphertext) throw fail("bad_request", "Missing 'ciphertext' part");
  return { m, ciphertext };
}

/** Every byte of a guarded body. */
async function readAll(body: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const pieces: Uint8Array[] = [];
  for await (const piece of body) pieces.push(piece);
  return Buffer.concat(pieces);
}

/** A chunk PUT's body, read to at most the chunk's exact length. */
function chunkBody(request: Request, index: number): OpenShareChunk {
  return (length) => {
    const stream = guardedBody(request, {
      limit: length,
      tooLarge: () => fail("bad_request", `chunk ${index} must be exactly ${length} bytes, received more`),
    });
    return { stream, failure: () => bodyFailure(stream) };
  };
}

/** A JSON answer of the v1 family with `status`. */
export function v1Json(body: unknown, status = 200): Response {
  const text = JSON.stringify(body);
  return new Response(text, {
    status,
    headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)) },
  });
}

/** The address requests of `request` are counted under: the peer's IP, or `local` in-process. */
export function clientAddress(
  server: { requestIP(r: Request): { address: string } | null } | null,
  request: Request,
): string {
  return server?.requestIP(request)?.address ?? "local";
}

/** The owner's routes of file shares. */
function ownerRoutes(s: Services) {
  return new Elysia({ name: "shares-owner" })
    .derive(authenticated(s))
    .post(
      "/v1/shares",
      async ({ caller, request }) => {
        const boundary = multipartBoundary(request.headers.get("content-type"));
        if (boundary === null || !request.body)
          throw fail(
            "bad_request",
            "Expected a multipart/form-data body with parts 'metadata' and 'ciphertext'",
          );
        const declared = Number(request.headers.get("content-length") ?? "0");
        if (declared > MAX_SINGLE_SHARE_BODY)
          throw fail("payload_too_large", `ciphertext over ${SHARE_CHUNK_BYTES} bytes; use /v1/shares/init`);
        const body = await readAll(
          guardedBody(request, {
            limit: MAX_SINGLE_SHARE_BODY,
            tooLarge: () =>
              fail("payload_too_large", `ciphertext over ${SHARE_CHUNK_BYTES} bytes; use /v1/shares/init`),
          }),
        );
        const { m, ciphertext } = parseSingleShare(body, boundary);
        return v1Json(await s.shares.mintSingle(caller, m, ciphertext), 201);
      },
      {
        parse: rawBody(),
        response: v1Responses({ 201: ShareMinted }, [400, 401, 402, 408, 413, 500, 503]),
        detail: {
          ...doc("shares", "Mint a file share in one request (multipart: metadata, then ciphertext ≤ 8 MiB)"),
          requestBody: {
            required: true,
            content: {
              "multipart/form-data": {
                schema: t.Object({
                  metadata: t.String({ description: "the metadata JSON (ShareMetadata), first" }),
                  ciphertext: t.String({ format: "binary", description: "the framed ciphertext, second" }),
                }),
              },
            },
          },
        },
      },
    )
    .post("/v1/shares/init", async ({ caller, body }) => v1Json(await s.shares.init(caller, body), 201), {
      parse: jsonBody(s, "bad_request"),
      body: ShareMetadata,
      response: v1Responses({ 201: ShareMinted }, [400, 401, 402, 413, 500]),
      detail: doc("shares", "Start a chunked file share (8 MiB chunks)"),
    })
    .put(
      "/v1/shares/:token/chunks/:index",
      async ({ caller, params, request }) => {
        const v = request.headers.get("content-length");
        const declared = v === null ? null : Number(v.trim());
        return v1Json(
          await s.shares.putChunk(
            caller,
            params.token,
            params.index,
            chunkBody(request, params.index),
            declared !== null && Number.isSafeInteger(declared) ? declared : null,
          ),
        );
      },
      {
        parse: rawBody(),
        params: ShareChunkParams,
        transform: integerParams({ params: ShareChunkParams }),
        response: v1Responses({ 200: ShareChunkStored }, [400, 401, 403, 404, 408, 409, 500, 503]),
        detail: {
          ...doc("shares", "Upload one 8 MiB chunk of a share (the last one shorter)"),
          requestBody: BINARY_BODY,
        },
      },
    )
    .post(
      "/v1/shares/:token/complete",
      async ({ caller, params }) => v1Json(await s.shares.complete(caller, params.token)),
      {
        parse: rawBody(),
        params: ShareTokenParams,
        response: v1Responses({ 200: ShareMinted }, [400, 401, 403, 404, 409, 500, 503]),
        detail: doc("shares", "Finish a chunked share: it becomes readable"),
      },
    )
    .get(
      "/v1/shares",
      async ({ caller }) =>
        v1Json(
          (await s.shares.list(caller)).map((r) => ({
            share_token: r.token,
            filename: r.filename,
            plaintext_size: r.plaintextSize,
            ciphertext_size: r.ciphertextSize,
            mime_type: r.mimeType,
            created_at: rfc3339(r.createdAt),
            expires_at: rfc3339(r.expiresAt),
            owner_wrap: r.ownerWrap,
            ...(r.maxDownloads !== null ? { max_downloads: r.maxDownloads } : {}),
            ...(r.accessLog ? { download_count: r.downloadCount, access_log: true } : {}),
          })),
        ),
      {
        response: v1Responses({ 200: ShareList }, [401, 500]),
        detail: doc("shares", "The caller's live file shares"),
      },
    )
    .patch(
      "/v1/shares/:token",
      async ({ caller, params, body }) =>
        v1Json(await s.shares.setTtl(caller, params.token, body.ttl as ShareTtl)),
      {
        parse: jsonBody(s, "bad_request"),
        params: ShareTokenParams,
        body: TtlBody,
        response: v1Responses({ 200: ShareMinted }, [400, 401, 404, 500]),
        detail: doc("shares", "Change when a share expires (from now)"),
      },
    )
    .delete(
      "/v1/shares/:token",
      async ({ caller, params }) => {
        await s.shares.revoke(caller, params.token);
        return new Response(null, { status: 204 });
      },
      {
        parse: rawBody(),
        params: ShareTokenParams,
        response: v1Responses({ 204: t.Null() }, [401, 404, 500]),
        detail: doc("shares", "Revoke a share (the link stops working at once)"),
      },
    )
    .get(
      "/v1/shares/:token/accesses",
      async ({ caller, params }) => {
        const log = await s.shares.accesses(caller, params.token);
        return v1Json({
          max_downloads: log.maxDownloads,
          download_count: log.downloadCount,
          accesses: log.rows.map((a) => ({
            at: a.at,
            bytes_sent: a.bytesSent,
            completed: a.completed,
            ...(a.clientAddress !== null ? { client_address: a.clientAddress } : {}),
          })),
          truncated: log.truncated,
        });
      },
      {
        params: ShareTokenParams,
        response: v1Responses({ 200: ShareAccessList }, [401, 404, 500]),
        detail: doc("shares", "A share's download counter and access log, newest first (esync)"),
      },
    )
    .put(
      "/v1/shares/owner-wraps",
      async ({ caller, body }) => v1Json({ applied: await s.shares.putOwnerWraps(caller, body.wraps) }),
      {
        parse: jsonBody(s, "bad_request"),
        body: FileOwnerWrapsBody,
        response: v1Responses({ 200: OwnerWrapsApplied }, [400, 401, 500]),
        detail: doc("shares", "Store owner wraps of the caller's shares (1 to 64)"),
      },
    );
}

/** The anonymous routes of file shares. */
function anonymousRoutes(s: Services, limiter: RateLimiter) {
  return new Elysia({ name: "shares-anonymous" })
    .onBeforeHandle(({ request, server }) => limiter.take(clientAddress(server, request)))
    .get(
      "/v1/shares/:token/meta",
      async ({ params }) => {
        const r = await s.shares.readable(params.token);
        return v1Json({
          ciphertext_size: r.ciphertextSize,
          plaintext_size: r.plaintextSize,
          filename_ct: r.filenameCt,
          filename_nonce: r.filenameNonce,
          mime_type: r.mimeType,
          expires_at: rfc3339(r.expiresAt),
        });
      },
      {
        params: ShareTokenParams,
        response: v1Responses({ 200: ShareMeta }, [404, 410, 429, 500]),
        detail: { tags: ["shares"], summary: "A share's public metadata (anonymous)" },
      },
    )
    .get(
      "/v1/shares/:token/blob",
      async ({ params, request, server }) => {
        const r = await s.shares.readable(params.token);
        const size = r.ciphertextSize;
        const etag = `"${r.shareId}"`;
        // A limited link is served whole: a range could fetch the blob without ever counting.
        const limited = r.maxDownloads !== null;
        const ifRange = request.headers.get("if-range");
        const rangeHeader =
          !limited && (ifRange === null || ifRange === etag) ? request.headers.get("range") : null;
        const range = resolveRange(parseRangeHeader(rangeHeader), size);
        if (range === "unsatisfiable")
          throw fail("range_not_satisfiable", `Range not satisfiable for ${size} bytes`, {
            headers: { "content-range": `bytes */${size}` },
          });
        const [start, end] = range ?? [0, size];
        const status = range ? 206 : 200;
        const headers: Record<string, string> = {
          "content-type": "application/octet-stream",
          "content-length": String(end - start),
          "accept-ranges": limited ? "none" : "bytes",
          "content-disposition": "attachment",
          "cache-control": "no-store",
          etag,
        };
        if (range) headers["content-range"] = `bytes ${start}-${end - 1}/${size}`;
        if (isHead(request)) return new Response(null, { status, headers });
        const body = await objectBody(s.deps.blobs, r.blobKey, start, end, request);
        if (r.accessLog) {
          const stream = body instanceof ReadableStream ? body : new Response(body).body;
          if (!stream) throw new Error("a share body without a stream");
          const tracked = s.shares.trackedBody(
            r,
            stream,
            end - start,
            start === 0 && end === size,
            clientAddress(server, request),
          );
          return new Response(tracked, { status, headers });
        }
        const response = new Response(body, { status, headers });
        return body instanceof ReadableStream ? response : sentWhole(response);
      },
      {
        params: ShareTokenParams,
        response: v1Responses({ 200: t.Any(), 206: t.Any() }, [400, 404, 410, 416, 429, 500, 503]),
        detail: { tags: ["shares"], summary: "A share's ciphertext (anonymous; Range, strong ETag)" },
      },
    );
}

/** Every file-share route; `limiter` counts the anonymous ones per client address. */
export function sharesController(s: Services, limiter: RateLimiter) {
  return new Elysia({ name: "shares" }).use(anonymousRoutes(s, limiter)).use(ownerRoutes(s));
}
