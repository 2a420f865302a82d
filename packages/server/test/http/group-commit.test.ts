/**
 * Group commit of file writes (`FilesService.commit` on SQLite): commits asked for together share
 * one transaction, each in its own savepoint, so a refused commit (conflict, quota, lost write
 * intent) undoes only its own writes and the others are stored; every caller hears back only
 * after the group's transaction committed.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { parseManifest } from "@esync/protocol/manifest.ts";
import type { MetadataStore } from "../../src/db/store.ts";
import type { StoredBlob } from "../../src/files/files.service.ts";
import { jsonInit, makeTestApp, type TestApp } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext } from "../support/fixtures.ts";
import { testDatabase } from "../support/pg-server.ts";
import {
  authAt,
  expectSuccess,
  FOLDER,
  foldersOf,
  stateOf,
  UPLOAD_RESULT_KEYS,
  uploadSingle,
} from "./helpers.ts";

let t: TestApp;
afterEach(() => t?.close());

/** Group commit is SQLite's; on PostgreSQL every commit is its own transaction (FilesService.commit). */
const grouped = testDatabase === "sqlite";

/** Counts the transactions `store` begins and remembers whether each committed. */
function countTransactions(store: MetadataStore) {
  const seen = { begun: 0, committed: 0 };
  const transaction = store.transaction.bind(store);
  (store as { transaction: MetadataStore["transaction"] }).transaction = async (fn) => {
    seen.begun++;
    const r = await transaction(fn);
    seen.committed++;
    return r;
  };
  return seen;
}

function blobOf(i: number, size: number): StoredBlob {
  return {
    blobId: `${i}`.padStart(32, "0"),
    chunkSize: size,
    chunkCount: 1,
    size,
    gens: ["g"],
    ciphertextHash: "0".repeat(64),
    chunkHashes: null,
  };
}

describe("group commit", () => {
  test("commits asked for together share one transaction, and each caller gets its own result after it committed", async () => {
    t = makeTestApp();
    const u = newUser();
    const seen = countTransactions(t.store);
    const manifests = Array.from({ length: 10 }, (_, i) => {
      const ct = randomCiphertext(200 + i);
      return parseManifest(makeManifest({ owner: u.address, ciphertext: ct, path: `g/${i}.bin` }));
    });
    const results = await Promise.all(
      manifests.map((m, i) =>
        t.services.files.commit(m, blobOf(i, 200 + i)).then((r) => ({ r, committed: seen.committed })),
      ),
    );
    expect(seen.begun).toBe(grouped ? 1 : 10);
    // Each caller hears back only after a transaction that included its commit committed.
    for (const { committed } of results) expect(committed).toBeGreaterThanOrEqual(1);
    if (grouped) for (const { committed } of results) expect(committed).toBe(1);
    expect(new Set(results.map(({ r }) => r.upload_id)).size).toBe(10);
    expect(((await stateOf(t, u)).files as unknown[]).length).toBe(10);
  });

  test("a conflicting commit in a group is refused with 409's error alone; the others of the group are stored", async () => {
    t = makeTestApp();
    const u = newUser();
    const body = { ss58_address: u.address, folder_hash: FOLDER, label: "g" };
    expect((await t.json("/register_folder", jsonInit("POST", authAt(t, u), body))).status).toBe(200);
    const first = parseManifest(
      makeManifest({ owner: u.address, ciphertext: randomCiphertext(300), path: "same.bin" }),
    );
    await t.services.files.commit(first, blobOf(100, 300));
    const seen = countTransactions(t.store);
    const again = parseManifest(
      makeManifest({ owner: u.address, ciphertext: randomCiphertext(310), path: "same.bin" }),
    );
    const others = [0, 1, 2].map((i) =>
      parseManifest(
        makeManifest({ owner: u.address, ciphertext: randomCiphertext(320), path: `o/${i}.bin` }),
      ),
    );
    const outcomes = await Promise.allSettled([
      t.services.files.commit(others[0]!, blobOf(0, 320)),
      t.services.files.commit(again, blobOf(1, 310)),
      t.services.files.commit(others[1]!, blobOf(2, 320)),
      t.services.files.commit(others[2]!, blobOf(3, 320)),
    ]);
    expect(seen.begun).toBe(grouped ? 1 : 4);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled", "fulfilled"]);
    expect((outcomes[1] as PromiseRejectedResult).reason).toMatchObject({ code: "conflict" });
    const files = (await stateOf(t, u)).files as { file_name: string; size_bytes: number }[];
    expect(files.map((f) => f.file_name).sort()).toEqual(["0.bin", "1.bin", "2.bin", "same.bin"]);
    // The refused commit changed nothing: the first revision and the folder counters stand.
    expect(files.find((f) => f.file_name === "same.bin")?.size_bytes).toBe(300 - 48);
    const folder = (await foldersOf(t, u)).find((f) => f.folder_hash === FOLDER);
    expect(folder).toMatchObject({ file_count: 4, total_bytes: 300 - 48 + 3 * (320 - 48) });
  });

  test("a group whose transaction fails as a whole rejects every caller and stores none of them", async () => {
    t = makeTestApp();
    const u = newUser();
    const transaction = t.store.transaction.bind(t.store);
    (t.store as { transaction: MetadataStore["transaction"] }).transaction = async (fn) =>
      transaction(async (tx) => {
        await fn(tx);
        throw new Error("disk I/O error");
      });
    const outcomes = await Promise.allSettled(
      [0, 1, 2].map((i) =>
        t.services.files.commit(
          parseManifest(
            makeManifest({ owner: u.address, ciphertext: randomCiphertext(400), path: `x/${i}` }),
          ),
          blobOf(i, 400),
        ),
      ),
    );
    expect(outcomes.every((o) => o.status === "rejected")).toBe(true);
    (t.store as { transaction: MetadataStore["transaction"] }).transaction = transaction;
    expect((await stateOf(t, u)).files).toEqual([]);
  });

  // Waiting for announced commits is part of grouping, which PostgreSQL does not do.
  test.skipIf(!grouped)(
    "a group waits for an announced commit and takes it in the same transaction",
    async () => {
      t = makeTestApp();
      const u = newUser();
      t.services.files.groupWaitMs = 60_000;
      const seen = countTransactions(t.store);
      const m = (i: number) =>
        parseManifest(makeManifest({ owner: u.address, ciphertext: randomCiphertext(250), path: `w/${i}` }));
      const announced = t.services.files.expectCommit();
      const first = t.services.files.commit(m(0), blobOf(0, 250));
      await Bun.sleep(20);
      expect(seen.begun).toBe(0);
      announced();
      const second = t.services.files.commit(m(1), blobOf(1, 250));
      await Promise.all([first, second]);
      expect(seen.begun).toBe(1);
    },
  );

  test("an announced commit withdrawn without committing (a failed upload) releases the waiting group at once", async () => {
    t = makeTestApp();
    const u = newUser();
    t.services.files.groupWaitMs = 60_000;
    const announced = t.services.files.expectCommit();
    const started = performance.now();
    const commit = t.services.files.commit(
      parseManifest(makeManifest({ owner: u.address, ciphertext: randomCiphertext(250), path: "alone" })),
      blobOf(0, 250),
    );
    await Bun.sleep(5);
    announced();
    announced(); // a second call changes nothing
    await commit;
    expect(performance.now() - started).toBeLessThan(30_000);
    expect(((await stateOf(t, u)).files as unknown[]).length).toBe(1);
  });

  test("concurrent single-shot uploads through HTTP are all stored (200 each)", async () => {
    t = makeTestApp();
    const u = newUser();
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => {
        const ct = randomCiphertext(500 + i);
        return uploadSingle(
          t,
          authAt(t, u),
          makeManifest({ owner: u.address, ciphertext: ct, path: `h/${i}` }),
          ct,
          true,
        );
      }),
    );
    for (const r of answers) expectSuccess(r, UPLOAD_RESULT_KEYS);
    expect(((await stateOf(t, u)).files as unknown[]).length).toBe(12);
  });
});
