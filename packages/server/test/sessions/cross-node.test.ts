/**
 * Cross-node rules of issue 11: two apps ("nodes") in this process on one database (a SQLite
 * file, or one PostgreSQL database under `ESYNC_TEST_DATABASE=postgres`) and one blob
 * directory, each with its own process state (ingest hashes, in-flight limits, sweeper). Proves that every guarantee lives in the database: finalize on a
 * node that saw no chunk (full BLAKE3 pass), the finalize lease (one that ran out is returned to
 * `receiving` by any node's sweeper and its late commit refused; a live one is left alone), the
 * deletion-queue claim (each object deleted once with two sweepers), the per-user session limit
 * and the new-file conflict across nodes.
 */
import { afterEach, expect, test } from "bun:test";
import { join } from "node:path";
import type { BlobStore, ByteRange, PutOptions } from "../../src/storage/blob-store.ts";
import { isPersistable } from "../../src/storage/blob-store.ts";
import { blobPrefix } from "../../src/storage/layout.ts";
import {
  abort,
  authAt,
  expectConflict,
  expectError,
  expectSuccess,
  FOLDER,
  finalize,
  openSession,
  putChunks,
  rowsOf,
  stateOf,
  UPLOAD_RESULT_KEYS,
  uploadSingle,
} from "../http/helpers.ts";
import { makeTestApp, type TestApp, testDatabase } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext, type TestUser } from "../support/fixtures.ts";
import { type PgLease, pgMigratedDatabase } from "../support/pg-server.ts";
import { tempDir } from "../support/tmp.ts";

/** The node's view of the shared store, with a switch that holds every `get` (finalize's read-back). */
class NodeStore implements BlobStore {
  readonly kind: string;
  readonly persist?: (keys: string[]) => Promise<void>;
  /** When set, `get` waits for it (a finalize hashing "forever" on this node). */
  hold: Promise<void> | null = null;
  /** Resolves when a `get` starts waiting on `hold`. */
  private onHeld: (() => void) | null = null;
  /** Keys and prefixes this node deleted, in order. */
  readonly deleted: string[] = [];

  constructor(private readonly inner: BlobStore) {
    this.kind = inner.kind;
    if (isPersistable(inner)) this.persist = (keys) => inner.persist(keys);
  }

  /** Resolves once a `get` is waiting on `hold`. */
  held(): Promise<void> {
    return new Promise((resolve) => {
      this.onHeld = resolve;
    });
  }

  put(key: string, body: ReadableStream<Uint8Array>, length: number, opts?: PutOptions) {
    return this.inner.put(key, body, length, opts);
  }
  async get(key: string, range?: ByteRange) {
    if (this.hold) {
      this.onHeld?.();
      await this.hold;
    }
    return this.inner.get(key, range);
  }
  size(key: string) {
    return this.inner.size(key);
  }
  list(prefix: string) {
    return this.inner.list(prefix);
  }
  async delete(keys: string[]) {
    this.deleted.push(...keys);
    await Bun.sleep(5); // long enough for the other sweeper to look for work meanwhile
    return this.inner.delete(keys);
  }
  async deletePrefix(prefix: string) {
    this.deleted.push(prefix);
    await Bun.sleep(5);
    return this.inner.deletePrefix(prefix);
  }
  check() {
    return this.inner.check();
  }
  close() {
    return this.inner.close();
  }
}

interface Node {
  t: TestApp;
  store: NodeStore;
}

let nodes: Node[] = [];

/** The PostgreSQL database the current test's nodes share (`ESYNC_TEST_DATABASE=postgres`). */
let database: PgLease | null = null;

/**
 * Two nodes on one database (a SQLite file, or one PostgreSQL database under
 * `ESYNC_TEST_DATABASE=postgres`) and one data directory; `env` applies to both.
 */
async function twoNodes(env: Record<string, string> = {}): Promise<[Node, Node]> {
  const shared = tempDir("esync-nodes-");
  if (testDatabase === "postgres") database = await pgMigratedDatabase("nodes");
  const dbVars: Record<string, string> = database
    ? { ESYNC_DATABASE_URL: database.url }
    : { ESYNC_DB_PATH: join(shared, "esync.sqlite") };
  const make = (): Node => {
    let store: NodeStore | undefined;
    const t = makeTestApp(
      {
        ESYNC_DATA_DIR: shared,
        ...dbVars,
        ESYNC_FINALIZE_LEASE_SECONDS: "60",
        ...env,
      },
      (inner) => {
        store = new NodeStore(inner);
        return store;
      },
    );
    return { t, store: store! };
  };
  const a = make();
  const b = make();
  // Both nodes read the same wall clock.
  const skew = a.t.clock.now() - b.t.clock.now();
  if (skew > 0) b.t.clock.advance(skew);
  else a.t.clock.advance(-skew);
  nodes = [a, b];
  return [a, b];
}

/** Moves both nodes' clocks forward. */
function advance(seconds: number): void {
  for (const n of nodes) n.t.clock.advance(seconds);
}

afterEach(async () => {
  for (const n of nodes.reverse()) await n.t.close();
  nodes = [];
  await database?.release();
  database = null;
});

/** The `_count` of `esync_finalize_duration_seconds` for one path and outcome on `t`. */
async function finalizeCount(t: TestApp, path: string, outcome: string): Promise<number> {
  const m = await t.metrics.finalizeDuration.get();
  const v = m.values.find(
    (x) =>
      x.metricName === "esync_finalize_duration_seconds_count" &&
      x.labels.path === path &&
      x.labels.outcome === outcome,
  );
  return v?.value ?? 0;
}

test("finalize on a node that received none of the chunks does the full BLAKE3 pass and commits (200)", async () => {
  const [a, b] = await twoNodes();
  const u = newUser();
  const ct = randomCiphertext(10_000);
  const s = await openSession(a.t, u, ct, { chunkSize: 1000 });
  await putChunks(a.t, s, ct);
  expectSuccess(await finalize(b.t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
  expect(await finalizeCount(b.t, "full_pass", "ok")).toBe(1);
  const files = (await stateOf(a.t, u)).files;
  expect(files).toHaveLength(1);
  expect(files[0].size_bytes).toBe(10_000 - 48);
});

test("chunks spread over two nodes finalize on either; the node that saw a prefix hashes only the rest", async () => {
  const [a, b] = await twoNodes();
  const u = newUser();
  const ct = randomCiphertext(8000);
  const s = await openSession(a.t, u, ct, { chunkSize: 1000 });
  await putChunks(a.t, s, ct, [0, 1, 2, 3]);
  await putChunks(b.t, s, ct, [4, 5, 6, 7]);
  expectSuccess(await finalize(a.t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
  expect(await finalizeCount(a.t, "partial_read", "ok")).toBe(1);
});

test("a finalize whose lease ran out is returned to receiving by the other node's sweeper; its late commit gets 409 and the retry commits once", async () => {
  const [a, b] = await twoNodes({ ESYNC_FINALIZE_LEASE_SECONDS: "30" });
  const u = newUser();
  const ct = randomCiphertext(3000);
  const s = await openSession(a.t, u, ct, { chunkSize: 1000 });
  await putChunks(b.t, s, ct); // node A has no running hash: its finalize reads the chunks back
  let release = () => {};
  a.store.hold = new Promise((r) => {
    release = r;
  });
  const held = a.store.held();
  const stalled = finalize(a.t, s.auth, s.sessionId);
  await held; // node A is "hashing", holding the session
  expect((await rowsOf(a.t, "upload_sessions"))[0]).toMatchObject({ state: "finalizing" });

  advance(31);
  await b.t.sweeper.runOnce();
  expect((await rowsOf(b.t, "upload_sessions"))[0]).toMatchObject({
    state: "receiving",
    finalizing_until: null,
  });

  expectSuccess(await finalize(b.t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
  a.store.hold = null;
  release();
  // Refused by the revision check (the file now exists) or, failing that, by the lost lease.
  expect(expectConflict(await stalled).current_revision_seq).toBe(1);
  const files = (await stateOf(b.t, u)).files;
  expect(files).toHaveLength(1);
  expect((await rowsOf(a.t, "upload_sessions"))[0]).toMatchObject({ state: "finalized" });
});

test("a finalize that lost its lease cannot commit even when nothing else changed (409), and a retry commits (200)", async () => {
  const [a, b] = await twoNodes({ ESYNC_FINALIZE_LEASE_SECONDS: "30" });
  const u = newUser();
  const ct = randomCiphertext(3000);
  const s = await openSession(a.t, u, ct, { chunkSize: 1000 });
  await putChunks(b.t, s, ct);
  let release = () => {};
  a.store.hold = new Promise((r) => {
    release = r;
  });
  const held = a.store.held();
  const stalled = finalize(a.t, s.auth, s.sessionId);
  await held;
  advance(31);
  await b.t.sweeper.runOnce();
  a.store.hold = null;
  release();
  expect(expectConflict(await stalled).message).toContain("changed during finalize");
  expect((await stateOf(a.t, u)).files).toHaveLength(0);
  expect((await rowsOf(a.t, "upload_sessions"))[0]).toMatchObject({ state: "receiving" });
  expectSuccess(await finalize(b.t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
  expect((await stateOf(a.t, u)).files).toHaveLength(1);
});

test("a live finalize lease is left alone by the other node's sweeper (409 to a second finalize) and commits (200)", async () => {
  const [a, b] = await twoNodes({ ESYNC_FINALIZE_LEASE_SECONDS: "30" });
  const u = newUser();
  const ct = randomCiphertext(3000);
  const s = await openSession(a.t, u, ct, { chunkSize: 1000 });
  await putChunks(b.t, s, ct);
  let release = () => {};
  a.store.hold = new Promise((r) => {
    release = r;
  });
  const held = a.store.held();
  const running = finalize(a.t, s.auth, s.sessionId);
  await held;

  advance(29);
  await b.t.sweeper.runOnce();
  expect((await rowsOf(b.t, "upload_sessions"))[0]).toMatchObject({ state: "finalizing" });
  const second = expectConflict(await finalize(b.t, s.auth, s.sessionId));
  expect(second.message).toContain("being finalized");
  expectError(await abort(b.t, s.auth, s.sessionId), 409, "conflict");

  a.store.hold = null;
  release();
  expectSuccess(await running, UPLOAD_RESULT_KEYS);
  expect((await rowsOf(a.t, "upload_sessions"))[0]).toMatchObject({
    state: "finalized",
    finalizing_until: null,
  });
});

test("a finalize running longer than its lease renews it, so the other node's sweeper leaves it alone and it commits (200)", async () => {
  const [a, b] = await twoNodes({ ESYNC_FINALIZE_LEASE_SECONDS: "3" }); // renewed every second
  const u = newUser();
  const ct = randomCiphertext(3000);
  const s = await openSession(a.t, u, ct, { chunkSize: 1000 });
  await putChunks(b.t, s, ct);
  let release = () => {};
  a.store.hold = new Promise((r) => {
    release = r;
  });
  const held = a.store.held();
  const running = finalize(a.t, s.auth, s.sessionId);
  await held;
  const first = (await rowsOf(a.t, "upload_sessions"))[0]!.finalizing_until as number;
  advance(2);
  await Bun.sleep(1300); // one renewal: the lease now ends 3 s after the advanced clock
  expect((await rowsOf(a.t, "upload_sessions"))[0]!.finalizing_until).toBe(first + 2);
  advance(2); // past the first lease, within the renewed one
  await b.t.sweeper.runOnce();
  expect((await rowsOf(b.t, "upload_sessions"))[0]).toMatchObject({ state: "finalizing" });
  a.store.hold = null;
  release();
  expectSuccess(await running, UPLOAD_RESULT_KEYS);
});

test("two nodes' sweepers running at once delete every queued object exactly once", async () => {
  const [a, b] = await twoNodes();
  const targets = Array.from({ length: 150 }, (_, i) =>
    blobPrefix(`${i.toString(16).padStart(2, "0")}${"ab".repeat(15)}`),
  );
  await a.t.store.repos.deletionQueue.enqueue(targets, a.t.clock.now());
  const [ra, rb] = await Promise.all([a.t.sweeper.runOnce(), b.t.sweeper.runOnce()]);
  expect(ra.deletions + rb.deletions).toBe(150);
  const all = [...a.store.deleted, ...b.store.deleted].sort();
  expect(all).toEqual([...targets].sort());
  expect(await rowsOf(a.t, "blob_deletions")).toEqual([]);
});

test("the per-user session limit is exact when two nodes open sessions at once (429 session_limit beyond it)", async () => {
  const [a, b] = await twoNodes({ ESYNC_MAX_SESSIONS_PER_USER: "3" });
  const u = newUser();
  const opens = Array.from({ length: 8 }, (_, i) => {
    const t = (i % 2 === 0 ? a : b).t;
    const ct = randomCiphertext(100);
    return t.json("/upload/session", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: authAt(t, u) },
      body: JSON.stringify({
        manifest: makeManifest({ owner: u.address, ciphertext: ct, path: `f${i}.bin` }),
        chunk_count: 1,
        chunk_size: 100,
        ciphertext_size: 100,
      }),
    });
  });
  const answers = await Promise.all(opens);
  expect(answers.filter((r) => r.status === 200)).toHaveLength(3);
  for (const r of answers.filter((x) => x.status !== 200)) expectError(r, 429, "session_limit");
  expect(await rowsOf(a.t, "upload_sessions")).toHaveLength(3);
});

test("the same new file uploaded through two nodes at once commits once; the other gets the Conflict envelope (409)", async () => {
  const [a, b] = await twoNodes();
  const u = newUser();
  const upload = (t: TestApp, user: TestUser, n: number) => {
    const ct = randomCiphertext(n);
    return uploadSingle(
      t,
      authAt(t, user),
      makeManifest({ owner: user.address, ciphertext: ct, path: "same.bin" }),
      ct,
    );
  };
  const [ra, rb] = await Promise.all([upload(a.t, u, 500), upload(b.t, u, 700)]);
  const statuses = [ra.status, rb.status].sort();
  expect(statuses).toEqual([200, 409]);
  expectConflict(ra.status === 409 ? ra : rb);
  expect((await stateOf(a.t, u, FOLDER)).files).toHaveLength(1);
});
