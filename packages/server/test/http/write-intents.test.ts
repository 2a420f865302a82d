/**
 * Every write records its intent before bytes land (issue 10 defects 3, 5, 9, 10): the state a
 * crash would leave at any instruction of a single-shot upload or a chunk PUT holds nothing fsck
 * calls an orphan and nothing the sweeper does not reclaim; races with a session delete or expiry
 * answer 404; a full disk (ENOSPC/EDQUOT, injected) is 507 `storage_full`, never a 4xx; a refused
 * single-shot upload stores no byte; deleting blobs leaves no empty `b/xx/` directory.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { ciphertextSizeFor } from "@esync/protocol/framing.ts";
import { SingleUploadService } from "../../src/files/single-upload.ts";
import { runFsck } from "../../src/ops/fsck.ts";
import {
  type BlobStore,
  type ByteRange,
  isPersistable,
  type PutOptions,
} from "../../src/storage/blob-store.ts";
import { blobTarget, chunkKey, newOneObjectBlobId } from "../../src/storage/layout.ts";
import { silentLogger } from "../../src/util/log.ts";
import { makeTestApp, type TestApp } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext } from "../support/fixtures.ts";
import {
  abort,
  authAt,
  blobFiles,
  chunkOf,
  expectError,
  expectSuccess,
  FOLDER,
  fileIdOf,
  finalize,
  openSession,
  putChunk,
  putChunks,
  rowsOf,
  snapshot,
  UPLOAD_RESULT_KEYS,
  uploadSingle,
} from "./helpers.ts";

/** The test store with hooks around `put` (to look at the state mid-write, or inject a fault). */
class HookStore implements BlobStore {
  readonly kind: string;
  puts = 0;
  /** Runs before the body is read. */
  before: ((key: string) => Promise<void> | void) | null = null;
  /** Runs once the first piece of the body has been read (the write is under way). */
  midway: ((key: string) => Promise<void> | void) | null = null;
  /** Runs after the object is stored, before `put` returns (the moment a crash would strand it). */
  after: ((key: string) => Promise<void> | void) | null = null;
  /** When set, `put` fails with it without storing. */
  fault: Error | null = null;
  readonly persist?: (keys: string[]) => Promise<void>;
  constructor(private readonly inner: BlobStore) {
    this.kind = inner.kind;
    if (isPersistable(inner)) this.persist = (keys) => inner.persist(keys);
  }
  async put(key: string, body: ReadableStream<Uint8Array>, length: number, opts?: PutOptions) {
    this.puts++;
    await this.before?.(key);
    if (this.fault) {
      await body.cancel();
      throw this.fault;
    }
    const midway = this.midway;
    let first = true;
    const source = midway
      ? body.pipeThrough(
          new TransformStream<Uint8Array, Uint8Array>({
            async transform(piece, c) {
              if (first) {
                first = false;
                await midway(key);
              }
              c.enqueue(piece);
            },
          }),
        )
      : body;
    await this.inner.put(key, source, length, opts);
    await this.after?.(key);
  }
  get(key: string, range?: ByteRange) {
    return this.inner.get(key, range);
  }
  size(key: string) {
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
let store: HookStore;
function app(env: Record<string, string> = {}) {
  t = makeTestApp(env, (inner) => {
    store = new HookStore(inner);
    return store;
  });
}
afterEach(() => t.close());

const fsck = () => runFsck({ store: t.store, blobs: t.blobs, clock: t.clock });
const enospc = () => Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });

/** What fsck says about the state as it is right now (the state a SIGKILL here would leave). */
async function orphansNow(): Promise<string[]> {
  return (await fsck()).problems.filter((p) => p.kind === "orphan_object").map((p) => p.key as string);
}

describe("write intents (a crash at any point leaves nothing unreclaimed)", () => {
  test("single-shot /upload: once its bytes are stored and before the row commits, fsck finds no orphan", async () => {
    app();
    const u = newUser();
    const ct = randomCiphertext(900);
    const midWrite: { orphans?: string[] } = {};
    store.after = async () => {
      midWrite.orphans = await orphansNow();
    };
    const m = makeManifest({ owner: u.address, ciphertext: ct });
    expectSuccess(await uploadSingle(t, authAt(t, u), m, ct), UPLOAD_RESULT_KEYS);
    expect(midWrite.orphans).toEqual([]);
    expect(await rowsOf(t, "blob_deletions")).toEqual([]); // the commit claimed the intent
  });

  test("single-shot /upload: a crash after the bytes land is reclaimed by the sweeper once the intent's lease ends", async () => {
    app();
    const u = newUser();
    const ct = randomCiphertext(900);
    // Simulate the crash: the state at the moment after the bytes land is what survives.
    store.after = () => {
      throw Object.assign(new Error("simulated crash"), { code: "EIO" });
    };
    const before = (await rowsOf(t, "blob_deletions")).length;
    const r = await uploadSingle(t, authAt(t, u), makeManifest({ owner: u.address, ciphertext: ct }), ct);
    expect(r.status).toBe(503);
    expect((await rowsOf(t, "blob_deletions")).length).toBe(before);
    expect(await blobFiles(t)).toEqual([]);
  });

  test("chunk PUT: once its bytes are stored and before the chunk is recorded, fsck finds no orphan, even after the session is deleted", async () => {
    app();
    const u = newUser();
    const ct = randomCiphertext(2000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    const midWrite: { orphans?: string[] } = {};
    store.before = async () => {
      expect((await abort(t, s.auth, s.sessionId)).status).toBe(200);
      await t.sweeper.runOnce();
    };
    store.after = async () => {
      midWrite.orphans = await orphansNow();
    };
    expectError(await putChunk(t, s.auth, s.sessionId, 0, chunkOf(ct, 1000, 0)), 404, "not_found");
    expect(midWrite.orphans).toEqual([]);
    // The chunk that landed after its session vanished is queued and swept.
    await t.sweeper.runOnce();
    expect(await blobFiles(t)).toEqual([]);
    expect(await rowsOf(t, "blob_deletions")).toEqual([]);
    expect(await fsck()).toEqual({ ok: true, problems: [], repaired: 0 });
  });
});

describe("write intents of a dead process", () => {
  /** Stores a one-object blob and reserves its write intent for `holder`; returns its key. */
  async function strand(holder: string | null): Promise<string> {
    const blobId = newOneObjectBlobId();
    const key = chunkKey(blobId, 0, "");
    await t.services.deletions.reserve(blobTarget(blobId), t.clock.now(), holder);
    const bytes = randomCiphertext(100);
    await t.blobs.put(key, new Blob([new Uint8Array(bytes)]).stream(), bytes.byteLength);
    return key;
  }

  test("the sweeper deletes at once what a provably dead process was writing; a live process's intent, and on PostgreSQL another machine's, wait for their lease", async () => {
    app();
    const self = t.services.leaseHolders.self;
    expect(self).not.toBeNull();
    const [boot, pidNs, , start] = self!.split(":");
    const gone = Bun.spawnSync(["true"]).pid; // exited and reaped: no such process any more
    const dead = await strand(`${boot}:${pidNs}:${gone}:${start}`);
    const live = await strand(self);
    const otherMachine = await strand(`00000000-0000-4000-8000-000000000000:${pidNs}:1:1`);
    const unknown = await strand(null);
    await t.sweeper.runOnce();
    const left = await blobFiles(t);
    expect(left).not.toContain(dead);
    expect(left).toContain(live);
    expect(left).toContain(unknown);
    // SQLite is a file of this machine: another boot id is an earlier boot, whose processes are dead.
    if (t.store.dialect === "sqlite") expect(left).not.toContain(otherMachine);
    else expect(left).toContain(otherMachine);
    const rows = await rowsOf(t, "blob_deletions");
    expect(rows).toHaveLength(t.store.dialect === "sqlite" ? 2 : 3);
    for (const r of rows) expect(Number(r.not_before)).toBeGreaterThan(t.clock.now());
  });
});

describe("chunk PUT racing the end of its session", () => {
  test("returns 404 not_found (not 503) when the session is deleted and swept while the body streams", async () => {
    app();
    const u = newUser();
    const ct = randomCiphertext(2000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    await putChunks(t, s, ct, [1]);
    store.midway = async () => {
      store.midway = null;
      expect((await abort(t, s.auth, s.sessionId)).status).toBe(200);
      await t.sweeper.runOnce();
    };
    expectError(await putChunk(t, s.auth, s.sessionId, 0, chunkOf(ct, 1000, 0)), 404, "not_found");
    await t.sweeper.runOnce();
    expect(await blobFiles(t)).toEqual([]);
  });

  test("returns 404 not_found when the session expires and is swept while the body streams", async () => {
    app();
    const u = newUser();
    const ct = randomCiphertext(2000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    await putChunks(t, s, ct, [1]);
    store.midway = async () => {
      store.midway = null;
      t.clock.advance(t.config.sessionTtlSeconds + 1);
      await t.sweeper.runOnce();
    };
    expectError(await putChunk(t, s.auth, s.sessionId, 0, chunkOf(ct, 1000, 0)), 404, "not_found");
    await t.sweeper.runOnce();
    expect(await blobFiles(t)).toEqual([]);
  });

  test("an expired session's and an aborted session's objects are all reclaimed", async () => {
    app();
    const u = newUser();
    const ct = randomCiphertext(3000);
    const a = await openSession(t, u, ct, { chunkSize: 1000, path: "a.bin" });
    const b = await openSession(t, u, ct, { chunkSize: 1000, path: "b.bin" });
    await putChunks(t, a, ct, [0, 2]);
    await putChunks(t, b, ct, [1]);
    expect(await blobFiles(t)).toHaveLength(3);
    expect((await abort(t, a.auth, a.sessionId)).status).toBe(200);
    t.clock.advance(t.config.sessionTtlSeconds + 1);
    await t.sweeper.runOnce();
    expect(await blobFiles(t)).toEqual([]);
    expect(await fsck()).toEqual({ ok: true, problems: [], repaired: 0 });
  });
});

describe("finalize refused for the client's reason changes nothing", () => {
  test("returns 400 invalid_manifest for a hash mismatch and changes nothing, not even expires_at", async () => {
    app();
    const u = newUser();
    const ct = randomCiphertext(2000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    const wrong = Buffer.from(ct);
    wrong[1500] = (wrong[1500] as number) ^ 1;
    await putChunks(t, s, wrong);
    t.clock.advance(100);
    const before = await snapshot(t);
    expectError(await finalize(t, s.auth, s.sessionId), 400, "invalid_manifest");
    expect(await snapshot(t)).toEqual(before);
  });

  test("returns 409 for a revision conflict and changes nothing, not even expires_at", async () => {
    app();
    const u = newUser();
    const first = randomCiphertext(900);
    expectSuccess(
      await uploadSingle(t, authAt(t, u), makeManifest({ owner: u.address, ciphertext: first }), first),
      UPLOAD_RESULT_KEYS,
    );
    const ct = randomCiphertext(2000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    await putChunks(t, s, ct);
    t.clock.advance(100);
    const before = await snapshot(t);
    expect((await finalize(t, s.auth, s.sessionId)).status).toBe(409);
    expect(await snapshot(t)).toEqual(before);
  });
});

describe("finalize refused for missing chunks", () => {
  test("returns 400 invalid_manifest and changes nothing, not even expires_at", async () => {
    app();
    const u = newUser();
    const ct = randomCiphertext(2000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    await putChunks(t, s, ct, [0]);
    t.clock.advance(100);
    const before = await snapshot(t);
    expectError(await finalize(t, s.auth, s.sessionId), 400, "invalid_manifest");
    expect(await snapshot(t)).toEqual(before);
  });
});

describe("a full disk is the server's fault (507 storage_full)", () => {
  test("single-shot /upload answers 507 storage_full with Retry-After when the blob store fails with ENOSPC, and keeps nothing", async () => {
    app();
    const u = newUser();
    const ct = randomCiphertext(900);
    store.fault = enospc();
    const before = await snapshot(t);
    const r = await uploadSingle(t, authAt(t, u), makeManifest({ owner: u.address, ciphertext: ct }), ct);
    expectError(r, 507, "storage_full");
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await snapshot(t)).toEqual(before);
  });

  test("single-shot /upload answers 507 storage_full (not 400 invalid_manifest) when the spool file hits EDQUOT", async () => {
    app();
    const s = t.services;
    s.singleUpload = new SingleUploadService(s.files, s.deletions, t.blobs, t.clock, silentLogger, {
      spoolDir: join(t.config.dataDir, "spool"),
      maxBytes: t.config.maxSingleUploadBytes,
      memoryBodyBytes: 0,
      openSpoolFile: () =>
        new Writable({
          write(_chunk, _enc, cb) {
            cb(Object.assign(new Error("EDQUOT: disk quota exceeded, write"), { code: "EDQUOT" }));
          },
        }),
    });
    const u = newUser();
    const ct = randomCiphertext(900);
    const r = await uploadSingle(t, authAt(t, u), makeManifest({ owner: u.address, ciphertext: ct }), ct);
    expectError(r, 507, "storage_full");
    expect(store.puts).toBe(0);
  });

  /** A single-upload service whose spool file fails every write with EDQUOT. */
  function failingSpool(memory: { memoryBodyBytes?: number; memoryBudgetBytes?: number }) {
    const s = t.services;
    s.singleUpload = new SingleUploadService(s.files, s.deletions, t.blobs, t.clock, silentLogger, {
      spoolDir: join(t.config.dataDir, "spool"),
      maxBytes: t.config.maxSingleUploadBytes,
      ...memory,
      openSpoolFile: () =>
        new Writable({
          write(_chunk, _enc, cb) {
            cb(Object.assign(new Error("EDQUOT: disk quota exceeded, write"), { code: "EDQUOT" }));
          },
        }),
    });
  }

  test("single-shot /upload of a body within the in-memory size stores it without the spool (200 with a failing spool)", async () => {
    app();
    failingSpool({});
    const u = newUser();
    const ct = randomCiphertext(900);
    const m = makeManifest({ owner: u.address, ciphertext: ct });
    const r = await uploadSingle(t, authAt(t, u), m, ct, true);
    expectSuccess(r, UPLOAD_RESULT_KEYS);
    expect(store.puts).toBe(1);
  });

  test("single-shot /upload spools a small body once the in-memory budget is taken (507 storage_full with a failing spool)", async () => {
    app();
    failingSpool({ memoryBudgetBytes: 100 });
    const u = newUser();
    const ct = randomCiphertext(900);
    const m = makeManifest({ owner: u.address, ciphertext: ct });
    const r = await uploadSingle(t, authAt(t, u), m, ct, true);
    expectError(r, 507, "storage_full");
    expect(store.puts).toBe(0);
  });

  test("chunk PUT answers 507 storage_full when the store fails with ENOSPC; the session resumes once space is back", async () => {
    app();
    const u = newUser();
    const ct = randomCiphertext(2000);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    store.fault = enospc();
    const before = await snapshot(t);
    const r = await putChunk(t, s.auth, s.sessionId, 0, chunkOf(ct, 1000, 0));
    expectError(r, 507, "storage_full");
    expect(r.headers.get("retry-after")).not.toBeNull();
    expect(await snapshot(t)).toEqual(before);
    store.fault = null;
    await putChunks(t, s, ct);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
  });
});

describe("single-shot /upload refused by its revision precondition", () => {
  test("answers 409 conflict as soon as the manifest part is parsed, without waiting for the ciphertext part", async () => {
    app();
    const u = newUser();
    const first = randomCiphertext(900);
    const path = "early/conflict.bin";
    const m1 = makeManifest({ owner: u.address, ciphertext: first, path });
    expectSuccess(await uploadSingle(t, authAt(t, u), m1, first), UPLOAD_RESULT_KEYS);
    const ct = randomCiphertext(ciphertextSizeFor(64 * 1024 * 1024));
    const m2 = makeManifest({ owner: u.address, ciphertext: ct, path });
    const boundary = "early409";
    const head = new TextEncoder().encode(
      `--${boundary}\r\nContent-Disposition: form-data; name="manifest"\r\n\r\n${JSON.stringify(m2)}\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="ciphertext"\r\n\r\n`,
    );
    // The manifest and the start of the ciphertext part, then a client that has not sent the rest.
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(head);
        c.enqueue(ct.subarray(0, 1024));
        sent = head.byteLength + 1024;
      },
    });
    const answer = t.json("/upload", {
      method: "POST",
      headers: { authorization: authAt(t, u), "content-type": `multipart/form-data; boundary=${boundary}` },
      body,
    });
    const r = await Promise.race([answer, Bun.sleep(5000).then(() => null)]);
    expect(r).not.toBeNull();
    expect(r!.status).toBe(409);
    expect(r!.body.Conflict.error).toBe("conflict");
    expect(sent).toBeLessThan(ct.byteLength);
    expect(store.puts).toBe(1);
  });

  test("returns 409 conflict for a new file over an existing one without storing any byte", async () => {
    app();
    const u = newUser();
    const ct = randomCiphertext(900);
    expectSuccess(
      await uploadSingle(t, authAt(t, u), makeManifest({ owner: u.address, ciphertext: ct }), ct),
      UPLOAD_RESULT_KEYS,
    );
    const puts = store.puts;
    const before = await snapshot(t);
    const again = randomCiphertext(800);
    const r = await uploadSingle(
      t,
      authAt(t, u),
      makeManifest({ owner: u.address, ciphertext: again }),
      again,
    );
    expect(r.status).toBe(409);
    expect(store.puts).toBe(puts);
    expect(await snapshot(t)).toEqual(before);
  });

  test("returns 400 stale_sequence without storing any byte", async () => {
    app();
    const u = newUser();
    const ct = randomCiphertext(900);
    const first = expectSuccess(
      await uploadSingle(
        t,
        authAt(t, u),
        makeManifest({ owner: u.address, ciphertext: ct, revisionSeq: 5 }),
        ct,
      ),
      UPLOAD_RESULT_KEYS,
    );
    const puts = store.puts;
    const m = makeManifest({
      owner: u.address,
      ciphertext: ct,
      revisionSeq: 5,
      baseRevisionId: first.revision_id,
    });
    expectError(await uploadSingle(t, authAt(t, u), m, ct), 400, "stale_sequence");
    expect(store.puts).toBe(puts);
  });

  test("checks the precondition again at commit: a write that wins the race meanwhile makes it 409, its bytes reclaimed", async () => {
    app();
    const u = newUser();
    const a = randomCiphertext(900);
    const b = randomCiphertext(901);
    store.before = async () => {
      store.before = null;
      const m = makeManifest({ owner: u.address, ciphertext: b });
      expectSuccess(await uploadSingle(t, authAt(t, u), m, b), UPLOAD_RESULT_KEYS);
    };
    const r = await uploadSingle(t, authAt(t, u), makeManifest({ owner: u.address, ciphertext: a }), a);
    expect(r.status).toBe(409);
    expect(await blobFiles(t)).toHaveLength(1);
    expect(await fsck()).toEqual({ ok: true, problems: [], repaired: 0 });
  });
});

describe("disk store directories", () => {
  test("deleting every file and sweeping past the grace period leaves no empty b/xx/ directory", async () => {
    app();
    if (t.blobs.kind !== "disk") return; // directories exist only on disk
    const u = newUser();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const ct = randomCiphertext(500 + i);
      const m = makeManifest({ owner: u.address, ciphertext: ct, path: `f${i}.bin` });
      expectSuccess(await uploadSingle(t, authAt(t, u), m, ct), UPLOAD_RESULT_KEYS);
      ids.push(fileIdOf(m));
    }
    for (const id of ids) {
      const r = await t.fetch(`/delete/${u.address}/${FOLDER}/${id}`, {
        method: "DELETE",
        headers: { authorization: authAt(t, u) },
      });
      expect(r.status).toBe(200);
    }
    t.clock.advance(t.config.blobGraceSeconds);
    await t.sweeper.runOnce();
    const left = readdirSync(t.config.blobDir).filter((n) => !n.startsWith("."));
    expect(left).toEqual([]);
  });
});
