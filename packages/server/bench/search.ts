/**
 * Search bench (issues 3 and 11): `/search_files` and `/browse` latency on a large account,
 * against a naive baseline, in one run, on SQLite (default) or PostgreSQL (`--database-url`).
 *
 *   bun bench/search.ts [--files 1000000] [--folders 50] [--reps 100] [--naive-reps 5]
 *                       [--naive-budget-ms 15000] [--db PATH] [--reuse] [--seed 1] [--no-naive]
 *                       [--database-url postgres://…] [--prewarm] [--shapes TEXT[,TEXT…]]
 *
 * 1. Generates one account (`--files` over `--folders`; names, extensions, sizes and dates shaped
 *    like a real sync account: camera rolls, documents, source trees, music, archives; 1% legacy
 *    rows without file_name, 0.5% with no names at all; 5 folders unregistered).
 *    SQLite: inserted through the files repository's upsert (INSERT … ON CONFLICT DO UPDATE on
 *    `files`, so the search triggers run as on upload), in batches of one transaction; folder
 *    counters set once per folder. `--db PATH --reuse` keeps and reuses the database.
 *    PostgreSQL: multi-row INSERTs of 1,000 rows into `files` with its secondary indexes dropped
 *    and the counter triggers disabled (account_usage and usage_buckets are not kept: only search
 *    runs on this database), then the search counters recounted, the indexes re-created from
 *    their own definitions and VACUUM ANALYZE. `--reuse` keeps the rows when the account already has `--files` files.
 * 2. SQLite: starts the real server (`src/main.ts`, own process) on that database and measures
 *    each query shape through HTTP. PostgreSQL: the search and browse services on `PgSearchIndex`
 *    in this process (no HTTP). p50/p95/p99 over `--reps` requests whose parameters vary per
 *    request (other terms, windows and offsets, so no answer is a repeat).
 * 3. Baseline, same data, in this process: the naive SQL a straightforward implementation runs:
 *    `search_name LIKE '%q%'`, `ext IN`, bounds, `ORDER BY col, path_hash LIMIT/OFFSET` and
 *    `count(*)` on `files` with (owner, col, path_hash) b-trees (SQLite: recreated here as
 *    `bench_naive_*`; PostgreSQL: the sort b-trees, without the trigram index, which is on the
 *    folded name). Each shape gets at most `--naive-reps` runs within `--naive-budget-ms`.
 * Every shape's total_count and first page are checked against the baseline (exactness).
 * `--shapes img,limit` runs only the shapes whose name contains one of the comma-separated texts.
 * PostgreSQL: the run prints (and writes) the server's memory settings; `--prewarm` first loads
 * `files`, `folders` and the search tables with their indexes into shared buffers (`pg_prewarm`,
 * created if missing; needs a superuser), which is where a server that has been answering for a
 * while holds them: without it the first requests of each shape read cold pages from disk.
 * Prints a table and writes JSON to bench/results/search-<time>.json.
 */

import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { u8aToHex } from "@polkadot/util";
import { cryptoWaitReady, encodeAddress, sr25519PairFromSeed, sr25519Sign } from "@polkadot/util-crypto";
import { openDb } from "../src/db/client.ts";
import { openPostgres, type PgDb } from "../src/db/postgres/client.ts";
import { PgFolderEntriesRepository } from "../src/db/postgres/folder-entries.ts";
import { files as pgFiles } from "../src/db/postgres/schema.ts";
import { PgSearchIndex } from "../src/db/postgres/search/index.ts";
import { SqliteFilesRepository as FilesRepository } from "../src/db/sqlite/files.ts";
import { SqliteFoldersRepository as FoldersRepository } from "../src/db/sqlite/folders.ts";
import { foldSearchCountersIfDue } from "../src/db/sqlite/search/counters.ts";
import { extensionOf, type FileRow, searchNameOf } from "../src/files/file-entry.ts";
import { BrowseService } from "../src/search/browse.service.ts";
import { parseBrowseQuery, parseSearchQuery } from "../src/search/search.query.ts";
import { SearchService } from "../src/search/search.service.ts";
import { startServer } from "../test/support/server.ts";

const { values: flags } = parseArgs({
  options: {
    files: { type: "string", default: "1000000" },
    folders: { type: "string", default: "50" },
    reps: { type: "string", default: "100" },
    "naive-reps": { type: "string", default: "5" },
    "naive-budget-ms": { type: "string", default: "15000" },
    db: { type: "string" },
    reuse: { type: "boolean", default: false },
    seed: { type: "string", default: "1" },
    "no-naive": { type: "boolean", default: false },
    "database-url": { type: "string" },
    /** Only the shapes whose name contains one of these comma-separated texts. */
    shapes: { type: "string" },
    /** PostgreSQL: load the searched relations into shared buffers first. */
    prewarm: { type: "boolean", default: false },
  },
});
const PG_URL = flags["database-url"];
const FILES = Number(flags.files);
const FOLDERS = Number(flags.folders);
const REPS = Number(flags.reps);
const NAIVE_REPS = Number(flags["naive-reps"]);
const NAIVE_BUDGET_MS = Number(flags["naive-budget-ms"]);
const DB_PATH = flags.db ?? join(tmpdir(), `esync-search-bench-${FILES}-${FOLDERS}.sqlite`);

// ---------------------------------------------------------------------------------------------
// Deterministic generator.

let seed = Number(flags.seed) >>> 0 || 1;
/** mulberry32 */
function rnd(): number {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const int = (n: number) => Math.floor(rnd() * n);
const pick = <T>(a: readonly T[]): T => a[int(a.length)]!;
const pad = (n: number, w: number) => String(n).padStart(w, "0");
/** Log-normal-ish: exp(mu + sigma * approx N(0,1)). */
const logNormal = (mu: number, sigma: number) =>
  Math.round(Math.exp(mu + sigma * (rnd() + rnd() + rnd() + rnd() - 2) * 1.7));

const WORDS = (
  "report budget invoice notes meeting summary draft final plan design spec review contract letter resume " +
  "thesis chapter slides proposal agenda minutes receipt statement tax travel holiday family wedding birthday " +
  "project client server backup export import data analysis results figure table chart photo scan überweisung " +
  "café résumé 見積書 議事録 zdjęcie"
).split(" ");
const DAY = 86400;
const START = 1_640_995_200; // 2022-01-01
const SPAN = 3 * 365 * DAY;
const ymd = (t: number) => {
  const d = new Date(t * 1000);
  return `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1, 2)}${pad(d.getUTCDate(), 2)}`;
};

type Kind = "photo" | "doc" | "code" | "music" | "video" | "archive";
const NAMES: Record<Kind, (t: number) => string> = {
  photo: (t) => {
    const r = rnd();
    if (r < 0.45) return `IMG_${ymd(t)}_${pad(int(240000), 6)}.jpg`;
    if (r < 0.6) return `DSC${pad(int(99999), 5)}.JPG`;
    if (r < 0.7) return `PXL_${ymd(t)}_${pad(int(1e9), 9)}.jpg`;
    if (r < 0.82)
      return `Screenshot ${ymd(t)} at ${pad(int(24), 2)}.${pad(int(60), 2)}.${pad(int(60), 2)}.png`;
    if (r < 0.92) return `IMG_${pad(int(9999), 4)}.HEIC`;
    return `${pick(WORDS)}-${pick(WORDS)}.${pick(["png", "gif", "webp", "jpeg", "svg"])}`;
  },
  doc: () => {
    const ext = pick([
      ".pdf",
      ".pdf",
      ".docx",
      ".xlsx",
      ".txt",
      ".md",
      ".pptx",
      ".csv",
      ".odt",
      ".doc",
      ".rtf",
    ]);
    const w = [pick(WORDS), pick(WORDS)];
    if (rnd() < 0.5) w.push(String(2015 + int(10)));
    if (rnd() < 0.3) w.push(pick(["final", "v2", "v3", "copy", "old", "signed"]));
    return rnd() < 0.5
      ? `${w.map((s) => s[0]!.toUpperCase() + s.slice(1)).join(" ")}${ext}`
      : `${w.join(pick(["-", "_"]))}${ext}`;
  },
  code: () =>
    pick([
      "index",
      "main",
      "utils",
      "app",
      "config",
      "server",
      "client",
      "types",
      "test",
      "README",
      "package",
      "lib",
      "mod",
      "handler",
      "router",
      "model",
      "view",
      "Button",
      "Header",
      "api",
      "schema",
      "worker",
    ]) +
    pick([
      ".ts",
      ".js",
      ".py",
      ".rs",
      ".go",
      ".json",
      ".md",
      ".css",
      ".html",
      ".tsx",
      ".c",
      ".h",
      ".java",
      ".yml",
      ".lock",
      ".cpp",
    ]),
  music: () =>
    `${pad(1 + int(20), 2)} ${pick(WORDS)} ${pick(WORDS)}.${pick(["mp3", "mp3", "flac", "m4a", "ogg", "wav", "aac"])}`,
  video: (t) =>
    rnd() < 0.6
      ? `VID_${ymd(t)}_${pad(int(240000), 6)}.mp4`
      : `${pick(WORDS)} ${pick(WORDS)}.${pick(["mov", "mkv", "avi", "webm"])}`,
  archive: (t) =>
    `${pick(["backup", "export", "archive", "dump", "snapshot"])}-${ymd(t)}.${pick(["zip", "tar.gz", "7z", "rar", "tar", "bz2"])}`,
};
const SIZES: Record<Kind, () => number> = {
  photo: () => logNormal(14.8, 0.6),
  doc: () => logNormal(11, 1.4),
  code: () => logNormal(8, 1.3),
  music: () => logNormal(15.5, 0.4),
  video: () => logNormal(18.5, 1.2),
  archive: () => logNormal(17.5, 2),
};
const FOLDER_KINDS: Kind[] = [
  "photo",
  "code",
  "doc",
  "music",
  "photo",
  "doc",
  "code",
  "video",
  "archive",
  "photo",
];
const LABELS = [
  "Photos",
  "Code",
  "Documents",
  "Music",
  "Camera Roll",
  "Work",
  "Projects",
  "Videos",
  "Backups",
  "Phone",
];

/** Where generated rows go: batches of file rows, then each folder once its files are in. */
interface Sink {
  batch(rows: FileRow[]): Promise<void>;
  /** A folder whose files are all in; `label` null = left unregistered. */
  folder(folderHash: string, label: string | null, device: string, createdAt: number): Promise<void>;
  /** Runs once every row is in; `secs` is the time taken so far. */
  done(files: number, secs: number): Promise<void>;
}

/** Generates the account of `owner` into `sink`. */
async function generate(owner: string, sink: Sink): Promise<void> {
  const weights = Array.from({ length: FOLDERS }, (_, i) => 1 / (i + 1) ** 0.9);
  const wsum = weights.reduce((a, b) => a + b, 0);
  let done = 0;
  const t0 = performance.now();
  for (let f = 0; f < FOLDERS; f++) {
    const label = `${LABELS[f % LABELS.length]}${f >= LABELS.length ? ` ${Math.floor(f / LABELS.length) + 1}` : ""}`;
    const folderHash = createHash("sha256").update(label).digest("hex").slice(0, 16);
    const kind = FOLDER_KINDS[f % FOLDER_KINDS.length]!;
    const n = f === FOLDERS - 1 ? FILES - done : Math.round((FILES * weights[f]!) / wsum);
    const importAt = START + int(SPAN / 2);
    let burst = importAt;
    const dirs = Array.from({ length: 1 + Math.floor(n / 400) }, () =>
      Array.from({ length: 1 + int(3) }, () => (rnd() < 0.5 ? pick(WORDS) : String(2015 + int(10)))).join(
        "/",
      ),
    );
    const batch = 5000;
    for (let i = 0; i < n; i += batch) {
      const rows: FileRow[] = [];
      for (let j = i; j < Math.min(n, i + batch); j++) {
        // 60% arrive in the folder's first sync (one burst), the rest over the following years.
        let created: number;
        if (rnd() < 0.6) {
          if (rnd() >= 0.8) burst += 1;
          created = burst;
        } else {
          created = importAt + int(START + SPAN - importAt);
        }
        const updated = rnd() < 0.2 ? created + int(START + SPAN - created) : created;
        const name = NAMES[kind](created);
        const rel = `${pick(dirs)}/${name}`;
        const r = rnd();
        const fileName = r < 0.015 ? null : name;
        const relativePath = r < 0.01 || r >= 0.015 ? rel : null;
        const sizeBytes = SIZES[kind]();
        const searchName = searchNameOf(fileName, relativePath);
        const row: FileRow = {
          owner,
          folderHash,
          pathHash: randomBytes(32),
          saltedHash: randomBytes(32),
          sizeBytes,
          revisionSeq: 1 + (rnd() < 0.1 ? int(5) : 0),
          revisionId: randomBytes(32),
          encryptedPath: randomBytes(24 + int(40)),
          fileName,
          relativePath,
          searchName,
          ext: extensionOf(searchName),
          storeHash: rnd() < 0.02 ? null : randomBytes(32).toString("hex"),
          chunkHashes: rnd() < 0.7 ? null : JSON.stringify([randomBytes(32).toString("hex")]),
          createdAt: created,
          updatedAt: updated,
          clientTimestamp: created,
          source: "bench",
          attributes: null,
          uploadId: randomBytes(16).toString("hex"),
          ciphertextHash: randomBytes(32).toString("hex"),
          ciphertextSize: sizeBytes + 48,
          blobId: randomBytes(16).toString("hex"),
          chunkSize: 8 * 1024 * 1024,
          chunkCount: 1,
          chunkGens: '["0"]',
          uploadedBy: null,
        };
        rows.push(row);
      }
      await sink.batch(rows);
      done += Math.min(batch, n - i);
      const s = (performance.now() - t0) / 1000;
      process.stdout.write(`\rgenerating: ${done}/${FILES} files, ${(done / s).toFixed(0)} files/s   `);
    }
    await sink.folder(folderHash, f % 10 !== 9 ? label : null, `device-${f % 3}`, START + f);
  }
  await sink.done(done, (performance.now() - t0) / 1000);
}

/** SQLite: the files repository's upsert (the search triggers run), a transaction per batch. */
function sqliteSink(owner: string): Sink {
  const db = openDb(DB_PATH);
  db.$client.exec("PRAGMA synchronous = OFF");
  const folders = new FoldersRepository(db);
  const filesRepo = new FilesRepository(db);
  return {
    batch: async (rows) => {
      db.transaction(() => {
        for (const r of rows) filesRepo.upsert(r);
        // As the metadata store's transactions do (src/db/sqlite/search/counters.ts).
        foldSearchCountersIfDue(db.$client);
      });
    },
    folder: async (folderHash, label, device, createdAt) => {
      db.$client
        .query(
          `INSERT INTO folders (owner, folder_hash, updated_at, file_count, total_bytes)
           SELECT owner, folder_hash, max(updated_at), count(*), sum(size_bytes) FROM files WHERE owner = ? AND folder_hash = ?`,
        )
        .run(owner, folderHash);
      if (label !== null) folders.register(owner, folderHash, label, device, createdAt);
    },
    done: async (n, secs) => {
      console.log(
        `\ngenerated ${n} files in ${secs.toFixed(1)} s (${(n / secs).toFixed(0)} files/s with the search triggers)`,
      );
      db.$client.exec("PRAGMA wal_checkpoint(TRUNCATE)");
      db.$client.close();
    },
  };
}

/**
 * PostgreSQL: multi-row INSERTs with the secondary indexes of `files` dropped and the counter
 * triggers off; at the end the indexes are re-created from their saved definitions, then
 * VACUUM ANALYZE.
 */
async function pgSink(db: PgDb, owner: string): Promise<Sink> {
  const sql = db.$client;
  const indexes = (await sql`SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'files'
    AND indexname <> 'files_owner_folder_hash_path_hash_pk'`) as { indexname: string; indexdef: string }[];
  for (const i of indexes) await sql.unsafe(`DROP INDEX "${i.indexname}"`);
  await sql`ALTER TABLE files DISABLE TRIGGER USER`;
  return {
    batch: async (rows) => {
      for (let i = 0; i < rows.length; i += 1000) await db.insert(pgFiles).values(rows.slice(i, i + 1000));
    },
    folder: async (folderHash, label, device, createdAt) => {
      await sql`INSERT INTO folders (owner, folder_hash, label, device_name, created_at, updated_at, file_count, total_bytes)
        SELECT owner, folder_hash, ${label}, ${label === null ? null : device}, ${label === null ? null : createdAt},
          max(updated_at), count(*), sum(size_bytes) FROM files WHERE owner = ${owner} AND folder_hash = ${folderHash}
          GROUP BY owner, folder_hash`;
    },
    done: async (n, secs) => {
      console.log(
        `\ninserted ${n} files in ${secs.toFixed(1)} s (${(n / secs).toFixed(0)} files/s, no indexes)`,
      );
      await sql`ALTER TABLE files ENABLE TRIGGER USER`;
      await sql`SELECT esync_search_recount()`;
      const t = performance.now();
      for (const i of indexes)
        await sql.begin(async (tx) => {
          await tx.unsafe("SET LOCAL maintenance_work_mem = '256MB'");
          await tx.unsafe(i.indexdef);
        });
      await sql`VACUUM ANALYZE files`;
      console.log(
        `indexes re-created and VACUUM ANALYZE in ${((performance.now() - t) / 1000).toFixed(1)} s`,
      );
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Owner and token.

await cryptoWaitReady();
const pair = sr25519PairFromSeed(new Uint8Array(32).fill(42));
const OWNER = encodeAddress(pair.publicKey, 42);
function token(): string {
  const exp = Math.floor(Date.now() / 1000) + 86000;
  return `sig1.${OWNER}.${exp}.${u8aToHex(sr25519Sign(new TextEncoder().encode(`hcfs-auth:${OWNER}:${exp}`), pair), -1, false)}`;
}

/** A search's total and first page (hex path_hash). */
interface Answer {
  total: number;
  page: string[];
}

/** What the bench needs of a database: derived parameters, the naive baseline, and requests. */
interface Backend {
  /** How requests are made (for the table's title). */
  how: string;
  span: { lo: number; hi: number; n: number };
  /** Search names of a spread sample of about 2,000 files. */
  sample: string[];
  /** The largest folder's directory holding the most files directly. */
  big: { folder_hash: string; dir: string; n: number };
  /** The folder with the most files. */
  bigFolder: string;
  naive(qs: string): Promise<Answer>;
  /** `/search_files?qs`, or `/browse/{folder}?qs`: ms and the answer. */
  request(qs: string, browseFolder?: string): Promise<{ ms: number } & Answer>;
  /** `/list_folders` (ms), if the backend measures it. */
  listFolders?(): Promise<number>;
  /** Database settings that shape the figures (PostgreSQL: memory), to print and record. */
  settings?: Record<string, string>;
  close(): Promise<void>;
}

/** The naive SQL of a search query string (`?` placeholders, or `$n` when `numbered`). */
function naiveSql(qs: string, numbered: boolean) {
  const q = parseSearchQuery(new URLSearchParams(qs));
  const params: (string | number)[] = [OWNER];
  const p = (v: string | number) => {
    params.push(v);
    return numbered ? `$${params.length}` : "?";
  };
  const where = [numbered ? "owner = $1" : "owner = ?"];
  if (q.q !== null) {
    const like = `%${q.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    where.push(`search_name LIKE ${p(like)} ESCAPE '\\'`);
  }
  if (q.exts) where.push(`ext IN (${q.exts.map((e) => p(e)).join(",")})`);
  if (q.sizeMin !== null) where.push(`size_bytes >= ${p(q.sizeMin)}`);
  if (q.sizeMax !== null) where.push(`size_bytes <= ${p(q.sizeMax)}`);
  if (q.dateFrom !== null) where.push(`created_at >= ${p(q.dateFrom)}`);
  if (q.dateTo !== null) where.push(`created_at <= ${p(q.dateTo)}`);
  const dir = q.descending ? "DESC" : "ASC";
  // SQLite sorts nulls first ascending; PostgreSQL must be told.
  const nulls = numbered && q.sortBy === "file_name" ? (q.descending ? " NULLS LAST" : " NULLS FIRST") : "";
  return {
    where: where.join(" AND "),
    params,
    order: `${q.sortBy} ${dir}${nulls}, path_hash ${dir}`,
    limit: q.limit,
    offset: q.offset,
  };
}

/** Rare terms: the last 9 characters (before the extension) of real names with 5+ digits there. */
function rareTermsOf(sample: string[]): string[] {
  return sample
    .map((n) =>
      n
        .split("/")
        .pop()!
        .replace(/\.[^.]*$/, "")
        .slice(-9),
    )
    .filter((t) => t.length === 9 && (t.match(/\d/g)?.length ?? 0) >= 5);
}

/** SQLite: generated (or reused) at `--db`, measured through HTTP on a server process. */
async function sqliteBackend(): Promise<Backend> {
  if (!(flags.reuse && existsSync(DB_PATH))) {
    for (const p of [DB_PATH, `${DB_PATH}-wal`, `${DB_PATH}-shm`])
      if (existsSync(p)) await Bun.file(p).delete();
    await generate(OWNER, sqliteSink(OWNER));
  } else {
    console.log(`reusing ${DB_PATH}`);
  }
  const db = openDb(DB_PATH);
  const sql = db.$client;
  const span = sql
    .query<{ lo: number; hi: number; n: number }, []>(
      "SELECT min(created_at) lo, max(created_at) hi, count(*) n FROM files",
    )
    .get()!;
  const sample = sql
    .query<{ search_name: string }, [number]>(
      "SELECT search_name FROM files WHERE search_name IS NOT NULL AND rowid % ? = 0 ORDER BY rowid LIMIT 2000",
    )
    .all(Math.max(1, Math.floor(FILES / 4000)))
    .map((r) => r.search_name);
  if (!flags["no-naive"]) {
    const t = performance.now();
    for (const [name, cols] of [
      ["created", "created_at"],
      ["updated", "updated_at"],
      ["size", "size_bytes"],
      ["name", "file_name"],
    ]) {
      sql.exec(`CREATE INDEX IF NOT EXISTS bench_naive_${name} ON files (owner, ${cols}, path_hash)`);
    }
    sql.exec("CREATE INDEX IF NOT EXISTS bench_naive_ext ON files (owner, ext)");
    console.log(`naive baseline indexes ready in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  }
  const big = sql
    .query<{ folder_hash: string; dir: string; n: number }, []>(
      `SELECT folder_hash, dir, count(*) AS n FROM search_entries WHERE dir IS NOT NULL
       GROUP BY folder_hash, dir ORDER BY n DESC LIMIT 1`,
    )
    .get()!;
  const bigFolder = sql
    .query<{ folder_hash: string }, []>("SELECT folder_hash FROM folders ORDER BY file_count DESC LIMIT 1")
    .get()!.folder_hash;
  const server = await startServer({
    env: { ESYNC_DB_PATH: DB_PATH, ESYNC_OPENAPI: "0", ESYNC_SWEEP_INTERVAL_SECONDS: "3600" },
  });
  const auth = `Bearer ${token()}`;
  const get = async (path: string) => {
    const t = performance.now();
    const r = await fetch(`${server.url}${path}`, { headers: { authorization: auth } });
    const body = (await r.json()) as { Success?: { total_count: number; files: { path_hash: number[] }[] } };
    const ms = performance.now() - t;
    if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(body)}`);
    return { ms, body: body.Success! };
  };
  return {
    how: "through HTTP (server process)",
    span,
    sample,
    big,
    bigFolder,
    naive: async (qs) => {
      const n = naiveSql(qs, false);
      const total = sql
        .query<{ n: number }, (string | number)[]>(`SELECT count(*) n FROM files WHERE ${n.where}`)
        .get(...n.params)!.n;
      const page = sql
        .query<{ h: string }, (string | number)[]>(
          `SELECT hex(path_hash) h FROM files WHERE ${n.where} ORDER BY ${n.order} LIMIT ? OFFSET ?`,
        )
        .all(...n.params, n.limit, n.offset)
        .map((r) => r.h.toLowerCase());
      return { total, page };
    },
    request: async (qs, browseFolder) => {
      const url = browseFolder ? `/browse/${OWNER}/${browseFolder}` : `/search_files/${OWNER}`;
      const { ms, body } = await get(`${url}?${qs}`);
      return {
        ms,
        total: body.total_count,
        page: body.files.map((f) => Buffer.from(f.path_hash).toString("hex")),
      };
    },
    listFolders: async () => (await get(`/list_folders/${OWNER}`)).ms,
    close: async () => {
      await server.stop();
      sql.close();
    },
  };
}

/** PostgreSQL at `--database-url`: generated unless `--reuse` finds the account, measured in-process. */
async function pgBackend(url: string): Promise<Backend> {
  const db = await openPostgres(url);
  const sql = db.$client;
  const [have] = await sql`SELECT count(*)::int AS n FROM files WHERE owner = ${OWNER}`;
  if (!(flags.reuse && Number(have?.n) === FILES)) {
    await sql`TRUNCATE files, folders`;
    await generate(OWNER, await pgSink(db, OWNER));
  } else {
    console.log(`reusing the ${FILES} files at ${url}`);
  }
  // Index-only scans of the suffix rows need their visibility map (a migration may just have
  // filled them); nothing to do when they are already vacuumed.
  await sql`VACUUM ANALYZE search_suffixes, search_files, search_grams`;
  const settings: Record<string, string> = {};
  for (const name of ["shared_buffers", "effective_cache_size", "work_mem", "random_page_cost"]) {
    const [row] = (await sql.unsafe(`SHOW ${name}`)) as Record<string, string>[];
    settings[name] = String(row?.[name]);
  }
  if (flags.prewarm) {
    const t = performance.now();
    await sql`CREATE EXTENSION IF NOT EXISTS pg_prewarm`;
    const [w] = (await sql`SELECT coalesce(sum(pg_prewarm(c.oid)), 0)::int8 AS blocks
      FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
      LEFT JOIN pg_index AS i ON i.indexrelid = c.oid LEFT JOIN pg_class AS t ON t.oid = i.indrelid
      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i')
        AND (coalesce(t.relname, c.relname) IN ('files', 'folders') OR coalesce(t.relname, c.relname) LIKE 'search\_%')`) as {
      blocks: number | bigint;
    }[];
    const mb = (Number(w?.blocks ?? 0) * 8192) / 2 ** 20;
    settings.prewarmed = `${mb.toFixed(0)} MB`;
    console.log(
      `prewarmed ${mb.toFixed(0)} MB into shared buffers in ${((performance.now() - t) / 1000).toFixed(1)} s`,
    );
  }
  const [span] = (await sql`SELECT min(created_at)::float8 AS lo, max(created_at)::float8 AS hi,
    count(*)::int AS n FROM files`) as { lo: number; hi: number; n: number }[];
  const step = Math.max(1, Math.floor(FILES / 2000));
  const sample = (
    (await sql`SELECT search_name FROM (SELECT search_name, row_number() OVER (ORDER BY created_at, path_hash) AS r
      FROM files WHERE search_name IS NOT NULL) AS s WHERE r % ${step} = 0 LIMIT 2000`) as {
      search_name: string;
    }[]
  ).map((r) => r.search_name);
  const [big] = (await sql.unsafe(
    `SELECT folder_hash, btrim(regexp_replace(relative_path, '[^/]*$', ''), '/') AS dir, count(*)::int AS n
     FROM files WHERE relative_path IS NOT NULL GROUP BY 1, 2 ORDER BY n DESC LIMIT 1`,
  )) as { folder_hash: string; dir: string; n: number }[];
  const [bf] = (await sql`SELECT folder_hash FROM folders ORDER BY file_count DESC LIMIT 1`) as {
    folder_hash: string;
  }[];
  const index = new PgSearchIndex(db);
  const search = new SearchService(index);
  const browse = new BrowseService(index, new PgFolderEntriesRepository(db));
  return {
    how: "in-process (SearchService on PgSearchIndex, no HTTP)",
    span: span!,
    sample,
    big: big!,
    bigFolder: bf!.folder_hash,
    naive: async (qs) => {
      const n = naiveSql(qs, true);
      const [c] = await sql.unsafe(`SELECT count(*)::int AS n FROM files WHERE ${n.where}`, n.params);
      const k = n.params.length;
      const page = (await sql.unsafe(
        `SELECT encode(path_hash, 'hex') AS h FROM files WHERE ${n.where} ORDER BY ${n.order} LIMIT $${k + 1} OFFSET $${k + 2}`,
        [...n.params, n.limit, n.offset],
      )) as { h: string }[];
      return { total: Number(c?.n), page: page.map((r) => r.h) };
    },
    request: async (qs, browseFolder) => {
      const t = performance.now();
      const r = browseFolder
        ? await browse.browse(OWNER, browseFolder, parseBrowseQuery(new URLSearchParams(qs)))
        : await search.search(OWNER, parseSearchQuery(new URLSearchParams(qs)));
      const ms = performance.now() - t;
      return { ms, total: r.total_count, page: r.files.map((f) => Buffer.from(f.path_hash).toString("hex")) };
    },
    close: () => sql.close(),
    settings,
  };
}

const backend = PG_URL ? await pgBackend(PG_URL) : await sqliteBackend();
const { span, big, bigFolder } = backend;
if (span.n !== FILES) console.warn(`warning: the database holds ${span.n} files, not --files ${FILES}`);
const rareTerms = rareTermsOf(backend.sample);
if (rareTerms.length === 0) throw new Error("no rare terms found in the sample");

// ---------------------------------------------------------------------------------------------
// Query shapes: each gives the query string of request i.

const MONTH = 30 * DAY;
const at = (frac: number) => Math.floor(span.lo + (span.hi - span.lo) * frac);
const pickI = <T>(a: readonly T[], i: number): T => a[i % a.length]!;
const enc = encodeURIComponent;
interface Shape {
  name: string;
  group: string;
  qs: (i: number) => string;
  /** `/browse/{owner}/{folder}` instead of `/search_files/{owner}` (no naive baseline). */
  browse?: string;
}
const shapes: Shape[] = [
  { group: "basic", name: "no filter (created_at desc)", qs: (i) => (i % 2 ? "" : "limit=25") },
  ...(["file_name", "size_bytes", "created_at", "updated_at"] as const).flatMap((col) =>
    (["asc", "desc"] as const).map((o) => ({
      group: "sort",
      name: `sort ${col} ${o}`,
      qs: (i: number) => `sort_by=${col}&sort_order=${o}&offset=${i % 3}`,
    })),
  ),
  { group: "filter", name: "file_type=image", qs: (i) => `file_type=image&offset=${i % 5}` },
  {
    group: "filter",
    name: "file_type=.pdf",
    qs: (i) => `file_type=${pickI([".pdf", ".PDF"], i)}&offset=${i % 5}`,
  },
  { group: "filter", name: "file_type=audio,.zip", qs: (i) => `file_type=audio,.zip&offset=${i % 5}` },
  {
    group: "filter",
    name: "size range (1–8 MB)",
    qs: (i) => `size_min=${1_000_000 + i * 1000}&size_max=${8_000_000 - i * 1000}`,
  },
  { group: "filter", name: "size_min only (>= 100 MB)", qs: (i) => `size_min=${100_000_000 + i * 100_000}` },
  {
    group: "filter",
    name: "date window (one month)",
    qs: (i) => `date_from=${at((i % 30) / 31)}&date_to=${at((i % 30) / 31) + MONTH}`,
  },
  {
    group: "filter",
    name: "date_from only (last 90 days)",
    qs: (i) => `date_from=${span.hi - 90 * DAY + i * 100}`,
  },
  { group: "q", name: "q rare (9 chars)", qs: (i) => `q=${enc(pickI(rareTerms, i))}` },
  {
    group: "q",
    name: "q common 3 chars (img/jpg/pdf/dsc)",
    qs: (i) => `q=${pickI(["img", "jpg", "pdf", "dsc", "ing", "mp3"], i)}`,
  },
  {
    group: "q",
    name: "q common 4+ chars (2023/screenshot/backup)",
    qs: (i) => `q=${pickI(["2023", "screenshot", "backup", "report", "_2024", "final"], i)}`,
  },
  {
    group: "q",
    name: "q non-ASCII (Ü/é/議事)",
    qs: (i) => `q=${enc(pickI(["ÜBERWEISUNG", "café", "議事録", "RÉSUMÉ"], i))}`,
  },
  { group: "q<3", name: "q 1 char", qs: (i) => `q=${pickI(["a", "x", "7", "ß", "_"], i)}` },
  { group: "q<3", name: "q 2 chars", qs: (i) => `q=${pickI(["ab", "x7", "_2", "ég", "zz"], i)}` },
  {
    group: "combined",
    name: "image + last year + >= 2 MB",
    qs: (i) => `file_type=image&date_from=${span.hi - 365 * DAY + i * DAY}&size_min=${2_000_000 + i}`,
  },
  {
    group: "combined",
    name: "size range + date window",
    qs: (i) =>
      `size_min=${500_000 + i}&size_max=50000000&date_from=${at(0.3 + (i % 20) / 100)}&date_to=${at(0.6)}`,
  },
  {
    group: "combined",
    name: "q rare + file_type",
    qs: (i) => `q=${enc(pickI(rareTerms, i))}&file_type=image,document,pdf,video`,
  },
  {
    group: "combined",
    name: "q common + file_type=image",
    qs: (i) => `q=${pickI(["img", "2023", "screen"], i)}&file_type=image`,
  },
  {
    group: "combined",
    name: "q common + date window",
    qs: (i) =>
      `q=${pickI(["img", "2024", "backup"], i)}&date_from=${at((i % 30) / 31)}&date_to=${at((i % 30) / 31) + 3 * MONTH}`,
  },
  { group: "offset", name: "offset 10,000", qs: (i) => `offset=${10_000 + i}` },
  {
    group: "offset",
    name: "offset 100,000 (size asc)",
    qs: (i) => `offset=${100_000 + i * 7}&sort_by=size_bytes&sort_order=asc`,
  },
  { group: "offset", name: "offset 500,000", qs: (i) => `offset=${500_000 + i * 7}&sort_by=updated_at` },
  { group: "offset", name: "offset 900,000", qs: (i) => `offset=${900_000 + i * 7}` },
  {
    group: "offset",
    name: "offset 50,000 + file_type=image",
    qs: (i) => `offset=${50_000 + i * 7}&file_type=image`,
  },
  {
    group: "offset",
    name: "offset 20,000 + date window",
    qs: (i) => `offset=${20_000 + i}&date_from=${at(0.2)}&date_to=${at(0.9)}&sort_order=asc`,
  },
  {
    group: "offset",
    name: "offset 500,000 sort file_name",
    qs: (i) => `offset=${500_000 + i * 7}&sort_by=file_name&sort_order=asc`,
  },
  { group: "page", name: "limit 1000", qs: (i) => `limit=1000&offset=${i * 1000}&file_type=image` },
  {
    group: "browse",
    name: "browse: root of the largest folder",
    browse: bigFolder,
    qs: (i) => `offset=${i % 3}`,
  },
  {
    group: "browse",
    name: `browse: largest directory (${big.n} files), by name`,
    browse: big.folder_hash,
    qs: (i) => `path=${enc(big.dir)}&sort_by=file_name&sort_order=asc&offset=${i * 50}`,
  },
  {
    group: "browse",
    name: "browse: largest directory, file_type=image, by size",
    browse: big.folder_hash,
    qs: (i) => `path=${enc(big.dir)}&file_type=image&sort_by=size_bytes&offset=${i * 10}`,
  },
];

// ---------------------------------------------------------------------------------------------
// Run.

function pct(xs: number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}
const fmt = (ms: number) =>
  Number.isNaN(ms) ? "-" : ms < 10 ? ms.toFixed(2) : ms < 100 ? ms.toFixed(1) : ms.toFixed(0);

interface ShapeResult {
  group: string;
  shape: string;
  example: string;
  ours: { p50: number; p95: number; p99: number; n: number };
  naive: { p50: number; p95: number; p99: number; n: number } | null;
  total_count: number;
  exact: boolean | null;
}
const results: ShapeResult[] = [];
try {
  for (let w = 0; w < 3; w++) await backend.request("");
  const only = flags.shapes?.split(",").filter((t) => t !== "");
  for (const shape of shapes.filter((s) => !only || only.some((t) => s.name.includes(t)))) {
    const ours: number[] = [];
    let exact: boolean | null = null;
    let total = 0;
    for (let i = 0; i < REPS; i++) {
      const got = await backend.request(shape.qs(i), shape.browse);
      ours.push(got.ms);
      if (i === 0) total = got.total;
      if (i < 3 && !flags["no-naive"] && !shape.browse) {
        const n = await backend.naive(shape.qs(i));
        const ok = n.total === got.total && JSON.stringify(n.page) === JSON.stringify(got.page);
        exact = (exact ?? true) && ok;
        if (!ok)
          console.error(`MISMATCH ${shape.name} (${shape.qs(i)}): ours ${got.total}, naive ${n.total}`);
      }
    }
    const naiveTimes: number[] = [];
    if (!flags["no-naive"] && !shape.browse) {
      const start = performance.now();
      for (let i = 0; i < NAIVE_REPS && performance.now() - start < NAIVE_BUDGET_MS; i++) {
        const t = performance.now();
        await backend.naive(shape.qs(i));
        naiveTimes.push(performance.now() - t);
      }
    }
    const r: ShapeResult = {
      group: shape.group,
      shape: shape.name,
      example: shape.qs(0),
      ours: { p50: pct(ours, 50), p95: pct(ours, 95), p99: pct(ours, 99), n: ours.length },
      naive: naiveTimes.length
        ? {
            p50: pct(naiveTimes, 50),
            p95: pct(naiveTimes, 95),
            p99: pct(naiveTimes, 99),
            n: naiveTimes.length,
          }
        : null,
      total_count: total,
      exact,
    };
    results.push(r);
    console.log(
      `${shape.name.padEnd(44)} ours p50 ${fmt(r.ours.p50).padStart(6)} p95 ${fmt(r.ours.p95).padStart(6)} p99 ${fmt(r.ours.p99).padStart(6)} ms | naive p50 ${fmt(r.naive?.p50 ?? Number.NaN).padStart(6)} ms | total ${total}${exact === false ? " MISMATCH" : ""}`,
    );
  }
  const lf: number[] = [];
  if (backend.listFolders) for (let i = 0; i < REPS * 2; i++) lf.push(await backend.listFolders());
  const listFolders = lf.length
    ? { p50: pct(lf, 50), p95: pct(lf, 95), p99: pct(lf, 99), n: lf.length }
    : null;

  // Table.
  const lines = [
    `Search bench (${PG_URL ? "PostgreSQL" : "SQLite"}): ${FILES.toLocaleString("en")} files, ${FOLDERS} folders, ${REPS} requests per shape ${backend.how}, naive in-process.`,
    "",
    "| shape | ours p50 | ours p95 | ours p99 | naive p50 | naive p95 | naive p99 | total_count | exact |",
    "|---|---:|---:|---:|---:|---:|---:|---:|:-:|",
    ...results.map(
      (r) =>
        `| ${r.shape} | ${fmt(r.ours.p50)} | ${fmt(r.ours.p95)} | ${fmt(r.ours.p99)} | ${fmt(r.naive?.p50 ?? Number.NaN)} | ${fmt(r.naive?.p95 ?? Number.NaN)} | ${fmt(r.naive?.p99 ?? Number.NaN)} | ${r.total_count.toLocaleString("en")} | ${r.exact === null ? "-" : r.exact ? "yes" : "NO"} |`,
    ),
    ...(listFolders
      ? [
          `| list_folders (${FOLDERS} folders) | ${fmt(listFolders.p50)} | ${fmt(listFolders.p95)} | ${fmt(listFolders.p99)} | | | | | |`,
        ]
      : []),
    "",
    "Times in ms. Baseline: naive LIKE / ORDER BY / OFFSET SQL on `files` with (owner, col, path_hash) indexes.",
    ...(backend.settings
      ? [
          `Settings: ${Object.entries(backend.settings)
            .map(([k, v]) => `${k} ${v}`)
            .join(", ")}.`,
        ]
      : []),
  ];
  console.log(`\n${lines.join("\n")}`);
  mkdirSync(join(import.meta.dir, "results"), { recursive: true });
  const out = join(
    import.meta.dir,
    "results",
    `search-${PG_URL ? "postgres-" : ""}${new Date().toISOString().replace(/[:.]/g, "-")}.json`,
  );
  writeFileSync(
    out,
    JSON.stringify(
      {
        backend: PG_URL ? "postgres" : "sqlite",
        how: backend.how,
        files: FILES,
        folders: FOLDERS,
        reps: REPS,
        naive_reps: NAIVE_REPS,
        db: PG_URL ? new URL(PG_URL).pathname : DB_PATH,
        bun: Bun.version,
        at: new Date().toISOString(),
        settings: backend.settings ?? null,
        shapes: results,
        list_folders: listFolders,
      },
      null,
      2,
    ),
  );
  console.log(`\nwrote ${out}`);
} finally {
  await backend.close();
}
