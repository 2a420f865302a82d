/**
 * The SQLite search index's counters are kept through a log folded in batches
 * (`src/db/sqlite/search/counters.ts`): every write path leaves counters plus log exact, writers fold
 * once the log is long, readers fold first, a failed fold never fails a write, and log rows a
 * process left are folded when the database is opened again.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { ciphertextSizeFor } from "@esync/protocol/framing.ts";
import { renameDeclaration } from "@esync/protocol/rename.ts";
import { ed25519Sign } from "@polkadot/util-crypto";
import { FOLD_AT, pendingCounterRows } from "../../src/db/sqlite/search/counters.ts";
import { SqliteSearchIndex } from "../../src/db/sqlite/search/index.ts";
import { openSqliteStore } from "../../src/db/sqlite/store.ts";
import { parseSearchQuery } from "../../src/search/search.query.ts";
import {
  authAt,
  expectSuccess,
  FOLDER_B,
  fileIdOf,
  finalize,
  openSession,
  putChunks,
  uploadSingle,
} from "../http/helpers.ts";
import { jsonInit, makeTestApp } from "../support/app.ts";
import {
  folderKey,
  makeManifest,
  newUser,
  pathHashOf,
  randomCiphertext,
  type TestUser,
} from "../support/fixtures.ts";
import { tempDir } from "../support/tmp.ts";
import { expectIndexConsistent, FOLDER, fileRow, filesUpserter, insertFiles, search } from "./support.ts";

const t = makeTestApp();
afterAll(() => t.close());

/** Uploads `path` through single-shot POST /upload; returns the manifest and the revision id. */
async function upload(
  user: TestUser,
  path: string,
  opts: { folderHash?: string; size?: number; base?: number[]; seq?: number; named?: boolean } = {},
) {
  const ct = randomCiphertext(ciphertextSizeFor(opts.size ?? 10));
  const m = makeManifest({
    owner: user.address,
    ciphertext: ct,
    path,
    folderHash: opts.folderHash ?? FOLDER,
    sizeBytes: opts.size ?? 10,
    baseRevisionId: opts.base ?? null,
    revisionSeq: opts.seq ?? 1,
    ...(opts.named === false ? { fileName: null, relativePath: null } : {}),
  });
  const r = await uploadSingle(t, authAt(t, user), m, ct);
  expect(r.status).toBe(200);
  return { manifest: m, revisionId: r.body.Success.revision_id as number[] };
}

/** A signed `/rename_files` body (docs/protocol.md#rename-files) for `renames` of `owner`'s default folder. */
function renameBody(
  owner: string,
  renames: ({ old_path_hash: unknown; new_path_hash: number[] } & Record<string, unknown>)[],
) {
  const text = renameDeclaration(
    renames.map((r) => ({
      oldPathHash: Uint8Array.from(r.old_path_hash as number[]),
      newPathHash: Uint8Array.from(r.new_path_hash),
    })),
  );
  return {
    ss58_address: owner,
    folder_hash: FOLDER,
    renames,
    signature: Array.from(ed25519Sign(new TextEncoder().encode(text), folderKey)),
    signing_key: Array.from(folderKey.publicKey),
  };
}

describe("every write path keeps the SQLite search index exact", () => {
  test("upload, session finalize, revision, rename, batch delete, delete, relative-path back-fill, folder unregister", async () => {
    const u = newUser();
    const auth = authAt(t, u);
    const steps: [string, () => Promise<void>][] = [];
    let a: Awaited<ReturnType<typeof upload>> | undefined;
    let b: Awaited<ReturnType<typeof upload>> | undefined;
    let c: Awaited<ReturnType<typeof upload>> | undefined;
    let nameless: Awaited<ReturnType<typeof upload>> | undefined;
    steps.push([
      "single-shot uploads",
      async () => {
        a = await upload(u, "photos/2024/summer/beach.jpg", { size: 5000 });
        b = await upload(u, "docs/report-final.pdf", { size: 120 });
        nameless = await upload(u, "found/later/readme", { named: false });
        c = await upload(u, "docs/old notes.txt");
      },
    ]);
    steps.push([
      "session finalize",
      async () => {
        const ct = randomCiphertext(3000);
        const s = await openSession(t, u, ct, { path: "music/album/track01.mp3" });
        await putChunks(t, s, ct);
        expect((await finalize(t, s.auth, s.sessionId)).status).toBe(200);
      },
    ]);
    steps.push([
      "new revision (size and updated_at change)",
      async () => {
        t.clock.advance(3600);
        a = await upload(u, "photos/2024/summer/beach.jpg", { size: 9_000_000, base: a!.revisionId, seq: 2 });
      },
    ]);
    steps.push([
      "rename_files (new name and directory, same partition; new extension class, new partition)",
      async () => {
        const r = await t.json(
          "/rename_files",
          jsonInit(
            "POST",
            auth,
            renameBody(u.address, [
              {
                old_path_hash: b!.manifest.path_hash,
                new_path_hash: pathHashOf("archive/r.zip"),
                new_file_name: "r.zip",
                new_relative_path: "archive/r.zip",
                base_revision_id: b!.revisionId,
              },
              {
                old_path_hash: c!.manifest.path_hash,
                new_path_hash: pathHashOf("docs/sub/new notes.txt"),
                new_file_name: "new notes.txt",
                new_relative_path: "docs/sub/new notes.txt",
                base_revision_id: c!.revisionId,
              },
            ]),
          ),
        );
        expect(r.body.Success.renamed_count).toBe(2);
      },
    ]);
    steps.push([
      "delete_files",
      async () => {
        const r = await t.json(
          "/delete_files",
          jsonInit("POST", auth, {
            ss58_address: u.address,
            folder_hash: FOLDER,
            file_ids: [fileIdOf(a!.manifest)],
          }),
        );
        expect(r.body.Success.files_deleted).toBe(1);
      },
    ]);
    steps.push([
      "register_relative_paths (a nameless row gets its name and directory, same partition)",
      async () => {
        const r = await t.json(
          `/register_relative_paths/${u.address}/${FOLDER}`,
          jsonInit("POST", auth, {
            entries: [{ path_hash: fileIdOf(nameless!.manifest), relative_path: "found/later/readme" }],
          }),
        );
        expect(expectSuccess(r, ["updated", "skipped", "errors"]).updated).toBe(1);
      },
    ]);
    steps.push([
      "delete",
      async () => {
        const ct = randomCiphertext(60);
        const m = makeManifest({ owner: u.address, ciphertext: ct, path: "tmp/x.log" });
        expect((await uploadSingle(t, auth, m, ct)).status).toBe(200);
        const r = await t.json(`/delete/${u.address}/${FOLDER}/${fileIdOf(m)}`, {
          method: "DELETE",
          headers: { authorization: auth },
        });
        expect(r.status).toBe(200);
      },
    ]);
    steps.push([
      "unregister_folder",
      async () => {
        await t.json(
          "/register_folder",
          jsonInit("POST", auth, { ss58_address: u.address, folder_hash: FOLDER_B, label: "B" }),
        );
        await upload(u, "b/one.txt", { folderHash: FOLDER_B });
        await upload(u, "b/deeper/two.txt", { folderHash: FOLDER_B });
        const r = await t.json(
          "/unregister_folder",
          jsonInit("DELETE", auth, { ss58_address: u.address, folder_hash: FOLDER_B }),
        );
        expect(r.body.Success.files_deleted).toBe(2);
      },
    ]);
    for (const [name, step] of steps) {
      await step();
      // No search in between: the check folds the log itself, as any reader does.
      try {
        expectIndexConsistent(t.db);
      } catch (e) {
        throw new Error(`index stale after: ${name}\n${(e as Error).message}`);
      }
    }
    const s = (await search(t, u, "sort_by=file_name&sort_order=asc")).body.Success;
    expect(s.files.map((f: { file_name: string }) => f.file_name)).toEqual([
      "new notes.txt",
      "r.zip",
      "readme",
      "track01.mp3",
    ]);
  });
});

describe("when the counters are folded", () => {
  test("a write transaction folds the log once it holds FOLD_AT rows; below that the rows wait", async () => {
    const u = newUser();
    expectIndexConsistent(t.db);
    insertFiles(
      t,
      u.address,
      Array.from({ length: FOLD_AT - 2 }, (_, i) => ({ path: `bulk/f${i}.txt` })),
    );
    expect(pendingCounterRows(t.db.$client)).toBe(FOLD_AT - 2);
    await upload(u, "one/more.txt");
    expect(pendingCounterRows(t.db.$client)).toBe(FOLD_AT - 1);
    await upload(u, "and/the/last.txt");
    expect(pendingCounterRows(t.db.$client)).toBe(0);
    expectIndexConsistent(t.db);
  });

  test("a search folds pending rows first and counts them", async () => {
    const u = newUser();
    insertFiles(t, u.address, [
      { path: "a/x.png", size: 3 },
      { path: "a/y.png", size: 7_000_000 },
    ]);
    expect(pendingCounterRows(t.db.$client)).toBeGreaterThan(0);
    const r = (await search(t, u, "size_min=1000000&file_type=image")).body.Success;
    expect(r.total_count).toBe(1);
    expect(pendingCounterRows(t.db.$client)).toBe(0);
  });

  test("a failing fold never fails a write: uploads commit, searches answer exactly through the scan, and the next fold catches up", async () => {
    const u = newUser();
    const sql = t.db.$client;
    sql.run(
      "CREATE TEMP TRIGGER fold_fault BEFORE INSERT ON main.search_grams BEGIN SELECT RAISE(ABORT, 'injected fold fault'); END",
    );
    try {
      insertFiles(
        t,
        u.address,
        Array.from({ length: FOLD_AT }, (_, i) => ({ path: `many/g${i}.txt` })),
      );
      await upload(u, "still/stored.txt");
      expect(pendingCounterRows(sql)).toBe(FOLD_AT + 1);
      const index = new SqliteSearchIndex(t.db);
      const page = await index.search(u.address, parseSearchQuery(new URLSearchParams("q=stored")));
      expect(page.total).toBe(1);
      expect(page.degraded).toContain("injected fold fault");
      expect(page.plan[0]).toBe("count: exact scan of files");
      expect((await search(t, u, "q=g12")).body.Success.total_count).toBe(11);
      expect(pendingCounterRows(sql)).toBe(FOLD_AT + 1);
    } finally {
      sql.run("DROP TRIGGER temp.fold_fault");
    }
    const index = new SqliteSearchIndex(t.db);
    const page = await index.search(u.address, parseSearchQuery(new URLSearchParams("q=g12")));
    expect({ total: page.total, degraded: page.degraded }).toEqual({ total: 11, degraded: null });
    expect(pendingCounterRows(sql)).toBe(0);
    expectIndexConsistent(t.db);
  });
});

describe("after a crash", () => {
  test("log rows committed with file rows are folded when the database is opened again", async () => {
    const path = join(tempDir("esync-fold-"), "meta.db");
    const first = openSqliteStore(path);
    const upsert = filesUpserter(first.db);
    for (let i = 0; i < 40; i++) upsert(fileRow("5Crash", { path: `c/${i % 4}/n${i}.bin`, size: i }));
    expect(pendingCounterRows(first.db.$client)).toBe(40);
    // The process dies here: the rows and their log are committed, the fold never ran.
    first.db.$client.close();
    const second = openSqliteStore(path);
    try {
      expect(pendingCounterRows(second.db.$client)).toBe(0);
      expectIndexConsistent(second.db);
    } finally {
      await second.close();
    }
  });

  test("search:rebuild empties the log with the counters and leaves nothing pending", async () => {
    const u = newUser();
    insertFiles(t, u.address, [{ path: "r/1.txt" }, { path: "r/2.txt" }]);
    expect(pendingCounterRows(t.db.$client)).toBeGreaterThan(0);
    const report = await new SqliteSearchIndex(t.db).rebuild();
    expect(report.health.state).toBe("ok");
    expect(pendingCounterRows(t.db.$client)).toBe(0);
    expectIndexConsistent(t.db);
  });
});
