/**
 * Helpers of the share tests (docs/sharing.md): share metadata for a fake framed ciphertext of a
 * given plaintext size, the single-request and chunked mints, and flat v1 error assertions.
 */
import { expect } from "bun:test";
import { randomBytes } from "node:crypto";
import { framedSize, SHARE_CHUNK_BYTES } from "../../src/shares/share-rules.ts";
import type { TestApp } from "../support/app.ts";
import { jsonInit } from "../support/app.ts";
import type { Json, JsonAnswer } from "./helpers.ts";
import { multipart } from "./helpers.ts";

/** A fake share blob: random bytes of the framed size of `plaintextSize`, and its metadata. */
export function shareBlob(plaintextSize: number, extra: Record<string, unknown> = {}) {
  const ciphertext = randomBytes(framedSize(plaintextSize));
  const metadata: Record<string, unknown> = {
    ciphertext_size: ciphertext.byteLength,
    plaintext_size: plaintextSize,
    filename_ct: randomBytes(21).toString("base64"),
    filename_nonce: randomBytes(24).toString("base64"),
    filename: "report.pdf",
    mime_type: "application/pdf",
    ...extra,
  };
  return { ciphertext, metadata };
}

/** `POST /v1/shares` with parts metadata, then ciphertext (no filename), as the product's clients send. */
export function mintSingle(
  t: TestApp,
  auth: string | null,
  metadata: unknown,
  ciphertext: Uint8Array,
): Promise<JsonAnswer> {
  const { body, contentType } = multipart([
    { name: "metadata", data: JSON.stringify(metadata), contentType: "application/json" },
    { name: "ciphertext", data: ciphertext, contentType: "application/octet-stream" },
  ]);
  const headers: Record<string, string> = {
    "content-type": contentType,
    "content-length": String(body.byteLength),
  };
  if (auth) headers.authorization = auth;
  return t.json("/v1/shares", { method: "POST", headers, body: body as BodyInit });
}

/** `PUT /v1/shares/{token}/chunks/{index}`. */
export function putShareChunk(t: TestApp, auth: string, token: string, index: number, data: Uint8Array) {
  return t.json(`/v1/shares/${token}/chunks/${index}`, {
    method: "PUT",
    headers: {
      authorization: auth,
      "content-type": "application/octet-stream",
      "content-length": String(data.byteLength),
    },
    body: data as BodyInit,
  });
}

/** The chunked mint: init, every chunk, complete; returns the token. */
export async function mintChunked(
  t: TestApp,
  auth: string,
  plaintextSize: number,
  extra: Record<string, unknown> = {},
) {
  const { ciphertext, metadata } = shareBlob(plaintextSize, extra);
  const total = Math.max(1, Math.ceil(ciphertext.byteLength / SHARE_CHUNK_BYTES));
  const init = await t.json("/v1/shares/init", jsonInit("POST", auth, { ...metadata, total_chunks: total }));
  expect(init.status).toBe(201);
  const token = init.body.share_token as string;
  for (let i = 0; i < total; i++) {
    const r = await putShareChunk(
      t,
      auth,
      token,
      i,
      ciphertext.subarray(i * SHARE_CHUNK_BYTES, (i + 1) * SHARE_CHUNK_BYTES),
    );
    expect(r.status).toBe(200);
  }
  const done = await t.json(`/v1/shares/${token}/complete`, {
    method: "POST",
    headers: { authorization: auth, "content-length": "0" },
  });
  expect(done.status).toBe(200);
  return { token, ciphertext, metadata, init: init.body as Json };
}

/** Asserts a flat v1 error: `{"error": code, "message": <non-empty>}` with `status`. */
export function expectFlat(r: JsonAnswer, status: number, code: string): void {
  expect({ status: r.status, code: r.body?.error }).toEqual({ status, code });
  expect(Object.keys(r.body).sort()).toEqual(["error", "message"]);
  expect(typeof r.body.message).toBe("string");
}

/** Anonymous GET of `path` (no Authorization header). */
export function anonymous(t: TestApp, path: string, headers: Record<string, string> = {}) {
  return t.fetch(path, { headers });
}
