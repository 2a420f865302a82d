/**
 * The search service on any `SearchIndex`: an index query that throws is answered again through
 * the exact plan (logged `search.index_failed`), a degraded index is logged once as
 * `search.index_degraded` and its recovery once as `search.index_recovered`, and the plan kinds
 * of the metric label stay a small fixed set.
 */
import { describe, expect, test } from "bun:test";
import { parseSearchQuery } from "../../src/search/search.query.ts";
import { planKind, SearchService } from "../../src/search/search.service.ts";
import type { SearchIndex, SearchOptions, SearchPage } from "../../src/search/search-index.ts";
import type { LogFields, Logger } from "../../src/util/log.ts";

function recordingLogger(): Logger & { events: [string, string, LogFields | undefined][] } {
  const events: [string, string, LogFields | undefined][] = [];
  const at = (level: string) => (event: string, fields?: LogFields) =>
    void events.push([level, event, fields]);
  return { events, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

/** An index answering `pages` in turn (an Error entry is thrown instead), recording the options. */
function scriptedIndex(pages: (SearchPage | Error)[]): SearchIndex & { calls: SearchOptions[] } {
  const calls: SearchOptions[] = [];
  return {
    kind: "scripted",
    calls,
    search: async (_owner, _q, opts = {}) => {
      calls.push(opts);
      const next = pages.shift();
      if (next === undefined) throw new Error("no more answers");
      if (next instanceof Error) throw next;
      return next;
    },
    directory: async () => ({ total: 0, hits: [], plan: [], degraded: null }),
    subdirectories: async () => [],
    health: async () => ({ state: "ok", reason: null, since: null }),
    rebuild: async () => ({ files: 0, seconds: 0, health: { state: "ok", reason: null, since: null } }),
  };
}

const page = (total: number, degraded: string | null = null): SearchPage => ({
  total,
  hits: [],
  plan: ["count: histogram total", `total ${total}`],
  degraded,
});
const query = parseSearchQuery(new URLSearchParams("offset=0&limit=10"));

describe("SearchService", () => {
  test("answers through the exact plan when the index query throws, and logs search.index_failed", async () => {
    const log = recordingLogger();
    const index = scriptedIndex([new Error("planner bug"), page(7)]);
    const result = await new SearchService(index, log).search("owner", query);
    expect(result.total_count).toBe(7);
    expect(index.calls).toEqual([{}, { exact: true }]);
    expect(log.events.map(([level, event]) => [level, event])).toEqual([["warn", "search.index_failed"]]);
  });

  test("propagates the error when the exact plan throws too", async () => {
    const index = scriptedIndex([new Error("planner bug"), new Error("database gone")]);
    expect(new SearchService(index, recordingLogger()).search("owner", query)).rejects.toThrow(
      "database gone",
    );
  });

  test("logs a degraded index once, and its recovery once", async () => {
    const log = recordingLogger();
    const service = new SearchService(
      scriptedIndex([page(1, "limit"), page(1, "limit"), page(1, "limit"), page(1), page(1)]),
      log,
    );
    for (let i = 0; i < 5; i++) await service.search("owner", query);
    expect(log.events.map(([level, event, f]) => [level, event, f?.reason])).toEqual([
      ["warn", "search.index_degraded", "limit"],
      ["info", "search.index_recovered", undefined],
    ]);
  });

  test("plan kinds name the counting step of either backend", () => {
    expect(
      [
        ["count: exact scan of files"],
        ["count: gram table"],
        ["count: FTS over partitions (1 of 8 classes)"],
        ["count: extension counters"],
        ["count: suffix index"],
        ["count: size x date grid"],
        ["count: size_bytes histogram"],
        ["count: trigram GIN and recheck"],
        ["count: short term, rows checked"],
        ["count: b-tree"],
        ["no files"],
      ].map(planKind),
    ).toEqual([
      "exact_scan",
      "gram_table",
      "fts_partitions",
      "counters",
      "suffix_index",
      "grid",
      "histogram",
      "trigram",
      "short_term",
      "btree",
      "empty",
    ]);
  });
});
