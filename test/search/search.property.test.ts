/**
 * Property: on random rows (random names from a small alphabet with case, non-ASCII, `%`, `_`,
 * dots and slashes; legacy rows without file_name or without any name; many equal sizes and
 * times; two folders; uploaders or none) changed by random revisions and deletions, every random
 * query (with the `uploaded_by` and `folder_hash` filters of extensions §1.7) answers exactly what the
 * naive in-memory filter-and-sort of spec §4.9 answers (total_count and the page, in order) —
 * under the production planner thresholds and under thresholds that force every other path.
 */
import { afterAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import type { FileRow } from "../../src/files/file-entry.ts";
import { parseSearchQuery } from "../../src/search/search.query.ts";
import { SearchRepository } from "../../src/search/search.repository.ts";
import { SearchService, type SearchTuning } from "../../src/search/search.service.ts";
import { makeTestApp } from "../support/app.ts";
import { expectIndexConsistent, fileRow, filesUpserter, hex, modelSearch } from "./support.ts";

const t = makeTestApp();
afterAll(() => t.close());
const db = t.db;
const upsert = filesUpserter(db);
const repo = new SearchRepository(db);
const BASE = 1_700_000_000;
/** Folders the rows live in (extensions §1.7 `folder_hash`), and one that holds none. */
const FOLDERS = ["37a8eec1ce19687d", "0123456789abcdef", "fedcba9876543210"] as const;

const char = fc.constantFrom(
  "a",
  "b",
  "A",
  "B",
  "Ä",
  "ä",
  "ß",
  "Σ",
  "σ",
  "ς",
  ".",
  "_",
  "%",
  " ",
  "1",
  "x",
  "é",
);
const stem = fc.string({ unit: char, maxLength: 7 });
const size = fc.oneof(
  fc.integer({ min: 0, max: 12 }),
  fc.constantFrom(99, 100, 101, 1000, 4096),
  fc.integer({ min: 0, max: 2 ** 40 }),
);
// Around one time (spanning ~15 date buckets of the id partitions), and around the first and last
// date buckets' bounds.
const time = fc.oneof(
  fc.integer({ min: 0, max: 4 }).map((k) => BASE + k * 3000),
  fc.integer({ min: BASE - 2_000_000, max: BASE + 2_000_000 }),
  fc.constantFrom(0, 946_684_799, 946_684_800, 947_000_000, 3_093_382_015, 3_093_382_016, 2 ** 40),
);
const file = fc.record({
  stem,
  ext: fc.constantFrom("", ".png", ".PNG", ".jpg", ".pdf", ".Pdf", ".tar.gz", ".mp3", ".ts", ".x1"),
  dir: fc.constantFrom("", "a/", "a/b/", "Ä/x/"),
  names: fc.constantFrom("both", "both", "both", "pathOnly", "none"),
  size,
  created: time,
  updated: time,
  folder: fc.constantFrom(FOLDERS[0], FOLDERS[1]),
  by: fc.constantFrom(null, "alice", "bob"),
});
type FileArb = typeof file extends fc.Arbitrary<infer T> ? T : never;
const change = fc.record({ index: fc.nat(), kind: fc.constantFrom("delete", "revise"), with: file });
/** Maybe `arb`: absent three times out of four, so that queries combine a few filters, not all. */
const maybe = <T>(arb: fc.Arbitrary<T>) =>
  fc.oneof({ arbitrary: fc.constant(undefined), weight: 3 }, { arbitrary: arb, weight: 1 });

/** A value near one of `values` (equal, one less or one more), or any `fallback`. */
const near = (values: number[], fallback: fc.Arbitrary<number>) =>
  values.length === 0
    ? fallback
    : fc.oneof(
        {
          arbitrary: fc
            .tuple(fc.constantFrom(...values), fc.constantFrom(-1, 0, 1))
            .map(([v, d]) => Math.max(0, v + d)),
          weight: 3,
        },
        { arbitrary: fallback, weight: 1 },
      );

/** Random queries for `files`: `q` is mostly a piece of one of their names, re-cased; bounds sit near their values. */
function queriesFor(files: FileArb[]) {
  const names = files.map((f) => `${f.dir}${f.stem}${f.ext}`).filter((n) => n.length > 0);
  const anyText = fc.string({ unit: char, minLength: 1, maxLength: 4 });
  const piece =
    names.length === 0
      ? anyText
      : fc
          .tuple(fc.constantFrom(...names), fc.nat(), fc.integer({ min: 1, max: 5 }), fc.boolean())
          .map(([n, at, len, upper]) => {
            const s = n.slice(at % n.length, (at % n.length) + len);
            return upper ? s.toUpperCase() : s;
          });
  const sizes = near(
    files.map((f) => f.size),
    size,
  );
  const times = near(
    files.map((f) => f.created),
    time,
  );
  const query = fc.record({
    q: maybe(fc.oneof({ arbitrary: piece, weight: 4 }, { arbitrary: anyText, weight: 1 })),
    file_type: maybe(fc.constantFrom("image", ".png", ".PDF", "pdf,.jpg", "audio,code", ".x1")),
    size_min: maybe(sizes),
    size_max: maybe(sizes),
    date_from: maybe(times),
    date_to: maybe(times),
    uploaded_by: maybe(fc.constantFrom("_none", "alice", "bob", "carol")),
    folder_hash: maybe(fc.constantFrom(...FOLDERS)),
    sort_by: fc.constantFrom("file_name", "size_bytes", "created_at", "updated_at", "uploaded_by", "bogus"),
    sort_order: fc.constantFrom("asc", "desc", "ASC", "Desc", "x"),
    offset: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 45 })),
    limit: fc.integer({ min: 0, max: 30 }),
  });
  return fc.array(query, { minLength: 1, maxLength: 5 });
}

function specOf(f: FileArb, pathHash?: Uint8Array) {
  const name = `${f.stem}${f.ext}`;
  return {
    path: `${f.dir}${name}`,
    fileName: f.names === "both" ? name : null,
    relativePath: f.names === "none" ? null : `${f.dir}${name}`,
    size: f.size,
    created: f.created,
    updated: Math.max(f.created, f.updated),
    pathHash,
    folderHash: f.folder,
    uploadedBy: f.by,
  };
}

let owners = 0;
/** Inserts `files`, applies `changes`, and returns the owner and its live rows. */
function seed(
  files: FileArb[],
  changes: { index: number; kind: string; with: FileArb }[],
): { owner: string; rows: FileRow[] } {
  const owner = `prop-owner-${++owners}`;
  const rows = files.map((f) => fileRow(owner, specOf(f)));
  db.$client.transaction(() => {
    for (const r of rows) upsert(r);
    for (const c of changes) {
      if (rows.length === 0) break;
      const i = c.index % rows.length;
      const old = rows[i]!;
      if (c.kind === "delete") {
        db.$client
          .query("DELETE FROM files WHERE owner = ? AND folder_hash = ? AND path_hash = ?")
          .run(owner, old.folderHash, old.pathHash);
        rows.splice(i, 1);
      } else {
        const next = {
          ...fileRow(owner, { ...specOf(c.with, old.pathHash), folderHash: old.folderHash }),
          createdAt: old.createdAt,
        };
        upsert(next);
        rows[i] = next;
      }
    }
  })();
  return { owner, rows };
}

const TUNINGS: [string, Partial<SearchTuning>][] = [
  ["production thresholds", {}],
  [
    "every term common, always seek, always the grid and the id partitions",
    { rareHits: 0, seekMinOffset: 0, gridMinRows: 0, partitions: "always" },
  ],
  [
    "every term rare, always seek, never the grid nor the id partitions",
    { rareHits: 1_000_000, seekMinOffset: 0, gridMinRows: 1e9, partitions: "never" },
  ],
];

describe("search equals the naive filter-and-sort", () => {
  for (const [name, tuning] of TUNINGS) {
    test(`on random data and random queries (${name})`, () => {
      const service = new SearchService(repo, tuning);
      fc.assert(
        fc.property(
          fc
            .array(file, { minLength: 3, maxLength: 60 })
            .chain((files) => fc.tuple(fc.constant(files), queriesFor(files))),
          fc.array(change, { maxLength: 6 }),
          ([files, queries], changes) => {
            const { owner, rows } = seed(files, changes);
            for (const params of queries) {
              const qs = new URLSearchParams(
                Object.entries(params)
                  .filter(([, v]) => v !== undefined)
                  .map(([k, v]) => [k, String(v)]),
              );
              const q = parseSearchQuery(qs);
              const got = service.run(owner, q).hits;
              const want = modelSearch(rows, q);
              expect({
                qs: qs.toString(),
                total: got.total_count,
                page: got.files.map((f) => hex(f.path_hash)),
              }).toEqual({
                qs: qs.toString(),
                total: want.total,
                page: want.page,
              });
              expect(got.has_more).toBe(q.offset + got.files.length < want.total);
            }
          },
        ),
        { numRuns: 200 },
      );
      expectIndexConsistent(db);
    });
  }
});
