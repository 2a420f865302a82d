/**
 * A tiny in-memory stand-in for the service, on 127.0.0.1 port 0, for the client's unit tests:
 * envelopes, multipart `/upload`, sessions with exact chunk lengths and BLAKE3 check at
 * finalize, revisions with the Conflict envelope, get_state, delete, download with Range,
 * and search/browse that echo their query. Not the real server: the lead's end-to-end tests
 * run the client against that. Faults are injected with `failNext`.
 */
import { blake3Hex, bodyBytes, concatBytes, toHex } from "../src/index.ts";

interface StoredFile {
  manifest: Record<string, unknown>;
  blob: Uint8Array;
  revisionId: number[];
  revisionSeq: number;
  createdAt: number;
  updatedAt: number;
}

interface Session {
  owner: string;
  manifest: Record<string, unknown>;
  chunkCount: number;
  chunkSize: number;
  ciphertextSize: number;
  chunks: Map<number, Uint8Array>;
  state: "receiving" | "finalized";
}

/** One request as the fake saw it. */
export interface SeenRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Uint8Array;
}

const ok = (body: unknown) => Response.json({ Success: body });
const err = (status: number, code: string, message = code) =>
  Response.json({ Error: { error: code, message } }, { status });
const conflict = (current: StoredFile | undefined) =>
  Response.json(
    {
      Conflict: {
        error: "conflict",
        message: "base_revision_id does not match the current revision",
        current_revision_id: current ? current.revisionId : null,
        current_revision_seq: current ? current.revisionSeq : 0,
      },
    },
    { status: 409 },
  );

function indexOf(hay: Uint8Array, needle: Uint8Array, from = 0): number {
  outer: for (let i = from; i <= hay.byteLength - needle.byteLength; i++) {
    for (let j = 0; j < needle.byteLength; j++) if (hay[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

/** Parts of a multipart body: raw header text and bytes. */
export function parseMultipart(body: Uint8Array, boundary: string): { headers: string; data: Uint8Array }[] {
  const enc = new TextEncoder();
  const delim = enc.encode(`--${boundary}`);
  const parts: { headers: string; data: Uint8Array }[] = [];
  let at = indexOf(body, delim);
  while (at >= 0) {
    const start = at + delim.byteLength;
    if (body[start] === 0x2d && body[start + 1] === 0x2d) break; // closing --
    const headEnd = indexOf(body, enc.encode("\r\n\r\n"), start);
    const next = indexOf(body, enc.encode(`\r\n--${boundary}`), headEnd);
    parts.push({
      headers: new TextDecoder().decode(body.subarray(start + 2, headEnd)),
      data: body.slice(headEnd + 4, next),
    });
    at = next + 2;
  }
  return parts;
}

/** The fake service. */
export class FakeServer {
  readonly files = new Map<string, StoredFile>();
  readonly sessions = new Map<string, Session>();
  readonly seen: SeenRequest[] = [];
  /** Statuses to answer instead of handling, keyed by `METHOD kind` (e.g. `PUT chunk`), consumed in order. */
  readonly failNext = new Map<string, number[]>();
  /** Tokens that get 401. */
  readonly rejectTokens = new Set<string>();
  inFlightChunks = 0;
  maxInFlightChunks = 0;
  /** Delay of each chunk PUT, ms (to observe parallelism). */
  chunkDelayMs = 0;
  private nextId = 1;
  private server: ReturnType<typeof Bun.serve> | null = null;

  get url(): string {
    if (!this.server) throw new Error("not started");
    return `http://127.0.0.1:${this.server.port}`;
  }

  start(): this {
    this.server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => this.handle(req) });
    return this;
  }

  async stop(): Promise<void> {
    await this.server?.stop(true);
  }

  /** Requests whose `METHOD path` matches `re`. */
  requests(re: RegExp): SeenRequest[] {
    return this.seen.filter((r) => re.test(`${r.method} ${r.path}`));
  }

  private fault(kind: string): Response | null {
    const q = this.failNext.get(kind);
    const status = q?.shift();
    if (status === undefined) return null;
    return err(status, status === 429 ? "session_limit" : "database_error", "injected");
  }

  private commit(manifest: Record<string, unknown>, blob: Uint8Array): Response {
    if (blake3Hex(blob) !== manifest.ciphertext_hash) return err(400, "invalid_manifest", "hash mismatch");
    const key = `${manifest.folder_hash}/${toHex(manifest.path_hash as number[])}`;
    const current = this.files.get(key);
    const base = manifest.base_revision_id as number[] | null;
    if (base === null && current) return conflict(current);
    if (base !== null && (!current || toHex(base) !== toHex(current.revisionId))) return conflict(current);
    if (current && (manifest.revision_seq as number) <= current.revisionSeq)
      return err(400, "stale_sequence");
    const now = Math.floor(Date.now() / 1000);
    const file: StoredFile = {
      manifest,
      blob,
      revisionId: Array.from(crypto.getRandomValues(new Uint8Array(32))),
      revisionSeq: manifest.revision_seq as number,
      createdAt: current?.createdAt ?? now,
      updatedAt: now,
    };
    this.files.set(key, file);
    return ok({
      upload_id: `u${this.nextId++}`,
      timestamp: now,
      revision_id: file.revisionId,
      created_at: file.createdAt,
      updated_at: file.updatedAt,
    });
  }

  private async handle(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const body = new Uint8Array(await req.arrayBuffer());
    const headers: Record<string, string> = {};
    req.headers.forEach((v, k) => {
      headers[k] = v;
    });
    this.seen.push({ method: req.method, path: url.pathname + url.search, headers, body });
    const p = url.pathname.split("/").filter(Boolean).map(decodeURIComponent);
    if (p[0] === "health")
      return Response.json({ status: "healthy", version: "fake", capabilities: ["sessions"] });
    const auth = req.headers.get("authorization") ?? "";
    if (!auth.startsWith("Bearer ") || this.rejectTokens.has(auth.slice(7))) return err(401, "unauthorized");
    const json = () => JSON.parse(new TextDecoder().decode(body));

    if (req.method === "POST" && p[0] === "upload" && p.length === 1) {
      const f = this.fault("POST upload");
      if (f) return f;
      const boundary = /boundary=(.+)$/.exec(req.headers.get("content-type") ?? "")?.[1] ?? "";
      const parts = parseMultipart(body, boundary);
      const [m, c] = parts;
      if (!m || !c || !/name="manifest"/.test(m.headers) || !/name="ciphertext"/.test(c.headers)) {
        return err(400, "invalid_manifest", "parts");
      }
      return this.commit(JSON.parse(new TextDecoder().decode(m.data)), c.data);
    }
    if (p[0] === "upload" && p[1] === "session") {
      if (req.method === "POST" && p.length === 2) {
        const f = this.fault("POST session");
        if (f) return f;
        const b = json();
        const s: Session = {
          owner: b.manifest.ss58_address,
          manifest: b.manifest,
          chunkCount: b.chunk_count,
          chunkSize: b.chunk_size,
          ciphertextSize: b.ciphertext_size,
          chunks: new Map(),
          state: "receiving",
        };
        if (s.chunkCount !== Math.ceil(s.ciphertextSize / s.chunkSize))
          return err(400, "invalid_manifest", "layout");
        const id = `s${this.nextId++}`;
        this.sessions.set(id, s);
        return ok({ session_id: id, expires_at: Math.floor(Date.now() / 1000) + 86400 });
      }
      const id = p[2] as string;
      const s = this.sessions.get(id);
      if (req.method === "PUT" && p[3] === "chunk") {
        const f = this.fault("PUT chunk");
        if (f) return f;
        if (!s) return err(404, "not_found");
        if (s.state === "finalized") return err(409, "conflict");
        const index = Number(p[4]);
        const expect = Math.min(s.chunkSize, s.ciphertextSize - index * s.chunkSize);
        if (index >= s.chunkCount || body.byteLength !== expect)
          return err(400, "invalid_manifest", `want ${expect}`);
        this.inFlightChunks++;
        this.maxInFlightChunks = Math.max(this.maxInFlightChunks, this.inFlightChunks);
        if (this.chunkDelayMs) await Bun.sleep(this.chunkDelayMs);
        this.inFlightChunks--;
        s.chunks.set(index, body);
        return ok({ chunk_index: index });
      }
      if (!s) return err(404, "not_found");
      if (req.method === "GET" && p[3] === "status") {
        return ok({
          session_id: id,
          state: s.state,
          total_chunks: s.chunkCount,
          chunks_received: [...s.chunks.keys()].sort((a, b) => a - b),
          expires_at: Math.floor(Date.now() / 1000) + 86400,
          ciphertext_hash: s.manifest.ciphertext_hash,
        });
      }
      if (req.method === "POST" && p[3] === "finalize") {
        const f = this.fault("POST finalize");
        if (f) return f;
        if (s.state === "finalized") return err(409, "conflict", "already finalized");
        if (s.chunks.size !== s.chunkCount) return err(400, "invalid_manifest", "missing chunks");
        const blob = concatBytes(
          ...[...Array(s.chunkCount).keys()].map((i) => s.chunks.get(i) as Uint8Array),
        );
        const res = this.commit(s.manifest, blob);
        if (res.ok) s.state = "finalized";
        return res;
      }
      if (req.method === "DELETE") {
        this.sessions.delete(id);
        return ok({ deleted: true });
      }
    }
    if (req.method === "GET" && p[0] === "get_state") {
      const all = [...this.files.entries()]
        .filter(([k]) => k.startsWith(`${p[2]}/`))
        .map(([, f]) => this.entry(f));
      const offset = Number(url.searchParams.get("offset") ?? 0);
      const limit = Number(url.searchParams.get("limit") ?? 1000);
      const files = all.slice(offset, offset + limit);
      return ok({
        ss58_address: p[1],
        folder_hash: p[2],
        files,
        total_count: all.length,
        has_more: offset + files.length < all.length,
        offset,
        limit,
      });
    }
    if (req.method === "DELETE" && p[0] === "delete") {
      const key = `${p[2]}/${p[3]}`;
      if (!this.files.delete(key)) return err(404, "not_found");
      return ok({ status: "deleted", file_id: p[3], ss58_address: p[1], folder_hash: p[2] });
    }
    if (req.method === "GET" && p[0] === "download") {
      const f = this.files.get(`${p[2]}/${p[3]}`);
      if (!f) return err(404, "not_found");
      const h = {
        "Accept-Ranges": "bytes",
        "X-Size-Bytes": String(f.manifest.size_bytes),
        "X-Revision-Id": toHex(f.revisionId),
        "X-Revision-Seq": String(f.revisionSeq),
      };
      const range = /^bytes=(\d*)-(\d*)$/.exec(req.headers.get("range") ?? "");
      if (!range) return new Response(bodyBytes(f.blob), { headers: h });
      const n = f.blob.byteLength;
      const [start, end] = range[1]
        ? [Number(range[1]), range[2] ? Math.min(Number(range[2]), n - 1) : n - 1]
        : [n - Number(range[2]), n - 1];
      return new Response(f.blob.slice(start, end + 1), {
        status: 206,
        headers: { ...h, "Content-Range": `bytes ${start}-${end}/${n}` },
      });
    }
    if (req.method === "GET" && (p[0] === "search_files" || p[0] === "browse")) {
      return ok({
        ss58_address: p[1],
        files: [],
        total_count: 0,
        has_more: false,
        offset: 0,
        limit: 25,
        echo: Object.fromEntries(url.searchParams),
      });
    }
    if (req.method === "POST" && p[0] === "register_folder") {
      const b = json();
      return b.folder_hash === "0000000000000000"
        ? err(409, "conflict", "exists")
        : ok({ status: "registered" });
    }
    if (req.method === "GET" && p[0] === "list_folders") return ok({ base_address: p[1], folders: [] });
    if (req.method === "DELETE" && p[0] === "unregister_folder")
      return ok({ status: "unregistered", files_deleted: 0 });
    return new Response("no route", { status: 404 });
  }

  private entry(f: StoredFile) {
    const m = f.manifest;
    return {
      path_hash: m.path_hash,
      salted_hash: m.salted_hash,
      size_bytes: m.size_bytes,
      revision_seq: f.revisionSeq,
      revision_id: f.revisionId,
      encrypted_path: m.encrypted_path,
      file_name: m.file_name,
      relative_path: m.relative_path,
      store_hash: null,
      chunk_hashes: null,
      created_at: f.createdAt,
      updated_at: f.updatedAt,
    };
  }
}
