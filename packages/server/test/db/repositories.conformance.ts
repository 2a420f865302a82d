/**
 * The repository conformance suite: what every `MetadataStore` (src/db/store.ts) must do, run
 * against each dialect by its own test file (`repositories.postgres.test.ts`, and the SQLite
 * one). Each test opens a fresh store, so tests do not see each other's rows. Times are Unix
 * seconds; the concurrency tests start the racing calls together and check the one outcome the
 * contract allows.
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { MetadataStore } from "../../src/db/store.ts";
import type { FileRow } from "../../src/files/file-entry.ts";
import type { SessionRow } from "../../src/sessions/sessions.repository.ts";
import { WRITE_INTENT_LEASE_SECONDS } from "../../src/workers/deletion-queue.repository.ts";

/** A fresh, empty store and how to dispose of it. */
export interface StoreFixture {
  store: MetadataStore;
  /** Closes the store and removes its data. */
  dispose(): Promise<void>;
}

const OWNER = "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY";
const OTHER = "5FHneW46xGXgs5mUiveU4sbTyGBzmstUspZC92UhjJM694ty";
const NOW = 1_750_000_000;

/** A file row of `OWNER` in folder `folder` whose path hash starts with the bytes `key`. */
export function fileRow(key: number[], over: Partial<FileRow> = {}): FileRow {
  const pathHash = Buffer.alloc(32);
  Buffer.from(key).copy(pathHash);
  return {
    owner: OWNER,
    folderHash: "f0",
    pathHash,
    saltedHash: Buffer.alloc(32, 7),
    sizeBytes: 1000,
    revisionSeq: 1,
    revisionId: Buffer.alloc(16, 1),
    encryptedPath: Buffer.from([1, 2, 3, 0, 255]),
    fileName: "photo.png",
    relativePath: "pics/photo.png",
    searchName: "photo.png",
    ext: ".png",
    storeHash: null,
    chunkHashes: null,
    createdAt: NOW,
    updatedAt: NOW,
    clientTimestamp: NOW - 5,
    source: "desktop",
    attributes: null,
    uploadId: "up-1",
    ciphertextHash: "a".repeat(64),
    ciphertextSize: 1040,
    blobId: `blob-${key.join("-")}`,
    chunkSize: 1 << 20,
    chunkCount: 1,
    chunkGens: '["g0"]',
    uploadedBy: OWNER,
    ...over,
  };
}

/** A `receiving` session row. */
export function sessionRow(id: string, over: Partial<SessionRow> = {}): SessionRow {
  return {
    sessionId: id,
    owner: OWNER,
    folderHash: "f0",
    pathHash: Buffer.alloc(32, 9),
    manifest: "{}",
    ciphertextHash: "b".repeat(64),
    ciphertextSize: 3 << 20,
    chunkSize: 1 << 20,
    chunkCount: 3,
    blobId: `blob-${id}`,
    state: "receiving",
    createdAt: NOW,
    expiresAt: NOW + 3600,
    finalizingUntil: null,
    finalizingHolder: null,
    result: null,
    uploadId: null,
    ...over,
  };
}

/** Registers the conformance tests for the stores `open` makes (one per test). */
export function repositoryConformance(
  dialect: string,
  open: () => Promise<StoreFixture>,
  timeoutMs = 60_000,
): void {
  describe(`repository conformance (${dialect})`, () => {
    let fixture: StoreFixture | undefined;
    afterEach(async () => {
      await fixture?.dispose();
      fixture = undefined;
    });
    const it = (name: string, fn: (s: MetadataStore) => Promise<void>) =>
      test(
        name,
        async () => {
          fixture = await open();
          await fn(fixture.store);
        },
        timeoutMs,
      );

    it("files: upsert then get returns every column as written, bytes as Buffers", async (s) => {
      const row = fileRow([1], {
        attributes: Buffer.from([0, 9]),
        sizeBytes: 2 ** 40 + 3,
        chunkHashes: '["x"]',
      });
      await s.repos.files.upsert(row);
      const got = await s.repos.files.get(OWNER, "f0", row.pathHash);
      expect(got).toEqual(row);
      expect(Buffer.isBuffer(got?.pathHash)).toBe(true);
      expect(await s.repos.files.get(OWNER, "f0", Buffer.alloc(32))).toBeUndefined();
    });

    it("files: upsert of an existing key replaces every other column", async (s) => {
      await s.repos.files.upsert(fileRow([1]));
      const next = fileRow([1], { sizeBytes: 5, revisionSeq: 2, fileName: null, source: null, blobId: "b2" });
      await s.repos.files.upsert(next);
      expect(await s.repos.files.get(OWNER, "f0", next.pathHash)).toEqual(next);
    });

    it("files: page is in bytewise path_hash order with the folder's total, and removeFolder counts", async (s) => {
      for (const k of [[200], [3], [3, 1], [128], [0, 255]]) await s.repos.files.upsert(fileRow(k));
      await s.repos.files.upsert(fileRow([1], { folderHash: "other" }));
      const p = await s.repos.files.page(OWNER, "f0", 1, 3);
      expect(p.total).toBe(5);
      expect(p.rows.map((r) => [...r.pathHash.subarray(0, 2)])).toEqual([
        [3, 0],
        [3, 1],
        [128, 0],
      ]);
      expect((await s.repos.files.blobIdsOfFolder(OWNER, "f0")).sort()).toEqual(
        ["blob-0-255", "blob-128", "blob-200", "blob-3", "blob-3-1"].sort(),
      );
      expect(await s.repos.files.removeFolder(OWNER, "f0")).toBe(5);
      expect((await s.repos.files.page(OWNER, "f0", 0, 10)).total).toBe(0);
      expect((await s.repos.files.page(OWNER, "other", 0, 10)).total).toBe(1);
    });

    it("files: rekey moves the row with its new path and keeps the rest; onto a taken key it throws", async (s) => {
      const a = fileRow([1]);
      await s.repos.files.upsert(a);
      await s.repos.files.upsert(fileRow([2]));
      const to = {
        pathHash: fileRow([5]).pathHash,
        encryptedPath: Buffer.from([5]),
        fileName: "new.txt",
        relativePath: "docs/new.txt",
        searchName: "new.txt",
        ext: ".txt",
        revisionSeq: 2,
        revisionId: Buffer.alloc(16, 2),
        updatedAt: NOW + 10,
      };
      expect(await s.repos.files.rekey(OWNER, "f0", a.pathHash, to)).toBe(true);
      expect(await s.repos.files.get(OWNER, "f0", a.pathHash)).toBeUndefined();
      expect(await s.repos.files.get(OWNER, "f0", to.pathHash)).toEqual({ ...a, ...to });
      expect(await s.repos.files.rekey(OWNER, "f0", a.pathHash, to)).toBe(false);
      await expect(
        s.repos.files.rekey(OWNER, "f0", to.pathHash, { ...to, pathHash: fileRow([2]).pathHash }),
      ).rejects.toThrow();
    });

    it("files: setPath changes only the path columns; remove says whether the row existed", async (s) => {
      const a = fileRow([1], { fileName: null, relativePath: null, searchName: null, ext: null });
      await s.repos.files.upsert(a);
      const cols = { relativePath: "x/y.pdf", fileName: "y.pdf", searchName: "y.pdf", ext: ".pdf" };
      await s.repos.files.setPath(OWNER, "f0", a.pathHash, cols);
      expect(await s.repos.files.get(OWNER, "f0", a.pathHash)).toEqual({ ...a, ...cols });
      expect(await s.repos.files.remove(OWNER, "f0", a.pathHash)).toBe(true);
      expect(await s.repos.files.remove(OWNER, "f0", a.pathHash)).toBe(false);
    });

    it("quota and summaries: usage and buckets follow file writes, replaces and deletes", async (s) => {
      expect(await s.repos.quota.usage(OWNER)).toBeUndefined();
      await s.repos.files.upsert(fileRow([1], { sizeBytes: 100 }));
      await s.repos.files.upsert(
        fileRow([2], { sizeBytes: 50, fileName: "a.pdf", ext: ".pdf", source: "mobile" }),
      );
      await s.repos.files.upsert(fileRow([3], { sizeBytes: 7, folderHash: "f1", fileName: null, ext: null }));
      await s.repos.files.upsert(fileRow([1], { sizeBytes: 300, updatedAt: NOW + 20 }));
      await s.repos.files.remove(OWNER, "f1", fileRow([3]).pathHash);
      const usage = await s.repos.quota.usage(OWNER);
      expect(usage).toMatchObject({ owner: OWNER, fileCount: 2, totalBytes: 350, createdAt: NOW });
      expect(usage?.updatedAt).toBeGreaterThanOrEqual(NOW + 20);
      const byBucket = (rows: { bucket: string; fileCount: number; totalBytes: number }[]) =>
        Object.fromEntries(
          rows.filter((r) => r.fileCount !== 0).map((r) => [r.bucket, [r.fileCount, r.totalBytes]]),
        );
      expect(byBucket(await s.repos.summaries.buckets(OWNER, null, "type"))).toEqual({
        image: [1, 300],
        pdf: [1, 50],
      });
      expect(byBucket(await s.repos.summaries.buckets(OWNER, "f0", "source"))).toEqual({
        desktop: [1, 300],
        mobile: [1, 50],
      });
      expect(byBucket(await s.repos.summaries.buckets(OWNER, "f1", "type"))).toEqual({});
      expect(await s.repos.summaries.buckets(OTHER, null, "type")).toEqual([]);
    });

    it("quota: an override is set, replaced, read (null = unlimited) and cleared once", async (s) => {
      expect(await s.repos.quota.override(OWNER)).toBeUndefined();
      await s.repos.quota.setOverride(OWNER, 10, NOW);
      await s.repos.quota.setOverride(OWNER, null, NOW + 1);
      expect(await s.repos.quota.override(OWNER)).toEqual({ quotaBytes: null });
      expect(await s.repos.quota.clearOverride(OWNER)).toBe(true);
      expect(await s.repos.quota.clearOverride(OWNER)).toBe(false);
    });

    it("folders: register once, label an unregistered row, counters accumulate, listRegistered in order", async (s) => {
      expect(await s.repos.folders.register(OWNER, "fb", "B", "laptop", NOW + 5)).toBe(true);
      expect(await s.repos.folders.register(OWNER, "fb", "again", null, NOW + 6)).toBe(false);
      await s.repos.folders.applyFileChange(OWNER, "fa", 2, 100, NOW + 7);
      await s.repos.folders.applyFileChange(OWNER, "fa", -1, -40, NOW + 8);
      expect(await s.repos.folders.get(OWNER, "fa")).toMatchObject({
        label: null,
        fileCount: 1,
        totalBytes: 60,
        updatedAt: NOW + 8,
      });
      expect(await s.repos.folders.register(OWNER, "fa", "A", null, NOW + 9)).toBe(true);
      expect(await s.repos.folders.get(OWNER, "fa")).toMatchObject({
        label: "A",
        createdAt: NOW + 9,
        fileCount: 1,
      });
      expect(await s.repos.folders.get(OWNER, "fb")).toMatchObject({ label: "B", deviceName: "laptop" });
      expect((await s.repos.folders.listRegistered(OWNER)).map((f) => f.folderHash)).toEqual(["fb", "fa"]);
      await s.repos.folders.remove(OWNER, "fb");
      expect(await s.repos.folders.get(OWNER, "fb")).toBeUndefined();
      expect(await s.repos.folders.listRegistered(OTHER)).toEqual([]);
    });

    it("folder entries: add is idempotent, list is bytewise, childNames, remove counts", async (s) => {
      const paths = ["b", "a/é", "a/z/q", "B", "a", "a.b", "ab/c"];
      await s.repos.folderEntries.add(OWNER, "f0", paths, NOW);
      await s.repos.folderEntries.add(OWNER, "f0", ["a", "b"], NOW + 1);
      expect((await s.repos.folderEntries.list(OWNER, "f0")).map((e) => e.path)).toEqual([
        "B",
        "a",
        "a.b",
        "a/z/q",
        "a/é",
        "ab/c",
        "b",
      ]);
      expect((await s.repos.folderEntries.childNames(OWNER, "f0", "a")).sort()).toEqual(["z", "é"]);
      expect((await s.repos.folderEntries.childNames(OWNER, "f0", "")).sort()).toEqual([
        "B",
        "a",
        "a.b",
        "ab",
        "b",
      ]);
      expect(await s.repos.folderEntries.remove(OWNER, "f0", ["a", "nope", "b"])).toBe(2);
      await s.repos.folderEntries.removeFolder(OWNER, "f0");
      expect(await s.repos.folderEntries.list(OWNER, "f0")).toEqual([]);
    });

    it("folder entries: attributes are stored, replaced when named again, kept when not named, null by default", async (s) => {
      const bytesOf = (e: { attributes: Uint8Array | null }) => (e.attributes ? [...e.attributes] : null);
      await s.repos.folderEntries.add(OWNER, "f1", ["a", "b"], NOW, new Map([["a", Uint8Array.of(1, 2, 3)]]));
      expect((await s.repos.folderEntries.list(OWNER, "f1")).map(bytesOf)).toEqual([[1, 2, 3], null]);
      await s.repos.folderEntries.add(
        OWNER,
        "f1",
        ["a", "b", "c"],
        NOW + 1,
        new Map([["b", Uint8Array.of(9)]]),
      );
      expect((await s.repos.folderEntries.list(OWNER, "f1")).map(bytesOf)).toEqual([[1, 2, 3], [9], null]);
      await s.repos.folderEntries.add(OWNER, "f1", ["a"], NOW + 2, new Map([["a", Uint8Array.of(7, 7)]]));
      await s.repos.folderEntries.add(OWNER, "f1", ["b"], NOW + 3);
      const rows = await s.repos.folderEntries.list(OWNER, "f1", "a", 2);
      expect(rows.map((e) => [e.path, bytesOf(e)])).toEqual([
        ["b", [9]],
        ["c", null],
      ]);
      expect((await s.repos.folderEntries.list(OWNER, "f1", null, 1)).map(bytesOf)).toEqual([[7, 7]]);
    });

    it("api tokens: insert, find by hash, list newest first, revoke once; a duplicate hash throws", async (s) => {
      const t = (id: string, sha: string, createdAt: number) => ({
        id,
        tokenSha256: sha,
        owner: OWNER,
        label: null,
        createdAt,
        expiresAt: null,
        revokedAt: null,
      });
      await s.repos.apiTokens.insert(t("t1", "1".repeat(64), NOW));
      await s.repos.apiTokens.insert(t("t2", "2".repeat(64), NOW + 1));
      await expect(s.repos.apiTokens.insert(t("t3", "1".repeat(64), NOW + 2))).rejects.toThrow();
      expect((await s.repos.apiTokens.findBySha("2".repeat(64)))?.id).toBe("t2");
      expect((await s.repos.apiTokens.list()).map((r) => r.id)).toEqual(["t2", "t1"]);
      expect(await s.repos.apiTokens.list(OTHER)).toEqual([]);
      expect(await s.repos.apiTokens.revoke("t1", NOW + 3)).toBe(true);
      expect(await s.repos.apiTokens.revoke("t1", NOW + 4)).toBe(false);
      expect((await s.repos.apiTokens.findBySha("1".repeat(64)))?.revokedAt).toBe(NOW + 3);
    });

    it("sessions: insert, get, chunks replaced and in order, liveCount, expiry and remove", async (s) => {
      await s.repos.sessions.insert(sessionRow("s1"));
      await s.repos.sessions.insert(sessionRow("s2", { expiresAt: NOW + 100 }));
      await s.repos.sessions.insert(sessionRow("s3", { state: "finalized", expiresAt: NOW + 50 }));
      await s.repos.sessions.insert(sessionRow("s4", { expiresAt: NOW - 1 }));
      expect(await s.repos.sessions.get("s1")).toEqual(sessionRow("s1"));
      expect(await s.repos.sessions.liveCount(OWNER, NOW)).toEqual({ n: 2, earliest: NOW + 100 });
      expect(await s.repos.sessions.liveCount(OTHER, NOW)).toEqual({ n: 0, earliest: null });
      expect(await s.repos.sessions.countByState()).toEqual({ receiving: 3, finalized: 1 });
      for (const i of [2, 0, 1])
        await s.repos.sessions.putChunk({
          sessionId: "s1",
          chunkIndex: i,
          gen: `g${i}`,
          size: 10,
          receivedAt: NOW,
        });
      await s.repos.sessions.putChunk({
        sessionId: "s1",
        chunkIndex: 1,
        gen: "g1b",
        size: 11,
        receivedAt: NOW + 1,
      });
      expect(await s.repos.sessions.chunkIndices("s1")).toEqual([0, 1, 2]);
      expect((await s.repos.sessions.chunks("s1")).map((c) => c.gen)).toEqual(["g0", "g1b", "g2"]);
      expect(await s.repos.sessions.chunk("s1", 1)).toEqual({
        sessionId: "s1",
        chunkIndex: 1,
        gen: "g1b",
        size: 11,
        receivedAt: NOW + 1,
        etag: null,
      });
      expect(await s.repos.sessions.chunk("s1", 7)).toBeUndefined();
      await s.repos.sessions.setExpiry("s1", NOW + 7);
      expect((await s.repos.sessions.get("s1"))?.expiresAt).toBe(NOW + 7);
      expect(await s.repos.sessions.remove("s1")).toBe(true);
      expect(await s.repos.sessions.remove("s1")).toBe(false);
      expect(await s.repos.sessions.chunks("s1")).toEqual([]);
    });

    it("sessions: a multipart session keeps its upload id and part ETags; leaveMultipart drops both only for that upload id", async (s) => {
      await s.repos.sessions.insert(sessionRow("m1", { uploadId: "2~up" }));
      expect((await s.repos.sessions.get("m1"))?.uploadId).toBe("2~up");
      await s.repos.sessions.putChunk({
        sessionId: "m1",
        chunkIndex: 0,
        gen: "g0",
        size: 10,
        receivedAt: NOW,
        etag: "e0",
      });
      await s.repos.sessions.putChunk({
        sessionId: "m1",
        chunkIndex: 0,
        gen: "g0b",
        size: 10,
        receivedAt: NOW,
        etag: "e0b",
      });
      expect((await s.repos.sessions.chunks("m1")).map((c) => c.etag)).toEqual(["e0b"]);
      expect(await s.repos.sessions.leaveMultipart("m1", "2~other")).toBe(false);
      expect(await s.repos.sessions.chunkIndices("m1")).toEqual([0]);
      expect(await s.repos.sessions.leaveMultipart("m1", "2~up")).toBe(true);
      expect((await s.repos.sessions.get("m1"))?.uploadId).toBeNull();
      expect(await s.repos.sessions.chunks("m1")).toEqual([]);
      expect(await s.repos.sessions.leaveMultipart("m1", "2~up")).toBe(false);
    });

    it("ops: isUploadOwned is true for a session's upload id or a queued abort of the key's uploads", async (s) => {
      await s.repos.sessions.insert(sessionRow("m2", { uploadId: "2~mine" }));
      expect(await s.repos.ops.isUploadOwned("b/aa/oaa", "2~mine")).toBe(true);
      expect(await s.repos.ops.isUploadOwned("b/aa/oaa", "2~stray")).toBe(false);
      await s.repos.deletionQueue.enqueue(["b/aa/oaa?uploads"], NOW);
      expect(await s.repos.ops.isUploadOwned("b/aa/oaa", "2~stray")).toBe(true);
      expect(await s.repos.ops.isUploadOwned("b/aa/obb", "2~stray")).toBe(false);
    });

    it("sessions: the finalizing lease is taken once, renewed and ended only by its holder, released when run out", async (s) => {
      await s.repos.sessions.insert(sessionRow("s1"));
      expect(await s.repos.sessions.beginFinalizing("s1", NOW + 60, NOW + 3600, null)).toBe(true);
      expect(await s.repos.sessions.beginFinalizing("s1", NOW + 61, NOW + 3600, null)).toBe(false);
      expect(await s.repos.sessions.renewFinalizing("s1", NOW + 61, NOW + 120)).toBe(false);
      expect(await s.repos.sessions.renewFinalizing("s1", NOW + 60, NOW + 120)).toBe(true);
      expect(await s.repos.sessions.endFinalizing("s1", NOW + 60, "finalized", { result: "{}" })).toBe(false);
      // Not run out yet at NOW + 100; run out at NOW + 120.
      expect(await s.repos.sessions.releaseExpiredFinalizing(NOW + 100, NOW + 999)).toBe(0);
      expect(await s.repos.sessions.releaseExpiredFinalizing(NOW + 120, NOW + 999)).toBe(1);
      expect(await s.repos.sessions.get("s1")).toMatchObject({
        state: "receiving",
        finalizingUntil: null,
        expiresAt: NOW + 999,
      });
      expect(await s.repos.sessions.endFinalizing("s1", NOW + 120, "finalized", {})).toBe(false);
      expect(await s.repos.sessions.beginFinalizing("s1", NOW + 200, NOW + 3600, null)).toBe(true);
      expect(
        await s.repos.sessions.endFinalizing("s1", NOW + 200, "finalized", {
          result: '{"ok":1}',
          expiresAt: NOW + 5,
        }),
      ).toBe(true);
      expect(await s.repos.sessions.get("s1")).toMatchObject({
        state: "finalized",
        finalizingUntil: null,
        result: '{"ok":1}',
        expiresAt: NOW + 5,
      });
    });

    it("sessions: the lease records its holder; a take-over needs the exact lease and holder read, and fences the old holder out", async (s) => {
      const r = s.repos.sessions;
      await r.insert(sessionRow("s1"));
      await r.insert(sessionRow("s2"));
      await r.insert(sessionRow("s3"));
      expect(await r.beginFinalizing("s1", NOW + 60, NOW + 3600, "holder-a")).toBe(true);
      expect(await r.beginFinalizing("s2", NOW + 60, NOW + 3600, null)).toBe(true);
      expect(await r.beginFinalizing("s3", NOW + 10, NOW + 3600, "holder-b")).toBe(true);
      expect(await r.get("s1")).toMatchObject({ finalizingUntil: NOW + 60, finalizingHolder: "holder-a" });
      // Candidates: live leases that name a holder (s2 names none, s3's ran out at NOW + 10).
      expect(await r.heldFinalizing(NOW + 10)).toEqual([
        { sessionId: "s1", finalizingUntil: NOW + 60, finalizingHolder: "holder-a" },
      ]);
      expect(await r.takeOverFinalizing("s1", NOW + 60, "holder-b", NOW + 999)).toBe(false);
      expect(await r.takeOverFinalizing("s1", NOW + 61, "holder-a", NOW + 999)).toBe(false);
      expect(await r.takeOverFinalizing("s1", NOW + 60, "holder-a", NOW + 999)).toBe(true);
      expect(await r.get("s1")).toMatchObject({
        state: "receiving",
        finalizingUntil: null,
        finalizingHolder: null,
        expiresAt: NOW + 999,
      });
      expect(await r.takeOverFinalizing("s1", NOW + 60, "holder-a", NOW + 999)).toBe(false);
      // A new finalize with the same lease second but another holder is not taken over for the old one.
      expect(await r.beginFinalizing("s1", NOW + 60, NOW + 3600, "holder-c")).toBe(true);
      expect(await r.takeOverFinalizing("s1", NOW + 60, "holder-a", NOW + 999)).toBe(false);
      expect(await r.get("s1")).toMatchObject({ state: "finalizing", finalizingHolder: "holder-c" });
      // Ending and releasing clear the holder.
      expect(await r.endFinalizing("s1", NOW + 60, "finalized", {})).toBe(true);
      expect(await r.get("s1")).toMatchObject({ state: "finalized", finalizingHolder: null });
      expect(await r.releaseExpiredFinalizing(NOW + 10, NOW + 999)).toBe(1);
      expect(await r.get("s3")).toMatchObject({ state: "receiving", finalizingHolder: null });
    });

    it("sessions: an id containing U+0000 names no session (PostgreSQL text cannot hold it)", async (s) => {
      await s.repos.sessions.insert(sessionRow("s1"));
      const bad = "s1\u0000";
      expect(await s.repos.sessions.get(bad)).toBeUndefined();
      expect(await s.transaction((tx) => tx.sessions.getForUpdate(bad))).toBeUndefined();
      expect(await s.repos.sessions.chunk(bad, 0)).toBeUndefined();
      expect(await s.repos.sessions.chunks(bad)).toEqual([]);
      expect(await s.repos.sessions.chunkIndices(bad)).toEqual([]);
      expect(await s.repos.sessions.beginFinalizing(bad, NOW + 60, NOW, null)).toBe(false);
      expect(await s.repos.sessions.takeOverFinalizing(bad, NOW + 60, "h", NOW)).toBe(false);
      await s.repos.sessions.setExpiry(bad, NOW);
      expect(await s.repos.sessions.remove(bad)).toBe(false);
      expect(await s.repos.sessions.get("s1")).toEqual(sessionRow("s1"));
    });

    it("sessions: expired returns idle receiving and finalized sessions, never finalizing ones", async (s) => {
      await s.repos.sessions.insert(sessionRow("a", { expiresAt: NOW - 10 }));
      await s.repos.sessions.insert(sessionRow("b", { expiresAt: NOW - 5, state: "finalized" }));
      await s.repos.sessions.insert(
        sessionRow("c", { expiresAt: NOW - 5, state: "finalizing", finalizingUntil: NOW + 60 }),
      );
      await s.repos.sessions.insert(sessionRow("d", { expiresAt: NOW + 5 }));
      expect((await s.repos.sessions.expired(NOW, 10)).map((r) => r.sessionId).sort()).toEqual(["a", "b"]);
      expect(await s.repos.sessions.expired(NOW, 1)).toHaveLength(1);
    });

    it("deletion queue: reserve, claim before the lease ends, release, claimDue leases, failed and done", async (s) => {
      const q = s.repos.deletionQueue;
      const intent = await q.reserve("b/aa/blob1/", NOW);
      expect(await q.claim(intent, NOW + WRITE_INTENT_LEASE_SECONDS)).toBe(false);
      expect(await q.claim(intent, NOW + 1)).toBe(true);
      expect(await q.claim(intent, NOW + 1)).toBe(false);
      const failedWrite = await q.reserve("b/aa/blob2/0.g", NOW);
      await q.release(failedWrite, "b/aa/blob2/0.g", NOW + 2);
      await q.enqueue(["k1", "k2"], NOW + 1);
      await q.enqueue(["later"], NOW + 1000);
      expect((await q.targets()).sort()).toEqual(["b/aa/blob2/0.g", "k1", "k2", "later"]);
      expect(await q.stats(NOW + 10)).toEqual({ depth: 4, oldestDueAgeSeconds: 9 });
      const first = await q.claimDue(NOW + 10, 2, NOW + 600);
      expect(first.map((r) => r.target)).toEqual(["b/aa/blob2/0.g", "k1"]);
      expect(first[0]?.leasedUntil).toBe(NOW + 600);
      // Leased rows are not claimed again before the lease ends, and a leased intent is not cancelled.
      expect((await q.claimDue(NOW + 10, 10, NOW + 600)).map((r) => r.target)).toEqual(["k2"]);
      expect(await q.claimDue(NOW + 11, 10, NOW + 600)).toEqual([]);
      await q.failed(first[1]?.id ?? -1, NOW + 50, "x".repeat(600));
      await q.done(first[0]?.id ?? -1);
      const again = await q.claimDue(NOW + 600, 10, NOW + 1200);
      expect(again.map((r) => [r.target, r.attempts])).toEqual([
        ["k1", 1],
        ["k2", 0],
      ]);
      expect(again[0]?.lastError).toHaveLength(500);
    });

    it("deletion queue: release of an intent a sweeper holds queues a new deletion due now", async (s) => {
      const q = s.repos.deletionQueue;
      const id = await q.reserve("obj", NOW);
      const [held] = await q.claimDue(
        NOW + WRITE_INTENT_LEASE_SECONDS,
        10,
        NOW + WRITE_INTENT_LEASE_SECONDS + 600,
      );
      expect(held?.id).toBe(id);
      await q.release(id, "obj", NOW + WRITE_INTENT_LEASE_SECONDS + 1);
      expect((await q.targets()).filter((t) => t === "obj")).toHaveLength(2);
    });

    it("transaction: commits on resolve, rolls back everything on throw, and a savepoint undoes only itself", async (s) => {
      await s.transaction(async (tx) => {
        await tx.folders.register(OWNER, "kept", "K", null, NOW);
      });
      await expect(
        s.transaction(async (tx) => {
          await tx.folders.register(OWNER, "gone", "G", null, NOW);
          throw new Error("boom");
        }),
      ).rejects.toThrow("boom");
      const result = await s.transaction(async (tx) => {
        await tx.folders.register(OWNER, "outer", "O", null, NOW);
        await expect(
          tx.savepoint(async (sp) => {
            await sp.folders.register(OWNER, "inner", "I", null, NOW);
            await sp.apiTokens.insert({
              id: "dup",
              tokenSha256: "3".repeat(64),
              owner: OWNER,
              label: null,
              createdAt: NOW,
              expiresAt: null,
              revokedAt: null,
            });
            await sp.apiTokens.insert({
              id: "dup2",
              tokenSha256: "3".repeat(64),
              owner: OWNER,
              label: null,
              createdAt: NOW,
              expiresAt: null,
              revokedAt: null,
            });
          }),
        ).rejects.toThrow();
        await tx.folders.register(OWNER, "after", "A", null, NOW);
        return "done";
      });
      expect(result).toBe("done");
      const names = (await s.repos.folders.listRegistered(OWNER)).map((f) => f.folderHash).sort();
      expect(names).toEqual(["after", "kept", "outer"]);
      expect(await s.repos.apiTokens.list()).toEqual([]);
    });

    it("concurrency: three racing beginFinalizing calls let exactly one win", async (s) => {
      await s.repos.sessions.insert(sessionRow("s1"));
      const wins = await Promise.all(
        [1, 2, 3].map((i) =>
          s.transaction(async (tx) => {
            const row = await tx.sessions.getForUpdate("s1");
            if (row?.state !== "receiving") return false;
            return tx.sessions.beginFinalizing("s1", NOW + i, NOW + 3600, null);
          }),
        ),
      );
      expect(wins.filter(Boolean)).toHaveLength(1);
    });

    it("concurrency: under lockOwner, a read-then-insert limit of 3 sessions holds for 8 racing transactions", async (s) => {
      const made = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          s.transaction(async (tx) => {
            await tx.sessions.lockOwner(OWNER);
            const { n } = await tx.sessions.liveCount(OWNER, NOW);
            if (n >= 3) return false;
            await tx.sessions.insert(sessionRow(`r${i}`));
            return true;
          }),
        ),
      );
      expect(made.filter(Boolean)).toHaveLength(3);
      expect((await s.repos.sessions.liveCount(OWNER, NOW)).n).toBe(3);
    });

    it("concurrency: four racing sweepers claim every due row exactly once", async (s) => {
      await s.repos.deletionQueue.enqueue(
        Array.from({ length: 60 }, (_, i) => `k${i}`),
        NOW,
      );
      const claimed: string[] = [];
      await Promise.all(
        [1, 2, 3, 4].map(async () => {
          for (;;) {
            const rows = await s.transaction((tx) => tx.deletionQueue.claimDue(NOW, 7, NOW + 600));
            if (rows.length === 0) return;
            claimed.push(...rows.map((r) => r.target));
          }
        }),
      );
      expect(claimed).toHaveLength(60);
      expect(new Set(claimed).size).toBe(60);
    });
  });
}
