/**
 * Helpers shared by the in-process HTTP tests: envelope assertions, session and single-shot
 * upload flows, multipart bodies, and a snapshot of everything stored (database rows, data
 * directory files and blob-store objects, on either backend) to prove that a rejected request
 * changed nothing.
 */
import { expect } from "bun:test";
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import type { TestApp } from "../support/app.ts";
import { jsonInit, tableRows } from "../support/app.ts";
import { type ManifestOpts, makeManifest, type TestUser } from "../support/fixtures.ts";

/** `folder_hash("default")` (docs/protocol.md#ciphertext test vector). */
export const FOLDER = "37a8eec1ce19687d";
/** Another valid folder hash. */
export const FOLDER_B = "0123456789abcdef";

/**
 * A parsed JSON body of the API under test. Tests check its fields one by one against the
 * spec, so it is deliberately untyped.
 */
// biome-ignore lint/suspicious/noExplicitAny: response bodies are asserted field by field
export type Json = any;

/** A JSON answer of the test app. */
export type JsonAnswer = { status: number; body: Json; headers: Headers };

/** A `Bearer` header for `user` with a token valid `ttl` seconds from the app clock's now. */
export function authAt(t: TestApp, user: TestUser, ttl = 86400): string {
  return `Bearer ${user.token(t.clock.now(), ttl)}`;
}

/**
 * Asserts `r` is the error envelope exactly: `{"Error": {"error": code, "message": <non-empty>}}`
 * with `status`.
 */
export function expectError(r: JsonAnswer, status: number, code: string): void {
  expect({ status: r.status, code: r.body?.Error?.error }).toEqual({ status, code });
  expect(Object.keys(r.body)).toEqual(["Error"]);
  expect(Object.keys(r.body.Error).sort()).toEqual(["error", "message"]);
  expect(typeof r.body.Error.message).toBe("string");
  expect(r.body.Error.message.length).toBeGreaterThan(0);
  expect(r.headers.get("content-type")).toContain("application/json");
}

/**
 * Asserts `r` is the Conflict envelope of docs/protocol.md#manifest exactly, with status 409, and returns
 * its body.
 */
export function expectConflict(
  r: JsonAnswer,
  code = "conflict",
): {
  error: string;
  message: string;
  current_revision_id: number[] | null;
  current_revision_seq: number;
} {
  expect(r.status).toBe(409);
  expect(Object.keys(r.body)).toEqual(["Conflict"]);
  expect(Object.keys(r.body.Conflict).sort()).toEqual([
    "current_revision_id",
    "current_revision_seq",
    "error",
    "message",
  ]);
  expect(r.body.Conflict.error).toBe(code);
  expect(typeof r.body.Conflict.message).toBe("string");
  return r.body.Conflict;
}

/** Asserts `r` is `{"Success": {...}}` with exactly `keys`, status 200, and returns the inner object. */
export function expectSuccess(r: JsonAnswer, keys: string[]): Json {
  if (r.status !== 200) throw new Error(`expected 200, got ${r.status}: ${JSON.stringify(r.body)}`);
  expect(Object.keys(r.body)).toEqual(["Success"]);
  expect(Object.keys(r.body.Success).sort()).toEqual([...keys].sort());
  return r.body.Success;
}

/** Field names of UploadResult (docs/protocol.md#upload-result). */
export const UPLOAD_RESULT_KEYS = ["upload_id", "timestamp", "revision_id", "created_at", "updated_at"];
/** Field names of a session status (docs/protocol.md#upload-sessions). */
export const STATUS_KEYS = [
  "session_id",
  "state",
  "total_chunks",
  "chunks_received",
  "expires_at",
  "ciphertext_hash",
];
/** Field names of RemoteFileEntry (docs/protocol.md#sync-endpoints = docs/protocol.md#file-entries without the folder fields). */
export const ENTRY_KEYS = [
  "path_hash",
  "salted_hash",
  "size_bytes",
  "revision_seq",
  "revision_id",
  "encrypted_path",
  "file_name",
  "relative_path",
  "store_hash",
  "arion_hash",
  "chunk_hashes",
  "created_at",
  "updated_at",
];
/** Field names of `/get_state` (docs/protocol.md#sync-endpoints). */
export const STATE_KEYS = [
  "ss58_address",
  "folder_hash",
  "files",
  "total_count",
  "has_more",
  "offset",
  "limit",
];
/** Field names of RemoteFolderInfo (docs/protocol.md#folders). */
export const FOLDER_KEYS = [
  "label",
  "folder_hash",
  "file_count",
  "total_bytes",
  "created_at",
  "updated_at",
  "device_name",
];

/** Bytes `[i × size, (i+1) × size)` of `data`. */
export function chunkOf(data: Uint8Array, size: number, i: number): Uint8Array {
  return data.subarray(i * size, Math.min(data.length, (i + 1) * size));
}

/** `POST /upload/session` with an explicit body. */
export function createSessionRaw(t: TestApp, auth: string | null, body: unknown): Promise<JsonAnswer> {
  return t.json("/upload/session", jsonInit("POST", auth, body));
}

/** Options of `openSession`. */
export interface OpenOpts extends Partial<ManifestOpts> {
  chunkSize?: number;
  /** Auth header (default: a fresh token of `user` on the app clock). */
  auth?: string;
}

/** An open session and what it was opened with. */
export interface OpenSession {
  sessionId: string;
  expiresAt: number;
  manifest: Record<string, unknown>;
  chunkSize: number;
  chunkCount: number;
  auth: string;
}

/** Opens a session for `ct` (asserting 200) with a signed manifest built from `opts`. */
export async function openSession(
  t: TestApp,
  user: TestUser,
  ct: Uint8Array,
  opts: OpenOpts = {},
): Promise<OpenSession> {
  const { chunkSize = 1024, auth = authAt(t, user), ...m } = opts;
  const manifest = makeManifest({ owner: user.address, ciphertext: ct, ...m });
  const chunkCount = Math.ceil(ct.length / chunkSize);
  const r = await createSessionRaw(t, auth, {
    manifest,
    chunk_count: chunkCount,
    chunk_size: chunkSize,
    ciphertext_size: ct.length,
  });
  const s = expectSuccess(r, ["session_id", "expires_at"]);
  return { sessionId: s.session_id, expiresAt: s.expires_at, manifest, chunkSize, chunkCount, auth };
}

/** `PUT /upload/session/{sid}/chunk/{index}` with raw bytes. */
export function putChunk(
  t: TestApp,
  auth: string | null,
  sid: string,
  index: number | string,
  body: Uint8Array | ReadableStream<Uint8Array> | null,
  headers: Record<string, string> = {},
): Promise<JsonAnswer> {
  const h: Record<string, string> = { "content-type": "application/octet-stream", ...headers };
  if (auth) h.authorization = auth;
  return t.json(`/upload/session/${sid}/chunk/${index}`, {
    method: "PUT",
    headers: h,
    body: body as BodyInit | null,
  });
}

/** Uploads every chunk of `ct` for `s` (optionally only `indices`), asserting 200 each. */
export async function putChunks(
  t: TestApp,
  s: OpenSession,
  ct: Uint8Array,
  indices?: number[],
): Promise<void> {
  for (const i of indices ?? [...Array(s.chunkCount).keys()]) {
    const r = await putChunk(t, s.auth, s.sessionId, i, chunkOf(ct, s.chunkSize, i));
    expect(expectSuccess(r, ["chunk_index"]).chunk_index).toBe(i);
  }
}

/** A session GET/POST/DELETE with no body. */
export function sessionCall(
  t: TestApp,
  auth: string | null,
  method: "GET" | "POST" | "DELETE",
  path: string,
): Promise<JsonAnswer> {
  const headers: Record<string, string> = {};
  if (auth) headers.authorization = auth;
  return t.json(path, { method, headers });
}

/** `GET /upload/session/{sid}/status`. */
export function status(t: TestApp, auth: string | null, sid: string): Promise<JsonAnswer> {
  return sessionCall(t, auth, "GET", `/upload/session/${sid}/status`);
}

/** `POST /upload/session/{sid}/finalize` with an empty body, as real clients send it. */
export function finalize(t: TestApp, auth: string | null, sid: string): Promise<JsonAnswer> {
  const headers: Record<string, string> = { "content-length": "0" };
  if (auth) headers.authorization = auth;
  return t.json(`/upload/session/${sid}/finalize`, { method: "POST", headers });
}

/** `DELETE /upload/session/{sid}`. */
export function abort(t: TestApp, auth: string | null, sid: string): Promise<JsonAnswer> {
  return sessionCall(t, auth, "DELETE", `/upload/session/${sid}`);
}

/** Uploads `ct` through a whole session (open, all chunks, finalize) and returns the UploadResult. */
export async function uploadViaSession(
  t: TestApp,
  user: TestUser,
  ct: Uint8Array,
  opts: OpenOpts = {},
): Promise<{ result: Json; session: OpenSession }> {
  const s = await openSession(t, user, ct, opts);
  await putChunks(t, s, ct);
  const result = expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
  return { result, session: s };
}

/** One multipart part. */
export interface Part {
  name: string;
  data: Uint8Array | string;
  filename?: string;
  contentType?: string;
}

/** A `multipart/form-data` body built byte by byte (binary parts are never re-encoded). */
export function multipart(
  parts: Part[],
  boundary = `----esync${Math.random().toString(16).slice(2)}`,
): {
  body: Uint8Array;
  contentType: string;
} {
  const enc = new TextEncoder();
  const pieces: Uint8Array[] = [];
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`;
    if (p.filename !== undefined) head += `; filename="${p.filename}"`;
    head += "\r\n";
    if (p.contentType) head += `Content-Type: ${p.contentType}\r\n`;
    head += "\r\n";
    pieces.push(
      enc.encode(head),
      typeof p.data === "string" ? enc.encode(p.data) : p.data,
      enc.encode("\r\n"),
    );
  }
  pieces.push(enc.encode(`--${boundary}--\r\n`));
  return { body: Buffer.concat(pieces), contentType: `multipart/form-data; boundary=${boundary}` };
}

/**
 * `POST /upload` of `parts` as multipart. With `declareLength` the request carries its
 * `Content-Length` as a real client's does (the server then may hold the body in memory);
 * without it, the in-process request has none (the server spools the ciphertext).
 */
export function uploadParts(
  t: TestApp,
  auth: string | null,
  parts: Part[],
  declareLength = false,
): Promise<JsonAnswer> {
  const { body, contentType } = multipart(parts);
  const headers: Record<string, string> = { "content-type": contentType };
  if (declareLength) headers["content-length"] = String(body.byteLength);
  if (auth) headers.authorization = auth;
  return t.json("/upload", { method: "POST", headers, body: body as BodyInit });
}

/**
 * Single-shot upload as real clients send it: part `manifest` (JSON), then part `ciphertext`
 * without a filename.
 */
export function uploadSingle(
  t: TestApp,
  auth: string | null,
  manifest: unknown,
  ct: Uint8Array,
  declareLength = false,
): Promise<JsonAnswer> {
  return uploadParts(
    t,
    auth,
    [
      { name: "manifest", data: JSON.stringify(manifest), contentType: "application/json" },
      { name: "ciphertext", data: ct },
    ],
    declareLength,
  );
}

/** `GET /get_state/{ss58}/{folder}` with an optional query string. */
export function getState(
  t: TestApp,
  auth: string | null,
  address: string,
  folder: string,
  query = "",
): Promise<JsonAnswer> {
  return sessionCall(t, auth, "GET", `/get_state/${address}/${folder}${query}`);
}

/** The `/get_state` Success object (asserting 200 and its exact fields). */
export async function stateOf(t: TestApp, user: TestUser, folder = FOLDER, query = ""): Promise<Json> {
  return expectSuccess(await getState(t, authAt(t, user), user.address, folder, query), STATE_KEYS);
}

/** `/list_folders` Success `folders` of `user`. */
export async function foldersOf(t: TestApp, user: TestUser): Promise<Json[]> {
  const r = await sessionCall(t, authAt(t, user), "GET", `/list_folders/${user.address}`);
  return expectSuccess(r, ["base_address", "folders"]).folders;
}

/** 64-hex `file_id` of a manifest's `path_hash`. */
export function fileIdOf(manifest: Record<string, unknown>): string {
  return Buffer.from(manifest.path_hash as number[]).toString("hex");
}

/** `GET /download/...` raw response. */
export function download(
  t: TestApp,
  auth: string | null,
  address: string,
  folder: string,
  fileId: string,
  range?: string,
): Promise<Response> {
  const headers: Record<string, string> = {};
  if (auth) headers.authorization = auth;
  if (range !== undefined) headers.range = range;
  return t.fetch(`/download/${address}/${folder}/${fileId}`, { headers });
}

/**
 * Every object of the app's blob store, keys sorted, whatever the backend. On disk it also
 * lists what a write may leave beside the objects (the staging directory `.tmp/`), so a
 * leftover temporary file shows up too.
 */
export async function blobFiles(t: TestApp): Promise<string[]> {
  if (t.blobs.kind === "disk") return filesUnder(t.config.blobDir);
  return (await t.blobs.list("")).sort();
}

/** Every file under `root` (recursively, dotfiles included), relative paths sorted. */
export function filesUnder(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    let entries: import("node:fs").Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(relative(root, p));
    }
  };
  walk(root);
  return out.sort();
}

const TABLES = ["folders", "files", "upload_sessions", "session_chunks", "blob_deletions", "api_tokens"];

/** What `snapshot` captures. */
export interface Snapshot {
  rows: Record<string, unknown[]>;
  /** Files of the data directory (spool; blobs and their staging on disk). */
  files: string[];
  /** Objects of the blob store (`blobFiles`), on any backend. */
  objects: string[];
}

/**
 * Every row of every table, every file of the data directory and every object of the blob
 * store: compare two snapshots to prove nothing changed.
 */
export async function snapshot(t: TestApp): Promise<Snapshot> {
  const rows: Record<string, unknown[]> = {};
  for (const name of TABLES) rows[name] = await tableRows(t, name);
  return { rows, files: filesUnder(t.config.dataDir), objects: await blobFiles(t) };
}

/** Rows of one table (for assertions on what the sweeper collected), on either dialect. */
export function rowsOf(t: TestApp, table: string): Promise<Record<string, unknown>[]> {
  return tableRows(t, table);
}
