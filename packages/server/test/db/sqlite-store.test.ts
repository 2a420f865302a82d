/**
 * The SQLite `MetadataStore`: the process-wide gate (no statement of another caller ever lands
 * inside an open transaction, also from a second store on the same file), all-or-nothing
 * transactions and savepoints, and the lease rules of the repositories that several nodes share
 * (deletion-queue claims, write intents, finalize leases).
 */
import { afterEach, expect, test } from "bun:test";
import { join } from "node:path";
import type { ApiTokenRow } from "../../src/auth/api-tokens.repository.ts";
import { NestedUseError, openSqliteStore, type SqliteMetadataStore } from "../../src/db/sqlite/store.ts";
import type { SessionRow } from "../../src/sessions/sessions.repository.ts";
import { tempDir } from "../support/tmp.ts";

const opened: SqliteMetadataStore[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
});

function open(path = ":memory:"): SqliteMetadataStore {
  const s = openSqliteStore(path);
  opened.push(s);
  return s;
}

function token(id: string): ApiTokenRow {
  return {
    id,
    tokenSha256: id.padEnd(64, "0"),
    owner: "o",
    label: null,
    createdAt: 1,
    expiresAt: null,
    revokedAt: null,
  };
}

function session(id: string, over: Partial<SessionRow> = {}): SessionRow {
  return {
    sessionId: id,
    owner: "o",
    folderHash: "f",
    pathHash: Buffer.alloc(32),
    manifest: "{}",
    ciphertextHash: "0".repeat(64),
    ciphertextSize: 10,
    chunkSize: 10,
    chunkCount: 1,
    blobId: "b",
    state: "receiving",
    createdAt: 100,
    expiresAt: 1000,
    finalizingUntil: null,
    finalizingHolder: null,
    result: null,
    ...over,
  };
}

test("a write outside a transaction waits for the open one and survives its rollback, also from a second store on the same file", async () => {
  const path = join(tempDir("esync-store-"), "m.sqlite");
  const a = open(path);
  const b = open(path);
  let resume = () => {};
  const paused = new Promise<void>((r) => {
    resume = r;
  });
  const tx = a.transaction(async (t) => {
    await t.apiTokens.insert(token("in-tx"));
    await paused;
    throw new Error("roll back");
  });
  await Bun.sleep(0);
  let outsideDone = false;
  const outside = Promise.all([
    b.repos.apiTokens.insert(token("from-b")),
    a.repos.apiTokens.insert(token("from-a")),
  ]).then(() => {
    outsideDone = true;
  });
  await Bun.sleep(20);
  expect(outsideDone).toBe(false); // neither write ran inside the open transaction
  resume();
  await expect(tx).rejects.toThrow("roll back");
  await outside;
  expect((await a.repos.apiTokens.list()).map((r) => r.id).sort()).toEqual(["from-a", "from-b"]);
});

test("a read outside a transaction does not wait for the open one: it answers at once with the last committed rows; a write still waits", async () => {
  const path = join(tempDir("esync-store-"), "m.sqlite");
  const a = open(path);
  await a.repos.apiTokens.insert(token("committed"));
  let resume = () => {};
  const paused = new Promise<void>((r) => {
    resume = r;
  });
  const tx = a.transaction(async (t) => {
    await t.apiTokens.insert(token("uncommitted"));
    await paused;
  });
  await Bun.sleep(0);
  let writeDone = false;
  const write = a.repos.apiTokens.insert(token("after")).then(() => {
    writeDone = true;
  });
  // Both reads answer while the transaction is still open, without its row.
  expect((await a.repos.apiTokens.list()).map((r) => r.id)).toEqual(["committed"]);
  expect(await a.repos.apiTokens.findBySha("uncommitted".padEnd(64, "0"))).toBeUndefined();
  await Bun.sleep(20);
  expect(writeDone).toBe(false);
  resume();
  await tx;
  await write;
  expect((await a.repos.apiTokens.list()).map((r) => r.id).sort()).toEqual([
    "after",
    "committed",
    "uncommitted",
  ]);
});

test("a savepoint that throws undoes only its own writes; the transaction commits the rest", async () => {
  const s = open();
  await s.transaction(async (tx) => {
    await tx.apiTokens.insert(token("kept"));
    await expect(
      tx.savepoint(async (sp) => {
        await sp.apiTokens.insert(token("undone"));
        throw new Error("entry failed");
      }),
    ).rejects.toThrow("entry failed");
    await tx.savepoint((sp) => sp.apiTokens.insert(token("also-kept")));
  });
  expect((await s.repos.apiTokens.list()).map((r) => r.id).sort()).toEqual(["also-kept", "kept"]);
});

test("claimDue leases due rows: a second claim gets none until the lease runs out, then gets them again", async () => {
  const s = open();
  const q = s.repos.deletionQueue;
  await q.enqueue(["a/", "b/", "c/"], 100);
  await q.enqueue(["later/"], 500);
  const first = await q.claimDue(100, 2, 160);
  expect(first.map((r) => r.target)).toEqual(["a/", "b/"]);
  expect((await q.claimDue(100, 10, 160)).map((r) => r.target)).toEqual(["c/"]);
  expect(await q.claimDue(159, 10, 220)).toEqual([]);
  expect((await q.claimDue(160, 10, 220)).map((r) => r.target)).toEqual(["a/", "b/", "c/"]);
  await q.failed(first[0]!.id, 300, "EIO");
  // a/ failed and waits for its retry at 300; b/ and c/ were claimed until 220 and never done.
  expect((await q.claimDue(299, 10, 400)).map((r) => r.target)).toEqual(["b/", "c/"]);
  expect((await q.claimDue(300, 10, 400)).map((r) => [r.target, r.attempts])).toEqual([["a/", 1]]);
});

test("a write intent a sweeper claimed can no longer be claimed by its writer, and its release queues the deletion again", async () => {
  const s = open();
  const q = s.repos.deletionQueue;
  const intent = await q.reserve("b/x/", 100);
  const lease = 100 + 6 * 3600;
  const claimed = await q.claimDue(lease, 10, lease + 600);
  expect(claimed.map((r) => r.id)).toEqual([intent]);
  expect(await q.claim(intent, lease - 1)).toBe(false);
  await q.release(intent, "b/x/", lease);
  expect((await q.targets()).sort()).toEqual(["b/x/", "b/x/"]);
});

test("releaseExpiredFinalizing returns sessions whose lease ran out (or that have none) and leaves live ones", async () => {
  const s = open();
  const r = s.repos.sessions;
  await r.insert(session("live", { state: "finalizing", finalizingUntil: 200 }));
  await r.insert(session("ran-out", { state: "finalizing", finalizingUntil: 150 }));
  await r.insert(session("legacy", { state: "finalizing", finalizingUntil: null }));
  await r.insert(session("idle"));
  expect(await r.releaseExpiredFinalizing(150, 900)).toBe(2);
  expect((await r.get("live"))?.state).toBe("finalizing");
  expect(await r.get("ran-out")).toMatchObject({ state: "receiving", finalizingUntil: null, expiresAt: 900 });
  expect(await r.get("legacy")).toMatchObject({ state: "receiving", finalizingUntil: null });
  expect(await r.get("idle")).toMatchObject({ state: "receiving", expiresAt: 1000 });
});

test("only the finalize holding the current lease can renew or end it", async () => {
  const s = open();
  const r = s.repos.sessions;
  await r.insert(session("s"));
  expect(await r.beginFinalizing("s", 200, 2000, null)).toBe(true);
  expect(await r.beginFinalizing("s", 201, 2000, null)).toBe(false);
  expect(await r.renewFinalizing("s", 199, 300)).toBe(false);
  expect(await r.renewFinalizing("s", 200, 300)).toBe(true);
  expect(await r.endFinalizing("s", 200, "finalized", { result: "{}" })).toBe(false);
  expect(await r.endFinalizing("s", 300, "finalized", { result: "{}" })).toBe(true);
  expect(await r.get("s")).toMatchObject({ state: "finalized", finalizingUntil: null, result: "{}" });
});

test("using the store itself inside one of its transactions fails with NestedUseError instead of waiting forever", async () => {
  const s = open();
  await expect(s.transaction(async () => s.repos.apiTokens.list())).rejects.toThrow(NestedUseError);
  await expect(s.transaction(async () => s.transaction(async () => 1))).rejects.toThrow(NestedUseError);
  expect(await s.transaction(async (tx) => (await tx.apiTokens.list()).length)).toBe(0);
});
