/**
 * @module server/search/search.service
 * `GET /search_files/{ss58}` (docs/protocol.md#search, #open-rules, #api-profiles) on a `SearchIndex`:
 * the index answers total and page; this service turns them into the wire result, reports the
 * plan and duration (metrics), and makes an index fault a slower answer instead of an error:
 * - a degraded index (`SearchPage.degraded`) is logged once as `search.index_degraded` (warn),
 *   and `search.index_recovered` (info) once it answers through its fast plans again;
 * - an index query that throws is logged as `search.index_failed` (warn) and answered again
 *   through the index's exact plan (`SearchOptions.exact`); if that throws too, the error
 *   propagates (a 500).
 */

import type { SearchFileHit, SearchResult } from "@esync/protocol/types.ts";
import { toRemoteFileEntry } from "../files/file-entry.ts";
import { type Logger, silentLogger } from "../util/log.ts";
import type { SearchQuery } from "./search.query.ts";
import type { HitRow, SearchIndex, SearchPage } from "./search-index.ts";

export type { SearchFileHit, SearchResult } from "@esync/protocol/types.ts";

/** A search hit row in wire form (docs/protocol.md#file-entries field order). */
export function toSearchHit(r: HitRow): SearchFileHit {
  return { folder_hash: r.folderHash, folder_label: r.folderLabel, ...toRemoteFileEntry(r) };
}

/**
 * The kind of counting plan a search chose, from its plan steps: one of `empty`, `histogram`,
 * `index_scan`, `grid`, `gram_table`, `fts_partitions`, `fts_rare`, `fts`, `check_q`,
 * `exact_scan` (a degraded index), `counters`, `suffix_index`, `trigram`, `short_term` and `btree`
 * (PostgreSQL; `histogram` and `grid` there too) or
 * `other` (a bounded set, for the `plan` label of `esync_search_duration_seconds`).
 */
export function planKind(plan: readonly string[]): string {
  const step = plan.find((p) => p.startsWith("count:"));
  if (step === undefined) return "empty";
  if (step.includes("exact scan")) return "exact_scan";
  if (step.includes("histogram")) return "histogram";
  if (step.includes("grid")) return "grid";
  if (step.includes("gram table")) return "gram_table";
  if (step.includes("FTS over partitions")) return "fts_partitions";
  if (step.includes("check q")) return "check_q";
  if (step.includes("rare term")) return "fts_rare";
  if (step.includes("FTS")) return "fts";
  if (step.includes("counters")) return "counters";
  if (step.includes("suffix index")) return "suffix_index";
  if (step.includes("trigram")) return "trigram";
  if (step.includes("short term")) return "short_term";
  if (step.includes("b-tree")) return "btree";
  if (step.includes("scan")) return "index_scan";
  return "other";
}

/** Watches a search index's answers and logs changes of its degraded state once each. */
export class DegradedStateLog {
  private reason: string | null = null;

  constructor(
    private readonly log: Logger,
    private readonly kind: string,
  ) {}

  /** Records the `degraded` field of an answer. */
  saw(degraded: string | null): void {
    if (degraded === this.reason) return;
    if (degraded !== null)
      this.log.warn("search.index_degraded", {
        index: this.kind,
        reason: degraded,
        hint: "answers use the exact plan over files until `bun run search:rebuild` completes",
      });
    else this.log.info("search.index_recovered", { index: this.kind });
    this.reason = degraded;
  }
}

/** Cross-folder search (docs/protocol.md#search). */
export class SearchService {
  constructor(
    private readonly index: SearchIndex,
    private readonly log: Logger = silentLogger,
    /** Told the plan kind (`planKind`) and duration in seconds of every search (metrics). */
    private readonly onSearch: (plan: string, seconds: number) => void = () => {},
    /** Where a degraded index is reported (shared with browse, so it is logged once). */
    private readonly degraded = new DegradedStateLog(log, index.kind),
  ) {}

  /**
   * Searches `owner`'s files (the caller has checked ownership and parsed `query`).
   * Counts and rows come from one read snapshot.
   */
  async search(owner: string, query: SearchQuery): Promise<SearchResult> {
    const started = performance.now();
    const { hits, page } = await this.run(owner, query);
    this.onSearch(planKind(page.plan), (performance.now() - started) / 1000);
    return hits;
  }

  /** `search` plus the index's answer with its plan (tests, bench). */
  async run(owner: string, query: SearchQuery): Promise<{ hits: SearchResult; page: SearchPage }> {
    let page: SearchPage;
    try {
      page = await this.index.search(owner, query);
    } catch (error) {
      this.log.warn("search.index_failed", { index: this.index.kind, error });
      page = await this.index.search(owner, query, { exact: true });
    }
    this.degraded.saw(page.degraded);
    const files = page.hits.map(toSearchHit);
    return {
      page,
      hits: {
        ss58_address: owner,
        files,
        total_count: page.total,
        has_more: query.offset + files.length < page.total,
        offset: query.offset,
        limit: query.limit,
      },
    };
  }
}
