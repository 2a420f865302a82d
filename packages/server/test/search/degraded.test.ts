/**
 * The search index is derived data (src/search/search-index.ts): a limit of the SQLite index's id
 * layout never fails an upload. The write commits, the index records that it is degraded, search
 * and browse answer exactly through the plan over `files` (a warning logged once), and a rebuild
 * (`bun run search:rebuild`) restores the fast plans.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { openDb } from "../../src/db/client.ts";
import { SqliteSearchIndex } from "../../src/db/sqlite/search/index.ts";
import { PARTITION } from "../../src/db/sqlite/search/partitions.ts";
import { parseSearchQuery } from "../../src/search/search.query.ts";
import type { LogFields, Logger } from "../../src/util/log.ts";
import { authAt, uploadSingle } from "../http/helpers.ts";
import { makeTestApp } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext } from "../support/fixtures.ts";
import { REPO_ROOT } from "../support/server.ts";
import { tempDir } from "../support/tmp.ts";
import { browse, expectIndexConsistent, FOLDER, fileRow, filesUpserter, search } from "./support.ts";

/** A logger keeping every event. */
function recordingLogger(): Logger & { events: { level: string; event: string; fields?: LogFields }[] } {
  const events: { level: string; event: string; fields?: LogFields }[] = [];
  const at = (level: string) => (event: string, fields?: LogFields) =>
    void events.push({ level, event, fields });
  return { events, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

describe("an index limit during an upload", () => {
  const log = recordingLogger();
  const t = makeTestApp({}, undefined, log);
  afterAll(() => t.close());
  const db = t.db;

  test("returns 200 for the upload, answers search and browse exactly from files while degraded (warning logged once), and a rebuild restores the fast plans", async () => {
    const before = newUser();
    const after = newUser();
    for (const path of ["photos/a.jpg", "photos/b.png", "notes.txt"]) {
      const ct = randomCiphertext(100);
      const r = await uploadSingle(
        t,
        authAt(t, before),
        makeManifest({ owner: before.address, ciphertext: ct, path }),
        ct,
      );
      expect(r.status).toBe(200);
    }
    // The next owner gets an id beyond the layout's 24 bits (as after 2^24 accounts).
    db.$client.run(`INSERT INTO search_owners (id, owner) VALUES (${PARTITION.maxOwners - 1}, 'filler')`);
    const paths = ["photos/x.jpg", "photos/deep/y.jpg", "z.pdf"];
    for (const path of paths) {
      const ct = randomCiphertext(200);
      const r = await uploadSingle(
        t,
        authAt(t, after),
        makeManifest({ owner: after.address, ciphertext: ct, path }),
        ct,
      );
      expect(r.status).toBe(200);
    }
    const index = new SqliteSearchIndex(db);
    expect(await index.health()).toMatchObject({
      state: "degraded",
      reason: "search index: over 2^24 owners",
    });

    const all = (await search(t, after, "sort_by=file_name&sort_order=asc")).body.Success;
    expect({
      total: all.total_count,
      names: all.files.map((f: { file_name: string }) => f.file_name),
    }).toEqual({
      total: 3,
      names: ["x.jpg", "y.jpg", "z.pdf"],
    });
    expect((await search(t, after, "q=Y.J&file_type=image")).body.Success.total_count).toBe(1);
    expect((await search(t, before, "file_type=image")).body.Success.total_count).toBe(2);
    const root = (await browse(t, after, FOLDER, "path=photos")).body.Success;
    expect({
      folders: root.folders,
      files: root.files.map((f: { file_name: string }) => f.file_name),
    }).toEqual({
      folders: [{ name: "deep", file_count: 1, total_bytes: root.folders[0]?.total_bytes }],
      files: ["x.jpg"],
    });
    const warnings = log.events.filter((e) => e.event === "search.index_degraded");
    expect(warnings.map((e) => [e.level, e.fields?.reason])).toEqual([
      ["warn", "search index: over 2^24 owners"],
    ]);
    expect((await index.search(after.address, parseSearchQuery(new URLSearchParams()))).plan[0]).toBe(
      "count: exact scan of files",
    );

    const report = await index.rebuild();
    expect(report.health.state).toBe("ok");
    expect(report.files).toBeGreaterThanOrEqual(6);
    expectIndexConsistent(db);
    const fast = await index.search(after.address, parseSearchQuery(new URLSearchParams("q=y.j")));
    expect({ total: fast.total, exact: fast.plan[0] === "count: exact scan of files" }).toEqual({
      total: 1,
      exact: false,
    });
    expect((await search(t, after)).body.Success.total_count).toBe(3);
    expect(log.events.filter((e) => e.event === "search.index_recovered")).toHaveLength(1);
  });
});

describe("bun run search:rebuild", () => {
  test("rebuilds a degraded index from files, prints progress and exits 0 with the state cleared", async () => {
    const dir = tempDir("esync-rebuild-");
    const path = join(dir, "esync.sqlite");
    const db = openDb(path);
    db.$client.run(`INSERT INTO search_owners (id, owner) VALUES (${PARTITION.maxOwners}, 'late-owner')`);
    const upsert = filesUpserter(db);
    const rows = Array.from({ length: 2500 }, (_, i) =>
      fileRow(i % 2 ? "late-owner" : "early-owner", { path: `d${i % 7}/f${i}.txt`, size: i }),
    );
    db.$client.transaction(() => {
      for (const r of rows) upsert(r);
    })();
    expect(new SqliteSearchIndex(db).health()).resolves.toMatchObject({ state: "degraded" });
    db.$client.close();

    const proc = Bun.spawn(["bun", "run", "search:rebuild"], {
      cwd: REPO_ROOT,
      env: { ...process.env, ESYNC_DB_PATH: path, ESYNC_DATA_DIR: dir },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [code, out] = await Promise.all([proc.exited, new Response(proc.stdout).text()]);
    expect({ code, out }).toMatchObject({ code: 0, out: expect.stringContaining("rebuilt: 2500 files") });
    expect(out).toContain("rebuilding: 2000/2500 files");

    const reopened = openDb(path);
    try {
      expect(await new SqliteSearchIndex(reopened).health()).toEqual({
        state: "ok",
        reason: null,
        since: null,
      });
      expectIndexConsistent(reopened);
    } finally {
      reopened.$client.close();
    }
  }, 60_000);
});
