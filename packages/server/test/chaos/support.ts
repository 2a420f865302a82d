/**
 * Shared pieces of the chaos suite (`test/chaos/`): a seeded random source, a small HTTP client
 * of the real server (sessions with parallel chunks, single-shot uploads, downloads hashed while
 * they stream), the figures each chaos test prints (`chaos: <name> <value>`) and writes to
 * `bench/results/chaos.json`, read-only invariant checks of a data directory (orphan objects on
 * the disk store, `PRAGMA integrity_check`, sessions in internal states) and `bun run fsck --json`.
 *
 * Every chaos test talks to the server process of `test/support/server.ts` on 127.0.0.1 only.
 */
import { Database } from "bun:sqlite";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { blake3Hex, createBlake3 } from "@esync/protocol/blake3.ts";
import { makeManifest, type TestUser } from "../support/fixtures.ts";
import { REPO_ROOT, SERVER_ROOT } from "../support/server.ts";

/** `folder_hash("default")` (docs/protocol.md#ciphertext test vector). */
export const FOLDER = "37a8eec1ce19687d";

/** A parsed JSON body, asserted field by field. */
// biome-ignore lint/suspicious/noExplicitAny: response bodies of a server under attack are checked by hand
export type Json = any;

/**
 * The run's seed: `CHAOS_SEED` when set (to replay a run), else a fresh one. Printed by each
 * test so a failure can be replayed.
 */
export function chaosSeed(): number {
  const env = process.env.CHAOS_SEED;
  return env ? Number(env) >>> 0 : (Math.random() * 2 ** 32) >>> 0;
}

/** A seeded pseudo-random source (mulberry32). */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  /** Uniform in [0, 1). */
  next(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** Integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  /** One element of a non-empty array. */
  pick<T>(a: readonly T[]): T {
    return a[Math.floor(this.next() * a.length)]!;
  }
  /** `n` pseudo-random bytes (ciphertext stand-in: incompressible enough). */
  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    const v = new DataView(out.buffer);
    let i = 0;
    for (; i + 4 <= n; i += 4) v.setUint32(i, (this.next() * 4294967296) >>> 0);
    for (; i < n; i++) out[i] = (this.next() * 256) | 0;
    return out;
  }
  /** Fisher–Yates shuffle of `0..n-1`. */
  order(n: number): number[] {
    const a = [...Array(n).keys()];
    for (let i = n - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [a[i], a[j]] = [a[j]!, a[i]!];
    }
    return a;
  }
}

const RESULTS = join(SERVER_ROOT, "bench", "results", "chaos.json");

/**
 * Prints `chaos: <name> <value>` and merges `{name: value}` into `bench/results/chaos.json`
 * (with the time of the run), the figures of the closing note.
 */
export function reportFigure(name: string, value: number | string | boolean | null): void {
  console.log(`chaos: ${name} ${value}`);
  let doc: Record<string, unknown> = {};
  try {
    doc = JSON.parse(readFileSync(RESULTS, "utf8")) as Record<string, unknown>;
  } catch {
    // first figure of the run
  }
  doc[name] = value;
  doc.updated_at = new Date().toISOString();
  mkdirSync(join(SERVER_ROOT, "bench", "results"), { recursive: true });
  writeFileSync(RESULTS, `${JSON.stringify(doc, null, 2)}\n`);
}

/** A JSON answer. */
export interface Answer {
  status: number;
  body: Json;
  headers: Headers;
}

/** What the server returned for a committed upload (docs/protocol.md#upload-result UploadResult). */
export interface Uploaded {
  revisionId: number[];
  revisionSeq: number;
}

/** Options of one upload. */
export interface UploadSpec {
  folder: string;
  path: string;
  ciphertext: Uint8Array;
  revisionSeq?: number;
  baseRevisionId?: number[] | null;
}

/** HTTP client of one user against one server URL (which may change across restarts). */
export class ChaosClient {
  constructor(
    public url: string,
    readonly user: TestUser,
    /** Per-request time limit, ms. */
    readonly timeoutMs = 30_000,
    /**
     * Reuse connections between requests (fetch's pool). Off, every request opens its own
     * connection: a pooled connection that sat idle for the server's idle timeout can be closed by
     * the server at the instant the client reuses it (the keep-alive race every HTTP client has),
     * which says nothing about the server under test.
     */
    readonly keepAlive = true,
  ) {}

  /** A JSON request; `body` is sent as JSON when given. */
  async json(method: string, path: string, body?: unknown): Promise<Answer> {
    const headers: Record<string, string> = { authorization: this.user.auth };
    if (body !== undefined) headers["content-type"] = "application/json";
    else if (method === "POST") headers["content-length"] = "0";
    const r = await fetch(`${this.url}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(this.timeoutMs),
      keepalive: this.keepAlive,
    });
    const text = await r.text();
    let parsed: Json = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
    return { status: r.status, body: parsed, headers: r.headers };
  }

  /** The signed manifest of `u`. */
  manifest(u: UploadSpec): Record<string, unknown> {
    return makeManifest({
      owner: this.user.address,
      ciphertext: u.ciphertext,
      folderHash: u.folder,
      path: u.path,
      revisionSeq: u.revisionSeq ?? 1,
      baseRevisionId: u.baseRevisionId ?? null,
    });
  }

  /** `POST /upload/session`; returns the session id. @throws on any status but 200. */
  async openSession(u: UploadSpec, chunkSize: number): Promise<string> {
    const r = await this.json("POST", "/upload/session", {
      manifest: this.manifest(u),
      chunk_count: Math.ceil(u.ciphertext.length / chunkSize),
      chunk_size: chunkSize,
      ciphertext_size: u.ciphertext.length,
    });
    if (r.status !== 200) throw new Error(`session create: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.Success.session_id as string;
  }

  /** `PUT` chunk `i` of `ct`; returns the status. */
  async putChunk(sid: string, ct: Uint8Array, chunkSize: number, i: number): Promise<Answer> {
    const r = await fetch(`${this.url}/upload/session/${sid}/chunk/${i}`, {
      method: "PUT",
      headers: { authorization: this.user.auth, "content-type": "application/octet-stream" },
      body: ct.subarray(i * chunkSize, Math.min(ct.length, (i + 1) * chunkSize)) as Uint8Array<ArrayBuffer>,
      signal: AbortSignal.timeout(this.timeoutMs),
      keepalive: this.keepAlive,
    });
    const text = await r.text();
    let body: Json = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: r.status, body, headers: r.headers };
  }

  /**
   * PUTs chunks `indices` of `ct` with `parallel` requests in flight.
   * @throws on the first chunk not answered 200.
   */
  async putChunks(sid: string, ct: Uint8Array, chunkSize: number, indices: number[], parallel: number) {
    const queue = [...indices];
    const worker = async () => {
      for (let i = queue.shift(); i !== undefined; i = queue.shift()) {
        const r = await this.putChunk(sid, ct, chunkSize, i);
        if (r.status !== 200) throw new Error(`chunk ${i}: ${r.status} ${JSON.stringify(r.body)}`);
      }
    };
    await Promise.all([...Array(parallel)].map(worker));
  }

  /** `POST finalize`; @throws on any status but 200. */
  async finalize(sid: string): Promise<Uploaded> {
    const r = await this.json("POST", `/upload/session/${sid}/finalize`);
    if (r.status !== 200) throw new Error(`finalize: ${r.status} ${JSON.stringify(r.body)}`);
    return { revisionId: r.body.Success.revision_id, revisionSeq: 0 };
  }

  /** Single-shot `POST /upload` (multipart: `manifest`, then `ciphertext`); any status. */
  async uploadSingleRaw(u: UploadSpec): Promise<Answer> {
    const form = new FormData();
    form.append("manifest", new Blob([JSON.stringify(this.manifest(u))], { type: "application/json" }));
    form.append(
      "ciphertext",
      new Blob([u.ciphertext as Uint8Array<ArrayBuffer>], { type: "application/octet-stream" }),
    );
    const r = await fetch(`${this.url}/upload`, {
      method: "POST",
      headers: { authorization: this.user.auth },
      body: form,
      signal: AbortSignal.timeout(this.timeoutMs),
      keepalive: this.keepAlive,
    });
    const body = (await r.json().catch(() => null)) as Json;
    return { status: r.status, body, headers: r.headers };
  }

  /** Single-shot `POST /upload`. @throws unless 200. */
  async uploadSingle(u: UploadSpec): Promise<Uploaded> {
    const r = await this.uploadSingleRaw(u);
    if (r.status !== 200) throw new Error(`upload: ${r.status} ${JSON.stringify(r.body)}`);
    return { revisionId: r.body.Success.revision_id, revisionSeq: u.revisionSeq ?? 1 };
  }

  /** Downloads a file whole: status, and BLAKE3 hex and length of the body when 200. */
  async download(folder: string, fileId: string): Promise<{ status: number; hash: string; length: number }> {
    const r = await fetch(`${this.url}/download/${this.user.address}/${folder}/${fileId}`, {
      headers: { authorization: this.user.auth },
      signal: AbortSignal.timeout(this.timeoutMs),
      keepalive: this.keepAlive,
    });
    if (r.status !== 200) {
      await r.arrayBuffer();
      return { status: r.status, hash: "", length: 0 };
    }
    const h = createBlake3();
    let length = 0;
    for await (const piece of r.body!) {
      h.update(piece);
      length += piece.byteLength;
    }
    return { status: 200, hash: h.digestHex(), length };
  }

  /** Every file of a folder from `/get_state` (all pages); `null` when the folder answers 404. */
  async listFolder(folder: string): Promise<Json[] | null> {
    const out: Json[] = [];
    for (let offset = 0; ; ) {
      const r = await this.json(
        "GET",
        `/get_state/${this.user.address}/${folder}?offset=${offset}&limit=1000`,
      );
      if (r.status === 404) return null;
      if (r.status !== 200) throw new Error(`get_state: ${r.status} ${JSON.stringify(r.body)}`);
      out.push(...r.body.Success.files);
      if (!r.body.Success.has_more) return out;
      offset += r.body.Success.files.length;
    }
  }
}

/** 64-hex `file_id` of a relative path (its `path_hash`). */
export function fileIdOfPath(path: string): string {
  return blake3Hex(new TextEncoder().encode(path.normalize("NFC")));
}

/** Every file under `root`, recursively (dotfiles included), as paths relative to `root`. */
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

/** Result of `inspectDataDir`. */
export interface DataDirReport {
  /** `PRAGMA integrity_check` answer (`"ok"` when sound). */
  integrity: string;
  /** Sessions in the internal `finalizing` state. */
  stuckSessions: number;
  /** Blob objects on disk that no file row, live session or deletion-queue entry accounts for. */
  orphans: string[];
  /** Bytes of those orphans. */
  orphanBytes: number;
  /** Deletion-queue rows due now or earlier (not yet processed by a sweep). */
  dueDeletions: number;
  /** Every object on disk. */
  objects: number;
}

/**
 * Independent, read-only check of a disk-store data directory (`<dataDir>/esync.sqlite` and
 * `<dataDir>/blobs`), without the server's code: every object `b/<xx>/<blob>/<i>.<gen>` or
 * `b/<xx>/o<blob>` (and every staging file) must be a chunk of a file row or of a kept version (exact key), belong to the blob of a session
 * still `receiving`/`finalizing` (any key under its prefix: the session's abort or expiry
 * deletes the prefix), or be covered by a deletion-queue entry (key or prefix). Anything else is
 * an orphan: bytes on disk that no sweep will ever reclaim.
 */
export function inspectDataDir(dataDir: string): DataDirReport {
  const db = new Database(join(dataDir, "esync.sqlite"), { readonly: true });
  try {
    db.exec("PRAGMA busy_timeout = 5000");
    const integrity = (db.query("PRAGMA integrity_check").get() as { integrity_check: string })
      .integrity_check;
    const stuckSessions = (
      db.query("SELECT count(*) AS n FROM upload_sessions WHERE state = 'finalizing'").get() as { n: number }
    ).n;
    const fileKeys = new Set<string>();
    // Live files and kept versions of replaced and deleted files (docs/versions.md) hold blobs.
    const hasVersions = db
      .query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'file_versions'")
      .get();
    const held = hasVersions
      ? "SELECT blob_id, chunk_gens FROM files UNION ALL SELECT blob_id, chunk_gens FROM file_versions"
      : "SELECT blob_id, chunk_gens FROM files";
    for (const row of db.query(held).all() as {
      blob_id: string;
      chunk_gens: string;
    }[]) {
      // A one-object blob (`o` + hex, single-shot /upload) is the one object `b/<id[1..3]>/<id>`.
      if (row.blob_id.startsWith("o")) fileKeys.add(`b/${row.blob_id.slice(1, 3)}/${row.blob_id}`);
      else
        (JSON.parse(row.chunk_gens) as string[]).forEach((gen, i) => {
          fileKeys.add(`b/${row.blob_id.slice(0, 2)}/${row.blob_id}/${i}.${gen}`);
        });
    }
    const livePrefixes = new Set<string>();
    for (const row of db
      .query("SELECT blob_id FROM upload_sessions WHERE state IN ('receiving', 'finalizing')")
      .all() as { blob_id: string }[])
      livePrefixes.add(`b/${row.blob_id.slice(0, 2)}/${row.blob_id}/`);
    const queued = (
      db.query("SELECT target, not_before FROM blob_deletions").all() as {
        target: string;
        not_before: number;
      }[]
    ).map((r) => r.target);
    const now = Math.floor(Date.now() / 1000);
    const dueDeletions = (
      db.query("SELECT count(*) AS n FROM blob_deletions WHERE not_before <= ?").get(now) as { n: number }
    ).n;
    const blobDir = join(dataDir, "blobs");
    const objects = filesUnder(blobDir);
    const orphans: string[] = [];
    let orphanBytes = 0;
    for (const key of objects) {
      const m = /^b\/[^/]+\/[^/]+\//.exec(key);
      const prefix = m?.[0] ?? "";
      const accounted =
        fileKeys.has(key) ||
        (prefix !== "" && livePrefixes.has(prefix)) ||
        queued.some((t) => (t.endsWith("/") ? key.startsWith(t) : key === t));
      if (!accounted) {
        orphans.push(key);
        try {
          orphanBytes += statSync(join(blobDir, key)).size;
        } catch {
          // removed meanwhile
        }
      }
    }
    return { integrity, stuckSessions, orphans, orphanBytes, dueDeletions, objects: objects.length };
  } finally {
    db.close();
  }
}

/** What `runFsck` found. */
export interface FsckResult {
  /** False when the project has no `fsck` script yet (then `doc` is null). */
  available: boolean;
  exitCode: number;
  /** The `--json` document: `{ok, problems: [{kind, detail}], repaired}`. */
  doc: { ok: boolean; problems: { kind: string; detail: string }[]; repaired: number } | null;
  output: string;
}

/**
 * Runs `bun run fsck --json` (dry run) with the server's `ESYNC_*` environment `env`.
 * Exit codes of the contract: 0 no problem, 1 problems remain, 2 could not run.
 */
export async function runFsck(env: Record<string, string>): Promise<FsckResult> {
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
    scripts?: Record<string, string>;
  };
  if (!pkg.scripts?.fsck) return { available: false, exitCode: -1, doc: null, output: "" };
  const base: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (!k.startsWith("ESYNC_") && v !== undefined) base[k] = v;
  const p = Bun.spawn([process.execPath, "run", "fsck", "--json"], {
    cwd: REPO_ROOT,
    env: { ...base, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, exitCode] = await Promise.all([
    new Response(p.stdout).text(),
    new Response(p.stderr).text(),
    p.exited,
  ]);
  let doc: FsckResult["doc"] = null;
  try {
    doc = JSON.parse(out.trim().split("\n").filter(Boolean).pop() ?? "");
  } catch {
    try {
      doc = JSON.parse(out);
    } catch {
      doc = null;
    }
  }
  return { available: true, exitCode, doc, output: `${out}\n${err}` };
}

/** Number of open descriptors of process `pid` (`/proc/<pid>/fd`). */
export function fdCount(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** VmRSS and VmHWM of process `pid`, bytes. */
export function memoryOf(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (name: string) =>
    Number(new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, "m").exec(status)?.[1] ?? 0) * 1024;
  return { rss: kb("VmRSS"), hwm: kb("VmHWM") };
}

/** 99th percentile (nearest rank) of `xs`, or 0 for none. */
export function p99(xs: number[]): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(0.99 * s.length) - 1)]!;
}

/** `blake3Hex`, re-exported for the tests. */
export { blake3Hex };
