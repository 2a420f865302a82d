/**
 * Search bench (issue 3): `/search_files` and `/list_folders` latency on a large account, against
 * a naive baseline, in one run.
 *
 *   bun bench/search.ts [--files 1000000] [--folders 50] [--reps 100] [--naive-reps 5]
 *                       [--naive-budget-ms 15000] [--db PATH] [--reuse] [--seed 1] [--no-naive]
 *
 * 1. Generates one account (`--files` over `--folders`; names, extensions, sizes and dates shaped
 *    like a real sync account: camera rolls, documents, source trees, music, archives; 1% legacy
 *    rows without file_name, 0.5% with no names at all; 5 folders unregistered) and inserts it
 *    through `FilesRepository.upsert` (INSERT … ON CONFLICT DO UPDATE on `files`, so the search
 *    triggers run as on upload), in batches of one transaction. Folder counters are set once per
 *    folder to what `applyFileChange` would have summed. `--db PATH --reuse` keeps and
 *    reuses the database across runs.
 * 2. Starts the real server (`src/main.ts`, own process) on that database and measures each query
 *    shape through HTTP: p50/p95/p99 over `--reps` requests whose parameters vary per request
 *    (other terms, windows and offsets, so no answer is a repeat).
 * 3. Baseline, same data, same process as the bench: the naive SQL a straightforward
 *    implementation runs — `search_name LIKE '%q%'`, `ext IN`, bounds, `ORDER BY col, path_hash
 *    LIMIT/OFFSET` and `count(*)` on `files` with the composite indexes the first schema had
 *    (recreated here as `bench_naive_*`). In-process, so it does not pay HTTP; each shape gets at
 *    most `--naive-reps` runs within `--naive-budget-ms`.
 * Every shape's total_count and first page are checked against the baseline (exactness).
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
import { SqliteFilesRepository as FilesRepository } from "../src/db/sqlite/files.ts";
import { SqliteFoldersRepository as FoldersRepository } from "../src/db/sqlite/folders.ts";
import { extensionOf, type FileRow, searchNameOf } from "../src/files/file-entry.ts";
import { parseSearchQuery } from "../src/search/search.query.ts";
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
  },
});
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

/** Generates and inserts the account; returns the owner address. */
function generate(owner: string): void {
  const db = openDb(DB_PATH);
  db.$client.exec("PRAGMA synchronous = OFF");
  const folders = new FoldersRepository(db);
  const filesRepo = new FilesRepository(db);
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
      db.transaction(() => {
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
          filesRepo.upsert(row);
        }
      });
      done += Math.min(batch, n - i);
      const s = (performance.now() - t0) / 1000;
      process.stdout.write(`\rgenerating: ${done}/${FILES} files, ${(done / s).toFixed(0)} files/s   `);
    }
    db.$client
      .query(
        `INSERT INTO folders (owner, folder_hash, updated_at, file_count, total_bytes)
         SELECT owner, folder_hash, max(updated_at), count(*), sum(size_bytes) FROM files WHERE owner = ? AND folder_hash = ?`,
      )
      .run(owner, folderHash);
    if (f % 10 !== 9) folders.register(owner, folderHash, label, `device-${f % 3}`, START + f);
  }
  const secs = (performance.now() - t0) / 1000;
  console.log(
    `\ngenerated ${done} files in ${secs.toFixed(1)} s (${(done / secs).toFixed(0)} files/s with the search triggers)`,
  );
  db.$client.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.$client.close();
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

if (!(flags.reuse && existsSync(DB_PATH))) {
  for (const p of [DB_PATH, `${DB_PATH}-wal`, `${DB_PATH}-shm`])
    if (existsSync(p)) await Bun.file(p).delete();
  generate(OWNER);
} else {
  console.log(`reusing ${DB_PATH}`);
}

// ---------------------------------------------------------------------------------------------
// Data-derived parameters (terms that exist, the time span) and the naive baseline.

const db = openDb(DB_PATH);
const sql = db.$client;
const span = sql
  .query<{ lo: number; hi: number; n: number }, []>(
    "SELECT min(created_at) lo, max(created_at) hi, count(*) n FROM files",
  )
  .get()!;
if (span.n !== FILES) console.warn(`warning: the database holds ${span.n} files, not --files ${FILES}`);
const sample = sql
  .query<{ search_name: string }, [number]>(
    "SELECT search_name FROM files WHERE search_name IS NOT NULL AND rowid % ? = 0 ORDER BY rowid LIMIT 2000",
  )
  .all(Math.max(1, Math.floor(FILES / 4000)))
  .map((r) => r.search_name);
/** Rare terms: the last 9 characters (before the extension) of real names with 5+ digits there. */
const rareTerms = sample
  .map((n) =>
    n
      .split("/")
      .pop()!
      .replace(/\.[^.]*$/, "")
      .slice(-9),
  )
  .filter((t) => t.length === 9 && (t.match(/\d/g)?.length ?? 0) >= 5);
if (rareTerms.length === 0) throw new Error("no rare terms found in the sample");

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

/** The naive query of a search query string: count and first page keys (hex path_hash). */
function naive(qs: string): { total: number; page: string[] } {
  const q = parseSearchQuery(new URLSearchParams(qs));
  const where = ["owner = ?"];
  const params: (string | number)[] = [OWNER];
  if (q.q !== null) {
    where.push("search_name LIKE ? ESCAPE '\\'");
    params.push(`%${q.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
  }
  if (q.exts) {
    where.push(`ext IN (${q.exts.map(() => "?").join(",")})`);
    params.push(...q.exts);
  }
  for (const [col, op, v] of [
    ["size_bytes", ">=", q.sizeMin],
    ["size_bytes", "<=", q.sizeMax],
    ["created_at", ">=", q.dateFrom],
    ["created_at", "<=", q.dateTo],
  ] as const) {
    if (v !== null) {
      where.push(`${col} ${op} ?`);
      params.push(v);
    }
  }
  const w = where.join(" AND ");
  const dir = q.descending ? "DESC" : "ASC";
  const total = sql
    .query<{ n: number }, (string | number)[]>(`SELECT count(*) n FROM files WHERE ${w}`)
    .get(...params)!.n;
  const page = sql
    .query<{ h: string }, (string | number)[]>(
      `SELECT hex(path_hash) h FROM files WHERE ${w} ORDER BY ${q.sortBy} ${dir}, path_hash ${dir} LIMIT ? OFFSET ?`,
    )
    .all(...params, q.limit, q.offset)
    .map((r) => r.h.toLowerCase());
  return { total, page };
}

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
/** The largest folder, and its directory holding the most files directly. */
const big = sql
  .query<{ folder_hash: string; dir: string; n: number }, []>(
    `SELECT folder_hash, dir, count(*) AS n FROM search_entries WHERE dir IS NOT NULL
     GROUP BY folder_hash, dir ORDER BY n DESC LIMIT 1`,
  )
  .get()!;
const bigFolder = sql
  .query<{ folder_hash: string }, []>("SELECT folder_hash FROM folders ORDER BY file_count DESC LIMIT 1")
  .get()!.folder_hash;
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

const server = await startServer({
  env: { ESYNC_DB_PATH: DB_PATH, ESYNC_OPENAPI: "0", ESYNC_SWEEP_INTERVAL_SECONDS: "3600" },
});
const auth = `Bearer ${token()}`;
async function call(
  path: string,
): Promise<{ ms: number; body: { Success?: { total_count: number; files: { path_hash: number[] }[] } } }> {
  const t = performance.now();
  const r = await fetch(`${server.url}${path}`, { headers: { authorization: auth } });
  const body = (await r.json()) as { Success?: { total_count: number; files: { path_hash: number[] }[] } };
  const ms = performance.now() - t;
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(body)}`);
  return { ms, body };
}

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
  for (let w = 0; w < 3; w++) await call(`/search_files/${OWNER}`);
  for (const shape of shapes) {
    const ours: number[] = [];
    let exact: boolean | null = null;
    let total = 0;
    for (let i = 0; i < REPS; i++) {
      const url = shape.browse ? `/browse/${OWNER}/${shape.browse}` : `/search_files/${OWNER}`;
      const { ms, body } = await call(`${url}?${shape.qs(i)}`);
      ours.push(ms);
      if (i === 0) total = body.Success!.total_count;
      if (i < 3 && !flags["no-naive"] && !shape.browse) {
        const n = naive(shape.qs(i));
        const page = body.Success!.files.map((f) => Buffer.from(f.path_hash).toString("hex"));
        const ok = n.total === body.Success!.total_count && JSON.stringify(n.page) === JSON.stringify(page);
        exact = (exact ?? true) && ok;
        if (!ok)
          console.error(
            `MISMATCH ${shape.name} (${shape.qs(i)}): ours ${body.Success!.total_count}, naive ${n.total}`,
          );
      }
    }
    let naiveTimes: number[] = [];
    if (!flags["no-naive"] && !shape.browse) {
      const start = performance.now();
      for (let i = 0; i < NAIVE_REPS && performance.now() - start < NAIVE_BUDGET_MS; i++) {
        const t = performance.now();
        naive(shape.qs(i));
        naiveTimes.push(performance.now() - t);
      }
    } else naiveTimes = [];
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
  for (let i = 0; i < REPS * 2; i++) {
    const t = performance.now();
    const r = await fetch(`${server.url}/list_folders/${OWNER}`, { headers: { authorization: auth } });
    await r.json();
    lf.push(performance.now() - t);
  }
  const listFolders = { p50: pct(lf, 50), p95: pct(lf, 95), p99: pct(lf, 99), n: lf.length };

  // Table.
  const lines = [
    `Search bench: ${FILES.toLocaleString("en")} files, ${FOLDERS} folders, ${REPS} requests per shape over HTTP (server process), naive in-process.`,
    "",
    "| shape | ours p50 | ours p95 | ours p99 | naive p50 | naive p95 | naive p99 | total_count | exact |",
    "|---|---:|---:|---:|---:|---:|---:|---:|:-:|",
    ...results.map(
      (r) =>
        `| ${r.shape} | ${fmt(r.ours.p50)} | ${fmt(r.ours.p95)} | ${fmt(r.ours.p99)} | ${fmt(r.naive?.p50 ?? Number.NaN)} | ${fmt(r.naive?.p95 ?? Number.NaN)} | ${fmt(r.naive?.p99 ?? Number.NaN)} | ${r.total_count.toLocaleString("en")} | ${r.exact === null ? "-" : r.exact ? "yes" : "NO"} |`,
    ),
    `| list_folders (${FOLDERS} folders) | ${fmt(listFolders.p50)} | ${fmt(listFolders.p95)} | ${fmt(listFolders.p99)} | | | | | |`,
    "",
    "Times in ms. Baseline: naive LIKE / ORDER BY / OFFSET SQL on `files` with (owner, col, path_hash) indexes.",
  ];
  console.log(`\n${lines.join("\n")}`);
  mkdirSync(join(import.meta.dir, "results"), { recursive: true });
  const out = join(
    import.meta.dir,
    "results",
    `search-${new Date().toISOString().replace(/[:.]/g, "-")}.json`,
  );
  writeFileSync(
    out,
    JSON.stringify(
      {
        files: FILES,
        folders: FOLDERS,
        reps: REPS,
        naive_reps: NAIVE_REPS,
        db: DB_PATH,
        bun: Bun.version,
        at: new Date().toISOString(),
        shapes: results,
        list_folders: listFolders,
      },
      null,
      2,
    ),
  );
  console.log(`\nwrote ${out}`);
} finally {
  await server.stop();
  sql.close();
}
