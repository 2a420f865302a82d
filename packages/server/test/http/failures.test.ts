/**
 * Transient failures (docs/protocol.md#folders, #upload-sessions, #errors): a failing database gives 500 `database_error`
 * and a failing blob store 500 `storage_inconsistency` (finalize) or 503 `storage_unavailable`
 * (chunk PUT), each in the error envelope with a generic message naming a request id, leaving
 * nothing half-written; the same request succeeds once the fault is gone.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { sqliteDb } from "../../src/db/sqlite/store.ts";
import {
  type BlobStore,
  type ByteRange,
  isPersistable,
  type PutOptions,
} from "../../src/storage/blob-store.ts";
import { injectWriteFault, jsonInit, makeTestApp, type TestApp, testDatabase } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext, type TestUser } from "../support/fixtures.ts";
import {
  authAt,
  download,
  expectError,
  expectSuccess,
  FOLDER,
  fileIdOf,
  finalize,
  type JsonAnswer,
  openSession,
  putChunk,
  putChunks,
  rowsOf,
  STATUS_KEYS,
  snapshot,
  status,
  UPLOAD_RESULT_KEYS,
  uploadSingle,
  uploadViaSession,
} from "./helpers.ts";

/** The test store (disk or S3) with a `put` or `get` that can be made to fail like a broken disk. */
class FaultyStore implements BlobStore {
  readonly kind: string;
  failPut = false;
  failGet = false;
  /** When set, `put` reads the body's first piece, then fails with this (e.g. S3's connection reset). */
  failPutMidway: Error | null = null;
  /** Present when the inner store has it (disk), as `isPersistable` expects. */
  readonly persist?: (keys: string[]) => Promise<void>;
  constructor(private readonly inner: BlobStore) {
    this.kind = inner.kind;
    if (isPersistable(inner)) this.persist = (keys) => inner.persist(keys);
  }
  async put(key: string, body: ReadableStream<Uint8Array>, length: number, opts?: PutOptions): Promise<void> {
    if (this.failPutMidway) {
      const reader = body.getReader();
      await reader.read();
      await reader.cancel();
      throw this.failPutMidway;
    }
    if (this.failPut) {
      await body.cancel();
      throw Object.assign(new Error("EIO: i/o error, write (injected)"), { code: "EIO" });
    }
    return this.inner.put(key, body, length, opts);
  }
  async get(key: string, range?: ByteRange): Promise<ReadableStream<Uint8Array>> {
    if (this.failGet) throw Object.assign(new Error("EIO: i/o error, read (injected)"), { code: "EIO" });
    return this.inner.get(key, range);
  }
  size(key: string) {
    // A store that cannot be read cannot stat its objects either.
    if (this.failGet) throw Object.assign(new Error("EIO: i/o error, stat (injected)"), { code: "EIO" });
    return this.inner.size(key);
  }
  list(prefix: string) {
    return this.inner.list(prefix);
  }
  delete(keys: string[]) {
    return this.inner.delete(keys);
  }
  deletePrefix(prefix: string) {
    return this.inner.deletePrefix(prefix);
  }
  check() {
    return this.inner.check();
  }
  close() {
    return this.inner.close();
  }
}

let t: TestApp;
let store: FaultyStore;
beforeEach(() => {
  t = makeTestApp({}, (inner) => {
    store = new FaultyStore(inner);
    return store;
  });
});
afterEach(() => t.close());

/** Makes every write to `table` fail in the database until `heal` is awaited. */
function breakTable(table: string, op: "INSERT" | "DELETE" | "UPDATE" = "INSERT") {
  return injectWriteFault(t, table, op);
}

/** A 500 error with a generic message that names the request id of its `X-Request-Id` header. */
function expectGeneric500(r: JsonAnswer, code: string): void {
  expectError(r, 500, code);
  const id = r.headers.get("x-request-id");
  expect(id).toMatch(/^[0-9a-f]+$/);
  expect(r.body.Error.message).toContain(id!);
  expect(r.body.Error.message.toLowerCase()).not.toContain("insert");
  expect(r.body.Error.message).not.toContain("injected");
}

function register(u: TestUser, label = "x") {
  return t.json(
    "/register_folder",
    jsonInit("POST", authAt(t, u), { ss58_address: u.address, folder_hash: FOLDER, label }),
  );
}

describe("database failures: 500 database_error, nothing half-written, a retry succeeds", () => {
  test("POST /register_folder", async () => {
    const u = newUser();
    const fault = await breakTable("folders");
    const before = await snapshot(t);
    expectGeneric500(await register(u), "database_error");
    await fault.heal();
    expect(await snapshot(t)).toEqual(before);
    expect((await register(u)).status).toBe(200);
  });

  test("DELETE /unregister_folder keeps the folder and its files when the blob deletion queue cannot be written", async () => {
    const u = newUser();
    expect((await register(u)).status).toBe(200);
    await uploadViaSession(t, u, randomCiphertext(500), { path: "a.bin" });
    const fault = await breakTable("blob_deletions");
    const before = await snapshot(t);
    const r = await t.json(
      "/unregister_folder",
      jsonInit("DELETE", authAt(t, u), { ss58_address: u.address, folder_hash: FOLDER }),
    );
    expectGeneric500(r, "database_error");
    await fault.heal();
    expect(await snapshot(t)).toEqual(before);
    const again = await t.json(
      "/unregister_folder",
      jsonInit("DELETE", authAt(t, u), { ss58_address: u.address, folder_hash: FOLDER }),
    );
    expect(expectSuccess(again, ["status", "files_deleted"]).files_deleted).toBe(1);
  });

  test("POST finalize leaves the session receiving with its chunks when the file row cannot be written", async () => {
    const u = newUser();
    const ct = randomCiphertext(3000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    await putChunks(t, s, ct);
    const fault = await breakTable("files");
    expectGeneric500(await finalize(t, s.auth, s.sessionId), "database_error");
    await fault.heal();
    expect(await rowsOf(t, "files")).toEqual([]);
    expect(expectSuccess(await status(t, s.auth, s.sessionId), STATUS_KEYS)).toMatchObject({
      state: "receiving",
      chunks_received: [0, 1, 2],
    });
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
  });

  test("DELETE /delete keeps the file when the deletion cannot be recorded", async () => {
    const u = newUser();
    const { session } = await uploadViaSession(t, u, randomCiphertext(500), { path: "a.bin" });
    const fault = await breakTable("blob_deletions");
    const before = await snapshot(t);
    const path = `/delete/${u.address}/${FOLDER}/${fileIdOf(session.manifest)}`;
    expectGeneric500(
      await t.json(path, { method: "DELETE", headers: { authorization: authAt(t, u) } }),
      "database_error",
    );
    await fault.heal();
    expect(await snapshot(t)).toEqual(before);
    expect((await t.json(path, { method: "DELETE", headers: { authorization: authAt(t, u) } })).status).toBe(
      200,
    );
  });
});

describe("a full database disk", () => {
  test.skipIf(testDatabase !== "sqlite")(
    "is 507 storage_full with Retry-After (SQLITE_FULL), not a 500, and writes succeed once there is room",
    async () => {
      const u = newUser();
      const sqlite = sqliteDb(t.store)?.$client;
      if (!sqlite) throw new Error("expected the SQLite store");
      const pages = (sqlite.query("PRAGMA page_count").get() as { page_count: number }).page_count;
      // The database may grow by two pages more, then it is "full" as a full disk would make it.
      sqlite.exec(`PRAGMA max_page_count = ${pages + 2}`);
      const answers: JsonAnswer[] = [];
      for (let i = 0; i < 200; i++) {
        const r = await t.json(
          "/register_folder",
          jsonInit("POST", authAt(t, u), {
            ss58_address: u.address,
            folder_hash: i.toString(16).padStart(16, "0"),
            label: `${i}-${"l".repeat(1000)}`,
          }),
        );
        answers.push(r);
        if (r.status !== 200) break;
      }
      const refused = answers.at(-1) as JsonAnswer;
      expectError(refused, 507, "storage_full");
      expect(refused.headers.get("retry-after")).toBe("60");
      sqlite.exec("PRAGMA max_page_count = 1073741823");
      const again = await t.json(
        "/register_folder",
        jsonInit("POST", authAt(t, u), {
          ss58_address: u.address,
          folder_hash: "ffffffffffffffff",
          label: "x",
        }),
      );
      expect(again.status).toBe(200);
    },
  );
});

describe("blob store failures", () => {
  test("chunk PUT returns 503 storage_unavailable with Retry-After and records nothing; a retry stores it", async () => {
    const u = newUser();
    const ct = randomCiphertext(2000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    store.failPut = true;
    const before = await snapshot(t);
    const r = await putChunk(t, s.auth, s.sessionId, 0, ct.subarray(0, 1000));
    expectError(r, 503, "storage_unavailable");
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await snapshot(t)).toEqual(before);
    store.failPut = false;
    await putChunks(t, s, ct);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
  });

  test("chunk PUT returns 503 storage_unavailable, not a client error, when the store's own connection resets midway", async () => {
    const u = newUser();
    const ct = randomCiphertext(2000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    store.failPutMidway = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
    const before = await snapshot(t);
    const r = await putChunk(t, s.auth, s.sessionId, 0, ct.subarray(0, 1000));
    expectError(r, 503, "storage_unavailable");
    expect(await snapshot(t)).toEqual(before);
  });

  test("chunk PUT returns 400 invalid_manifest when the client's body breaks off midway, recording nothing", async () => {
    const u = newUser();
    const ct = randomCiphertext(2000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(ct.subarray(0, 400));
      },
      pull(c) {
        c.error(Object.assign(new Error("aborted"), { code: "ECONNRESET" }));
      },
    });
    const before = await snapshot(t);
    const r = await putChunk(t, s.auth, s.sessionId, 0, body);
    expectError(r, 400, "invalid_manifest");
    expect(r.body.Error.message).toContain("ended early");
    expect(await snapshot(t)).toEqual(before);
  });

  test("finalize returns 500 storage_inconsistency when chunks cannot be read, stays receiving, and succeeds later", async () => {
    const u = newUser();
    const ct = randomCiphertext(2000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    await putChunks(t, s, ct);
    store.failGet = true;
    expectError(await finalize(t, s.auth, s.sessionId), 500, "storage_inconsistency");
    expect(await rowsOf(t, "files")).toEqual([]);
    expect(expectSuccess(await status(t, s.auth, s.sessionId), STATUS_KEYS).state).toBe("receiving");
    store.failGet = false;
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
  });

  test("single-shot upload returns 503 storage_unavailable when the blob cannot be stored, recording nothing", async () => {
    const u = newUser();
    const ct = randomCiphertext(700);
    const m = makeManifest({ owner: u.address, ciphertext: ct });
    store.failPut = true;
    const before = await snapshot(t);
    expectError(await uploadSingle(t, authAt(t, u), m, ct), 503, "storage_unavailable");
    expect(await snapshot(t)).toEqual(before);
    store.failPut = false;
    expectSuccess(await uploadSingle(t, authAt(t, u), m, ct), UPLOAD_RESULT_KEYS);
  });

  test("download returns 503 storage_unavailable with Retry-After, not a truncated 200, when the store cannot be read", async () => {
    const u = newUser();
    const ct = randomCiphertext(3000);
    const { session } = await uploadViaSession(t, u, ct, { chunkSize: 1000 });
    store.failGet = true;
    const r = await download(t, authAt(t, u), u.address, FOLDER, fileIdOf(session.manifest));
    expect(r.status).toBe(503);
    expect(r.headers.get("retry-after")).toBe("1");
    const body = await r.json();
    expect(body).toEqual({ Error: { error: "storage_unavailable", message: expect.any(String) } });
    store.failGet = false;
    const ok = await download(t, authAt(t, u), u.address, FOLDER, fileIdOf(session.manifest));
    expect(Buffer.from(await ok.arrayBuffer()).equals(ct)).toBe(true);
  });
});
