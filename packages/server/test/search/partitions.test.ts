/**
 * The id partitions (src/search/partitions.ts, drizzle/sqlite/0008_search_partitions.sql): the class and
 * date bucket functions, how a date window splits on the buckets, the migration's ext -> class
 * table, and the triggers' id allocation: moving a row when its class or bucket changes, the
 * spill bucket when a partition is full, and the error when the spill is full too. Searches
 * counted over the partitions are compared with the naive model.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { MAX_VALUE, MIN_VALUE } from "../../src/db/sqlite/search/buckets.ts";
import { SqliteSearchIndex } from "../../src/db/sqlite/search/index.ts";
import {
  bucketSpan,
  classesOf,
  classOf,
  dateBucket,
  EXT_CLASSES,
  PARTITION,
  splitWindow,
} from "../../src/db/sqlite/search/partitions.ts";
import { parseFileType } from "../../src/search/file-types.ts";
import { parseSearchQuery } from "../../src/search/search.query.ts";
import { makeTestApp } from "../support/app.ts";
import { newUser } from "../support/fixtures.ts";
import { expectIndexConsistent, type FileSpec, fileRow, filesUpserter, hex, modelSearch } from "./support.ts";

const { epoch, bucketSeconds: W, lastBucket, spillBucket } = PARTITION;

describe("date buckets", () => {
  test("buckets grow with created_at, and each time lies in its bucket's span", () => {
    const times = [-5, 0, epoch - 1, epoch, epoch + 1, epoch + W - 1, epoch + W, 1_700_000_000];
    times.push(epoch + (lastBucket - 1) * W - 1, epoch + (lastBucket - 1) * W, 2 ** 40, MAX_VALUE);
    let prev = -1;
    for (const t of times) {
      const b = dateBucket(t);
      expect(b).toBeGreaterThanOrEqual(prev);
      const [lo, hi] = bucketSpan(b);
      expect(t >= lo && t <= hi).toBe(true);
      prev = b;
    }
    expect([dateBucket(epoch - 1), dateBucket(epoch), dateBucket(epoch + W)]).toEqual([0, 1, 2]);
    expect(dateBucket(2 ** 40)).toBe(lastBucket);
    expect(bucketSpan(0)[0]).toBe(MIN_VALUE);
    expect(bucketSpan(lastBucket)[1]).toBe(MAX_VALUE);
  });

  test("a window splits into whole buckets and at most two edges that cover it exactly once", () => {
    const windows: [number, number][] = [
      [epoch + 10, epoch + 10 * W + 5],
      [epoch, epoch + 3 * W - 1],
      [epoch + 5, epoch + W + 5],
      [epoch + 5, epoch + 6],
      [1_700_000_000, MAX_VALUE],
      [MIN_VALUE, 1_700_000_000],
      [MIN_VALUE, MAX_VALUE],
    ];
    for (const [lo, hi] of windows) {
      const s = splitWindow(lo, hi);
      const parts: [number, number][] = [...s.edges];
      if (s.buckets) {
        const bHi = s.all ? lastBucket : s.buckets.bHi;
        parts.push([bucketSpan(s.buckets.bLo)[0], bucketSpan(bHi)[1]]);
        expect(s.spill).toEqual(s.all ? null : [bucketSpan(s.buckets.bLo)[0], bucketSpan(bHi)[1]]);
      }
      parts.sort((a, b) => a[0] - b[0]);
      expect(parts[0]![0]).toBe(lo);
      expect(parts.at(-1)![1]).toBe(hi);
      for (let i = 1; i < parts.length; i++) expect(parts[i]![0]).toBe(parts[i - 1]![1] + 1);
      expect(s.edges.length).toBeLessThanOrEqual(2);
    }
    expect(splitWindow(MIN_VALUE, MAX_VALUE)).toMatchObject({
      all: true,
      buckets: { bLo: 0, bHi: spillBucket },
    });
    expect(splitWindow(epoch + 5, epoch + 6).buckets).toBeNull();
  });
});

describe("classes", () => {
  test("each category is one class, every other extension class 0", () => {
    expect(classOf(".jpg")).toBe(classOf(".png"));
    expect(classOf(".pdf")).not.toBe(classOf(".doc"));
    expect([classOf(null), classOf(".x1"), classOf(".tar.gz")]).toEqual([0, 0, 0]);
  });

  test("a file_type is a set of classes only when it is whole categories", () => {
    expect(classesOf(null)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(classesOf(parseFileType("image"))).toEqual([classOf(".png")]);
    expect(classesOf(parseFileType(".PDF"))).toEqual([classOf(".pdf")]);
    expect(classesOf(parseFileType("audio,code,.mp3"))).toEqual([classOf(".mp3"), classOf(".js")]);
    expect(classesOf(parseFileType("pdf,.jpg"))).toBeNull();
    expect(classesOf(parseFileType(".x1"))).toBeNull();
  });

  const t = makeTestApp();
  afterAll(() => t.close());

  test("the migration's ext -> class table is the categories of file-types.ts", () => {
    const rows = t.db.$client
      .query<{ ext: string; class: number }, []>("SELECT ext, class FROM search_ext_classes")
      .all();
    expect(new Map(rows.map((r) => [r.ext, r.class]))).toEqual(new Map(EXT_CLASSES));
  });
});

describe("id allocation by the triggers", () => {
  const t = makeTestApp();
  afterAll(() => t.close());
  const db = t.db;
  const sql = db.$client;
  const upsert = filesUpserter(db);
  const T0 = 1_700_000_000;

  const idParts = (pathHash: Buffer) =>
    sql
      .query<{ cls: number; bucket: number; seq: number }, [Buffer]>(
        "SELECT (id >> 36) & 7 AS cls, (id >> 23) & 8191 AS bucket, id & 8388607 AS seq FROM search_entries WHERE path_hash = ?",
      )
      .get(pathHash);

  /** Moves an entry to the last id of its partition (as if 2^23 rows had been inserted there). */
  const moveToPartitionEnd = (pathHash: Buffer, bucket?: number) => {
    sql.transaction(() => {
      const e = sql
        .query<Record<string, unknown>, [Buffer]>("SELECT * FROM search_entries WHERE path_hash = ?")
        .get(pathHash)!;
      sql.query("DELETE FROM search_entries WHERE path_hash = ?").run(pathHash);
      sql
        .query(
          `INSERT INTO search_entries (id, oid, folder_hash, path_hash, file_name, name, ext, dir, size_bytes, created_at, updated_at)
           SELECT CASE WHEN ?2 IS NULL THEN ?1 | 8388607 ELSE ((((?1 >> 36) << 13) | ?2) << 23) | 8388607 END,
             ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12`,
        )
        .run(
          e.id as number,
          bucket ?? null,
          e.oid as number,
          e.folder_hash as string,
          e.path_hash as Buffer,
          e.file_name as string | null,
          e.name as string | null,
          e.ext as string | null,
          e.dir as string | null,
          e.size_bytes as number,
          e.created_at as number,
          e.updated_at as number,
        );
    })();
  };

  const expectSearchesExact = async (owner: string, rows: ReturnType<typeof fileRow>[]) => {
    const index = new SqliteSearchIndex(db, { tuning: { partitions: "always", rareHits: 0 } });
    const queries = [
      `q=spill&date_from=${T0 - 20 * W}&date_to=${T0 + 20 * W}`,
      `q=spill&date_from=${T0 - 20 * W}`,
      `q=spill&date_to=${T0 + 3 * W}&file_type=image`,
      "q=spill&file_type=image",
      "q=spill_1&file_type=image",
      `q=pill&date_from=${T0 - 2}&date_to=${T0 + 2}`,
      "q=spil",
    ];
    for (const qs of queries) {
      const q = parseSearchQuery(new URLSearchParams(qs));
      const got = await index.search(owner, q);
      const want = modelSearch(rows, q);
      expect({ qs, total: got.total, page: got.hits.map((f) => hex(f.pathHash)) }).toEqual({
        qs,
        total: want.total,
        page: want.page,
      });
    }
  };

  test("a row gets the next id of its class and date bucket, and moves when either changes", async () => {
    const owner = newUser().address;
    const spec: FileSpec = { path: "p/spill_a.jpg", created: T0 };
    const a = fileRow(owner, spec);
    const b = fileRow(owner, { path: "p/spill_b.jpg", created: T0 + 1 });
    upsert(a);
    upsert(b);
    expect(idParts(a.pathHash)).toEqual({ cls: classOf(".jpg"), bucket: dateBucket(T0), seq: 0 });
    expect(idParts(b.pathHash)).toEqual({ cls: classOf(".jpg"), bucket: dateBucket(T0), seq: 1 });
    // A new revision in the same partition keeps the id.
    upsert({ ...a, sizeBytes: 5, updatedAt: T0 + 50 });
    expect(idParts(a.pathHash)?.seq).toBe(0);
    // Another created_at bucket, then another class: the row moves.
    const moved = { ...a, createdAt: T0 + 10 * W };
    upsert(moved);
    expect(idParts(a.pathHash)).toEqual({ cls: classOf(".jpg"), bucket: dateBucket(T0 + 10 * W), seq: 0 });
    const renamed = { ...moved, fileName: "spill_a.pdf", searchName: "spill_a.pdf", ext: ".pdf" };
    upsert(renamed);
    expect(idParts(a.pathHash)).toEqual({ cls: classOf(".pdf"), bucket: dateBucket(T0 + 10 * W), seq: 0 });
    expectIndexConsistent(db);
    await expectSearchesExact(owner, [renamed, b]);
  });

  test("a full partition spills into its class's spill bucket, which searches still count", async () => {
    const owner = newUser().address;
    const rows = [
      fileRow(owner, { path: "p/spill_1.jpg", created: T0 }),
      fileRow(owner, { path: "p/spill_2.jpg", created: T0 + 1 }),
      fileRow(owner, { path: "p/spill_3.png", created: T0 + 2 }),
      fileRow(owner, { path: "p/spill_4.png", created: T0 + 5 * W }),
    ];
    upsert(rows[0]!);
    moveToPartitionEnd(rows[0]!.pathHash);
    expect(idParts(rows[0]!.pathHash)?.seq).toBe(2 ** PARTITION.seqBits - 1);
    for (const r of rows.slice(1)) upsert(r);
    expect(idParts(rows[1]!.pathHash)).toEqual({ cls: classOf(".jpg"), bucket: spillBucket, seq: 0 });
    expect(idParts(rows[2]!.pathHash)).toEqual({ cls: classOf(".png"), bucket: spillBucket, seq: 1 });
    expect(idParts(rows[3]!.pathHash)?.bucket).toBe(dateBucket(T0 + 5 * W));
    expectIndexConsistent(db);
    await expectSearchesExact(owner, rows);
    // A revision of a spilled row is placed again: its own bucket is still full, so the spill.
    const revised = { ...rows[1]!, sizeBytes: 77 };
    upsert(revised);
    expect(idParts(revised.pathHash)?.bucket).toBe(spillBucket);
    expectIndexConsistent(db);
    await expectSearchesExact(owner, [rows[0]!, revised, rows[2]!, rows[3]!]);
  });

  test("when the spill bucket is full too, the file write commits, the index is degraded and answers exactly, and a rebuild restores it", async () => {
    const owner = newUser().address;
    const first = fileRow(owner, { path: "p/spill_x.gif", created: T0 });
    const second = fileRow(owner, { path: "p/spill_y.gif", created: T0 });
    upsert(first);
    upsert(second);
    moveToPartitionEnd(first.pathHash);
    moveToPartitionEnd(second.pathHash, spillBucket);
    const third = fileRow(owner, { path: "p/spill_z.gif", created: T0 });
    upsert(third);
    const n = sql
      .query<{ n: number }, [string]>("SELECT count(*) AS n FROM files WHERE owner = ?")
      .get(owner)!.n;
    expect(n).toBe(3);
    const index = new SqliteSearchIndex(db);
    expect(await index.health()).toMatchObject({
      state: "degraded",
      reason: expect.stringMatching(/partition full/),
    });
    const q = parseSearchQuery(new URLSearchParams("q=spill&file_type=image"));
    const degraded = await index.search(owner, q);
    expect(degraded.plan[0]).toBe("count: exact scan of files");
    expect(degraded.total).toBe(3);
    await expectSearchesExact(owner, [first, second, third]);
    const report = await index.rebuild();
    expect(report.health).toEqual({ state: "ok", reason: null, since: null });
    expect((await index.search(owner, q)).plan[0]).not.toBe("count: exact scan of files");
    expectIndexConsistent(db);
    await expectSearchesExact(owner, [first, second, third]);
  });

  test("an owner id beyond the 24 bits of the layout never overlaps another owner's ids: the write commits, the index is degraded until a rebuild renumbers the owners", async () => {
    const owner = newUser().address;
    sql.query("INSERT INTO search_owners (id, owner) VALUES (?, ?)").run(PARTITION.maxOwners, owner);
    const row = fileRow(owner, { path: "p/spill_owner.jpg" });
    upsert(row);
    const index = new SqliteSearchIndex(db);
    expect(await index.health()).toMatchObject({
      state: "degraded",
      reason: "search index: over 2^24 owners",
    });
    expect(
      sql.query("SELECT count(*) AS n FROM search_entries WHERE oid >= ?").get(PARTITION.maxOwners),
    ).toEqual({ n: 0 });
    await expectSearchesExact(owner, [row]);
    await index.rebuild();
    expect((await index.health()).state).toBe("ok");
    expectIndexConsistent(db);
    await expectSearchesExact(owner, [row]);
  });
});
