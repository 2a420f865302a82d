/**
 * The summaries of docs/protocol.md#summaries stay exact as files are written, replaced, renamed,
 * back-filled and deleted (one by one, in batches, with their folder): after every random
 * sequence of writes, each summary (account-wide and per folder) equals a recomputation from the
 * `files` rows.
 */
import { afterAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { FILE_TYPE_BUCKETS, SOURCE_BUCKETS } from "@esync/protocol/schemas.ts";
import fc from "fast-check";
import { FILE_TYPE_CATEGORIES } from "../../src/search/file-types.ts";
import { makeTestApp } from "../support/app.ts";

const t = makeTestApp();
afterAll(() => t.close());
const s = t.services;

const OWNERS = [
  "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY",
  "5FHneW46xGXgs5mUiveU4sbTyGBzmstUspZC92UhjJM694ty",
];
const FOLDERS = ["0123456789abcdef", "fedcba9876543210"];
const NAMES = ["a.png", "B.JPG", "doc.pdf", "x.tar.gz", "noext", null, "c.Ts", "weird.xyz", "song.MP3"];
const SOURCES = [null, "desktop", "Console", "mobile", "python-sdk"];
const PATHS = 6;

const pathHash = (i: number) => Buffer.alloc(32, i + 1);

type Op =
  | { kind: "write"; o: number; f: number; p: number; size: number; name: number; source: number }
  | { kind: "rename"; o: number; f: number; p: number; to: number; name: number }
  | { kind: "delete"; o: number; f: number; p: number }
  | { kind: "deleteMany"; o: number; f: number; ps: number[] }
  | { kind: "backfill"; o: number; f: number; p: number; name: number }
  | { kind: "unregister"; o: number; f: number };

const idx = (n: number) => fc.integer({ min: 0, max: n - 1 });
const where = { o: idx(OWNERS.length), f: idx(FOLDERS.length) };
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("write" as const),
      ...where,
      p: idx(PATHS),
      size: fc.integer({ min: 0, max: 5000 }),
      name: idx(NAMES.length),
      source: idx(SOURCES.length),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("rename" as const),
      ...where,
      p: idx(PATHS),
      to: idx(PATHS),
      name: idx(NAMES.length),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("delete" as const), ...where, p: idx(PATHS) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("deleteMany" as const),
      ...where,
      ps: fc.array(idx(PATHS), { maxLength: 4 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("backfill" as const),
      ...where,
      p: idx(PATHS),
      name: idx(NAMES.length),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("unregister" as const), ...where }) },
);

async function apply(x: Op): Promise<void> {
  const owner = OWNERS[x.o]!;
  const folder = FOLDERS[x.f]!;
  const files = s.files;
  try {
    switch (x.kind) {
      case "write": {
        const ph = pathHash(x.p);
        const cur = await s.files.currentRevision(owner, folder, ph);
        const name = NAMES[x.name] ?? null;
        await files.commit(
          {
            ss58Address: owner,
            folderHash: folder,
            ciphertextHash: "0".repeat(64),
            sizeBytes: x.size,
            timestamp: 0,
            signature: new Uint8Array(64),
            signingKey: new Uint8Array(32),
            pathHash: ph,
            saltedHash: new Uint8Array(32),
            revisionSeq: cur.currentRevisionSeq + 1,
            baseRevisionId: cur.currentRevisionId,
            encryptedPath: new Uint8Array(0),
            fileName: name,
            relativePath: name === null ? null : `d/${name}`,
            source: SOURCES[x.source] ?? null,
            attributes: null,
          },
          {
            blobId: randomBytes(8).toString("hex"),
            chunkSize: 1,
            chunkCount: 1,
            size: 1,
            gens: ["g"],
            ciphertextHash: "0".repeat(64),
            chunkHashes: null,
          },
        );
        break;
      }
      case "rename": {
        const cur = await s.files.currentRevision(owner, folder, pathHash(x.p));
        const name = NAMES[x.name] ?? null;
        await files.renameMany(owner, folder, [
          {
            oldPathHash: pathHash(x.p),
            newPathHash: pathHash(x.to),
            baseRevisionId: cur.currentRevisionId ?? new Uint8Array(32),
            encryptedPath: new Uint8Array(0),
            fileName: name,
            relativePath: name,
          },
        ]);
        break;
      }
      case "delete":
        await files.remove(owner, folder, pathHash(x.p));
        break;
      case "deleteMany":
        await files.removeMany(
          owner,
          folder,
          x.ps.map((p) => pathHash(p).toString("hex")),
        );
        break;
      case "backfill":
        await files.registerRelativePaths(owner, folder, [
          { path_hash: pathHash(x.p).toString("hex"), relative_path: `r/${NAMES[x.name] ?? "plain"}` },
        ]);
        break;
      case "unregister":
        await s.folders.register(owner, folder, "label", null);
        await s.folders.unregister(owner, folder);
        break;
    }
  } catch (e) {
    // Expected refusals (no such file, a folder already registered) change nothing.
    if ((e as Error).name !== "AppError") throw e;
  }
}

type Row = {
  owner: string;
  folder_hash: string;
  file_name: string | null;
  ext: string | null;
  source: string | null;
  size_bytes: number;
};

function typeOf(r: Row): string {
  if (r.file_name === null) return "other";
  for (const [cat, exts] of Object.entries(FILE_TYPE_CATEGORIES))
    if (r.ext !== null && exts.includes(r.ext)) return cat;
  return "other";
}
function sourceOf(r: Row): string {
  const v = (r.source ?? "").toLowerCase();
  return (SOURCE_BUCKETS as readonly string[]).includes(v) && v !== "other" ? v : "other";
}
function recompute(rows: Row[], keys: readonly string[], bucket: (r: Row) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of keys) {
    out[k] = 0;
    out[`${k}_bytes`] = 0;
  }
  for (const r of rows) {
    const k = bucket(r);
    out[k]! += 1;
    out[`${k}_bytes`]! += r.size_bytes;
  }
  return out;
}

test("summaries equal a recomputation from the rows after any sequence of writes, renames and deletes", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(op, { maxLength: 40 }), async (ops) => {
      t.db.$client.exec("DELETE FROM files; DELETE FROM folders; DELETE FROM folder_entries");
      for (const x of ops) await apply(x);
      const all = t.db.$client
        .query("SELECT owner, folder_hash, file_name, ext, source, size_bytes FROM files")
        .all() as Row[];
      for (const owner of OWNERS) {
        for (const folder of [null, ...FOLDERS]) {
          const rows = all.filter((r) => r.owner === owner && (folder === null || r.folder_hash === folder));
          const user = await s.summaries.user(owner, folder);
          expect({ n: user.file_count, b: user.total_bytes }).toEqual({
            n: rows.length,
            b: rows.reduce((a, r) => a + r.size_bytes, 0),
          });
          expect(await s.summaries.fileTypes(owner, folder)).toEqual(
            recompute(rows, FILE_TYPE_BUCKETS, typeOf) as never,
          );
          expect(await s.summaries.sources(owner, folder)).toEqual(
            recompute(rows, SOURCE_BUCKETS, sourceOf) as never,
          );
        }
        expect((await s.quota.info(owner)).usedBytes).toBe(
          all.filter((r) => r.owner === owner).reduce((a, r) => a + r.size_bytes, 0),
        );
      }
    }),
    { numRuns: 150 },
  );
});
