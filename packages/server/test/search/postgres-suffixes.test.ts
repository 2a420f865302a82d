/**
 * The suffix index of the PostgreSQL search (src/search/postgres-suffixes.ts): totals and pages of
 * `q` of 3 or more characters, alone and with `file_type` or a date range, equal the exact plan
 * over `files` (`exact: true`) and a count in TypeScript, through terms twice in one name,
 * non-ASCII and ς/σ, terms longer than the 16 characters a suffix row keeps, renames, deletes
 * and `esync_search_recount()`; and the plan says the suffix rows answered.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { openPostgres } from "../../src/db/postgres/client.ts";
import { PgFilesRepository } from "../../src/db/postgres/files.ts";
import { PgSearchIndex } from "../../src/db/postgres/search/index.ts";
import { SUFFIX_CHARS } from "../../src/db/postgres/search/suffixes.ts";
import type { FileRow } from "../../src/files/file-entry.ts";
import { foldCase, parseSearchQuery } from "../../src/search/search.query.ts";
import { PG_SETUP_TIMEOUT_MS, pgTestDatabase } from "../support/pg-server.ts";
import { fileRow } from "./support.ts";

const database = await pgTestDatabase("search_suffixes");
const db = await openPostgres(database.url);
afterAll(async () => {
  await db.$client.close();
  await database.drop();
}, PG_SETUP_TIMEOUT_MS);
// Every page of a q the suffix rows know is read from them (the cost rule prefers walking the sort
// b-tree on data this small).
const index = new PgSearchIndex(db, { walkRows: 0 });
const plainIndex = new PgSearchIndex(db);

async function upsert(...rows: FileRow[]): Promise<void> {
  await db.transaction(async (tx) => {
    const files = new PgFilesRepository(tx);
    for (const r of rows) await files.upsert(r);
  });
}

async function remove(row: FileRow): Promise<void> {
  await db.transaction(async (tx) => {
    await new PgFilesRepository(tx).remove(row.owner, row.folderHash, row.pathHash);
  });
}

/** Total and page (path hashes) of `qs` for `owner`, by the index and by the exact plan. */
async function both(owner: string, qs: string) {
  const query = parseSearchQuery(new URLSearchParams(qs));
  const got = await index.search(owner, query);
  const exact = await index.search(owner, query, { exact: true });
  const hashes = (p: typeof got) => p.hits.map((h) => Buffer.from(h.pathHash).toString("hex"));
  // The default plans (count and page in creation order from one read, walks) agree too.
  const plain = await plainIndex.search(owner, query);
  expect([qs, plain.total, hashes(plain)]).toEqual([qs, exact.total, hashes(exact)]);
  return { got, total: got.total, page: hashes(got), exactTotal: exact.total, exactPage: hashes(exact) };
}

/** Files of `rows` whose folded search name contains the folded `q`. */
function naiveCount(rows: FileRow[], q: string): number {
  const term = foldCase(q);
  return rows.filter((r) => r.searchName?.replaceAll("ς", "σ").includes(term) === true).length;
}

describe("PostgreSQL suffix index", () => {
  test("counts a file once when its name holds the term twice or more", async () => {
    const owner = "sfx-twice";
    const rows = [
      fileRow(owner, { path: "a/backup-backup-backup.tar" }),
      fileRow(owner, { path: "a/backupbackup.zip" }),
      fileRow(owner, { path: "b/backup.txt" }),
      fileRow(owner, { path: "b/back-up.txt" }),
      fileRow(owner, { path: "b/aaaaaaaaaaaaaaaaaaaaaaaa.bin" }),
    ];
    await upsert(...rows);
    for (const q of ["backup", "ckup", "aaaaa", "aaaaaaaaaaaaaaaaaaaa", "backupb"]) {
      const r = await both(owner, `q=${q}`);
      expect([q, r.total]).toEqual([q, naiveCount(rows, q)]);
      expect(r.total).toBe(r.exactTotal);
      expect(r.page).toEqual(r.exactPage);
    }
    expect(
      (await plainIndex.search(owner, parseSearchQuery(new URLSearchParams("q=backup")))).plan,
    ).toContain("page: suffix index by created_at, same read");
    const r = await both(owner, "q=backup");
    expect(r.total).toBe(3);
    expect(r.got.plan).toContain("count: suffix index");
    expect(r.got.plan).toContain("page: suffix index by created_at");
  });

  test("matches non-ASCII terms, upper case and final sigma as the exact plan does", async () => {
    const owner = "sfx-unicode";
    const rows = [
      fileRow(owner, { path: "Überweisung März.pdf" }),
      fileRow(owner, { path: "x/ÜBERWEISUNG-2.pdf" }),
      fileRow(owner, { path: "議事録_2024_議事録.docx" }),
      fileRow(owner, { path: "ΟΔΥΣΣΕΥΣ.txt" }),
      fileRow(owner, { path: "café crème.jpg" }),
      fileRow(owner, { path: "cafe creme.jpg" }),
    ];
    await upsert(...rows);
    for (const q of [
      "überweisung",
      "ÜBERW",
      "議事録_",
      "事録_20",
      "οδυσσευς",
      "ΟΔΥΣΣΕΥΣ.T",
      "café c",
      "afé cr",
    ]) {
      const r = await both(owner, `q=${encodeURIComponent(q)}`);
      expect([q, r.total]).toEqual([q, naiveCount(rows, q)]);
      expect([q, r.total, r.page]).toEqual([q, r.exactTotal, r.exactPage]);
    }
    expect((await both(owner, "q=%C3%BCberweisung")).total).toBe(2);
    expect((await both(owner, `q=${encodeURIComponent("οδυσσευς")}`)).total).toBe(1);
  });

  test("narrows a term longer than the suffix rows by its first characters and rechecks the name", async () => {
    const owner = "sfx-long";
    const head = "quarterly-report"; // exactly SUFFIX_CHARS characters
    expect(head.length).toBe(SUFFIX_CHARS);
    const rows = [
      fileRow(owner, { path: `${head}-2024-final.pdf` }),
      fileRow(owner, { path: `x/${head}-2023-final.pdf` }),
      fileRow(owner, { path: `${head}.pdf` }),
      fileRow(owner, { path: `old ${head}-2024.pdf` }),
    ];
    await upsert(...rows);
    for (const q of [`${head}-2024`, `${head}-202`, `${head}-2024-final.pdf`, head, `${head}-2025`]) {
      const r = await both(owner, `q=${encodeURIComponent(q)}`);
      expect([q, r.total]).toEqual([q, naiveCount(rows, q)]);
      expect([q, r.page]).toEqual([q, r.exactPage]);
    }
    expect((await both(owner, `q=${head}-2024`)).total).toBe(2);
    expect((await both(owner, `q=${head}-2025`)).total).toBe(0);
  });

  test("answers q with file_type and a date range from the suffix rows, equal to the exact plan in every sort", async () => {
    const owner = "sfx-filters";
    const rows: FileRow[] = [];
    for (let i = 0; i < 60; i++) {
      const ext = [".jpg", ".png", ".pdf", ".txt"][i % 4];
      rows.push(
        fileRow(owner, {
          path: `d${i % 3}/screenshot ${2020 + (i % 5)}-${i}${i % 7 === 0 ? " screenshot" : ""}${ext}`,
          created: 1_700_000_000 + (i % 10) * 1000,
          size: 100 + i,
        }),
      );
    }
    rows.push(fileRow(owner, { path: "unrelated.jpg" }));
    await upsert(...rows);
    for (const qs of [
      "q=screenshot&file_type=image",
      "q=screenshot 2022&file_type=.pdf,.txt",
      "q=eensh&date_from=1700002000&date_to=1700005000",
      "q=screenshot&file_type=image&date_from=1700001000&date_to=1700003000&sort_order=asc",
      "q=screenshot&sort_by=size_bytes&offset=7&limit=9",
      "q=screenshot&sort_by=file_name&sort_order=asc&offset=3&limit=5",
      "q=screenshot&offset=13&limit=11",
      "q=screenshot&offset=40&limit=5&sort_order=asc",
      "q=scre&file_type=image",
    ]) {
      const r = await both(owner, qs.replaceAll(" ", "%20"));
      expect([qs, r.total, r.page]).toEqual([qs, r.exactTotal, r.exactPage]);
    }
    expect((await both(owner, "q=screenshot&file_type=image")).total).toBe(30);
    expect((await both(owner, "q=scre&file_type=image")).got.plan).toContain("count: gram counters");
  });

  test("a q with a date range reads the same files by the term's range and by first 3 characters and date", async () => {
    const owner = "sfx-routes";
    const head = "quarterly-report"; // exactly SUFFIX_CHARS characters
    const rows: FileRow[] = [];
    for (let i = 0; i < 48; i++) {
      const name = [
        `img_${2020 + (i % 4)}_${i}.jpg`,
        `imgimg-${i}.png`,
        `backup imgs ${i}.tar`,
        `${head}-${2020 + (i % 4)}.pdf`,
        `Überweisung ${i}.pdf`,
        `ima-${i}.txt`,
      ][i % 6];
      rows.push(
        fileRow(owner, { path: `d${i % 2}/${name}`, created: 1_700_000_000 + i * 1000, size: 10 + i }),
      );
    }
    await upsert(...rows);
    const byRoute = {
      term: new PgSearchIndex(db, { walkRows: 0, suffixRoute: "term" }),
      prefix_dates: new PgSearchIndex(db, { walkRows: 0, suffixRoute: "prefix_dates" }),
    };
    const window = "date_from=1700005000&date_to=1700030000";
    for (const qs of [
      `q=img&${window}`,
      `q=imgi&${window}&sort_order=asc&offset=2&limit=3`,
      `q=img_2021&${window}&file_type=image`,
      `q=mgs&${window}&sort_by=file_name`,
      `q=${head}-2022&${window}`,
      `q=${head}&${window}&sort_by=size_bytes&offset=1&limit=4`,
      `q=%C3%BCberw&${window}`,
      `q=ima-&date_from=1700000000`,
      `q=img&date_to=1700010000&offset=3&limit=2`,
      `q=img&date_from=1700047000&date_to=1700047000`,
    ]) {
      const query = parseSearchQuery(new URLSearchParams(qs));
      const exact = await byRoute.term.search(owner, query, { exact: true });
      const want = [qs, exact.total, exact.hits.map((h) => h.fileName)];
      for (const [route, index] of Object.entries(byRoute)) {
        const got = await index.search(owner, query);
        expect([route, ...[qs, got.total, got.hits.map((h) => h.fileName)]]).toEqual([route, ...want]);
        expect(got.plan.some((s) => s.includes("(first 3 characters and date)"))).toBe(
          route === "prefix_dates",
        );
      }
    }
    // In the window 1700005000..1700030000: files 5..30, of which img_ (i % 6 == 0), imgimg- (1) and
    // "backup imgs" (2) hold "img".
    const img = await byRoute.prefix_dates.search(
      owner,
      parseSearchQuery(new URLSearchParams(`q=img&${window}`)),
    );
    expect(img.total).toBe(rows.slice(5, 31).filter((_, k) => [0, 1, 2].includes((k + 5) % 6)).length);
  });

  test("the suffix rows are read by first 3 characters and date for a common term in a narrow date range or a page in creation order, by the term's range for a rare term", async () => {
    const owner = "sfx-route-choice";
    const rows = Array.from({ length: 200 }, (_, i) =>
      fileRow(owner, {
        path: i % 50 === 0 ? `img-zebra-${i}.jpg` : `img-${i}.jpg`,
        created: 1_700_000_000 + i * 10_000,
      }),
    );
    await upsert(...rows);
    const plan = async (qs: string) =>
      (await plainIndex.search(owner, parseSearchQuery(new URLSearchParams(qs)))).plan.join(" | ");
    // "img" is in every name; the range holds 10 of 200 files.
    expect(await plan("q=img&date_from=1700000000&date_to=1700090000")).toContain(
      "count: suffix index (first 3 characters and date)",
    );
    // "img-zebra" is in 4 names; the range holds every file: the term's range reads 4 rows.
    const rare = await plan("q=img-zebra&date_from=1600000000");
    expect(rare).toContain("count: suffix index");
    expect(rare).not.toContain("first 3 characters");
    // A page in creation order of the common term is read in that order, without walking the
    // created_at b-tree; the rare term's page (4 matches among 200 "img" names) is not. (A walk
    // budget is set so that these pages are not read with their count in one read, which a term
    // held by at most 60,000 files takes.)
    const paging = new PgSearchIndex(db, { walkRows: 100 });
    const pagePlan = async (qs: string) =>
      (await paging.search(owner, parseSearchQuery(new URLSearchParams(qs)))).plan.join(" | ");
    for (const qs of ["q=img-1&limit=5", "q=img-1&limit=5&offset=3&sort_order=asc"]) {
      const query = parseSearchQuery(new URLSearchParams(qs));
      const got = await paging.search(owner, query);
      const exact = await plainIndex.search(owner, query, { exact: true });
      expect([qs, got.total, got.hits.map((h) => h.fileName)]).toEqual([
        qs,
        exact.total,
        exact.hits.map((h) => h.fileName),
      ]);
      expect(got.plan).toContain("page: suffix index (first 3 characters and date) by created_at");
      expect(got.plan.join(" | ")).not.toContain("b-tree");
    }
    expect(await pagePlan("q=img-zebra&limit=2")).not.toContain("first 3 characters");
  });

  test("a page whose walk of the sort b-tree runs out of rows is read from the suffix rows", async () => {
    const owner = "sfx-walk";
    // The newest files do not match: a walk from the newest end finds no match in its budget.
    const rows = [
      ...Array.from({ length: 20 }, (_, i) =>
        fileRow(owner, { path: `new-${i}.txt`, created: 1_800_000_000 + i }),
      ),
      ...Array.from({ length: 8 }, (_, i) =>
        fileRow(owner, { path: `old-report-${i}.txt`, created: 1_700_000_000 + i }),
      ),
    ];
    await upsert(...rows);
    const walking = new PgSearchIndex(db, { walkRows: 10 });
    const query = parseSearchQuery(new URLSearchParams("q=report&limit=5"));
    const got = await walking.search(owner, query);
    const exact = await walking.search(owner, query, { exact: true });
    expect(got.plan).toContain("page: created_at b-tree, 10 rows gave 0 of the page");
    expect(got.plan).toContain("page: suffix index by created_at");
    expect([got.total, got.hits.map((h) => h.fileName)]).toEqual([8, exact.hits.map((h) => h.fileName)]);
    const walked = await new PgSearchIndex(db, { walkRows: 100 }).search(owner, query);
    expect(walked.plan).toContain("page: created_at b-tree, names tested in at most 100 rows");
    expect(walked.hits.map((h) => h.fileName)).toEqual(exact.hits.map((h) => h.fileName));
  });

  test("pages ties in created_at by path_hash across the page boundary as the exact plan does", async () => {
    const owner = "sfx-ties";
    const rows = Array.from({ length: 30 }, (_, i) =>
      fileRow(owner, { path: `tie-${i}-holiday.jpg`, created: 1_700_000_000 + (i < 25 ? 0 : i) }),
    );
    await upsert(...rows);
    for (const qs of ["q=holiday&limit=7&offset=3", "q=holiday&limit=10&sort_order=asc&offset=8"]) {
      const r = await both(owner, qs);
      expect([qs, r.total, r.page]).toEqual([qs, 30, r.exactPage]);
    }
  });

  test("a rename, a new revision and a delete update the suffix rows in the writing transaction", async () => {
    const owner = "sfx-writes";
    const a = fileRow(owner, { path: "notes/holiday-plan.txt", created: 1_700_000_000 });
    const b = fileRow(owner, { path: "notes/budget-plan.txt", created: 1_700_000_100 });
    await upsert(a, b);
    expect((await both(owner, "q=holiday")).total).toBe(1);
    // Rename a: the old name no longer matches, the new one does.
    await upsert({
      ...a,
      fileName: "vacation-plan.md",
      relativePath: "notes/vacation-plan.md",
      searchName: "notes/vacation-plan.md",
      ext: ".md",
    });
    expect((await both(owner, "q=holiday")).total).toBe(0);
    expect((await both(owner, "q=vacation")).total).toBe(1);
    expect((await both(owner, "q=vacation&file_type=.md")).total).toBe(1);
    expect((await both(owner, "q=vacation&file_type=.txt")).total).toBe(0);
    // A new revision with another creation date moves it in the date filter.
    await upsert({ ...b, createdAt: 1_800_000_000, revisionSeq: 2 });
    expect((await both(owner, "q=budget&date_to=1700000200")).total).toBe(0);
    expect((await both(owner, "q=budget&date_from=1799999999")).total).toBe(1);
    await remove(b);
    const r = await both(owner, "q=-plan");
    expect([r.total, r.exactTotal]).toEqual([1, 1]);
    const [left] = await db.$client`SELECT count(*)::int AS n FROM search_files WHERE owner = ${owner}`;
    expect(left?.n).toBe(1);
  });

  test("TRUNCATE files empties the suffix rows, and the same files written again are found once", async () => {
    const owner = "sfx-truncate";
    const rows = [
      fileRow(owner, { path: "t/annual-report.pdf" }),
      fileRow(owner, { path: "t/report-draft.pdf" }),
    ];
    await upsert(...rows);
    const sql = db.$client;
    // Every owner's files go (the tests before this one are done with theirs).
    await sql`TRUNCATE files`;
    const [left] =
      await sql`SELECT (SELECT count(*) FROM search_suffixes) + (SELECT count(*) FROM search_files) AS n`;
    expect(Number(left?.n)).toBe(0);
    await upsert(...rows);
    const r = await both(owner, "q=report");
    expect([r.total, r.page]).toEqual([2, r.exactPage]);
    // One statement truncating files and the suffix tables (as the test helpers' reset does).
    await sql`TRUNCATE files, search_suffixes, search_files`;
    await upsert(...rows);
    expect((await both(owner, "q=report")).total).toBe(2);
  });

  test("esync_search_recount() rebuilds suffix rows that drifted from files", async () => {
    const owner = "sfx-recount";
    const rows = [
      fileRow(owner, { path: "x/summer-photos-1.jpg" }),
      fileRow(owner, { path: "x/summer-photos-2.jpg" }),
      fileRow(owner, { path: "x/winter-photos.jpg" }),
    ];
    await upsert(...rows);
    const sql = db.$client;
    await sql`DELETE FROM search_suffixes WHERE suffix LIKE 'summer%'`;
    await sql`UPDATE search_suffixes SET next_lcp = 0`;
    expect((await index.search(owner, parseSearchQuery(new URLSearchParams("q=summer")))).total).not.toBe(2);
    await sql.begin(async (tx) => {
      await tx`SELECT esync_search_recount()`;
    });
    for (const q of ["summer", "photos", "r-photos", "winter-photos.jpg"]) {
      const r = await both(owner, `q=${q}`);
      expect([q, r.total, r.page]).toEqual([q, naiveCount(rows, q), r.exactPage]);
    }
  });
});
