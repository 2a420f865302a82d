/**
 * @module server/sessions/sessions.controller
 * HTTP of upload sessions (docs/protocol.md#upload-sessions). Chunk bodies are read as a raw stream and handed to
 * the engine without buffering. Shapes come from `packages/protocol/src/schemas.ts`; the engine checks the
 * manifest and the chunk layout.
 */

import { fail } from "@esync/protocol/errors.ts";
import {
  ChunkHeaders,
  ChunkParams,
  ChunkStored,
  CreateSessionBody,
  SessionCreated,
  SessionDeleted,
  SessionParams,
  SessionStatus,
  UploadResult,
} from "@esync/protocol/schemas.ts";
import { Elysia } from "elysia";
import { bodyFailure, guardBody } from "../http/body.ts";
import { authenticated, BINARY_BODY, doc, jsonBody, rawBody, responses } from "../http/contract.ts";
import { success } from "../http/envelope.ts";
import { peerAddress } from "../http/peer.ts";
import { integerParams } from "../http/validate.ts";
import type { Services } from "../services.ts";
import type { OpenChunkBody } from "./session.engine.ts";

/** The guarded body of a chunk PUT, read to at most the chunk's exact length (src/http/body.ts). */
function chunkBody(request: Request, index: number): OpenChunkBody {
  return (length) => {
    const body = guardBody(request, {
      limit: length,
      tooLarge: () =>
        fail("invalid_manifest", `chunk ${index} must be exactly ${length} bytes, received more`),
    });
    return {
      stream: body.stream,
      failure: () => bodyFailure(body.stream),
      holder: { received: body.received, evict: body.abort },
    };
  };
}

/** Upload session routes. */
export function sessionsController(s: Services) {
  return new Elysia({ name: "sessions" })
    .derive(authenticated(s))
    .post(
      "/upload/session",
      async ({ caller, body }) => {
        const r = await s.sessions.create(caller, {
          manifest: body.manifest,
          chunk_count: body.chunk_count,
          chunk_size: body.chunk_size,
          ciphertext_size: body.ciphertext_size,
        });
        return success(r);
      },
      {
        parse: jsonBody(s),
        body: CreateSessionBody,
        response: responses(SessionCreated, [400, 401, 402, 403, 408, 413, 429, 500]),
        detail: doc("sessions", "Open a chunked upload session"),
      },
    )
    .put(
      "/upload/session/:session_id/chunk/:chunk_index",
      async ({ caller, params, headers, request }) => {
        const v = headers["content-length"];
        const declared = v === undefined ? null : Number(v.trim());
        const r = await s.sessions.putChunk(
          caller,
          params.session_id,
          params.chunk_index,
          chunkBody(request, params.chunk_index),
          declared,
          peerAddress(request),
        );
        return success(r);
      },
      {
        parse: rawBody(),
        params: ChunkParams,
        headers: ChunkHeaders,
        transform: integerParams({ params: ChunkParams }),
        response: responses(ChunkStored, [400, 401, 402, 403, 404, 408, 409, 413, 429, 500, 503, 507]),
        detail: {
          ...doc(
            "sessions",
            "Upload one chunk (raw bytes, exactly chunk_size or the remainder for the last index)",
          ),
          requestBody: BINARY_BODY,
        },
      },
    )
    .get(
      "/upload/session/:session_id/status",
      async ({ caller, params }) => success(await s.sessions.status(caller, params.session_id)),
      {
        params: SessionParams,
        response: responses(SessionStatus, [401, 403, 404, 500]),
        detail: doc("sessions", "Session progress, for resuming"),
      },
    )
    .post(
      "/upload/session/:session_id/finalize",
      async ({ caller, params }) => success(await s.sessions.finalize(caller, params.session_id)),
      {
        parse: rawBody(),
        params: SessionParams,
        response: responses(UploadResult, [400, 401, 402, 403, 404, 409, 500, 503, 507]),
        detail: doc("sessions", "Verify the BLAKE3 hash and commit the file"),
      },
    )
    .delete(
      "/upload/session/:session_id",
      async ({ caller, params }) => success(await s.sessions.abort(caller, params.session_id)),
      {
        parse: rawBody(),
        params: SessionParams,
        response: responses(SessionDeleted, [401, 403, 404, 409, 500]),
        detail: doc("sessions", "Abort a session and release its storage"),
      },
    );
}
