/**
 * @module client/api
 * Typed HTTP client (fetch) for the whole service API: docs/protocol.md#response-families, #sync-endpoints.
 * Success bodies arrive as `{"Success": {...}}` and are returned unwrapped; every failure is
 * thrown as an `ApiError` (see `api-error.ts`). Every request but `/health` carries
 * `Authorization: Bearer <token>` from the `TokenSource`; on a 401 a renewable source is
 * invalidated and the request is sent once more with a fresh token.
 *
 * `/upload` is `multipart/form-data` with the part `manifest` (JSON) first and the part
 * `ciphertext` (raw bytes, with **no** `filename`, as the real clients send it) second
 * (docs/protocol.md#sync-endpoints); the body is assembled by hand because `FormData` always adds a filename.
 *
 * @example
 * ```ts
 * const api = new EsyncApi({ baseUrl: "http://127.0.0.1:8080", token: new WalletTokenSource(identity) });
 * const { folders } = await api.listFolders(identity.address);
 * ```
 */

import type { WireManifest } from "@esync/protocol/manifest.ts";
import { renameDeclaration } from "@esync/protocol/rename.ts";
import { MAX_FOLDER_ENTRIES_PAGE } from "@esync/protocol/schemas.ts";
import { ApiError, errorFromResponse } from "./api-error.ts";
import type {
  AcceptResult,
  BrowseOptions,
  BrowseResult,
  ByteRange,
  CanUploadResult,
  Capabilities,
  ChunkStored,
  DeleteFileResult,
  DeleteFilesResult,
  DownloadResult,
  DriveInvites,
  DriveMember,
  DriveMembers,
  FileTypeSummary,
  FileVersion,
  FileVersionsResult,
  HealthInfo,
  InviteMeta,
  InviteMinted,
  ListFolderEntriesResult,
  ListFoldersResult,
  Memberships,
  MintInviteBody,
  QuotaReport,
  RegisterFolderEntriesResult,
  RegisterFolderResult,
  RemoteFileEntry,
  RenameEntry,
  RenameFilesResult,
  RestoreVersionResult,
  SearchFilters,
  SearchResult,
  SessionCreated,
  SessionDeleted,
  SessionStatus,
  SourceSummary,
  StateResult,
  TrashResult,
  UnregisterFolderEntriesResult,
  UnregisterFolderResult,
  UploadResult,
  UserSummary,
} from "./api-types.ts";
import { bodyBytes } from "./byte-stream.ts";
import { toHex, utf8 } from "./hash.ts";
import type { FolderKeys } from "./keys.ts";
import { type RetryPolicy, withRetry } from "./retry.ts";
import type {
  FileShareMeta,
  FileShareMetadata,
  FileShareSummary,
  FolderShareMeta,
  FolderSharePage,
  FolderShareSummary,
  MintedShare,
  ShareAccessLog,
  ShareTtl,
} from "./share-types.ts";
import { staticTokenSource, type TokenSource } from "./token.ts";

/** Options of `EsyncApi`. */
export interface ApiClientOptions {
  /** Service root, e.g. `http://127.0.0.1:8080` (a trailing `/` is ignored). */
  baseUrl: string;
  /** Bearer token source, or a fixed token string. Required for every endpoint but `/health`. */
  token?: TokenSource | string;
  /** Sent as `X-Billing-Bypass` on `/search_files` when set (docs/protocol.md#authentication). */
  billingBypass?: string;
  /** The fetch to use; default the global one (tests pass fakes). */
  fetch?: typeof fetch;
  /** Per-request timeout for JSON calls, ms; default 60000. Chunk, upload and download calls use `signal` only. */
  timeoutMs?: number;
  /**
   * Retry every request on network errors, 5xx and 429 (`retry.ts`) within this policy, e.g.
   * `{ forMs: 120_000 }`; default: no retries here (callers such as the uploader retry).
   * An error thrown after retries is marked `retriedForMs`, so outer retries stop.
   */
  retry?: Partial<RetryPolicy>;
  /** Hears about each failure that will be retried (e.g. to tell the user). */
  onRetry?: (error: ApiError, attempt: number, delayMs: number) => void;
}

type Query = Record<string, string | number | undefined>;

interface RequestSpec {
  method: string;
  path: string;
  query?: Query;
  json?: unknown;
  body?: BodyInit;
  headers?: Record<string, string>;
  auth?: boolean;
  signal?: AbortSignal;
  /** Apply `timeoutMs` (default true). */
  timeout?: boolean;
  /** What the request is about for the user (a file's path), named in a network error. */
  label?: string;
  /** `manual`: a 302 is answered as is (not followed, not an error). */
  redirect?: "manual";
}

/**
 * The part of a fetch failure's message a user can act on: Bun's advice to its own developers
 * ("pass `verbose: true` in the second argument to fetch()") is left out.
 */
export function fetchFailureText(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  const code = (e as { code?: unknown } | null)?.code;
  const kept = msg
    .split(/(?<=[.?!])\s+/)
    .filter((s) => !/verbose: ?true|second argument to fetch/i.test(s))
    .join(" ")
    .trim();
  const text = kept || "request failed";
  return typeof code === "string" && !text.includes(code) ? `${code}: ${text}` : text;
}

/**
 * True for a fetch failure that a retry cannot fix: the TLS handshake failed (a certificate
 * that does not verify, an HTTPS URL on a plain-HTTP port).
 */
export function isTlsFailure(e: unknown): boolean {
  const code = String((e as { code?: unknown } | null)?.code ?? "");
  const msg = e instanceof Error ? e.message : String(e);
  return (
    /^EPROTO$|CERT|TLS|SSL|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|HOSTNAME_MISMATCH/i.test(code) ||
    /certificate|TLS handshake|SSL|wrong version number/i.test(msg)
  );
}

/**
 * A `multipart/form-data` body of two parts: `name` holding `json` as JSON, then `ciphertext`
 * (octet-stream), the shape of `POST /upload` and `POST /v1/shares`; `contentType` names its boundary.
 */
function jsonAndCiphertext(
  name: string,
  json: unknown,
  ciphertext: Blob | Uint8Array,
): { contentType: string; body: Blob } {
  const boundary = `esync-${toHex(crypto.getRandomValues(new Uint8Array(16)))}`;
  const head = utf8(
    `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\nContent-Type: application/json\r\n\r\n` +
      `${JSON.stringify(json)}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="ciphertext"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = utf8(`\r\n--${boundary}--\r\n`);
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    body: new Blob([
      bodyBytes(head),
      ciphertext instanceof Blob ? ciphertext : bodyBytes(ciphertext),
      bodyBytes(tail),
    ]),
  };
}

function seg(s: string): string {
  return encodeURIComponent(s);
}

function intParam(name: string, v: number | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!Number.isSafeInteger(v) || v < 0)
    throw new RangeError(`${name} must be a non-negative integer, got ${v}`);
  return v;
}

function fileTypeParam(t: string | string[] | undefined): string | undefined {
  if (t === undefined) return undefined;
  return Array.isArray(t) ? t.join(",") : t;
}

/** Typed client of every endpoint; one instance per server and account. */
export class EsyncApi {
  readonly baseUrl: string;
  private readonly tokens: TokenSource | null;
  private readonly fetchFn: typeof fetch;
  private readonly timeoutMs: number;

  constructor(private readonly options: ApiClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.tokens =
      options.token === undefined
        ? null
        : typeof options.token === "string"
          ? staticTokenSource(options.token)
          : options.token;
    this.fetchFn = options.fetch ?? fetch;
    this.timeoutMs = options.timeoutMs ?? 60_000;
  }

  private url(path: string, query?: Query): string {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) qs.set(k, String(v));
    const q = qs.toString();
    return `${this.baseUrl}${path}${q ? `?${q}` : ""}`;
  }

  /**
   * Sends a request and returns the raw successful response, retrying within `options.retry`;
   * throws `ApiError` (naming this server) otherwise.
   */
  private async send(spec: RequestSpec): Promise<Response> {
    const policy = this.options.retry;
    if (!policy) return this.sendOnce(spec);
    return withRetry(() => this.sendOnce(spec), {
      policy,
      signal: spec.signal,
      onRetry: this.options.onRetry,
    });
  }

  /** One try of `send` (and one more with a fresh token after a 401). */
  private async sendOnce(spec: RequestSpec): Promise<Response> {
    const auth = spec.auth ?? true;
    for (let attempt = 0; ; attempt++) {
      const headers: Record<string, string> = { ...spec.headers };
      if (auth) {
        if (!this.tokens)
          throw new ApiError(401, "unauthorized", "no token configured for an authenticated call");
        headers.Authorization = `Bearer ${await this.tokens.getToken()}`;
      }
      let body = spec.body;
      if (spec.json !== undefined) {
        headers["Content-Type"] = "application/json";
        body = JSON.stringify(spec.json);
      }
      const signals = [
        spec.signal,
        spec.timeout === false ? undefined : AbortSignal.timeout(this.timeoutMs),
      ].filter((s): s is AbortSignal => s !== undefined);
      let res: Response;
      try {
        res = await this.fetchFn(this.url(spec.path, spec.query), {
          method: spec.method,
          headers,
          body,
          signal: signals.length ? AbortSignal.any(signals) : undefined,
          ...(spec.redirect ? { redirect: spec.redirect } : {}),
        });
      } catch (e) {
        if (spec.signal?.aborted) throw spec.signal.reason ?? e;
        const msg = fetchFailureText(e);
        const tls = isTlsFailure(e);
        throw new ApiError(
          0,
          tls ? "tls_error" : "network_error",
          spec.label ? `${spec.label}: ${msg}` : msg,
          {
            cause: e,
            server: this.baseUrl,
            request: `${spec.method} ${spec.path}`,
            permanent: tls,
          },
        );
      }
      if (res.ok || (spec.redirect === "manual" && res.status === 302)) return res;
      const err = (await errorFromResponse(res)).withServer(this.baseUrl);
      const renewable = this.tokens as { invalidate?: () => void } | null;
      if (err.status === 401 && attempt === 0 && typeof renewable?.invalidate === "function") {
        renewable.invalidate();
        continue;
      }
      throw err;
    }
  }

  /** Sends a request and unwraps `{"Success": ...}`. */
  private async call<T>(spec: RequestSpec): Promise<T> {
    const res = await this.send(spec);
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new ApiError(res.status, "bad_response", `${spec.method} ${spec.path}: response is not JSON`, {
        server: this.baseUrl,
      });
    }
    if (parsed && typeof parsed === "object" && "Success" in parsed)
      return (parsed as { Success: T }).Success;
    throw new ApiError(
      res.status,
      "bad_response",
      `${spec.method} ${spec.path}: response has no Success envelope`,
      { server: this.baseUrl },
    );
  }

  /** Sends a request and parses a flat (unenveloped) JSON answer. */
  private async callFlat<T>(spec: RequestSpec): Promise<T> {
    const res = await this.send(spec);
    try {
      return (await res.json()) as T;
    } catch {
      throw new ApiError(res.status, "bad_response", `${spec.method} ${spec.path}: response is not JSON`, {
        server: this.baseUrl,
      });
    }
  }

  /** `GET /health` (no auth, no envelope). */
  async health(signal?: AbortSignal): Promise<HealthInfo> {
    const res = await this.send({ method: "GET", path: "/health", auth: false, signal });
    return (await res.json()) as HealthInfo;
  }

  /** `POST /register_folder`. A folder already registered is `ApiError` 409 `conflict`. */
  registerFolder(input: {
    ss58Address: string;
    folderHash: string;
    label: string;
    deviceName?: string | null;
  }): Promise<RegisterFolderResult> {
    return this.call({
      method: "POST",
      path: "/register_folder",
      json: {
        ss58_address: input.ss58Address,
        folder_hash: input.folderHash,
        label: input.label,
        device_name: input.deviceName ?? null,
      },
    });
  }

  /** `GET /list_folders/{address}`. */
  listFolders(address: string): Promise<ListFoldersResult> {
    return this.call({ method: "GET", path: `/list_folders/${seg(address)}` });
  }

  /** `DELETE /unregister_folder`: removes the folder and every file in it (irreversible). */
  unregisterFolder(input: { ss58Address: string; folderHash: string }): Promise<UnregisterFolderResult> {
    return this.call({
      method: "DELETE",
      path: "/unregister_folder",
      json: { ss58_address: input.ss58Address, folder_hash: input.folderHash },
    });
  }

  /**
   * `POST /upload`: single-shot upload of a whole blob (the real clients use it up to 8 MiB of
   * ciphertext). A revision mismatch is `ApiError` 409 with `conflict` set.
   */
  upload(manifest: WireManifest, ciphertext: Blob | Uint8Array, signal?: AbortSignal): Promise<UploadResult> {
    const form = jsonAndCiphertext("manifest", manifest, ciphertext);
    return this.call({
      method: "POST",
      path: "/upload",
      headers: { "Content-Type": form.contentType },
      body: form.body,
      signal,
      timeout: false,
    });
  }

  /** `POST /upload/session`: opens a chunked upload session. */
  createSession(input: {
    manifest: WireManifest;
    chunkCount: number;
    chunkSize: number;
    ciphertextSize: number;
  }): Promise<SessionCreated> {
    return this.call({
      method: "POST",
      path: "/upload/session",
      json: {
        manifest: input.manifest,
        chunk_count: input.chunkCount,
        chunk_size: input.chunkSize,
        ciphertext_size: input.ciphertextSize,
      },
    });
  }

  /** `PUT /upload/session/{id}/chunk/{index}` with the raw chunk bytes. */
  putChunk(
    sessionId: string,
    index: number,
    chunk: Blob | Uint8Array,
    signal?: AbortSignal,
  ): Promise<ChunkStored> {
    return this.call({
      method: "PUT",
      path: `/upload/session/${seg(sessionId)}/chunk/${index}`,
      headers: { "Content-Type": "application/octet-stream" },
      body: chunk instanceof Blob ? chunk : bodyBytes(chunk),
      signal,
      timeout: false,
    });
  }

  /** `GET /upload/session/{id}/status`. */
  sessionStatus(sessionId: string): Promise<SessionStatus> {
    return this.call({ method: "GET", path: `/upload/session/${seg(sessionId)}/status` });
  }

  /** `POST /upload/session/{id}/finalize`, empty body with `Content-Length: 0`. */
  finalizeSession(sessionId: string): Promise<UploadResult> {
    return this.call({
      method: "POST",
      path: `/upload/session/${seg(sessionId)}/finalize`,
      headers: { "Content-Length": "0" },
      body: new Uint8Array(0),
      timeout: false,
    });
  }

  /** `DELETE /upload/session/{id}`: aborts a session. */
  deleteSession(sessionId: string): Promise<SessionDeleted> {
    return this.call({ method: "DELETE", path: `/upload/session/${seg(sessionId)}` });
  }

  /** `GET /get_state/{ss58}/{folder_hash}?offset&limit`: one page of a folder's files. */
  getState(
    ss58: string,
    folderHash: string,
    page: { offset?: number; limit?: number } = {},
  ): Promise<StateResult> {
    return this.call({
      method: "GET",
      path: `/get_state/${seg(ss58)}/${seg(folderHash)}`,
      query: { offset: intParam("offset", page.offset), limit: intParam("limit", page.limit) },
    });
  }

  /** Every file of a folder, page by page (`pageSize` default 1000). */
  async *iterateState(ss58: string, folderHash: string, pageSize = 1000): AsyncGenerator<RemoteFileEntry> {
    let offset = 0;
    for (;;) {
      const page = await this.getState(ss58, folderHash, { offset, limit: pageSize });
      yield* page.files;
      offset += page.files.length;
      if (!page.has_more || page.files.length === 0) return;
    }
  }

  /** `DELETE /delete/{ss58}/{folder_hash}/{file_id}` (`file_id` = 64 hex of `path_hash`). */
  deleteFile(ss58: string, folderHash: string, fileId: string): Promise<DeleteFileResult> {
    return this.call({ method: "DELETE", path: `/delete/${seg(ss58)}/${seg(folderHash)}/${seg(fileId)}` });
  }

  /**
   * `GET /download/{ss58}/{folder_hash}/{file_id}`, optionally one `Range`. Returns the
   * ciphertext stream (200 or 206) and the headers of docs/protocol.md#sync-endpoints; a 416 is `ApiError`. With
   * `ifRange` (an ETag), the range is served only if the file is still that revision; otherwise
   * the answer is 200 with the whole current file.
   */
  async download(
    ss58: string,
    folderHash: string,
    fileId: string,
    options: { range?: ByteRange; ifRange?: string; signal?: AbortSignal; label?: string } = {},
  ): Promise<DownloadResult> {
    const headers: Record<string, string> = {};
    if (options.ifRange !== undefined) headers["If-Range"] = options.ifRange;
    const r = options.range;
    if (r) {
      headers.Range =
        "suffix" in r
          ? `bytes=-${intParam("suffix", r.suffix)}`
          : `bytes=${intParam("start", r.start)}-${r.end === undefined ? "" : intParam("end", r.end)}`;
    }
    const res = await this.send({
      method: "GET",
      path: `/download/${seg(ss58)}/${seg(folderHash)}/${seg(fileId)}`,
      headers,
      signal: options.signal,
      timeout: false,
      label: options.label,
      redirect: "manual",
    });
    const num = (from: Response, name: string): number | null => {
      const v = from.headers.get(name);
      return v !== null && /^\d+$/.test(v) ? Number(v) : null;
    };
    const cr = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(res.headers.get("content-range") ?? "");
    // A 302 (a server set to redirect downloads to S3) carries the download's headers; the bytes
    // are at Location: the range its Content-Range names, or the whole object, with their length.
    const bytes = res.status === 302 ? await this.followDownload(res, cr, options.signal) : res;
    return {
      status: res.status === 302 ? (cr ? 206 : 200) : res.status,
      body: bytes.body ?? new Blob([]).stream(),
      contentLength: num(bytes, "content-length"),
      contentRange: cr ? { start: Number(cr[1]), end: Number(cr[2]), total: Number(cr[3]) } : null,
      sizeBytes: num(res, "x-size-bytes"),
      revisionIdHex: res.headers.get("x-revision-id"),
      revisionSeq: num(res, "x-revision-seq"),
      etag: res.headers.get("etag"),
    };
  }

  /**
   * GETs the Location of download redirect `res` (no credentials of ours: the URL is presigned),
   * asking for the range `cr` of it names, if any.
   * @throws ApiError `network_error`, or the status of an answer that is not the 200/206 expected.
   */
  private async followDownload(
    res: Response,
    cr: RegExpExecArray | null,
    signal?: AbortSignal,
  ): Promise<Response> {
    const location = res.headers.get("location");
    if (!location)
      throw new ApiError(502, "bad_redirect", "download redirect without Location", { server: this.baseUrl });
    let bytes: Response;
    try {
      bytes = await this.fetchFn(location, {
        headers: cr ? { Range: `bytes=${cr[1]}-${cr[2]}` } : {},
        signal,
      });
    } catch (e) {
      if (signal?.aborted) throw signal.reason ?? e;
      throw new ApiError(
        0,
        "network_error",
        `GET download redirect: ${e instanceof Error ? e.message : String(e)}`,
        {
          cause: e,
          server: this.baseUrl,
        },
      );
    }
    if (bytes.status !== (cr ? 206 : 200)) {
      await bytes.body?.cancel().catch(() => {});
      throw new ApiError(bytes.status, "storage_unavailable", `download redirect answered ${bytes.status}`, {
        server: this.baseUrl,
      });
    }
    return bytes;
  }

  /** `GET /search_files/{ss58}` with every filter of docs/protocol.md#search. */
  searchFiles(ss58: string, filters: SearchFilters = {}): Promise<SearchResult> {
    const headers: Record<string, string> = {};
    if (this.options.billingBypass) headers["X-Billing-Bypass"] = this.options.billingBypass;
    return this.call({
      method: "GET",
      path: `/search_files/${seg(ss58)}`,
      headers,
      query: {
        q: filters.q,
        file_type: fileTypeParam(filters.fileType),
        size_min: intParam("sizeMin", filters.sizeMin),
        size_max: intParam("sizeMax", filters.sizeMax),
        date_from: intParam("dateFrom", filters.dateFrom),
        date_to: intParam("dateTo", filters.dateTo),
        offset: intParam("offset", filters.offset),
        limit: intParam("limit", filters.limit),
        sort_by: filters.sortBy,
        sort_order: filters.sortOrder,
        folder_hash: filters.folderHash,
      },
    });
  }

  /** `GET /browse/{ss58}/{folder_hash}`: subfolders and files at `path`. */
  browse(ss58: string, folderHash: string, options: BrowseOptions = {}): Promise<BrowseResult> {
    return this.call({
      method: "GET",
      path: `/browse/${seg(ss58)}/${seg(folderHash)}`,
      query: {
        path: options.path,
        offset: intParam("offset", options.offset),
        limit: intParam("limit", options.limit),
        q: options.q,
        file_type: fileTypeParam(options.fileType),
        sort_by: options.sortBy,
        sort_order: options.sortOrder,
      },
    });
  }

  /**
   * `POST /delete_files` (docs/protocol.md#delete-files): deletes up to `MAX_BATCH_DELETE` files of one folder
   * in one transaction. `fileIds` are 64-hex `path_hash`es. Per-id failures are in `errors`
   * (the answer is 200); more than 1000 ids is `ApiError` 400 `batch_too_large`.
   */
  deleteFiles(input: {
    ss58Address: string;
    folderHash: string;
    fileIds: string[];
    quiet?: boolean;
  }): Promise<DeleteFilesResult> {
    return this.call({
      method: "POST",
      path: "/delete_files",
      json: {
        ss58_address: input.ss58Address,
        folder_hash: input.folderHash,
        file_ids: input.fileIds,
        quiet: input.quiet ?? false,
      },
    });
  }

  /**
   * `POST /rename_files` (docs/protocol.md#rename-files): re-keys files without touching their ciphertext.
   * The batch is signed here with `signer` (the folder's Ed25519 key) over the rename
   * declaration (`renameDeclaration`, the builder the server verifies with). Each entry
   * succeeds or fails on its own (`failures[].reason`: `not_found`, `target_exists`,
   * `revision_mismatch`, `database_error`); a bad signature or an empty batch is `ApiError` 400
   * `invalid_manifest`, more than 1000 entries 400 `batch_too_large`.
   */
  renameFiles(input: {
    ss58Address: string;
    folderHash: string;
    renames: RenameEntry[];
    signer: Pick<FolderKeys, "signingKey" | "sign">;
  }): Promise<RenameFilesResult> {
    const signature = input.signer.sign(utf8(renameDeclaration(input.renames)));
    return this.call({
      method: "POST",
      path: "/rename_files",
      json: {
        ss58_address: input.ss58Address,
        folder_hash: input.folderHash,
        renames: input.renames.map((r) => ({
          old_path_hash: Array.from(r.oldPathHash),
          new_path_hash: Array.from(r.newPathHash),
          new_encrypted_path: Array.from(r.newEncryptedPath ?? []),
          new_file_name: r.newFileName ?? null,
          new_relative_path: r.newRelativePath ?? null,
          base_revision_id: Array.from(r.baseRevisionId),
        })),
        signature: Array.from(signature),
        signing_key: Array.from(input.signer.signingKey),
      },
    });
  }

  /** `GET /list_folder_entries/{ss58}/{folder_hash}` (docs/protocol.md#folder-entries; flat): every registered directory. */
  listFolderEntries(ss58: string, folderHash: string): Promise<ListFolderEntriesResult> {
    return this.callFlat({ method: "GET", path: `/list_folder_entries/${seg(ss58)}/${seg(folderHash)}` });
  }

  /**
   * Every registered directory of a folder with its sealed attributes, read in keyset pages of
   * `MAX_FOLDER_ENTRIES_PAGE` (`GET /list_folder_entries/...?limit=`, docs/protocol.md#folder-entry-attributes;
   * a server without the extension answers the pages without attributes).
   */
  async listFolderEntriesWithAttributes(
    ss58: string,
    folderHash: string,
  ): Promise<{ paths: string[]; attributes: Map<string, Uint8Array> }> {
    const paths: string[] = [];
    const attributes = new Map<string, Uint8Array>();
    for (let after: string | null = null; ; ) {
      const q: string = `limit=${MAX_FOLDER_ENTRIES_PAGE}${after === null ? "" : `&after=${encodeURIComponent(after)}`}`;
      const page: ListFolderEntriesResult = await this.callFlat({
        method: "GET",
        path: `/list_folder_entries/${seg(ss58)}/${seg(folderHash)}?${q}`,
      });
      paths.push(...page.relative_paths);
      for (const [p, bytes] of Object.entries(page.attributes ?? {}))
        attributes.set(p, Uint8Array.from(bytes));
      if (page.next_after == null) return { paths, attributes };
      after = page.next_after;
    }
  }

  /**
   * `POST /register_folder_entries` (docs/protocol.md#folder-entries): idempotent; at most 500 paths a call
   * (drive-relative, NFC, no leading or trailing `/`); an invalid path is 400 `invalid_manifest`.
   * `attributes` (sealed bytes by path, each path among `relativePaths`) needs the server's
   * `folder_entry_attributes` capability (docs/protocol.md#folder-entry-attributes).
   */
  registerFolderEntries(input: {
    ss58Address: string;
    folderHash: string;
    relativePaths: string[];
    attributes?: ReadonlyMap<string, Uint8Array>;
  }): Promise<RegisterFolderEntriesResult> {
    const attributes =
      input.attributes && input.attributes.size > 0
        ? Object.fromEntries([...input.attributes].map(([p, b]) => [p, Array.from(b)]))
        : undefined;
    return this.call({
      method: "POST",
      path: "/register_folder_entries",
      json: {
        ss58_address: input.ss58Address,
        folder_hash: input.folderHash,
        relative_paths: input.relativePaths,
        ...(attributes ? { attributes } : {}),
      },
    });
  }

  /** `DELETE /unregister_folder_entries` (docs/protocol.md#folder-entries): removes exactly the named entries (≤ 500). */
  unregisterFolderEntries(input: {
    ss58Address: string;
    folderHash: string;
    relativePaths: string[];
  }): Promise<UnregisterFolderEntriesResult> {
    return this.call({
      method: "DELETE",
      path: "/unregister_folder_entries",
      json: {
        ss58_address: input.ss58Address,
        folder_hash: input.folderHash,
        relative_paths: input.relativePaths,
      },
    });
  }

  /**
   * `POST /can_upload` (docs/protocol.md#quota; flat, advisory): would a write of `sizeBytes`
   * plaintext bytes be accepted now. `folderHash` `""` asks about the account itself.
   */
  canUpload(input: { ss58Address: string; folderHash: string; sizeBytes: number }): Promise<CanUploadResult> {
    return this.callFlat({
      method: "POST",
      path: "/can_upload",
      json: {
        ss58_address: input.ss58Address,
        folder_hash: input.folderHash,
        size_bytes: intParam("sizeBytes", input.sizeBytes),
      },
    });
  }

  /** `GET /get_user_summary/{ss58}` (docs/protocol.md#summaries): plaintext bytes and files stored. */
  userSummary(ss58: string, folderHash?: string): Promise<UserSummary> {
    return this.call({
      method: "GET",
      path: `/get_user_summary/${seg(ss58)}`,
      query: { folder_hash: folderHash },
    });
  }

  /** `GET /get_file_type_summary/{ss58}` (docs/protocol.md#summaries): files and bytes per category. */
  fileTypeSummary(ss58: string, folderHash?: string): Promise<FileTypeSummary> {
    return this.call({
      method: "GET",
      path: `/get_file_type_summary/${seg(ss58)}`,
      query: { folder_hash: folderHash },
    });
  }

  /** `GET /get_source_summary/{ss58}` (docs/protocol.md#summaries): files and bytes per client family. */
  sourceSummary(ss58: string, folderHash?: string): Promise<SourceSummary> {
    return this.call({
      method: "GET",
      path: `/get_source_summary/${seg(ss58)}`,
      query: { folder_hash: folderHash },
    });
  }

  /** Sends a v1 request and parses its flat JSON answer, or returns undefined for a 204. */
  private async callV1<T>(spec: RequestSpec): Promise<T> {
    const res = await this.send(spec);
    if (res.status === 204) return undefined as T;
    try {
      return (await res.json()) as T;
    } catch {
      throw new ApiError(res.status, "bad_response", `${spec.method} ${spec.path}: response is not JSON`, {
        server: this.baseUrl,
      });
    }
  }

  /**
   * `POST /v1/shares` (docs/sharing.md): mints a file share from a whole blob of at most
   * `SHARE_CHUNK_SIZE` bytes; `multipart/form-data` with the part `metadata` (JSON) first and
   * `ciphertext` (no filename) second.
   */
  createShare(
    metadata: FileShareMetadata,
    ciphertext: Blob | Uint8Array,
    signal?: AbortSignal,
  ): Promise<MintedShare> {
    const form = jsonAndCiphertext("metadata", metadata, ciphertext);
    return this.callV1({
      method: "POST",
      path: "/v1/shares",
      headers: { "Content-Type": form.contentType },
      body: form.body,
      signal,
      timeout: false,
    });
  }

  /** `POST /v1/shares/init`: opens a chunked file share (`metadata.total_chunks` set). */
  initShare(metadata: FileShareMetadata): Promise<MintedShare> {
    return this.callV1({ method: "POST", path: "/v1/shares/init", json: metadata });
  }

  /** `PUT /v1/shares/{token}/chunks/{index}`: bytes `[index × 8 MiB, …)` of the blob. */
  putShareChunk(
    token: string,
    index: number,
    chunk: Blob | Uint8Array,
    signal?: AbortSignal,
  ): Promise<{ chunk_index: number }> {
    return this.callV1({
      method: "PUT",
      path: `/v1/shares/${seg(token)}/chunks/${index}`,
      headers: { "Content-Type": "application/octet-stream" },
      body: chunk instanceof Blob ? chunk : bodyBytes(chunk),
      signal,
      timeout: false,
    });
  }

  /** `POST /v1/shares/{token}/complete` (empty body): the share becomes readable. */
  completeShare(token: string): Promise<MintedShare> {
    return this.callV1({
      method: "POST",
      path: `/v1/shares/${seg(token)}/complete`,
      headers: { "Content-Length": "0" },
      body: new Uint8Array(0),
      timeout: false,
    });
  }

  /** `GET /v1/shares`: the caller's active file shares. */
  listShares(): Promise<FileShareSummary[]> {
    return this.callV1({ method: "GET", path: "/v1/shares" });
  }

  /** `GET /v1/shares/{token}/accesses` (esync only): a file share's counters and access log. */
  shareAccesses(token: string): Promise<ShareAccessLog> {
    return this.callV1({ method: "GET", path: `/v1/shares/${seg(token)}/accesses` });
  }

  /** `PATCH /v1/shares/{token}`: a new expiry counted from now. */
  updateShareTtl(token: string, ttl: ShareTtl): Promise<MintedShare> {
    return this.callV1({ method: "PATCH", path: `/v1/shares/${seg(token)}`, json: { ttl } });
  }

  /** `DELETE /v1/shares/{token}`: revokes a file share (404 when unknown or already revoked). */
  async revokeShare(token: string): Promise<void> {
    await this.callV1({ method: "DELETE", path: `/v1/shares/${seg(token)}` });
  }

  /** `PUT /v1/shares/owner-wraps`: 1 to 64 `{token, wrap}` (base64); `applied` = rows updated. */
  putShareOwnerWraps(wraps: { token: string; wrap: string }[]): Promise<{ applied: number }> {
    return this.callV1({ method: "PUT", path: "/v1/shares/owner-wraps", json: { wraps } });
  }

  /** `GET /v1/shares/{token}/meta` (anonymous). */
  shareMeta(token: string): Promise<FileShareMeta> {
    return this.callV1({ method: "GET", path: `/v1/shares/${seg(token)}/meta`, auth: false });
  }

  /** `GET /v1/shares/{token}/blob` (anonymous): the response, its body the blob. */
  shareBlob(token: string, signal?: AbortSignal): Promise<Response> {
    return this.send({
      method: "GET",
      path: `/v1/shares/${seg(token)}/blob`,
      auth: false,
      signal,
      timeout: false,
    });
  }

  /** `POST /v1/folder-shares`: shares a directory of a folder (`pathPrefix` "" = all of it). */
  createFolderShare(input: {
    folderHash: string;
    pathPrefix: string;
    displayName: string;
    ttl?: ShareTtl;
  }): Promise<MintedShare> {
    return this.callV1({
      method: "POST",
      path: "/v1/folder-shares",
      json: {
        folder_hash: input.folderHash,
        path_prefix: input.pathPrefix,
        display_name: input.displayName,
        ttl: input.ttl,
      },
    });
  }

  /** `GET /v1/folder-shares`: the folder shares the caller controls, revoked and expired ones included. */
  listFolderShares(): Promise<FolderShareSummary[]> {
    return this.callV1({ method: "GET", path: "/v1/folder-shares" });
  }

  /** `DELETE /v1/folder-shares/{token}`, or `/by-hash/{token_hash}` when `byHash` (64 hex). */
  async revokeFolderShare(tokenOrHash: string, byHash = false): Promise<void> {
    await this.callV1({
      method: "DELETE",
      path: byHash
        ? `/v1/folder-shares/by-hash/${seg(tokenOrHash)}`
        : `/v1/folder-shares/${seg(tokenOrHash)}`,
    });
  }

  /** `PUT /v1/folder-shares/owner-wraps`: 1 to 64 `{token_hash, wrap}`. */
  putFolderShareOwnerWraps(wraps: { token_hash: string; wrap: string }[]): Promise<{ applied: number }> {
    return this.callV1({ method: "PUT", path: "/v1/folder-shares/owner-wraps", json: { wraps } });
  }

  /** `GET /v1/folder-shares/{token}/meta` (anonymous). */
  folderShareMeta(token: string): Promise<FolderShareMeta> {
    return this.callV1({ method: "GET", path: `/v1/folder-shares/${seg(token)}/meta`, auth: false });
  }

  /** `GET /v1/folder-shares/{token}/browse` (anonymous): one page of a directory under the share. */
  folderShareBrowse(
    token: string,
    options: { path?: string; offset?: number; limit?: number } = {},
  ): Promise<FolderSharePage> {
    return this.callV1({
      method: "GET",
      path: `/v1/folder-shares/${seg(token)}/browse`,
      auth: false,
      query: {
        path: options.path,
        offset: intParam("offset", options.offset),
        limit: intParam("limit", options.limit),
      },
    });
  }

  /** `GET /v1/folder-shares/{token}/blob?path=` (anonymous): the response, its body the file's blob. */
  folderShareBlob(token: string, path: string, signal?: AbortSignal): Promise<Response> {
    return this.send({
      method: "GET",
      path: `/v1/folder-shares/${seg(token)}/blob`,
      query: { path },
      auth: false,
      signal,
      timeout: false,
    });
  }

  /**
   * `GET /v1/capabilities` (docs/protocol.md#capabilities; anonymous, flat). A missing key reads as false, and
   * a 404 (an older server without the route) as every flag false.
   */
  async capabilities(): Promise<Capabilities> {
    const none: Capabilities = {
      shares: false,
      folder_shares: false,
      folder_share_revoke_by_hash: false,
      share_owner_wrap: false,
      folder_grants: false,
      folder_grant_writes: false,
      member_folder_shares: false,
      upload_folder_shares: false,
      versions: false,
      share_max_downloads: false,
      share_access_log: false,
      quota_report: false,
      folder_entry_attributes: false,
    };
    let got: Record<string, unknown>;
    try {
      got = await this.callFlat({ method: "GET", path: "/v1/capabilities", auth: false });
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) return none;
      throw e;
    }
    const out = { ...none };
    for (const k of Object.keys(none) as (keyof Capabilities)[]) out[k] = got[k] === true;
    return out;
  }
  /**
   * `GET /v1/quota/{ss58}` (docs/protocol.md#quota; capability `quota_report`): the account's
   * allowance and what uses it, in plaintext bytes.
   * @throws ApiError (403 `forbidden` for another account).
   */
  quotaReport(ss58: string): Promise<QuotaReport> {
    return this.callV1({ method: "GET", path: `/v1/quota/${seg(ss58)}` });
  }

  /**
   * `GET /v1/versions/{ss58}/{folder_hash}/{file_id}` (docs/versions.md; capability
   * `versions`): the file's current revision (null when deleted) and its kept versions, newest first.
   * @throws ApiError (403 `forbidden` without read access).
   */
  fileVersions(ss58: string, folderHash: string, fileIdHex: string): Promise<FileVersionsResult> {
    return this.callV1({
      method: "GET",
      path: `/v1/versions/${seg(ss58)}/${seg(folderHash)}/${seg(fileIdHex)}`,
    });
  }

  /**
   * `GET /v1/trash/{ss58}/{folder_hash}` (docs/versions.md): one page of the folder's deleted
   * files, newest first; pass the answer's `next` as `before` for the following page.
   */
  trash(ss58: string, folderHash: string, before?: number, limit?: number): Promise<TrashResult> {
    return this.callV1({
      method: "GET",
      path: `/v1/trash/${seg(ss58)}/${seg(folderHash)}`,
      query: { before, limit },
    });
  }

  /** Every deleted file of a folder's trash, page by page (`trash`), newest first. */
  async *iterateTrash(ss58: string, folderHash: string): AsyncGenerator<FileVersion> {
    for (let before: number | undefined; ; ) {
      const page = await this.trash(ss58, folderHash, before);
      yield* page.deleted;
      if (page.next === null) return;
      before = page.next;
    }
  }

  /**
   * `POST /v1/versions/{ss58}/{folder_hash}/{file_id}/restore` (docs/versions.md): makes kept
   * version `versionId` the file's new revision on the server (no bytes are sent).
   * `baseRevisionId` is the current revision, or null for a deleted file.
   * @throws ApiError 404 `not_found` (no such version of the file), 409 `conflict` (the current
   *   revision is not `baseRevisionId`), 402 `drive_quota_exceeded`, 403 `forbidden`.
   */
  restoreVersion(
    ss58: string,
    folderHash: string,
    fileIdHex: string,
    versionId: number,
    baseRevisionId: readonly number[] | null,
  ): Promise<RestoreVersionResult> {
    return this.callV1({
      method: "POST",
      path: `/v1/versions/${seg(ss58)}/${seg(folderHash)}/${seg(fileIdHex)}/restore`,
      json: { version_id: versionId, base_revision_id: baseRevisionId },
    });
  }

  /** A v1 call whose success has no body (204). */
  private async callNoContent(spec: RequestSpec): Promise<void> {
    const res = await this.send(spec);
    await res.body?.cancel();
  }

  /**
   * `POST /v1/drive-invites` (docs/drives.md): mints an invite on a drive the caller owns or
   * manages (`owner_ss58` for a manager). The token is returned only here.
   * @throws ApiError `bad_request` (400) over a cap, `not_found` (404).
   */
  mintInvite(body: MintInviteBody): Promise<InviteMinted> {
    return this.callFlat({ method: "POST", path: "/v1/drive-invites", json: body });
  }

  /** `PUT /v1/drives/{fh}/invites/{id}/sealed-token`: parks the sealed token (minter, once). */
  sealInviteToken(folderHash: string, inviteId: string, sealedToken: string, owner?: string): Promise<void> {
    return this.callNoContent({
      method: "PUT",
      path: `/v1/drives/${seg(folderHash)}/invites/${seg(inviteId)}/sealed-token`,
      query: { owner },
      json: { sealed_token: sealedToken },
    });
  }

  /** `GET /v1/drives/{fh}/invites`: the drive's invites, newest first (owner or manager). */
  listInvites(folderHash: string, owner?: string): Promise<DriveInvites> {
    return this.callFlat({ method: "GET", path: `/v1/drives/${seg(folderHash)}/invites`, query: { owner } });
  }

  /** `DELETE /v1/drives/{fh}/invites/{id}`: revokes an invite (owner or manager). */
  revokeInvite(folderHash: string, inviteId: string, owner?: string): Promise<void> {
    return this.callNoContent({
      method: "DELETE",
      path: `/v1/drives/${seg(folderHash)}/invites/${seg(inviteId)}`,
      query: { owner },
    });
  }

  /** `GET /v1/drive-invites/{token}/meta` (anonymous): the preview of an invite. */
  inviteMeta(token: string): Promise<InviteMeta> {
    return this.callFlat({ method: "GET", path: `/v1/drive-invites/${seg(token)}/meta`, auth: false });
  }

  /**
   * `POST /v1/drive-invites/{token}/accept`: joins with the sealed grant (standard base64).
   * @throws ApiError `gone` (410), `already_member` / `overlapping_folder_grant` (409).
   */
  acceptInvite(token: string, grantBlob: string): Promise<AcceptResult> {
    return this.callFlat({
      method: "POST",
      path: `/v1/drive-invites/${seg(token)}/accept`,
      json: { grant_blob: grantBlob },
    });
  }

  /** `GET /v1/drive-memberships`: the caller's drives and folder grants. */
  memberships(): Promise<Memberships> {
    return this.callFlat({ method: "GET", path: "/v1/drive-memberships" });
  }

  /** `GET /v1/drives/{fh}/members` (`owner` when the caller is a member). */
  driveMembers(folderHash: string, owner?: string): Promise<DriveMembers> {
    return this.callFlat({ method: "GET", path: `/v1/drives/${seg(folderHash)}/members`, query: { owner } });
  }

  /** `DELETE /v1/drives/{fh}/members/{ss58}`: removes a member, or leaves (member = the caller). */
  removeMember(folderHash: string, member: string, owner?: string): Promise<void> {
    return this.callNoContent({
      method: "DELETE",
      path: `/v1/drives/${seg(folderHash)}/members/${seg(member)}`,
      query: { owner },
    });
  }

  /** `PATCH /v1/drives/{fh}/members/{ss58}`: changes a member's role (owner or manager). */
  changeMemberRole(
    folderHash: string,
    member: string,
    role: "reader" | "writer" | "manager",
    owner?: string,
  ): Promise<DriveMember> {
    return this.callFlat({
      method: "PATCH",
      path: `/v1/drives/${seg(folderHash)}/members/${seg(member)}`,
      query: { owner },
      json: { role },
    });
  }

  /** `PUT /v1/account/invite-key`: publishes the account's X25519 invite key (base64 of 32 bytes). */
  async publishInviteKey(pubkey: string): Promise<void> {
    await this.callFlat({ method: "PUT", path: "/v1/account/invite-key", json: { pubkey } });
  }
}
