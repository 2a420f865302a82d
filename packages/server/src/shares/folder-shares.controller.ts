/**
 * @module server/shares/folder-shares.controller
 * HTTP of folder shares (docs/sharing.md), v1 family. The owner routes take the bearer token;
 * `meta`, `browse` and `blob` are anonymous, rate limited per client address. A revoke of an
 * unknown or already revoked share answers 404 without a body, as the product's clients expect.
 */

import { fail } from "@esync/protocol/errors.ts";
import { toHex } from "@esync/protocol/ids.ts";
import {
  ExpiryResult,
  FolderBlobQuery,
  FolderBrowseQuery,
  FolderOwnerWrapsBody,
  FolderShareBody,
  FolderShareList,
  FolderShareMeta,
  FolderSharePage,
  OwnerWrapsApplied,
  ShareMinted,
  ShareTokenParams,
  TokenHashParams,
  TtlBody,
} from "@esync/protocol/schemas.ts";
import { Elysia, t } from "elysia";
import { revisionEtag } from "../http/conditional.ts";
import { authenticated, doc, jsonBody, rawBody, v1Responses } from "../http/contract.ts";
import { downloadBody } from "../http/download-body.ts";
import { isHead } from "../http/head.ts";
import { parseRangeHeader, resolveRange } from "../http/headers.ts";
import { sentWhole } from "../http/instrument.ts";
import type { RateLimiter } from "../http/rate-limit.ts";
import { integerParams } from "../http/validate.ts";
import type { Services } from "../services.ts";
import { rfc3339, type ShareTtl } from "./share-rules.ts";
import { clientAddress, v1Json } from "./shares.controller.ts";

/** 204 when revoked, else 404 without a body. */
function revoked(done: boolean): Response {
  return new Response(null, { status: done ? 204 : 404 });
}

/** The owner's routes of folder shares. */
function ownerRoutes(s: Services) {
  const f = s.folderShares;
  const ttlRoute = {
    parse: jsonBody(s, "bad_request"),
    body: TtlBody,
    response: v1Responses({ 200: ExpiryResult }, [400, 401, 404, 500]),
  };
  const revokeRoute = {
    parse: rawBody(),
    response: v1Responses({ 204: t.Null() }, [400, 401, 404, 500], true),
  };
  return new Elysia({ name: "folder-shares-owner" })
    .derive(authenticated(s))
    .post("/v1/folder-shares", async ({ caller, body }) => v1Json(await f.mint(caller, body), 201), {
      parse: jsonBody(s, "bad_request"),
      body: FolderShareBody,
      response: v1Responses({ 201: ShareMinted }, [400, 401, 404, 500]),
      detail: doc("folder-shares", "Share one directory of a folder through a link"),
    })
    .get("/v1/folder-shares", async ({ caller }) => v1Json(await f.list(caller)), {
      response: v1Responses({ 200: FolderShareList }, [401, 500]),
      detail: doc("folder-shares", "The caller's folder shares (revoked and expired ones until reaped)"),
    })
    .patch(
      "/v1/folder-shares/by-hash/:token_hash",
      async ({ caller, params, body }) =>
        v1Json(await f.setTtl(caller, params.token_hash, body.ttl as ShareTtl)),
      {
        ...ttlRoute,
        params: TokenHashParams,
        detail: doc("folder-shares", "Change when a folder share expires, by token hash"),
      },
    )
    .patch(
      "/v1/folder-shares/:token",
      async ({ caller, params, body }) =>
        v1Json(await f.setTtl(caller, f.hashOfToken(params.token), body.ttl as ShareTtl)),
      {
        ...ttlRoute,
        params: ShareTokenParams,
        detail: doc("folder-shares", "Change when a folder share expires"),
      },
    )
    .delete(
      "/v1/folder-shares/by-hash/:token_hash",
      async ({ caller, params }) => revoked(await f.revoke(caller, params.token_hash)),
      {
        ...revokeRoute,
        params: TokenHashParams,
        detail: doc("folder-shares", "Revoke a folder share by token hash"),
      },
    )
    .delete(
      "/v1/folder-shares/:token",
      async ({ caller, params }) => revoked(await f.revoke(caller, f.hashOfToken(params.token))),
      { ...revokeRoute, params: ShareTokenParams, detail: doc("folder-shares", "Revoke a folder share") },
    )
    .put(
      "/v1/folder-shares/owner-wraps",
      async ({ caller, body }) => v1Json({ applied: await f.putOwnerWraps(caller, body.wraps) }),
      {
        parse: jsonBody(s, "bad_request"),
        body: FolderOwnerWrapsBody,
        response: v1Responses({ 200: OwnerWrapsApplied }, [400, 401, 500]),
        detail: doc("folder-shares", "Store owner wraps of the caller's folder shares (1 to 64)"),
      },
    );
}

/** The anonymous routes of folder shares. */
function anonymousRoutes(s: Services, limiter: RateLimiter) {
  const f = s.folderShares;
  return new Elysia({ name: "folder-shares-anonymous" })
    .onBeforeHandle(({ request, server }) => limiter.take(clientAddress(server, request)))
    .get(
      "/v1/folder-shares/:token/meta",
      async ({ params }) => {
        const r = await f.readable(params.token);
        return v1Json({ display_name: r.displayName, expires_at: rfc3339(r.expiresAt) });
      },
      {
        params: ShareTokenParams,
        response: v1Responses({ 200: FolderShareMeta }, [404, 410, 429, 500]),
        detail: { tags: ["folder-shares"], summary: "A folder share's name and expiry (anonymous)" },
      },
    )
    .get(
      "/v1/folder-shares/:token/browse",
      async ({ params, query }) =>
        v1Json(await f.browse(params.token, query.path ?? "", query.offset ?? 0, query.limit)),
      {
        params: ShareTokenParams,
        query: FolderBrowseQuery,
        transform: integerParams({ query: FolderBrowseQuery }),
        response: v1Responses({ 200: FolderSharePage }, [400, 404, 410, 429, 500]),
        detail: { tags: ["folder-shares"], summary: "One directory under a folder share (anonymous)" },
      },
    )
    .get(
      "/v1/folder-shares/:token/blob",
      async ({ params, query, request }) => {
        const row = await f.file(params.token, query.path);
        const size = row.ciphertextSize;
        const etag = revisionEtag(toHex(row.revisionId));
        const ifRange = request.headers.get("if-range");
        const rangeHeader = ifRange === null || ifRange === etag ? request.headers.get("range") : null;
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
          "accept-ranges": "bytes",
          "content-disposition": "attachment",
          "cache-control": "no-store",
          etag,
        };
        if (range) headers["content-range"] = `bytes ${start}-${end - 1}/${size}`;
        if (isHead(request)) return new Response(null, { status, headers });
        const d = await s.files.open(row, start, end);
        const body = await downloadBody(s.deps.blobs, d, request);
        const response = new Response(body, { status, headers });
        return body instanceof ReadableStream ? response : sentWhole(response);
      },
      {
        params: ShareTokenParams,
        query: FolderBlobQuery,
        response: v1Responses({ 200: t.Any(), 206: t.Any() }, [400, 404, 410, 416, 429, 500, 503]),
        detail: {
          tags: ["folder-shares"],
          summary: "The ciphertext of one file under a folder share (anonymous)",
        },
      },
    );
}

/** Every folder-share route; `limiter` counts the anonymous ones per client address. */
export function folderSharesController(s: Services, limiter: RateLimiter) {
  return new Elysia({ name: "folder-shares" }).use(anonymousRoutes(s, limiter)).use(ownerRoutes(s));
}
