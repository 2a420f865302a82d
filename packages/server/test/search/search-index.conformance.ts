/**
 * The one `SearchIndex` conformance suite: every backend runs it unchanged (see
 * `sqlite-index.test.ts`, `postgres-index.test.ts`) and must pass all of it. It checks the
 * contract written in `src/search/search-index.ts` against a naive in-memory model of docs/protocol.md#search
 * (`modelSearch`).
 *
 * Property: on random rows (random names from a small alphabet with case, non-ASCII, `%`, `_`,
 * dots and slashes; legacy rows without file_name or without any name; many equal sizes and
 * times; two folders; uploaders or none) changed by random revisions and deletions, every random
 * query (with the `uploaded_by` and `folder_hash` filters of docs/protocol.md#api-profiles) answers exactly what
 * the naive filter-and-sort answers (total and the page, in order). Directory listings (browse)
 * are checked the same way against a model of the files directly in a directory.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { profileRules } from "../../src/config/profile.ts";
import type { FileRow } from "../../src/files/file-entry.ts";
import { foldCase, parseSearchQuery } from "../../src/search/search.query.ts";
import type { DirectoryQuery, SearchIndex } from "../../src/search/search-index.ts";
import { fileRow, hex, modelSearch } from "./support.ts";

/** A write to `files`, as the file repository makes it. */
export type FileWrite =
  | { kind: "upsert"; row: FileRow }
  | { kind: "delete"; owner: string; folderHash: string; pathHash: Uint8Array };

/** A backend under test: its index, and how to write `files` rows on its database. */
export interface IndexUnderTest {
  index: SearchIndex;
  /** Applies `writes` in order, in one transaction (the index follows as on upload). */
  write(writes: FileWrite[]): Promise<void>;
  /** Asserts the index's derived data agrees with `files` (backend-specific), if it has any. */
  checkConsistent?(): Promise<void>;
}

/** Options of `searchIndexConformance`. */
export interface ConformanceOptions {
  /** fast-check runs per property (default 200). */
  numRuns?: number;
  /** Test timeout, ms. */
  timeoutMs?: number;
}

const BASE = 1_700_000_000;
/** Folders the rows live in (docs/protocol.md#api-profiles `folder_hash`), and one that holds none. */
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

/** Maybe `arb`: null three times out of four. */
const orNull = <T>(arb: fc.Arbitrary<T>) =>
  fc.oneof({ arbitrary: fc.constant(null), weight: 3 }, { arbitrary: arb, weight: 1 });

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
/** Writes `files`, applies `changes`, and returns the owner and its live rows. */
async function seed(
  sut: IndexUnderTest,
  files: FileArb[],
  changes: { index: number; kind: string; with: FileArb }[],
): Promise<{ owner: string; rows: FileRow[] }> {
  const owner = `prop-owner-${process.pid}-${++owners}-${Math.random().toString(36).slice(2, 8)}`;
  const rows = files.map((f) => fileRow(owner, specOf(f)));
  const writes: FileWrite[] = rows.map((row) => ({ kind: "upsert", row }));
  for (const c of changes) {
    if (rows.length === 0) break;
    const i = c.index % rows.length;
    const old = rows[i]!;
    if (c.kind === "delete") {
      writes.push({ kind: "delete", owner, folderHash: old.folderHash, pathHash: old.pathHash });
      rows.splice(i, 1);
    } else {
      const next = {
        ...fileRow(owner, { ...specOf(c.with, old.pathHash), folderHash: old.folderHash }),
        createdAt: old.createdAt,
      };
      writes.push({ kind: "upsert", row: next });
      rows[i] = next;
    }
  }
  await sut.write(writes);
  return { owner, rows };
}

/** The query-string parameters of an arbitrary query, as a URLSearchParams. */
function paramsOf(params: Record<string, unknown>): URLSearchParams {
  return new URLSearchParams(
    Object.entries(params)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k, String(v)]),
  );
}

/** Directory of a row in a folder (everything before the last `/` of relative_path), or null. */
function dirOf(r: FileRow): string | null {
  if (r.relativePath === null) return null;
  const i = r.relativePath.lastIndexOf("/");
  return i < 0 ? "" : r.relativePath.slice(0, i).replace(/^\/+|\/+$/g, "");
}

/** The model of `SearchIndex.directory`: the files directly in `q.path`, as search filters and sorts them. */
function modelDirectory(
  rows: FileRow[],
  folderHash: string,
  q: DirectoryQuery,
): { total: number; page: string[] } {
  const inDir = rows.filter((r) => r.folderHash === folderHash && dirOf(r) === q.path);
  const sortBy = q.sortBy === "extension" ? "file_name" : q.sortBy;
  const base = parseSearchQuery(new URLSearchParams());
  const all = modelSearch(inDir, {
    ...base,
    q: q.q,
    exts: q.exts ? [...q.exts] : null,
    uploader: q.uploader,
    sortBy,
    descending: q.descending,
    offset: 0,
    limit: inDir.length + 1,
  });
  let order = all.page;
  if (q.sortBy === "extension") {
    const byHex = new Map(inDir.map((r) => [hex(r.pathHash), r]));
    const ext = (h: string) => byHex.get(h)!.ext;
    order = [...order].sort((a, b) => {
      const ea = ext(a);
      const eb = ext(b);
      const c =
        ea === eb ? 0 : ea === null ? -1 : eb === null ? 1 : Buffer.compare(Buffer.from(ea), Buffer.from(eb));
      const d = c !== 0 ? c : Buffer.compare(Buffer.from(a, "hex"), Buffer.from(b, "hex"));
      return q.descending ? -d : d;
    });
  }
  return { total: all.total, page: order.slice(q.offset, q.offset + q.limit) };
}

/**
 * Registers the conformance tests of one backend variant under `name`; `sut()` gives the backend
 * (built once, in the caller's `beforeAll`).
 */
export function searchIndexConformance(
  name: string,
  sut: () => IndexUnderTest,
  opts: ConformanceOptions = {},
): void {
  const numRuns = opts.numRuns ?? 200;
  describe(`SearchIndex conformance: ${name}`, () => {
    test(
      "search equals the naive filter-and-sort on random data and random queries",
      async () => {
        const s = sut();
        await fc.assert(
          fc.asyncProperty(
            fc
              .array(file, { minLength: 3, maxLength: 60 })
              .chain((files) => fc.tuple(fc.constant(files), queriesFor(files))),
            fc.array(change, { maxLength: 6 }),
            async ([files, queries], changes) => {
              const { owner, rows } = await seed(s, files, changes);
              for (const [i, params] of queries.entries()) {
                const qs = paramsOf(params);
                // Every other query under the hcfs profile's rules (q trimmed, under 3 characters matches nothing).
                const profile = i % 2 ? "hcfs" : "base";
                const q = parseSearchQuery(qs, profileRules(profile));
                const got = await s.index.search(owner, q);
                const want = q.nothing ? { total: 0, page: [] } : modelSearch(rows, q);
                expect({
                  qs: `${profile}: ${qs}`,
                  total: got.total,
                  page: got.hits.map((f) => hex(f.pathHash)),
                }).toEqual({
                  qs: `${profile}: ${qs}`,
                  total: want.total,
                  page: want.page,
                });
              }
            },
          ),
          { numRuns },
        );
        await s.checkConsistent?.();
      },
      opts.timeoutMs,
    );

    test(
      "directory listings equal the model of the files directly in a directory",
      async () => {
        const s = sut();
        const dirQuery = fc.record({
          path: fc.constantFrom("", "a", "a/b", "Ä/x", "b"),
          q: orNull(fc.constantFrom("a", "ä", "x", ".p", "σ", "1")),
          exts: orNull(fc.constantFrom([".png"], [".png", ".jpg"], [".pdf"])),
          uploader: orNull(fc.constantFrom({ by: null }, { by: "alice" })),
          sortBy: fc.constantFrom(
            "file_name",
            "size_bytes",
            "created_at",
            "updated_at",
            "extension",
            "uploaded_by",
          ),
          descending: fc.boolean(),
          offset: fc.integer({ min: 0, max: 20 }),
          limit: fc.integer({ min: 1, max: 25 }),
        });
        await fc.assert(
          fc.asyncProperty(
            // Mostly in the listed folder, so that directories hold several files.
            fc.array(
              fc.tuple(file, fc.nat(3)).map(([f, k]) => ({ ...f, folder: k === 0 ? f.folder : FOLDERS[0] })),
              { minLength: 10, maxLength: 50 },
            ),
            fc.array(change, { maxLength: 4 }),
            fc.array(dirQuery, { minLength: 1, maxLength: 4 }),
            async (files, changes, queries) => {
              const { owner, rows } = await seed(s, files, changes);
              for (const raw of queries) {
                const q: DirectoryQuery = { ...raw, q: raw.q === null ? null : foldCase(raw.q) };
                const got = await s.index.directory(owner, FOLDERS[0], q);
                const want = modelDirectory(rows, FOLDERS[0], q);
                expect({ q, total: got.total, page: got.hits.map((f) => hex(f.pathHash)) }).toEqual({
                  q,
                  total: want.total,
                  page: want.page,
                });
              }
              const subdirs = await s.index.subdirectories(owner, FOLDERS[0], "a");
              const under = rows.filter(
                (r) => r.folderHash === FOLDERS[0] && (dirOf(r) ?? "").startsWith("a/"),
              );
              const want = new Map<string, [number, number]>();
              for (const r of under) {
                const child = `a/${dirOf(r)!.slice(2).split("/")[0]}`;
                const [n, b] = want.get(child) ?? [0, 0];
                want.set(child, [n + 1, b + r.sizeBytes]);
              }
              expect(new Map(subdirs.map((d) => [d.path, [d.fileCount, d.totalBytes]]))).toEqual(want);
            },
          ),
          { numRuns: Math.max(10, Math.floor(numRuns / 4)) },
        );
      },
      opts.timeoutMs,
    );

    test("an owner without files and a query matching nothing by profile rule give no hits and total 0", async () => {
      const s = sut();
      const none = await s.index.search(`nobody-${Math.random()}`, parseSearchQuery(new URLSearchParams()));
      expect({ total: none.total, hits: none.hits }).toEqual({ total: 0, hits: [] });
      const { owner } = await seed(
        s,
        [
          {
            stem: "abc",
            ext: ".png",
            dir: "",
            names: "both",
            size: 1,
            created: BASE,
            updated: BASE,
            folder: FOLDERS[0],
            by: null,
          },
        ],
        [],
      );
      const q = { ...parseSearchQuery(new URLSearchParams("q=a")), nothing: true };
      const got = await s.index.search(owner, q);
      expect({ total: got.total, hits: got.hits }).toEqual({ total: 0, hits: [] });
    });

    test("pages split files equal in sort key and path_hash (three folders) one per position, each folder once", async () => {
      const s = sut();
      const owner = `tie-owner-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
      const pathHash = new Uint8Array(32).fill(7);
      const rows = [FOLDERS[0], FOLDERS[1], FOLDERS[2]].map((folderHash) =>
        fileRow(owner, { path: "same.png", size: 5, created: BASE, updated: BASE, pathHash, folderHash }),
      );
      await s.write(rows.map((row) => ({ kind: "upsert", row })));
      for (const sortBy of ["updated_at", "size_bytes", "created_at", "file_name"]) {
        for (const order of ["asc", "desc"]) {
          const seen: string[] = [];
          for (const [offset, limit] of [
            [0, 1],
            [1, 1],
            [2, 1],
          ]) {
            const q = parseSearchQuery(
              new URLSearchParams(`sort_by=${sortBy}&sort_order=${order}&offset=${offset}&limit=${limit}`),
            );
            const got = await s.index.search(owner, q);
            expect({ sortBy, order, offset, total: got.total, n: got.hits.length }).toEqual({
              sortBy,
              order,
              offset,
              total: 3,
              n: 1,
            });
            seen.push(got.hits[0]!.folderHash);
          }
          expect(seen.toSorted()).toEqual([...FOLDERS].toSorted());
          const two = await s.index.search(
            owner,
            parseSearchQuery(new URLSearchParams(`sort_by=${sortBy}&sort_order=${order}&offset=1&limit=2`)),
          );
          expect(two.hits.map((h) => h.folderHash)).toEqual(seen.slice(1));
        }
      }
    });
  });
}
