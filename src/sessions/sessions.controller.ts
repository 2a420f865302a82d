/**
 * @module sessions/sessions.controller
 * HTTP of upload sessions (spec §4.4–4.8). Chunk bodies are read as a raw stream
 * (`parse: "none"`) and handed to the engine without buffering.
 */
import { Elysia, t } from "elysia";
import { fail } from "../errors/errors.ts";
import { bodyFailure, guardedBody } from "../http/body.ts";
import { caller } from "../http/context.ts";
import { Manifest, op, UploadResult } from "../http/docs.ts";
import { success } from "../http/envelope.ts";
import { asObject, parseU32, readJson } from "../http/request.ts";
import type { Services } from "../services.ts";
import { MAX_CHUNK_BYTES, type OpenChunkBody } from "./session.engine.ts";

const SessionStatus = t.Object({
  session_id: t.String(),
  state: t.Union([t.Literal("receiving"), t.Literal("finalized")]),
  total_chunks: t.Integer(),
  chunks_received: t.Array(t.Integer()),
  expires_at: t.Integer(),
  ciphertext_hash: t.String(),
});

function contentLength(request: Request): number | null {
  const v = request.headers.get("content-length");
  if (v === null) return null;
  if (!/^\d{1,16}$/.test(v.trim())) throw fail("invalid_manifest", "Malformed Content-Length");
  return Number(v.trim());
}

/** The guarded body of a chunk PUT, read to at most the chunk's exact length (src/http/body.ts). */
function chunkBody(request: Request, index: number): OpenChunkBody {
  return (length) => {
    const stream = guardedBody(request, {
      limit: length,
      tooLarge: () =>
        fail("invalid_manifest", `chunk ${index} must be exactly ${length} bytes, received more`),
    });
    return { stream, failure: () => bodyFailure(stream) };
  };
}

/** Upload session routes. */
export function sessionsController(s: Services) {
  return new Elysia({ name: "sessions" })
    .post(
      "/upload/session",
      async ({ request }) => {
        const who = await caller(s, request);
        const b = asObject(await readJson(request));
        const r = s.sessions.create(who, {
          manifest: b.manifest,
          chunk_count: b.chunk_count,
          chunk_size: b.chunk_size,
          ciphertext_size: b.ciphertext_size,
        });
        return success(r);
      },
      {
        parse: "none",
        detail: op(
          "sessions",
          "Open a chunked upload session",
          t.Object({ session_id: t.String(), expires_at: t.Integer() }),
          [400, 401, 403, 429],
          t.Object({
            manifest: Manifest,
            chunk_count: t.Integer(),
            chunk_size: t.Integer({ maximum: MAX_CHUNK_BYTES }),
            ciphertext_size: t.Integer(),
          }),
        ),
      },
    )
    .put(
      "/upload/session/:session_id/chunk/:chunk_index",
      async ({ request, params }) => {
        const who = await caller(s, request);
        const index = parseU32(params.chunk_index, "chunk_index");
        const declared = contentLength(request);
        const r = await s.sessions.putChunk(
          who,
          params.session_id,
          index,
          chunkBody(request, index),
          declared,
        );
        return success(r);
      },
      {
        parse: "none",
        detail: {
          ...op(
            "sessions",
            "Upload one chunk (raw bytes, exactly chunk_size or the remainder for the last index)",
            t.Object({ chunk_index: t.Integer() }),
            [400, 401, 403, 404, 409, 503],
          ),
          requestBody: {
            required: true,
            content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } },
          },
        } as never,
      },
    )
    .get(
      "/upload/session/:session_id/status",
      async ({ request, params }) => {
        const who = await caller(s, request);
        return success(s.sessions.status(who, params.session_id));
      },
      { detail: op("sessions", "Session progress, for resuming", SessionStatus, [401, 403, 404]) },
    )
    .post(
      "/upload/session/:session_id/finalize",
      async ({ request, params }) => {
        const who = await caller(s, request);
        return success(await s.sessions.finalize(who, params.session_id));
      },
      {
        parse: "none",
        detail: op(
          "sessions",
          "Verify the BLAKE3 hash and commit the file",
          UploadResult,
          [400, 401, 403, 404, 409, 500],
        ),
      },
    )
    .delete(
      "/upload/session/:session_id",
      async ({ request, params }) => {
        const who = await caller(s, request);
        return success(s.sessions.abort(who, params.session_id));
      },
      {
        parse: "none",
        detail: op(
          "sessions",
          "Abort a session and release its storage",
          t.Object({ deleted: t.Literal(true) }),
          [401, 403, 404, 409],
        ),
      },
    );
}
