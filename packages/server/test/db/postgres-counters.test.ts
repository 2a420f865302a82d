/**
 * The PostgreSQL triggers on `files` (drizzle/postgres/0001_counters.sql) keep `account_usage`
 * and `usage_buckets` equal to what a recount of the live rows gives, through inserts, replaces,
 * renames, moves between owners and folders, and deletes, as the SQLite triggers do.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import fc from "fast-check";
import { openPostgres, type PgDb } from "../../src/db/postgres/client.ts";
import { files } from "../../src/db/postgres/schema.ts";
import { PG_SETUP_TIMEOUT_MS, type PgTestDatabase, pgTestDatabase } from "../support/pg-server.ts";

let database: PgTestDatabase;
let db: PgDb;
beforeAll(async () => {
  database = await pgTestDatabase("counters");
  db = await openPostgres(database.url);
}, PG_SETUP_TIMEOUT_MS);
afterAll(async () => {
  await db?.$client.close();
  await database?.drop();
});

const OWNERS = ["alice", "bob"];
const FOLDERS = ["f1", "f2"];
const NAMES: (string | null)[] = ["a.png", "b.PDF", "c.txt", "d.unknown", "noext", null];
const SOURCES: (string | null)[] = ["desktop", "Mobile", "console", "web", null];

function extOf(name: string | null): string | null {
  if (name === null) return null;
  const i = name.lastIndexOf(".");
  return i < 0 ? null : name.slice(i).toLowerCase();
}

function row(
  owner: string,
  folderHash: string,
  key: number,
  name: string | null,
  source: string | null,
  size: number,
) {
  return {
    owner,
    folderHash,
    pathHash: Buffer.from([key]),
    saltedHash: Buffer.alloc(32),
    sizeBytes: size,
    revisionSeq: 1,
    revisionId: Buffer.alloc(16),
    encryptedPath: Buffer.alloc(8),
    fileName: name,
    relativePath: name,
    searchName: name?.toLowerCase() ?? null,
    ext: extOf(name),
    storeHash: null,
    chunkHashes: null,
    createdAt: 1_700_000_000,
    updatedAt: 1_700_000_000 + key,
    clientTimestamp: 0,
    source,
    attributes: null,
    uploadId: "u",
    ciphertextHash: "0".repeat(64),
    ciphertextSize: size + 40,
    blobId: `b${key}`,
    chunkSize: 1024,
    chunkCount: 1,
    chunkGens: "[0]",
    uploadedBy: null,
  };
}

const op = fc.oneof(
  fc.record({
    kind: fc.constant("write" as const),
    owner: fc.constantFrom(...OWNERS),
    folder: fc.constantFrom(...FOLDERS),
    key: fc.integer({ min: 0, max: 5 }),
    name: fc.constantFrom(...NAMES),
    source: fc.constantFrom(...SOURCES),
    size: fc.integer({ min: 0, max: 10_000_000_000 }),
  }),
  fc.record({
    kind: fc.constant("move" as const),
    owner: fc.constantFrom(...OWNERS),
    folder: fc.constantFrom(...FOLDERS),
    key: fc.integer({ min: 0, max: 5 }),
    toOwner: fc.constantFrom(...OWNERS),
    toFolder: fc.constantFrom(...FOLDERS),
    toKey: fc.integer({ min: 0, max: 5 }),
  }),
  fc.record({
    kind: fc.constant("delete" as const),
    owner: fc.constantFrom(...OWNERS),
    folder: fc.constantFrom(...FOLDERS),
    key: fc.integer({ min: 0, max: 5 }),
  }),
);

test(
  "account_usage and usage_buckets equal a recount of files after any sequence of writes, moves and deletes",
  async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 30 }), async (ops) => {
        await db.$client`TRUNCATE files, account_usage, usage_buckets`;
        for (const o of ops) {
          const key = (owner: string, folder: string, k: number) =>
            and(eq(files.owner, owner), eq(files.folderHash, folder), eq(files.pathHash, Buffer.from([k])));
          if (o.kind === "write") {
            const r = row(o.owner, o.folder, o.key, o.name, o.source, o.size);
            const { owner: _o, folderHash: _f, pathHash: _p, ...set } = r;
            await db
              .insert(files)
              .values(r)
              .onConflictDoUpdate({ target: [files.owner, files.folderHash, files.pathHash], set });
          } else if (o.kind === "move") {
            await db
              .update(files)
              .set({ owner: o.toOwner, folderHash: o.toFolder, pathHash: Buffer.from([o.toKey]) })
              .where(key(o.owner, o.folder, o.key))
              .catch((e) => {
                // A move onto an existing row is a unique violation, as intended.
                if (!String(e?.cause?.errno ?? e?.errno).includes("23505")) throw e;
              });
          } else {
            await db.delete(files).where(key(o.owner, o.folder, o.key));
          }
        }
        const usage = await db.$client`
          SELECT owner, file_count::int AS n, total_bytes::bigint AS bytes FROM account_usage WHERE file_count <> 0 OR total_bytes <> 0 ORDER BY owner`;
        const recount = await db.$client`
          SELECT owner, count(*)::int AS n, sum(size_bytes)::bigint AS bytes FROM files GROUP BY owner ORDER BY owner`;
        expect([...usage]).toEqual([...recount]);
        const buckets = await db.$client`
          SELECT owner, folder_hash, kind, bucket, file_count::int AS n, total_bytes::bigint AS bytes
          FROM usage_buckets WHERE file_count <> 0 OR total_bytes <> 0 ORDER BY 1, 2, 3, 4`;
        const bucketRecount = await db.$client`
          SELECT owner, folder_hash, kind, bucket, count(*)::int AS n, sum(size_bytes)::bigint AS bytes FROM (
            SELECT owner, folder_hash, 'type' AS kind, esync_type_bucket(file_name, ext) AS bucket, size_bytes FROM files
            UNION ALL SELECT owner, folder_hash, 'source', esync_source_bucket(source), size_bytes FROM files) AS t
          GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`;
        expect([...buckets]).toEqual([...bucketRecount]);
      }),
      { numRuns: 40 },
    );
  },
  PG_SETUP_TIMEOUT_MS,
);

test("the type bucket follows the file_type categories, and 'other' without a file name", async () => {
  const rows =
    await db.$client`SELECT esync_type_bucket('x.png', '.png') AS a, esync_type_bucket('x.json', '.json') AS b,
    esync_type_bucket(NULL, '.png') AS c, esync_type_bucket('x', NULL) AS d, esync_source_bucket('DESKTOP') AS e`;
  expect({ ...rows[0] }).toEqual({ a: "image", b: "code", c: "other", d: "other", e: "desktop" });
});
