/**
 * @module ops/fsck
 * Consistency check of the metadata database against the blob store (`bun run fsck`), dry run by
 * default, repairing what can be repaired with `repair: true`. Problems found, by `kind`:
 *
 * - `orphan_object`: an object that nothing accounts for. An object is accounted for when a file
 *   row references it (its blob and chunk generation), an upload session (any state, expired or
 *   not yet swept) covers its blob prefix, or a queued deletion or write intent in
 *   `blob_deletions` names it or a prefix of it (objects waiting out the grace period are not
 *   orphans). Repair: the object is deleted.
 * - `missing_object`: a file row's chunk object does not exist. Not repairable (the bytes are
 *   gone); the file's download fails until it is uploaded again.
 * - `wrong_size`: a file row's chunk object exists with a size other than the row's chunk layout
 *   gives. Not repairable.
 * - `counter_mismatch`: a folder's `file_count`/`total_bytes` differ from its files, or are
 *   negative or not integers (also a folder row missing for files). Repair: recomputed.
 * - `stuck_session`: a session in the internal `finalizing` state whose finalize lease
 *   (`finalizing_until`) ran out, or that has none (left by a version without leases). A live
 *   finalize renews its lease, and every node's sweeper returns sessions whose lease ran out, so
 *   this is found only between sweeps or when no server runs. Repair: returned to `receiving` for
 *   one more session lifetime, chunks intact.
 *
 * The store is listed before the database is read (in one read transaction), so that an object
 * a running server writes meanwhile is already covered by its write intent when the rows are read.
 */
import { existsSync } from "node:fs";
import type { Config } from "../config/config.ts";
import { type Db, openDb } from "../db/client.ts";
import type { BlobStore } from "../storage/blob-store.ts";
import { createBlobStore } from "../storage/index.ts";
import { blobPrefix, chunkKey, chunkLength } from "../storage/layout.ts";
import { type Clock, systemClock } from "../util/clock.ts";

/** The kinds of problem fsck reports. */
export type FsckKind =
  | "orphan_object"
  | "missing_object"
  | "wrong_size"
  | "counter_mismatch"
  | "stuck_session";

/** One problem found. `detail` is a sentence for a person; the other fields are for machines. */
export interface FsckProblem {
  kind: FsckKind;
  detail: string;
  /** Object key (object problems). */
  key?: string;
  /** Owner and folder of the row concerned (row problems). */
  owner?: string;
  folder_hash?: string;
  /** Session id (`stuck_session`). */
  session_id?: string;
  /** True when `--repair` fixed it. */
  repaired: boolean;
}

/** The result of a run; the shape `bun run fsck --json` prints. */
export interface FsckReport {
  /** True when no problem remains (none found, or every one repaired). */
  ok: boolean;
  problems: FsckProblem[];
  /** How many problems were repaired. */
  repaired: number;
}

/** What fsck works on. */
export interface FsckDeps {
  db: Db;
  blobs: BlobStore;
  clock: Clock;
}

/** Options of `runFsck`. */
export interface FsckOptions {
  /** Repair what can be repaired (default: dry run). */
  repair?: boolean;
  /** Session lifetime given to a repaired stuck session, seconds (default 86400). */
  sessionTtlSeconds?: number;
}

interface FileLayoutRow {
  owner: string;
  folder_hash: string;
  path_hash: Uint8Array;
  blob_id: string;
  chunk_size: number;
  chunk_count: number;
  ciphertext_size: number;
  chunk_gens: string;
}

interface CounterRow {
  owner: string;
  folder_hash: string;
  file_count: unknown;
  total_bytes: unknown;
  count_type: string;
  bytes_type: string;
  n: number;
  bytes: number;
  has_folder: number;
}

interface StuckRow {
  session_id: string;
  owner: string;
  folder_hash: string;
  finalizing_until: number | null;
}

/** Sizes of `keys`, 32 requests at a time. */
async function sizes(blobs: BlobStore, keys: string[]): Promise<(number | null)[]> {
  const out: (number | null)[] = new Array(keys.length);
  for (let i = 0; i < keys.length; i += 32) {
    const batch = await Promise.all(keys.slice(i, i + 32).map((k) => blobs.size(k)));
    for (let j = 0; j < batch.length; j++) out[i + j] = batch[j] ?? null;
  }
  return out;
}

/** Every prefix (ending in `/`) of `key`, shortest first: `a/`, `a/b/`, … */
function prefixesOf(key: string): string[] {
  const out: string[] = [];
  for (let i = key.indexOf("/"); i >= 0; i = key.indexOf("/", i + 1)) out.push(key.slice(0, i + 1));
  return out;
}

/**
 * Checks (and with `repair`, repairs) the database against the blob store. Safe to run beside a
 * running server: it reads one consistent snapshot of the rows and repairs with conditional
 * statements.
 * @throws when the database or the store cannot be read (the CLI's exit status 2).
 */
export async function runFsck(deps: FsckDeps, opts: FsckOptions = {}): Promise<FsckReport> {
  const { db, blobs, clock } = deps;
  const repair = opts.repair ?? false;
  const ttl = opts.sessionTtlSeconds ?? 86400;
  const sqlite = db.$client;
  const problems: FsckProblem[] = [];

  // 1. List the store first (see the module comment), then read the rows in one snapshot.
  const listed = await blobs.list("");
  const snapshot = sqlite.transaction(() => ({
    files: sqlite
      .query<FileLayoutRow, []>(
        "SELECT owner, folder_hash, path_hash, blob_id, chunk_size, chunk_count, ciphertext_size, chunk_gens FROM files",
      )
      .all(),
    sessionBlobs: sqlite.query<{ blob_id: string }, []>("SELECT blob_id FROM upload_sessions").all(),
    targets: sqlite.query<{ target: string }, []>("SELECT target FROM blob_deletions").all(),
  }))();

  const referenced = new Set<string>();
  const fileChunks: { key: string; expected: number; row: FileLayoutRow }[] = [];
  for (const row of snapshot.files) {
    let gens: string[] = [];
    try {
      gens = JSON.parse(row.chunk_gens) as string[];
    } catch {
      gens = [];
    }
    for (let i = 0; i < row.chunk_count; i++) {
      const key = chunkKey(row.blob_id, i, gens[i] ?? "");
      referenced.add(key);
      fileChunks.push({ key, expected: chunkLength(row.ciphertext_size, row.chunk_size, i), row });
    }
  }
  const covered = new Set<string>(snapshot.sessionBlobs.map((s) => blobPrefix(s.blob_id)));
  for (const { target } of snapshot.targets) covered.add(target);

  // 2. Orphan objects (a candidate deleted since the listing, e.g. by the sweeper, is skipped).
  const candidates = listed.filter(
    (key) => !referenced.has(key) && !covered.has(key) && !prefixesOf(key).some((p) => covered.has(p)),
  );
  const candidateSizes = await sizes(blobs, candidates);
  for (const [i, key] of candidates.entries()) {
    if (candidateSizes[i] === null) continue;
    const problem: FsckProblem = {
      kind: "orphan_object",
      detail: `object ${key} is referenced by no file, session, write intent or queued deletion`,
      key,
      repaired: false,
    };
    if (repair) {
      await blobs.delete([key]);
      problem.repaired = true;
    }
    problems.push(problem);
  }

  // 3. Missing objects and wrong sizes (an object committed after the listing is sized directly).
  const present = new Set(listed);
  const toSize = fileChunks.filter((c) => present.has(c.key));
  const actual = await sizes(
    blobs,
    toSize.map((c) => c.key),
  );
  const sizeOf = new Map(toSize.map((c, i) => [c.key, actual[i] ?? null]));
  for (const c of fileChunks) {
    const file = `file ${Buffer.from(c.row.path_hash).toString("hex")} of folder ${c.row.folder_hash} (${c.row.owner})`;
    const size = present.has(c.key) ? (sizeOf.get(c.key) ?? null) : await blobs.size(c.key);
    if (size === null) {
      problems.push({
        kind: "missing_object",
        detail: `object ${c.key} of ${file} does not exist`,
        key: c.key,
        owner: c.row.owner,
        folder_hash: c.row.folder_hash,
        repaired: false,
      });
    } else if (size !== c.expected) {
      problems.push({
        kind: "wrong_size",
        detail: `object ${c.key} of ${file} has ${size} bytes; its chunk layout says ${c.expected}`,
        key: c.key,
        owner: c.row.owner,
        folder_hash: c.row.folder_hash,
        repaired: false,
      });
    }
  }

  // 4. Folder counters against their files (a folder with files but no row counts as a mismatch).
  const counters = sqlite
    .query<CounterRow, []>(
      `SELECT k.owner, k.folder_hash, f.file_count, f.total_bytes,
              typeof(f.file_count) AS count_type, typeof(f.total_bytes) AS bytes_type,
              coalesce(c.n, 0) AS n, coalesce(c.bytes, 0) AS bytes, f.owner IS NOT NULL AS has_folder
         FROM (SELECT owner, folder_hash FROM folders UNION SELECT owner, folder_hash FROM files) k
         LEFT JOIN folders f ON f.owner = k.owner AND f.folder_hash = k.folder_hash
         LEFT JOIN (SELECT owner, folder_hash, count(*) AS n, sum(size_bytes) AS bytes
                      FROM files GROUP BY owner, folder_hash) c
                ON c.owner = k.owner AND c.folder_hash = k.folder_hash`,
    )
    .all();
  for (const r of counters) {
    const ok =
      r.has_folder === 1 &&
      r.count_type === "integer" &&
      r.bytes_type === "integer" &&
      r.file_count === r.n &&
      r.total_bytes === r.bytes;
    if (ok) continue;
    const problem: FsckProblem = {
      kind: "counter_mismatch",
      detail:
        r.has_folder === 1
          ? `folder ${r.folder_hash} (${r.owner}) counts file_count ${String(r.file_count)} (${r.count_type}), total_bytes ${String(r.total_bytes)} (${r.bytes_type}); its files: ${r.n} files, ${r.bytes} bytes`
          : `folder ${r.folder_hash} (${r.owner}) has ${r.n} files but no folder row`,
      owner: r.owner,
      folder_hash: r.folder_hash,
      repaired: false,
    };
    if (repair) {
      recomputeCounters(db, r.owner, r.folder_hash, clock.now());
      problem.repaired = true;
    }
    problems.push(problem);
  }

  // 5. Sessions stuck in the internal finalizing state.
  const now = clock.now();
  const stuck = sqlite
    .query<StuckRow, [number]>(
      "SELECT session_id, owner, folder_hash, finalizing_until FROM upload_sessions WHERE state = 'finalizing' AND (finalizing_until IS NULL OR finalizing_until <= ?)",
    )
    .all(now);
  for (const s of stuck) {
    const problem: FsckProblem = {
      kind: "stuck_session",
      detail:
        s.finalizing_until === null
          ? `session ${s.session_id} (${s.owner}) is finalizing without a lease`
          : `session ${s.session_id} (${s.owner}) has been finalizing with no live lease since ${new Date(s.finalizing_until * 1000).toISOString()}`,
      session_id: s.session_id,
      owner: s.owner,
      folder_hash: s.folder_hash,
      repaired: false,
    };
    if (repair) {
      const changed = sqlite
        .query(
          "UPDATE upload_sessions SET state = 'receiving', finalizing_until = NULL, expires_at = ? WHERE session_id = ? AND state = 'finalizing' AND (finalizing_until IS NULL OR finalizing_until <= ?)",
        )
        .run(now + ttl, s.session_id, now).changes;
      problem.repaired = changed > 0;
    }
    problems.push(problem);
  }

  const repaired = problems.filter((p) => p.repaired).length;
  return { ok: problems.every((p) => p.repaired), problems, repaired };
}

/** Sets a folder's counters to its files' count and byte sum (creating an unregistered row if missing). */
function recomputeCounters(db: Db, owner: string, folderHash: string, now: number): void {
  db.$client
    .query(
      `INSERT INTO folders (owner, folder_hash, updated_at, file_count, total_bytes)
       SELECT ?1, ?2, ?3, count(*), coalesce(sum(size_bytes), 0) FROM files WHERE owner = ?1 AND folder_hash = ?2
       ON CONFLICT (owner, folder_hash) DO UPDATE SET file_count = excluded.file_count, total_bytes = excluded.total_bytes`,
    )
    .run(owner, folderHash, now);
}

/**
 * `runFsck` on the database and blob store `config` names (the server's `ESYNC_*` settings), for
 * the command lines (`bun run fsck`, `esync-admin fsck`); both are closed again afterwards.
 * @throws when there is no database at `config.dbPath`, or it or the store cannot be opened.
 */
export async function runFsckWithConfig(config: Config, repair: boolean): Promise<FsckReport> {
  if (config.dbPath !== ":memory:" && !existsSync(config.dbPath))
    throw new Error(`no database at ${config.dbPath} (set ESYNC_DATA_DIR or ESYNC_DB_PATH)`);
  const db = openDb(config.dbPath);
  let blobs: BlobStore | null = null;
  try {
    blobs = createBlobStore(config);
    return await runFsck(
      { db, blobs, clock: systemClock },
      { repair, sessionTtlSeconds: config.sessionTtlSeconds },
    );
  } finally {
    await blobs?.close().catch(() => {});
    db.$client.close();
  }
}

/**
 * The text form of `report`: a line per problem (`problem` or `repaired`, kind, detail), then a
 * summary line (which names `--repair` after a dry run).
 */
export function fsckReportLines(
  report: FsckReport,
  repair: boolean,
): { problems: string[]; summary: string } {
  const left = report.problems.length - report.repaired;
  return {
    problems: report.problems.map((p) => `${p.repaired ? "repaired" : "problem "}  ${p.kind}  ${p.detail}`),
    summary:
      report.problems.length === 0
        ? "no problems found"
        : `${report.problems.length} problem(s), ${report.repaired} repaired, ${left} remaining${repair ? "" : " (dry run; --repair to repair)"}`,
  };
}
