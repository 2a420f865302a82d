/**
 * Helpers of the multi-node tests: the API calls they make against a node's URL (JSON calls,
 * single-shot uploads, session flows, downloads), with answers parsed for the envelope checks of
 * `test/http/helpers.ts`.
 */
import { describe } from "bun:test";
import { plaintextSizeFor } from "@esync/protocol/framing.ts";
import { type JsonAnswer, multipart } from "../http/helpers.ts";
import { makeManifest, type TestUser } from "../support/fixtures.ts";
import { skipS3 } from "../support/s3-server.ts";

export { expectConflict, expectError, expectSuccess, FOLDER, UPLOAD_RESULT_KEYS } from "../http/helpers.ts";

/**
 * `describe` for suites that need a cluster (a real S3 server): skipped, loudly (see
 * `test/support/s3-server.ts`), only under `ESYNC_TEST_SKIP_S3=1` outside CI.
 */
export const describeCluster = skipS3 ? describe.skip : describe;

/** A JSON request to `base` as `user`; `body` is sent as JSON (POST without one: `Content-Length: 0`). */
export async function call(
  base: string,
  user: TestUser,
  method: string,
  path: string,
  body?: unknown,
): Promise<JsonAnswer> {
  const headers: Record<string, string> = { authorization: user.auth };
  if (body !== undefined) headers["content-type"] = "application/json";
  else if (method === "POST") headers["content-length"] = "0";
  const r = await fetch(`${base}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = { raw: text };
  }
  return { status: r.status, body: parsed, headers: r.headers };
}

/** Single-shot `POST /upload` of `manifest` and `ct` to `base`, as real clients send it. */
export async function uploadSingle(
  base: string,
  user: TestUser,
  manifest: Record<string, unknown>,
  ct: Uint8Array,
): Promise<JsonAnswer> {
  const { body, contentType } = multipart([
    { name: "manifest", data: JSON.stringify(manifest), contentType: "application/json" },
    { name: "ciphertext", data: ct },
  ]);
  const r = await fetch(`${base}/upload`, {
    method: "POST",
    headers: { authorization: user.auth, "content-type": contentType },
    body: body as BodyInit,
  });
  return { status: r.status, body: await r.json(), headers: r.headers };
}

/** A session opened on some node. */
export interface Session {
  sid: string;
  manifest: Record<string, unknown>;
  chunkSize: number;
  chunkCount: number;
}

/**
 * Opens a session on `base` for ciphertext `ct` (or, with `ct` null, for `size` bytes hashing to
 * `hash`, for ciphertext kept on disk). @throws when the answer is not 200.
 */
export async function openSession(
  base: string,
  user: TestUser,
  opts: {
    path: string;
    chunkSize: number;
    ct?: Uint8Array;
    size?: number;
    hash?: string;
    sizeBytes?: number;
    baseRevisionId?: number[] | null;
    revisionSeq?: number;
  },
): Promise<Session> {
  const size = opts.ct?.length ?? opts.size;
  if (size === undefined) throw new Error("openSession needs ct or size");
  const manifest = makeManifest({
    owner: user.address,
    ciphertext: opts.ct ?? new Uint8Array(0),
    ciphertextHash: opts.hash,
    sizeBytes: opts.sizeBytes ?? plaintextSizeFor(size) ?? 0,
    path: opts.path,
    baseRevisionId: opts.baseRevisionId,
    revisionSeq: opts.revisionSeq,
  });
  const chunkCount = Math.ceil(size / opts.chunkSize);
  const r = await call(base, user, "POST", "/upload/session", {
    manifest,
    chunk_count: chunkCount,
    chunk_size: opts.chunkSize,
    ciphertext_size: size,
  });
  if (r.status !== 200) throw new Error(`create session on ${base}: ${r.status} ${JSON.stringify(r.body)}`);
  return { sid: r.body.Success.session_id, manifest, chunkSize: opts.chunkSize, chunkCount };
}

/** `PUT` chunk `index` of session `sid` on `base`. */
export async function putChunk(
  base: string,
  user: TestUser,
  sid: string,
  index: number,
  body: Uint8Array | Blob,
): Promise<JsonAnswer> {
  const r = await fetch(`${base}/upload/session/${sid}/chunk/${index}`, {
    method: "PUT",
    headers: { authorization: user.auth, "content-type": "application/octet-stream" },
    body: body as BodyInit,
  });
  return { status: r.status, body: await r.json(), headers: r.headers };
}

/**
 * Every chunk of `ct` for `s`, chunk i to `bases[i % bases.length]`: one at a time, or all at once
 * with `parallel`. @throws unless each answer is 200.
 */
export async function putAllChunks(
  bases: string[],
  user: TestUser,
  s: Session,
  ct: Uint8Array,
  opts: { parallel?: boolean } = {},
): Promise<void> {
  const put = async (i: number) => {
    const base = bases[i % bases.length] as string;
    const r = await putChunk(base, user, s.sid, i, ct.subarray(i * s.chunkSize, (i + 1) * s.chunkSize));
    if (r.status !== 200) throw new Error(`chunk ${i} on ${base}: ${r.status} ${JSON.stringify(r.body)}`);
  };
  const indices = [...Array(s.chunkCount).keys()];
  if (opts.parallel) await Promise.all(indices.map(put));
  else for (const i of indices) await put(i);
}

/** `POST /upload/session/{sid}/finalize` on `base` with an empty body. */
export function finalize(base: string, user: TestUser, sid: string): Promise<JsonAnswer> {
  return call(base, user, "POST", `/upload/session/${sid}/finalize`);
}

/** The `/download` path of the file a manifest describes. */
export function downloadPath(user: TestUser, manifest: Record<string, unknown>): string {
  const id = Buffer.from(manifest.path_hash as number[]).toString("hex");
  return `/download/${user.address}/${manifest.folder_hash}/${id}`;
}

/** `GET` the file of `manifest` from `base`, optionally a `Range`; the whole body as bytes. */
export async function download(
  base: string,
  user: TestUser,
  manifest: Record<string, unknown>,
  range?: string,
): Promise<{ status: number; headers: Headers; body: Buffer }> {
  const headers: Record<string, string> = { authorization: user.auth };
  if (range) headers.range = range;
  const r = await fetch(`${base}${downloadPath(user, manifest)}`, { headers });
  return { status: r.status, headers: r.headers, body: Buffer.from(await r.arrayBuffer()) };
}

/** Resolves when `check` returns true, polling every `everyMs`. @throws after `timeoutMs` with `what`. */
export async function waitFor(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs = 30_000,
  everyMs = 50,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await Bun.sleep(everyMs);
  }
}
