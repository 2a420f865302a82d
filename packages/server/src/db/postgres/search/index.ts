/**
 * @module server/db/postgres/search/index
 * `PgSearchIndex`: the search backend of the PostgreSQL metadata database. It reads `files` through
 * indexes that PostgreSQL keeps in the transaction of every write (src/db/postgres/schema.ts),
 * and counters that triggers keep in the same transaction:
 * - `q`: the match is the exact substring test of the SQLite index on the folded name
 *   `replace(search_name, 'ς', 'σ')` (names are stored NFC and lower-cased, `q` is folded the same
 *   way by `foldCase`). A `q` of 3 or more characters with at most `file_type` and a date range is
 *   counted and paged from the suffix index (suffixes.ts; with a date range, or for a
 *   page in creation order, through its b-tree by first 3 characters and date when that reads
 *   fewer rows); other pages walk the sort b-tree testing names first when that looks cheaper
 *   (`walkBudget`), for a bounded number of rows.
 *   With other filters, a `pg_trgm` GIN index on the folded name, queried with `LIKE '%q%'`
 *   (`%`, `_` and `\` in `q` escaped): the trigrams narrow the rows and every candidate is
 *   rechecked. Terms of 1 or 2 characters have no trigram: each row is tested with `strpos`.
 * - sort and page: one b-tree per sort key `(owner, key, path_hash)`, with nulls first for the
 *   nullable keys, so that a page is read in index order (ascending: nulls first, as SQLite's
 *   BINARY order; descending: the same index backwards); pages past the middle are read from
 *   the far end.
 * - browse: a b-tree on `(owner, folder_hash, dir, file_name, path_hash)`, `dir` being the
 *   expression `btrim(regexp_replace(relative_path, '[^/]*$', ''), '/')` (as `search_entries.dir`).
 * - `total`: with no filter or only `file_type`, the sum of the per-extension counters
 *   (`search_ext_counts`); with `file_type` and one range (size or date) and nothing else, the
 *   size or time histogram (`search_hist`, histogram.ts: the buckets inside the range
 *   from counters, the two boundary buckets counted in the b-tree); with `file_type`, a size range
 *   and a date range, the size x date grid (`search_grid`, grid.ts); a `q` of 3 or 4
 *   characters alone or with `file_type`, its gram counters (`search_grams`, per extension); a `q`
 *   the suffix index knows, its rows; a directory listing with no filter, the directory's
 *   recursive count less its sub-folders' (`search_dirs`); else `count(*)` of the same
 *   conditions. All in the same REPEATABLE READ snapshot as the page.
 * - page: the first and last keys of the page are read first (ORDER BY … LIMIT … OFFSET in the
 *   sort b-tree, index-only), then the rows between them and their folder labels in one range
 *   scan of the same b-tree (a nullable sort key: each row by primary key). A deep page (offset 1,000 or more) in size or time order
 *   with no filter but `file_type` and a range of the sort key starts at the histogram bucket
 *   that holds it, so at most one bucket of index entries is skipped; one in name order with no
 *   filter starts at the name fence before it (`search_names`, names.ts).
 * - sub-folders: the per-directory counters (`search_dirs`).
 * The counters and suffix rows are kept by triggers on `files` (drizzle/postgres/0003, 0004, 0005,
 * 0008, 0009; 0010 indexes the suffix rows again) in the writing transaction, so the index is never degraded; `rebuild` recounts them (`esync_search_recount()`),
 * re-creates the indexes from `files` (`REINDEX … CONCURRENTLY`) and refreshes the statistics.
 */
import type { SQL } from "bun";
import { directoryFilter, type RowFilter, searchFilter } from "../../../search/row-filter.ts";
import type { SearchQuery } from "../../../search/search.query.ts";
import type {
  DirectoryQuery,
  DirRow,
  HitRow,
  OrderKey,
  RebuildProgress,
  RebuildReport,
  SearchIndex,
  SearchIndexHealth,
  SearchOptions,
  SearchPage,
} from "../../../search/search-index.ts";
import type { PgDb } from "../client.ts";
import { countSizeDate } from "./grid.ts";
import { countBeyond, countRange, type HistKey, locate } from "./histogram.ts";
import { escapeLike, likeContains, NAME_SQL } from "./match.ts";
import { seekName } from "./names.ts";
import {
  countSuffixMatches,
  gramCounts,
  readsInCreationOrder,
  type SuffixRoute,
  suffixable,
  suffixCountAndPage,
  suffixPage,
  suffixRoute,
} from "./suffixes.ts";

/** The directory of a file in its folder (`search_entries.dir` of the SQLite index). */
export const DIR_SQL = "btrim(regexp_replace(f.relative_path, '[^/]*$', ''), '/')";

const ORDER_SQL: Record<OrderKey, { col: string; nullable: boolean }> = {
  file_name: { col: "f.file_name", nullable: true },
  size_bytes: { col: "f.size_bytes", nullable: false },
  created_at: { col: "f.created_at", nullable: false },
  updated_at: { col: "f.updated_at", nullable: false },
  extension: { col: "f.ext", nullable: true },
  uploaded_by: { col: "f.uploaded_by", nullable: true },
};

/**
 * The ORDER BY of a page in `order` (`descending` or not): the sort key (its NULLs first in
 * ascending order), then `path_hash` and `folder_hash` in the same direction, on `files AS f`.
 */
function sortSql(order: { col: string; nullable: boolean }, descending: boolean): string {
  const dir = descending ? "DESC" : "ASC";
  const nulls = order.nullable ? (descending ? " NULLS LAST" : " NULLS FIRST") : "";
  return `${order.col} ${dir}${nulls}, f.path_hash ${dir}, f.folder_hash ${dir}`;
}

/** From this offset on, a page in a histogram key's order starts at its bucket (`locate`). */
const LOCATE_MIN_OFFSET = 1000;

/** What reading and testing one `files` row costs, in index entries read index-only (about). */
const HEAP_ROW_COST = 20;

/** Files of `owner` whose folded name holds the first 3 or 4 characters of `q` (gram counters). */
async function gramFiles(tx: Pick<SQL, "unsafe">, owner: string, q: string): Promise<number> {
  return (await gramCounts(tx, owner, q)).first4;
}

/**
 * Most files holding the first 3 or 4 characters of a `q` without a date range for which its count
 * and its page in creation order come from one read of the suffix rows (every match held at
 * once); above it a count then a walk of the sort b-tree is cheaper for such a dense term. With a
 * date range the matches are few for the entries read, and one read is always taken.
 */
const ONE_READ_MAX_MATCHES = 60_000;

/** How a plan names the suffix rows read by `route`. */
function suffixIndexName(route: SuffixRoute): string {
  return route === "prefix_dates" ? "suffix index (first 3 characters and date)" : "suffix index";
}

/** Most rows of a sort b-tree a page of a `q` walks before reading the suffix rows instead. */
const WALK_MAX_ROWS = 6000;

/** Indexes `rebuild` re-creates. */
const SEARCH_INDEXES = [
  "files_search_fold_trgm",
  "files_by_file_name",
  "files_by_size",
  "files_by_created",
  "files_by_updated",
  "files_by_uploader",
  "files_by_ext",
  "files_by_dir",
  // Filled by the recount in the other b-tree's order: re-created packed.
  "search_suffixes_by_created",
];

/** A page request in sort order. */
interface Page {
  sortBy: OrderKey;
  descending: boolean;
  offset: number;
  limit: number;
}

/** A row of the page query. */
interface PgHit {
  folder_hash: string;
  folder_label: string;
  path_hash: Buffer;
  salted_hash: Buffer;
  size_bytes: number | bigint | string;
  revision_seq: number | bigint | string;
  revision_id: Buffer;
  encrypted_path: Buffer;
  file_name: string | null;
  relative_path: string | null;
  store_hash: string | null;
  chunk_hashes: string | null;
  created_at: number | bigint | string;
  updated_at: number | bigint | string;
  uploaded_by: string | null;
}

/** The search index of the PostgreSQL metadata database (see the module comment). */
export class PgSearchIndex implements SearchIndex {
  readonly kind = "postgres";

  /**
   * `locateFromOffset`: from this offset on, a page in a histogram key's order starts at the
   * bucket that holds it, and one in name order at its name fence (default 1,000; tests lower it
   * to reach those plans on small data).
   * `walkRows`: how many rows of the sort b-tree a page of a `q` the suffix rows know walks before
   * reading the suffix rows (0: read them at once); default `walkBudget` (tests set it).
   * `suffixRoute`: the b-tree a `q` with a date range, and a page in creation order, read their
   * suffix rows by; default `suffixRoute()`'s and `readsInCreationOrder()`'s choices (tests set it).
   */
  constructor(
    private readonly db: PgDb,
    private readonly opts: { locateFromOffset?: number; walkRows?: number; suffixRoute?: SuffixRoute } = {},
  ) {}

  private get sql(): SQL {
    return this.db.$client;
  }

  /** The WHERE clause (on `files AS f`) and its parameters `$1…`. */
  private where(owner: string, f: RowFilter): { sql: string; params: unknown[] } {
    const params: unknown[] = [owner];
    const p = (v: unknown) => {
      params.push(v);
      return `$${params.length}`;
    };
    const where = ["f.owner = $1"];
    if (f.folderHash !== null) where.push(`f.folder_hash = ${p(f.folderHash)}`);
    if (f.dir !== null) where.push("f.relative_path IS NOT NULL", `${DIR_SQL} = ${p(f.dir)}`);
    if (f.q !== null) {
      if ([...f.q].length >= 3) where.push(`${NAME_SQL} LIKE ${p(likeContains(f.q))}`);
      // No trigram to look up: test each row, on the stored name itself when q has no σ (then
      // q occurs in the folded name exactly where it occurs in the stored one).
      else where.push(`strpos(${f.q.includes("σ") ? NAME_SQL : "f.search_name"}, ${p(f.q)}) > 0`);
    }
    if (f.exts !== null) where.push(`f.ext IN (${f.exts.map((e) => p(e)).join(", ")})`);
    if (f.size) where.push(`f.size_bytes BETWEEN ${p(f.size[0])} AND ${p(f.size[1])}`);
    if (f.created) where.push(`f.created_at BETWEEN ${p(f.created[0])} AND ${p(f.created[1])}`);
    if (f.uploader !== null)
      where.push(f.uploader.by === null ? "f.uploaded_by IS NULL" : `f.uploaded_by = ${p(f.uploader.by)}`);
    return { sql: where.join(" AND "), params };
  }

  /**
   * Exact total and one page of the files of `owner` that pass `f`, in one snapshot; `exact`
   * counts and pages in `files` only (no counters).
   */
  private async run(
    owner: string,
    f: RowFilter,
    page: Page,
    plan: string,
    exact: boolean,
  ): Promise<SearchPage> {
    const empty = (f.size && f.size[0] > f.size[1]) || (f.created && f.created[0] > f.created[1]);
    if (empty) return { total: 0, hits: [], plan: ["empty range"], degraded: null };
    const w = this.where(owner, f);
    // Only file_type and ranges: the counters and histograms know these files.
    const bare = !exact && f.q === null && f.folderHash === null && f.uploader === null && f.dir === null;
    const counted = bare && f.size === null && f.created === null;
    // The one key with a range filter, when there is exactly one.
    const ranged: HistKey | null =
      !bare || (f.size !== null && f.created !== null)
        ? null
        : f.size !== null
          ? "size_bytes"
          : f.created !== null
            ? "created_at"
            : null;
    const range = ranged === "size_bytes" ? f.size : ranged === "created_at" ? f.created : null;
    // Only a q of 3 or 4 characters (and file_type): its gram counters are the total.
    const qChars = f.q === null ? 0 : [...f.q].length;
    const gram =
      !exact &&
      (qChars === 3 || qChars === 4) &&
      f.size === null &&
      f.created === null &&
      f.folderHash === null &&
      f.uploader === null &&
      f.dir === null;
    // A q of 3 or more characters with at most file_type and a date range: the suffix rows know
    // these files (count and page).
    const suffixes = !exact && suffixable(f);
    return this.sql.begin("ISOLATION LEVEL REPEATABLE READ READ ONLY", async (tx) => {
      const route: SuffixRoute =
        !suffixes || f.created === null
          ? "term"
          : (this.opts.suffixRoute ?? (await suffixRoute(tx, owner, f)));
      const bySuffixes = suffixIndexName(route);
      if (
        suffixes &&
        !gram &&
        page.sortBy === "created_at" &&
        page.limit > 0 &&
        this.opts.walkRows === undefined &&
        (f.created !== null || (await gramFiles(tx, owner, f.q ?? "")) <= ONE_READ_MAX_MATCHES)
      ) {
        // Counted from the suffix rows: the page in creation order comes from the same read.
        const r = await suffixCountAndPage<PgHit>(
          tx,
          owner,
          f,
          route,
          HIT_COLUMNS,
          sortSql(ORDER_SQL.created_at, page.descending),
          page.descending,
          page.offset,
          page.limit,
        );
        return {
          total: r.total,
          hits: r.rows.map(hitOf),
          plan: [`count: ${bySuffixes}`, `total ${r.total}`, `page: ${bySuffixes} by created_at, same read`],
          degraded: null,
        };
      }
      let total: number;
      let how: string;
      // A size range with a date range, nothing else but file_type: the size x date grid.
      const gridded =
        bare && f.size !== null && f.created !== null
          ? await countSizeDate(tx, owner, f.exts, f.size, f.created)
          : null;
      if (counted) {
        const [c] = await tx.unsafe(
          `SELECT coalesce(sum(n), 0) AS n FROM search_ext_counts WHERE owner = $1${
            f.exts ? ` AND ext IN (${f.exts.map((_, i) => `$${i + 2}`).join(", ")})` : ""
          }`,
          [owner, ...(f.exts ?? [])],
        );
        total = Number(c?.n ?? 0);
        how = "extension counters";
      } else if (gram) {
        const [c] = await tx.unsafe(
          `SELECT coalesce(sum(n), 0) AS n FROM search_grams WHERE owner = $1 AND gram = $2${
            f.exts ? ` AND ext IN (${f.exts.map((_, i) => `$${i + 3}`).join(", ")})` : ""
          }`,
          [owner, f.q, ...(f.exts ?? [])],
        );
        total = Number(c?.n ?? 0);
        how = "gram counters";
      } else if (suffixes) {
        total = await countSuffixMatches(tx, owner, f, route);
        how = bySuffixes;
      } else if (ranged !== null && range !== null) {
        total = await countRange(tx, owner, ranged, f.exts, range[0], range[1]);
        how = `${ranged} histogram`;
      } else if (gridded !== null) {
        total = gridded;
        how = "size x date grid";
      } else if (
        !exact &&
        f.folderHash !== null &&
        f.dir !== null &&
        // search_dirs has no row for a folder's root, nor paths with an empty first or last segment.
        f.dir !== "" &&
        !f.dir.startsWith("/") &&
        !f.dir.endsWith("/") &&
        f.q === null &&
        f.exts === null &&
        f.uploader === null &&
        f.size === null &&
        f.created === null
      ) {
        // The files directly in a directory: its recursive count less its sub-folders' counts.
        const prefix = `${f.dir}/`;
        const [c] = await tx.unsafe(
          `SELECT (coalesce((SELECT sum(file_count) FROM search_dirs WHERE owner = $1 AND folder_hash = $2 AND path = $3), 0)
             - coalesce((SELECT sum(file_count) FROM search_dirs WHERE owner = $1 AND folder_hash = $2
                 AND path LIKE $4 AND strpos(substr(path, $5), '/') = 0), 0))::float8 AS n`,
          [owner, f.folderHash, f.dir, `${escapeLike(prefix)}%`, [...prefix].length + 1],
        );
        total = Number(c?.n ?? 0);
        how = "directory counters";
      } else {
        const [c] = await tx.unsafe(`SELECT count(*) AS n FROM files AS f WHERE ${w.sql}`, w.params);
        total = Number(c?.n ?? 0);
        how = plan;
      }
      const steps = [`count: ${how}`, `total ${total}`];
      if (page.offset >= total || page.limit === 0) return { total, hits: [], plan: steps, degraded: null };
      const end = Math.min(page.offset + page.limit, total);
      const order = ORDER_SQL[page.sortBy];
      // A deep page in a histogram key's order, with no filter but file_type and a range of that
      // key: start at the fine bucket that holds it.
      const key = page.sortBy;
      if (
        bare &&
        page.offset >= (this.opts.locateFromOffset ?? LOCATE_MIN_OFFSET) &&
        (key === "size_bytes" || key === "created_at" || key === "updated_at") &&
        (ranged === null ? counted : ranged === key)
      ) {
        const before = range
          ? await countBeyond(tx, owner, key, f.exts, range[page.descending ? 1 : 0], page.descending)
          : 0;
        const at = await locate(tx, owner, key, f.exts, before + page.offset, page.descending);
        if (at !== null) {
          const pw = this.where(owner, { ...f, size: null, created: null });
          const hits = await pageRows(
            tx,
            `${pw.sql} AND ${order.col} ${page.descending ? "<=" : ">="} $${pw.params.length + 1}`,
            [...pw.params, at.from],
            order,
            page.descending,
            end - page.offset,
            at.skip,
          );
          steps.push(`page: ${key} histogram, ${key} from ${at.from}, skipping ${at.skip}`);
          return { total, hits, plan: steps, degraded: null };
        }
      }
      // A deep page in name order with no filter: start at the name fence before it.
      if (
        counted &&
        f.exts === null &&
        key === "file_name" &&
        page.offset >= (this.opts.locateFromOffset ?? LOCATE_MIN_OFFSET)
      ) {
        // The page's first position in ascending order (descending: read ascending, then reverse).
        const first = page.descending ? total - end : page.offset;
        const seek = await seekName(tx, owner, total, first);
        if (seek !== null) {
          const n = w.params.length;
          const hits = await pageRows(
            tx,
            `${w.sql} AND (f.file_name, f.path_hash, f.folder_hash) >= ($${n + 1}, $${n + 2}, $${n + 3})`,
            [...w.params, seek.from.fileName, seek.from.pathHash, seek.from.folderHash],
            order,
            false,
            end - page.offset,
            seek.skip,
          );
          if (page.descending) hits.reverse();
          steps.push(`page: name fences, from ${JSON.stringify(seek.from.fileName)}, skipping ${seek.skip}`);
          return { total, hits, plan: steps, degraded: null };
        }
      }
      if (suffixes) {
        // A q the suffix rows know: walk the sort b-tree testing names for at most a budget of
        // rows when that looks cheaper, else (or when the budget runs out: names and dates can be
        // correlated) read the page from the suffix rows.
        const sort = sortSql(order, page.descending);
        const byCreated = key === "created_at";
        // A page in creation order is read from the suffix rows in that order, without a walk,
        // when that looks cheap.
        const inOrder =
          byCreated &&
          (this.opts.suffixRoute === undefined
            ? await readsInCreationOrder(tx, owner, f, end, total)
            : this.opts.suffixRoute === "prefix_dates");
        const budget = inOrder
          ? 0
          : (this.opts.walkRows ?? (await this.walkBudget(tx, owner, f.q ?? "", page, total)));
        if (budget > 0) {
          const hits = await walkPage(tx, this.where(owner, { ...f, q: null }), f.q ?? "", sort, {
            budget,
            skip: page.offset,
            limit: end - page.offset,
          });
          if (hits.length === end - page.offset) {
            steps.push(`page: ${page.sortBy} b-tree, names tested in at most ${budget} rows`);
            return { total, hits: hits.map(hitOf), plan: steps, degraded: null };
          }
          steps.push(`page: ${page.sortBy} b-tree, ${budget} rows gave ${hits.length} of the page`);
        }
        const pageRoute: SuffixRoute = inOrder ? "prefix_dates" : route;
        const hits = await suffixPage<PgHit>(
          tx,
          owner,
          f,
          pageRoute,
          HIT_COLUMNS,
          sort,
          byCreated,
          page.descending,
          page.offset,
          end - page.offset,
        );
        steps.push(
          `page: ${suffixIndexName(pageRoute)}${byCreated ? " by created_at" : ", every match sorted"}`,
        );
        return { total, hits: hits.map(hitOf), plan: steps, degraded: null };
      }
      // Past the middle, read the page backwards from the far end (fewer index entries skipped).
      const fromEnd = page.offset > total - end;
      const skip = fromEnd ? total - end : page.offset;
      const hits = await pageRows(
        tx,
        w.sql,
        w.params,
        order,
        page.descending !== fromEnd,
        end - page.offset,
        skip,
      );
      if (fromEnd) hits.reverse();
      steps.push(`page: ${page.sortBy} b-tree${fromEnd ? " from the far end" : ""}, skipping ${skip}`);
      return { total, hits, plan: steps, degraded: null };
    });
  }

  /**
   * How many rows of the sort b-tree a page of a suffix-index query (`suffixable`) may walk,
   * testing each name in `files`, before it is read from the suffix rows instead; 0 = read it
   * from the suffix rows at once. With matches spread evenly, the walk reaches the page's last
   * match after about (offset + limit) × files / total rows; the suffix rows read about as many
   * entries as files hold the first 3 or 4 characters of q (its gram counters), plus one `files`
   * row per match (creation order: per row up to the page's end; other orders: every match). A
   * `files` row costs about `HEAP_ROW_COST` index entries. The budget is three times the even
   * estimate, at most `WALK_MAX_ROWS`.
   */
  private async walkBudget(
    tx: Pick<SQL, "unsafe">,
    owner: string,
    q: string,
    page: Page,
    total: number,
  ): Promise<number> {
    const [c] = await tx.unsafe(
      "SELECT coalesce(sum(n), 0) AS files FROM search_ext_counts WHERE owner = $1",
      [owner],
    );
    const files = Number(c?.files ?? 0);
    const scan = await gramFiles(tx, owner, q);
    const end = Math.min(page.offset + page.limit, total);
    const reached = Math.ceil((end * files) / Math.max(total, 1));
    const read = page.sortBy === "created_at" ? end : total;
    const budget = Math.min(WALK_MAX_ROWS, 3 * reached + 100);
    return HEAP_ROW_COST * reached < scan + HEAP_ROW_COST * read && reached <= WALK_MAX_ROWS / 3 ? budget : 0;
  }

  search(owner: string, q: SearchQuery, opts?: SearchOptions): Promise<SearchPage> {
    if (q.nothing)
      return Promise.resolve({
        total: 0,
        hits: [],
        plan: ["matches nothing (profile rule)"],
        degraded: null,
      });
    const how =
      q.q === null ? "b-tree" : [...q.q].length >= 3 ? "trigram GIN and recheck" : "short term, rows checked";
    return this.run(owner, searchFilter(q), q, how, opts?.exact === true);
  }

  directory(owner: string, folderHash: string, q: DirectoryQuery): Promise<SearchPage> {
    return this.run(owner, directoryFilter(folderHash, q), q, "dir b-tree", false);
  }

  async subdirectories(owner: string, folderHash: string, path: string): Promise<DirRow[]> {
    const prefix = path === "" ? "" : `${path}/`;
    const rows = (await this.sql.unsafe(
      `SELECT path, file_count, total_bytes FROM search_dirs
       WHERE owner = $1 AND folder_hash = $2 AND file_count > 0 AND path LIKE $3
         AND strpos(substr(path, $4), '/') = 0`,
      [owner, folderHash, `${escapeLike(prefix)}%`, prefix.length + 1],
    )) as { path: string; file_count: number | bigint | string; total_bytes: number | bigint | string }[];
    return rows
      .filter((r) => r.path.length > prefix.length)
      .map((r) => ({ path: r.path, fileCount: Number(r.file_count), totalBytes: Number(r.total_bytes) }));
  }

  health(): Promise<SearchIndexHealth> {
    return Promise.resolve({ state: "ok", reason: null, since: null });
  }

  /**
   * Recounts the counters and the suffix rows (writers to `files` wait for that transaction),
   * re-creates the search indexes of `files` one by one (`REINDEX INDEX CONCURRENTLY`), runs
   * ANALYZE on `files` and VACUUM ANALYZE on the suffix and gram tables.
   */
  async rebuild(onProgress: (p: RebuildProgress) => void = () => {}): Promise<RebuildReport> {
    const started = performance.now();
    const [c] = await this.sql`SELECT count(*) AS n FROM files`;
    const total = Number(c?.n ?? 0);
    onProgress({ done: 0, total });
    const present = new Set(
      (
        (await this
          .sql`SELECT indexname FROM pg_indexes WHERE tablename IN ('files', 'search_suffixes')`) as {
          indexname: string;
        }[]
      ).map((r) => r.indexname),
    );
    await this.sql.begin(async (tx) => {
      // Writers wait for the recount instead of changing counters it is rebuilding.
      await tx`LOCK TABLE files IN SHARE MODE`;
      await tx`SELECT esync_search_recount()`;
    });
    for (const name of SEARCH_INDEXES.filter((n) => present.has(n)))
      await this.sql.unsafe(`REINDEX INDEX CONCURRENTLY "${name}"`);
    await this.sql`ANALYZE files`;
    // The suffix rows were rewritten: index-only scans need their visibility map.
    await this.sql`VACUUM ANALYZE search_suffixes, search_files, search_grams`;
    onProgress({ done: total, total });
    return { files: total, seconds: (performance.now() - started) / 1000, health: await this.health() };
  }
}

/**
 * The rows at positions `skip … skip + limit - 1` of the files passing `where` (on `files AS f`,
 * parameters `params`) sorted by `order` then `path_hash` and `folder_hash`: the page's first and
 * last keys read in the sort b-tree (index-only), then the rows between those keys in one range
 * scan of the same b-tree. A nullable order has no row comparison for its NULLs: its page's keys
 * are read first, then each row by primary key.
 */
async function pageRows(
  tx: Pick<SQL, "unsafe">,
  where: string,
  params: unknown[],
  order: { col: string; nullable: boolean },
  descending: boolean,
  limit: number,
  skip: number,
): Promise<HitRow[]> {
  const sort = sortSql(order, descending);
  const n = params.length;
  if (!order.nullable) {
    const keys = (await tx.unsafe(
      `SELECT ${order.col} AS k, f.path_hash, f.folder_hash FROM files AS f WHERE ${where}
       ORDER BY ${sort} LIMIT $${n + 1} OFFSET $${n + 2}`,
      [...params, limit, skip],
    )) as { k: unknown; path_hash: unknown; folder_hash: unknown }[];
    const first = keys[0];
    const last = keys[keys.length - 1];
    if (first === undefined || last === undefined) return [];
    const [lo, hi] = descending ? [last, first] : [first, last];
    const rows = (await tx.unsafe(
      `SELECT ${HIT_COLUMNS}
       FROM files AS f
       LEFT JOIN folders AS fo ON fo.owner = f.owner AND fo.folder_hash = f.folder_hash
       WHERE ${where} AND ${order.col} BETWEEN $${n + 1} AND $${n + 4}
         AND (${order.col}, f.path_hash, f.folder_hash) >= ($${n + 1}, $${n + 2}, $${n + 3})
         AND (${order.col}, f.path_hash, f.folder_hash) <= ($${n + 4}, $${n + 5}, $${n + 6})
       ORDER BY ${sort}`,
      [...params, lo.k, lo.path_hash, lo.folder_hash, hi.k, hi.path_hash, hi.folder_hash],
    )) as PgHit[];
    return rows.map(hitOf);
  }
  const rows = (await tx.unsafe(
    `WITH page AS MATERIALIZED (
       SELECT f.folder_hash, f.path_hash, row_number() OVER (ORDER BY ${sort.replace(order.col, "f.k")}) AS i
       FROM (SELECT f.folder_hash, f.path_hash, ${order.col} AS k FROM files AS f WHERE ${where}
         ORDER BY ${sort} LIMIT $${n + 1} OFFSET $${n + 2}) AS f)
     SELECT ${HIT_COLUMNS}
     FROM page AS p
     JOIN files AS f ON f.owner = $1 AND f.folder_hash = p.folder_hash AND f.path_hash = p.path_hash
     LEFT JOIN folders AS fo ON fo.owner = f.owner AND fo.folder_hash = f.folder_hash
     ORDER BY p.i`,
    [...params, limit, skip],
  )) as PgHit[];
  return rows.map(hitOf);
}

/**
 * The rows at positions `skip … skip + limit - 1` of the files passing `w` (on `files AS f`) whose
 * folded name contains `q`, in the order `sort`, looking only at the first `budget` rows of `w` in
 * that order: fewer rows than `limit` when the budget ran out first.
 */
async function walkPage(
  tx: Pick<SQL, "unsafe">,
  w: { sql: string; params: unknown[] },
  q: string,
  sort: string,
  o: { budget: number; skip: number; limit: number },
): Promise<PgHit[]> {
  const n = w.params.length;
  return (await tx.unsafe(
    `SELECT ${HIT_COLUMNS}
     FROM (SELECT f.* FROM files AS f WHERE ${w.sql} ORDER BY ${sort} LIMIT $${n + 1}) AS f
     LEFT JOIN folders AS fo ON fo.owner = f.owner AND fo.folder_hash = f.folder_hash
     WHERE ${NAME_SQL} LIKE $${n + 2}
     ORDER BY ${sort} OFFSET $${n + 3} LIMIT $${n + 4}`,
    [...w.params, o.budget, likeContains(q), o.skip, o.limit],
  )) as PgHit[];
}

/** The columns of a hit, on `files AS f` left-joined to `folders AS fo`. */
const HIT_COLUMNS = `f.folder_hash, coalesce(fo.label, '') AS folder_label, f.path_hash, f.salted_hash,
  f.size_bytes, f.revision_seq, f.revision_id, f.encrypted_path, f.file_name, f.relative_path, f.store_hash,
  f.chunk_hashes, f.created_at, f.updated_at, f.uploaded_by`;

function hitOf(r: PgHit): HitRow {
  return {
    folderHash: r.folder_hash,
    folderLabel: r.folder_label,
    pathHash: r.path_hash,
    saltedHash: r.salted_hash,
    sizeBytes: Number(r.size_bytes),
    revisionSeq: Number(r.revision_seq),
    revisionId: r.revision_id,
    encryptedPath: r.encrypted_path,
    fileName: r.file_name,
    relativePath: r.relative_path,
    storeHash: r.store_hash,
    chunkHashes: r.chunk_hashes,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    uploadedBy: r.uploaded_by,
  };
}
