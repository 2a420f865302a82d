/**
 * @module server/db/sqlite/search/planner
 * The query planning of the SQLite search index (`SqliteSearchIndex`) for `GET /search_files`
 * (docs/protocol.md#search, #open-rules): every filter combined with AND, sort by one column with
 * `path_hash` as tiebreaker, exact `total_count`, offset paging, fast on accounts of a million
 * files. It decides which page keys and total answer a query; the index reads the rows.
 *
 * Planning. The count comes first and is exact; the page plan then knows the selectivity.
 * - No `q`: totals come from the `search_stats` histograms (`Histogram`): no filter, `file_type`
 *   alone, or one range (with or without `file_type`) cost a few small queries. Two ranges (size
 *   and date) are counted from the size × date grid (`gridCount`), or by scanning the smaller
 *   index range when it is small.
 * - `q` of 3 or 4 characters, alone or with whole file_type categories (no range): the gram table
 *   (`search_grams`, per owner, class and gram), at most 8 lookups.
 * - `q` of 3+ characters: the trigram FTS index. A rare term (≤ `rareHits` hits) alone is counted
 *   by its hits; a common one alone in the FTS index. With other filters, the cheapest of:
 *   checking `q` row by row on the FTS hits, the other filters' index range, or all the owner's
 *   rows (the indexes hold `name`, so that check reads no table row); or, with whole categories
 *   and/or a date window, counting the FTS hits inside the id partitions of those classes and the
 *   window's whole date buckets (`partitions.ts`), plus the window's edges in the created_at index.
 * - `q` of 1–2 characters: no index can help; the other filters' candidates or all the owner's
 *   rows are scanned with `instr` in a covering index.
 * - Page: walk the sort index (`path_hash` is its key's last column; ext, size, created and name
 *   are in it, so every filter is decided in the index), starting at a histogram-found bucket for
 *   deep offsets where the filters allow (sizes and dates: `Histogram`; names over all rows:
 *   `seekName`), and from the far end when the offset is past the middle; or, when the walk would
 *   visit more rows, sort the candidates (FTS hits, an index range).
 */

import type { SearchQuery, SortColumn } from "../../../search/search.query.ts";
import { HISTOGRAMS, type HistogramColumn, MAX_VALUE, MIN_VALUE } from "./buckets.ts";
import { gridCount, Histogram } from "./histogram.ts";
import { seekName } from "./name-histogram.ts";
import { classesOf, PARTITION, splitWindow } from "./partitions.ts";
import type { Access, Cond, PageKey, SearchRepository } from "./repository.ts";

/** Thresholds of the planner (defaults in `DEFAULT_TUNING`); tests lower them to reach every path on small data. */
export interface SearchTuning {
  /** FTS terms with at most this many hits are answered from the hits alone. */
  rareHits: number;
  /** Offsets (from the nearer end) above this seek with the histogram before walking. */
  seekMinOffset: number;
  /** Size + date searches whose smaller index range has more rows than this count with the grid. */
  gridMinRows: number;
  /** Count `q` over the id partitions when cheaper (`cost`), whenever possible, or never. */
  partitions: "cost" | "always" | "never";
}

/** The planner thresholds used in production. */
export const DEFAULT_TUNING: SearchTuning = {
  rareHits: 5000,
  seekMinOffset: 1000,
  gridMinRows: 20_000,
  partitions: "cost",
};

/**
 * Cost model, in estimated microseconds, measured at 1M files (bench/search.ts): per row, walking
 * an index entry (testing its columns), looking a row up by id, reading an FTS hit, feeding a
 * candidate to a sort (with the lookup of its sort key); per entry of a trigram's FTS doclist
 * read by a phrase inside its id range (`ftsDoc`) and outside it (`ftsDocSkipped`: a range does
 * not skip all of a doclist); per trigram of a phrase in each FTS query on an id range (`ftsToken`).
 */
const COST = {
  index: 0.1,
  lookup: 2,
  fts: 0.08,
  candidate: 2,
  ftsDoc: 0.04,
  ftsDocSkipped: 0.01,
  ftsToken: 50,
} as const;

/** An inclusive range filter on a histogram column. */
interface Range {
  col: HistogramColumn;
  lo: number;
  hi: number;
}

/** A count of `q` over id partitions (`partitionPlan`). */
interface PartitionPlan {
  classes: readonly number[];
  split: ReturnType<typeof splitWindow>;
  cost: number;
  what: string;
}

/** The filters of a query in planning form. */
interface Filters {
  exts: readonly string[] | null;
  ranges: Range[];
  /** Case-folded `q` and whether the FTS index can answer it (3+ characters). */
  text: { q: string; fts: boolean } | null;
  /** True when a range is empty (min > max): nothing matches. */
  empty: boolean;
}

/** A way to reach candidate rows: how, and how many rows it visits. */
interface Route {
  access: Access;
  conds: Cond[];
  rows: number;
  what: string;
}

/** Indexes that hold `name`, so that `q` is checked without reading the table. */
const NAME_COVERED: ReadonlySet<Access> = new Set<Access>([
  "created_at",
  "updated_at",
  "size_bytes",
  "file_name",
  "ext",
]);

/** Estimated µs to visit a route's rows and decide every filter on them (`q` too when `text`). */
function visitCost(r: Route, text: boolean): number {
  if (r.access === "fts") return r.rows * (COST.fts + COST.lookup);
  return r.rows * (COST.index + (text && !NAME_COVERED.has(r.access) ? COST.lookup : 0));
}

/** What a search did: its total, its page and the plan steps chosen (for tests and the bench). */
export interface SearchOutcome {
  total: number;
  keys: PageKey[];
  plan: string[];
}

function filtersOf(q: SearchQuery): Filters {
  const ranges: Range[] = [];
  if (q.sizeMin !== null || q.sizeMax !== null)
    ranges.push({ col: "size_bytes", lo: q.sizeMin ?? 0, hi: q.sizeMax ?? MAX_VALUE });
  if (q.dateFrom !== null || q.dateTo !== null)
    ranges.push({ col: "created_at", lo: q.dateFrom ?? MIN_VALUE, hi: q.dateTo ?? MAX_VALUE });
  return {
    exts: q.exts,
    ranges,
    text: q.q === null ? null : { q: q.q, fts: [...q.q].length >= 3 },
    empty: ranges.some((r) => r.lo > r.hi),
  };
}

function baseConds(f: Filters): Cond[] {
  const conds: Cond[] = f.ranges.map((r) => ({ kind: "range", ...r }));
  if (f.exts) conds.unshift({ kind: "exts", exts: f.exts });
  return conds;
}

/** A query the planner answers: no `uploaded_by` or `folder_hash` filter, sorted by a column. */
type PlannedQuery = SearchQuery & { sortBy: SortColumn; uploader: null; folderHash: null };

function isPlanned(q: SearchQuery): q is PlannedQuery {
  return q.uploader === null && q.folderHash === null && q.sortBy !== "uploaded_by";
}

/**
 * Plans and counts searches on the SQLite index tables, inside the caller's read snapshot
 * (`SearchRepository.snapshot`).
 */
export class SqlitePlanner {
  private readonly tuning: SearchTuning;

  constructor(
    private readonly repo: SearchRepository,
    tuning: Partial<SearchTuning> = {},
  ) {
    this.tuning = { ...DEFAULT_TUNING, ...tuning };
  }

  /** The total and page keys of `query` over the index rows of owner id `oid`. */
  outcome(oid: number, query: SearchQuery): SearchOutcome {
    return isPlanned(query) ? this.plan(oid, query) : this.scan(oid, query);
  }

  /**
   * The exact route of the filters and orders the planner's counters do not cover (`uploaded_by`,
   * `folder_hash`, sorting by `uploaded_by`): count and page every condition over one index range
   * (the folder's rows in the browse index, else the sort column's index, else all of the
   * owner's rows), checking `q` with `instr` and the uploader on the `files` row.
   */
  private scan(oid: number, query: SearchQuery): SearchOutcome {
    const f = filtersOf(query);
    if (f.empty) return { total: 0, keys: [], plan: ["empty range"] };
    const conds: Cond[] = baseConds(f);
    if (f.text) conds.push({ kind: "substr", q: f.text.q });
    if (query.folderHash !== null) conds.push({ kind: "folder", folderHash: query.folderHash });
    if (query.uploader !== null) conds.push({ kind: "uploader", by: query.uploader.by });
    const access: Access =
      query.folderHash !== null ? "dir" : query.sortBy === "uploaded_by" ? "ext" : query.sortBy;
    const total = this.repo.count(oid, access, conds);
    const keys =
      query.offset >= total
        ? []
        : this.repo.page(oid, access, conds, query.sortBy, query.descending, query.offset, query.limit);
    return { total, keys, plan: [`scan ${access} index with every filter`, `total ${total}`] };
  }

  private plan(oid: number, query: PlannedQuery): SearchOutcome {
    const f = filtersOf(query);
    const plan: string[] = [];
    if (f.empty) return { total: 0, keys: [], plan: ["empty range"] };
    const nAll = this.repo.total(oid, null);
    const base = baseConds(f);
    const routes = this.baseRoutes(oid, f, nAll);
    let total: number;
    let candidates: Route | null;
    if (f.text === null) {
      total = this.countBase(oid, f, nAll, routes, plan);
      candidates = routes[0] ?? null;
    } else {
      const r = this.countText(oid, f, f.text, nAll, base, routes, plan);
      total = r.total;
      candidates = r.candidates;
    }
    plan.push(`total ${total}`);
    const keys = this.page(oid, query, f, nAll, total, candidates, plan);
    return { total, keys, plan };
  }

  /**
   * Ways to reach the rows the non-`q` filters allow, cheapest first: an index range of each
   * range filter, or the ext index, or else all rows. Row counts are exact, from the histograms.
   */
  private baseRoutes(oid: number, f: Filters, nAll: number): Route[] {
    const base = baseConds(f);
    const routes: Route[] = [];
    for (const r of f.ranges) {
      const n = new Histogram(this.repo, oid, r.col, null).count(r.lo, r.hi);
      routes.push({ access: r.col, conds: base, rows: n, what: `${r.col} index range (${n} rows)` });
    }
    if (f.exts) {
      const date = f.ranges.find((r) => r.col === "created_at");
      const n = date
        ? new Histogram(this.repo, oid, "created_at", f.exts).count(date.lo, date.hi)
        : this.repo.total(oid, f.exts);
      routes.push({ access: "ext", conds: base, rows: n, what: `ext index (${n} rows)` });
    }
    // The ext index holds every row of the owner and every filtered column: the full scan.
    if (routes.length === 0)
      routes.push({ access: "ext", conds: base, rows: nAll, what: `all ${nAll} rows` });
    return routes.sort((a, b) => a.rows - b.rows);
  }

  /** Exact count without `q`. */
  private countBase(oid: number, f: Filters, nAll: number, routes: Route[], plan: string[]): number {
    const [first, second] = f.ranges;
    if (!first) {
      plan.push("count: histogram total");
      return f.exts ? this.repo.total(oid, f.exts) : nAll;
    }
    if (!second) {
      plan.push(`count: histogram of ${first.col}`);
      return new Histogram(this.repo, oid, first.col, f.exts).count(first.lo, first.hi);
    }
    // Two ranges (size and date): scan the smaller index range when it is small, else sum the
    // size × date grid and scan only the edges its bounds cut.
    const best = routes[0]!;
    if (best.rows <= this.tuning.gridMinRows) {
      plan.push(`count: scan ${best.what}`);
      return this.repo.count(oid, best.access, best.conds);
    }
    const size = f.ranges.find((r) => r.col === "size_bytes");
    const date = f.ranges.find((r) => r.col === "created_at");
    if (!size || !date) throw new Error("two range filters must be size_bytes and created_at");
    plan.push("count: size × date grid");
    return gridCount(this.repo, oid, f.exts, size, date);
  }

  /** Exact count with `q`, and the candidate route for a sorted page. */
  private countText(
    oid: number,
    f: Filters,
    text: { q: string; fts: boolean },
    nAll: number,
    base: Cond[],
    routes: Route[],
    plan: string[],
  ): { total: number; candidates: Route } {
    const substr: Cond = { kind: "substr", q: text.q };
    const fts: Cond = { kind: "fts", q: text.q };
    const ftsRoute = (hits: number): Route => ({
      access: "fts",
      conds: [fts, ...base],
      rows: hits,
      what: `${hits} FTS hits`,
    });
    const length = [...text.q].length;
    const date = f.ranges.find((r) => r.col === "created_at");
    // The id partitions answer q with whole categories and a date window (not a size range).
    const classes = text.fts && !f.ranges.some((r) => r.col === "size_bytes") ? classesOf(f.exts) : null;
    // A 3- or 4-character term alone or with whole categories: the gram table, exact.
    const grams = classes !== null && !date && length <= 4;
    if (grams && base.length === 0) {
      const total = this.repo.gramRows(oid, text.q, classes);
      plan.push("count: gram table");
      return { total, candidates: ftsRoute(total) };
    }
    // A longer term alone: its FTS hits are the answer (rare or common).
    if (text.fts && base.length === 0) {
      const total = this.repo.ftsCount(oid, text.q);
      plan.push(
        total <= this.tuning.rareHits
          ? `count: rare term, ${total} FTS hits`
          : "count: common term, FTS index",
      );
      return { total, candidates: ftsRoute(total) };
    }
    // With other filters: the FTS hits, counted exactly when there are few (a rare term).
    let known: Route | null = null;
    if (text.fts && !grams) {
      const hits = this.repo.ftsHits(oid, text.q, this.tuning.rareHits + 1);
      if (hits <= this.tuning.rareHits) known = ftsRoute(hits);
    }
    // Check the substring row by row on the cheapest set of rows: the other filters' candidates,
    // all of the owner's rows, or the FTS hits (looked up one by one) if that is cheaper.
    const options: Route[] = [
      { access: "ext", conds: [...base, substr], rows: nAll, what: `all ${nAll} rows (ext index)` },
    ];
    const best = routes[0];
    if (best) options.push({ ...best, conds: [...base, substr] });
    if (known) options.push(known);
    options.sort((a, b) => visitCost(a, true) - visitCost(b, true));
    let chosen = options[0]!;
    if (grams) {
      plan.push("count: gram table");
      return { total: this.repo.gramRows(oid, text.q, classes), candidates: chosen };
    }
    // Or count with the FTS index among the ids of the categories and date buckets.
    const mode = this.tuning.partitions;
    if (classes !== null && known === null && mode !== "never") {
      const parts = this.partitionPlan(oid, f, text.q, classes, date ?? null, nAll);
      if (parts && (mode === "always" || parts.cost < visitCost(chosen, true))) {
        plan.push(`count: FTS over partitions (${parts.what})`);
        return { total: this.partitionCount(oid, f, text.q, parts), candidates: chosen };
      }
    }
    if (text.fts && !known) {
      const cap = Math.floor(visitCost(chosen, true) / (COST.fts + COST.lookup));
      const hits = this.repo.ftsHits(oid, text.q, cap + 1);
      if (hits <= cap) chosen = ftsRoute(hits);
    }
    plan.push(`count: ${chosen.access === "fts" && known ? "rare term, " : ""}check q on ${chosen.what}`);
    return { total: this.repo.count(oid, chosen.access, chosen.conds), candidates: chosen };
  }

  /**
   * How `q` with whole categories `classes` and maybe a date window would be counted over the id
   * partitions, and its estimated cost (µs); null when the window holds no whole date bucket.
   * Classes where a trigram of `q` is in no row are left out (`search_grams`: exact). The FTS work
   * is estimated per class and trigram from the rows holding it, scaled by the share of the
   * classes' rows inside the window's whole buckets.
   */
  private partitionPlan(
    oid: number,
    f: Filters,
    q: string,
    classes: readonly number[],
    date: Range | null,
    nAll: number,
  ): PartitionPlan | null {
    const split = date
      ? splitWindow(date.lo, date.hi)
      : { buckets: { bLo: 0, bHi: PARTITION.spillBucket }, all: true, edges: [], spill: null };
    if (!split.buckets) return null;
    const hist = new Histogram(this.repo, oid, "created_at", f.exts);
    const edgeRows = split.edges.reduce((n, [lo, hi]) => n + hist.count(lo, hi), 0);
    const classRows = f.exts ? this.repo.total(oid, f.exts) : nAll;
    const share =
      (split.spill ? hist.count(split.spill[0], split.spill[1]) : classRows) / Math.max(classRows, 1);
    const chars = [...q];
    const trigrams = [...new Set(chars.slice(0, -2).map((_, i) => chars.slice(i, i + 3).join("")))];
    const grams = this.repo.gramsByClass(oid, trigrams, classes);
    const kept: number[] = [];
    let cost = edgeRows * COST.index;
    for (const cls of classes) {
      const counts = grams.get(cls);
      if (!counts || trigrams.some((t) => !counts.has(t))) continue;
      kept.push(cls);
      for (const n of counts.values()) cost += COST.ftsToken + n * (COST.ftsDoc * share + COST.ftsDocSkipped);
    }
    const b = split.buckets;
    return {
      classes: kept,
      split,
      cost,
      what: `${kept.length} of ${classes.length} classes, date buckets ${b.bLo}..${b.bHi}, ${edgeRows} edge rows`,
    };
  }

  /**
   * Exact count of `q` by a partition plan: the FTS hits in each class's whole date buckets, plus
   * the window's edges checked in the created_at index, plus spilled rows inside the whole
   * buckets' span (classes that have any), each looked up.
   */
  private partitionCount(oid: number, f: Filters, q: string, parts: PartitionPlan): number {
    const { split, classes } = parts;
    const b = split.buckets!;
    const exts: Cond[] = f.exts ? [{ kind: "exts", exts: f.exts }] : [];
    let total = 0;
    for (const cls of classes) total += this.repo.ftsCountIn(q, { oid, cls, ...b });
    for (const [lo, hi] of split.edges) {
      const conds: Cond[] = [...exts, { kind: "range", col: "created_at", lo, hi }, { kind: "substr", q }];
      total += this.repo.count(oid, "created_at", conds);
    }
    if (split.spill) {
      const [lo, hi] = split.spill;
      const bucket = PARTITION.spillBucket;
      for (const cls of classes) {
        const range = { oid, cls, bLo: bucket, bHi: bucket };
        if (!this.repo.anyIn(range)) continue;
        const conds: Cond[] = [
          { kind: "fts", q, range },
          ...exts,
          { kind: "range", col: "created_at", lo, hi },
        ];
        total += this.repo.count(oid, "fts", conds);
      }
    }
    return total;
  }

  /** The page: a walk of the sort index (maybe seeked, maybe from the far end) or sorted candidates. */
  private page(
    oid: number,
    query: PlannedQuery,
    f: Filters,
    nAll: number,
    total: number,
    candidates: Route | null,
    plan: string[],
  ): PageKey[] {
    const { sortBy, descending, offset, limit } = query;
    if (offset >= total || total === 0) return [];
    const end = Math.min(offset + limit, total);
    const fromEnd = offset > total - end;
    const pos = fromEnd ? total - end : offset;
    const count = end - offset;
    const dir = descending !== fromEnd;
    // Name order over all of the owner's rows: seek with the name histogram, always walking
    // ascending (a descending page is the reversed ascending one).
    if (
      sortBy === "file_name" &&
      pos > this.tuning.seekMinOffset &&
      f.text === null &&
      f.ranges.length === 0 &&
      !f.exts
    ) {
      const s = seekName(this.repo, oid, descending ? total - end : offset);
      if (s) {
        plan.push(
          `page: walk file_name index from name bucket ${JSON.stringify(s.from)}, skipping ${s.skip}`,
        );
        const keys = this.repo.page(
          oid,
          "file_name",
          [{ kind: "nameFrom", from: s.from }],
          "file_name",
          false,
          s.skip,
          count,
        );
        return descending ? keys.reverse() : keys;
      }
    }
    const textCond: Cond[] = f.text ? [{ kind: "substr", q: f.text.q }] : [];
    const perWalked = COST.index + (f.text && !NAME_COVERED.has(sortBy) ? COST.lookup : 0);

    // Walk plan: seek with the histogram of the sort column when every range filter is on it.
    let walk: { conds: Cond[]; skip: number; cost: number; what: string } = {
      conds: [...baseConds(f), ...textCond],
      skip: pos,
      cost: ((pos + count) * nAll * perWalked) / total,
      what: `walk ${sortBy} index${fromEnd ? " from the far end" : ""}, skipping ${pos}`,
    };
    const seekable = sortBy in HISTOGRAMS && f.text === null && f.ranges.every((r) => r.col === sortBy);
    if (seekable && pos > this.tuning.seekMinOffset) {
      const col = sortBy as HistogramColumn;
      const range = f.ranges[0] ?? { col, lo: col === "size_bytes" ? 0 : MIN_VALUE, hi: MAX_VALUE };
      const s = new Histogram(this.repo, oid, col, f.exts).seek(range.lo, range.hi, pos, dir);
      if (s) {
        const narrowed: Cond = dir
          ? { kind: "range", col, lo: range.lo, hi: s.from }
          : { kind: "range", col, lo: s.from, hi: range.hi };
        const share = f.exts ? Math.max(this.repo.total(oid, f.exts), 1) / Math.max(nAll, 1) : 1;
        walk = {
          conds: [...(f.exts ? [{ kind: "exts", exts: f.exts } as Cond] : []), narrowed],
          skip: s.skip,
          cost: ((s.skip + count) * COST.index) / share,
          what: `walk ${sortBy} index from bucket at ${s.from}${fromEnd ? " (far end)" : ""}, skipping ${s.skip}`,
        };
      }
    }
    const sortCost = candidates
      ? visitCost(candidates, f.text !== null) + total * COST.candidate
      : Number.POSITIVE_INFINITY;
    let keys: PageKey[];
    if (sortCost < walk.cost && candidates) {
      plan.push(`page: sort candidates of ${candidates.what}`);
      keys = this.repo.page(oid, candidates.access, candidates.conds, sortBy, dir, pos, count);
    } else {
      plan.push(`page: ${walk.what}`);
      keys = this.repo.page(oid, sortBy, walk.conds, sortBy, dir, walk.skip, count);
    }
    return fromEnd ? keys.reverse() : keys;
  }
}
