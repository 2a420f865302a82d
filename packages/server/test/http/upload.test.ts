/**
 * Single-shot `POST /upload` (docs/protocol.md#sync-endpoints): multipart parsed as bytes (a ciphertext part
 * without a filename holding invalid UTF-8 must round-trip byte for byte), part order and
 * presence, hash and owner checks, revisions, and indistinguishability from a finalized session.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { statSync } from "node:fs";
import { join } from "node:path";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import type { BlobStore, PutOptions } from "../../src/storage/blob-store.ts";
import { jsonInit, makeTestApp, type TestApp, testDatabase } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext, type TestUser } from "../support/fixtures.ts";
import {
  authAt,
  download,
  ENTRY_KEYS,
  expectConflict,
  expectError,
  expectSuccess,
  FOLDER,
  fileIdOf,
  filesUnder,
  rowsOf,
  snapshot,
  stateOf,
  UPLOAD_RESULT_KEYS,
  uploadParts,
  uploadSingle,
  uploadViaSession,
} from "./helpers.ts";

let t: TestApp;
beforeEach(() => {
  t = makeTestApp({ ESYNC_MAX_SINGLE_UPLOAD_BYTES: String(64 * 1024) });
});
afterEach(() => t.close());

/** Bytes that are not valid UTF-8 (lone continuation, overlong, surrogate, 0xFF), CR/LF and NUL among random bytes. */
function binaryNotUtf8(n: number): Buffer {
  const evil = Buffer.from([
    0xff, 0xfe, 0x80, 0xc3, 0x28, 0xed, 0xa0, 0x80, 0xc0, 0xaf, 0x00, 0x0d, 0x0a, 0x2d, 0x2d, 0xf8,
  ]);
  const b = randomCiphertext(n);
  for (let i = 0; i + evil.length <= n; i += 97) evil.copy(b, i);
  return b;
}

async function bytesOf(u: TestUser, manifest: Record<string, unknown>): Promise<Buffer> {
  const r = await download(t, authAt(t, u), u.address, FOLDER, fileIdOf(manifest));
  expect(r.status).toBe(200);
  return Buffer.from(await r.arrayBuffer());
}

describe("POST /upload", () => {
  for (const declared of [false, true]) {
    const how = declared ? "held in memory (Content-Length)" : "spooled (no Content-Length)";
    test(`stores a ciphertext part without filename holding invalid UTF-8 byte-identically (200 UploadResult); body ${how}`, async () => {
      const u = newUser();
      const ct = binaryNotUtf8(20_000);
      expect(() => new TextDecoder("utf-8", { fatal: true }).decode(ct)).toThrow();
      const m = makeManifest({ owner: u.address, ciphertext: ct });
      const r = expectSuccess(await uploadSingle(t, authAt(t, u), m, ct, declared), UPLOAD_RESULT_KEYS);
      expect(r.revision_id).toHaveLength(32);
      expect([r.timestamp, r.created_at, r.updated_at]).toEqual([
        t.clock.now(),
        t.clock.now(),
        t.clock.now(),
      ]);
      const back = await bytesOf(u, m);
      expect(back.length).toBe(ct.length);
      expect(back.equals(ct)).toBe(true);
      const [e] = (await stateOf(t, u)).files;
      expect(e).toMatchObject({
        revision_id: r.revision_id,
        created_at: r.created_at,
        updated_at: r.updated_at,
        store_hash: blake3Hex(ct),
      });
    });

    test(`also accepts a ciphertext part with a filename and a content type (200); body ${how}`, async () => {
      const u = newUser();
      const ct = binaryNotUtf8(3000);
      const m = makeManifest({ owner: u.address, ciphertext: ct });
      const r = await uploadParts(
        t,
        authAt(t, u),
        [
          { name: "manifest", data: JSON.stringify(m) },
          { name: "ciphertext", data: ct, filename: "blob.bin", contentType: "application/octet-stream" },
        ],
        declared,
      );
      expectSuccess(r, UPLOAD_RESULT_KEYS);
      expect((await bytesOf(u, m)).equals(ct)).toBe(true);
    });

    test(`stores a 48-byte ciphertext (the encryption of an empty file); body ${how}`, async () => {
      const u = newUser();
      const ct = binaryNotUtf8(48);
      const m = makeManifest({ owner: u.address, ciphertext: ct, sizeBytes: 0 });
      expectSuccess(await uploadSingle(t, authAt(t, u), m, ct, declared), UPLOAD_RESULT_KEYS);
      expect((await stateOf(t, u)).files[0].size_bytes).toBe(0);
      expect((await bytesOf(u, m)).equals(ct)).toBe(true);
    });
  }

  const failures: [
    string,
    number,
    string,
    (u: TestUser, ct: Buffer, m: Record<string, unknown>) => Parameters<typeof uploadParts>[2],
  ][] = [
    [
      "the manifest part after the ciphertext part",
      400,
      "invalid_manifest",
      (_u, ct, m) => [
        { name: "ciphertext", data: ct },
        { name: "manifest", data: JSON.stringify(m) },
      ],
    ],
    ["no manifest part", 400, "invalid_manifest", (_u, ct) => [{ name: "ciphertext", data: ct }]],
    [
      "no ciphertext part",
      400,
      "invalid_manifest",
      (_u, _ct, m) => [{ name: "manifest", data: JSON.stringify(m) }],
    ],
    ["no parts at all", 400, "invalid_manifest", () => []],
    [
      "an empty ciphertext part",
      400,
      "invalid_manifest",
      (_u, _ct, m) => [
        { name: "manifest", data: JSON.stringify(m) },
        { name: "ciphertext", data: new Uint8Array(0) },
      ],
    ],
    [
      "two manifest parts",
      400,
      "invalid_manifest",
      (_u, ct, m) => [
        { name: "manifest", data: JSON.stringify(m) },
        { name: "manifest", data: JSON.stringify(m) },
        { name: "ciphertext", data: ct },
      ],
    ],
    [
      "an unexpected extra part",
      400,
      "invalid_manifest",
      (_u, ct, m) => [
        { name: "manifest", data: JSON.stringify(m) },
        { name: "extra", data: "x" },
        { name: "ciphertext", data: ct },
      ],
    ],
    [
      "a manifest part that is not JSON",
      400,
      "invalid_manifest",
      (_u, ct) => [
        { name: "manifest", data: '{"ss58_address":' },
        { name: "ciphertext", data: ct },
      ],
    ],
    [
      "a manifest with a bad signature",
      400,
      "invalid_manifest",
      (_u, ct, m) => [
        { name: "manifest", data: JSON.stringify({ ...m, signature: new Array(64).fill(3) }) },
        { name: "ciphertext", data: ct },
      ],
    ],
    [
      "a ciphertext whose BLAKE3 differs from the manifest",
      400,
      "invalid_manifest",
      (_u, ct, m) => [
        { name: "manifest", data: JSON.stringify(m) },
        { name: "ciphertext", data: Buffer.concat([ct, Buffer.from([0])]) },
      ],
    ],
    [
      "a manifest owned by another address",
      403,
      "forbidden",
      (_u, ct) => [
        {
          name: "manifest",
          data: JSON.stringify(makeManifest({ owner: newUser().address, ciphertext: ct })),
        },
        { name: "ciphertext", data: ct },
      ],
    ],
    [
      "a ciphertext over the single-shot limit",
      413,
      "payload_too_large",
      (u) => {
        const big = randomCiphertext(64 * 1024 + 1);
        return [
          { name: "manifest", data: JSON.stringify(makeManifest({ owner: u.address, ciphertext: big })) },
          { name: "ciphertext", data: big },
        ];
      },
    ],
  ];
  for (const declared of [false, true])
    for (const [what, code, error, parts] of failures) {
      const how = declared ? "held in memory (Content-Length)" : "spooled (no Content-Length)";
      test(`returns ${code} ${error} for ${what}, storing nothing; body ${how}`, async () => {
        const u = newUser();
        const ct = binaryNotUtf8(2000);
        const m = makeManifest({ owner: u.address, ciphertext: ct });
        const before = await snapshot(t);
        expectError(await uploadParts(t, authAt(t, u), parts(u, ct, m), declared), code, error);
        expect(await snapshot(t)).toEqual(before);
        expect((await stateOf(t, u)).files).toEqual([]);
      });
    }

  test("returns 400 invalid_manifest for a body that is not multipart, storing nothing", async () => {
    const u = newUser();
    const before = await snapshot(t);
    const r = await t.json("/upload", {
      method: "POST",
      headers: { authorization: authAt(t, u), "content-type": "application/json" },
      body: "{}",
    });
    expectError(r, 400, "invalid_manifest");
    expect(await snapshot(t)).toEqual(before);
  });

  for (const declared of [false, true])
    test(`returns 400 invalid_manifest for a truncated multipart body (no closing boundary), storing nothing; body ${declared ? "held in memory (Content-Length)" : "spooled (no Content-Length)"}`, async () => {
      const u = newUser();
      const ct = binaryNotUtf8(2000);
      const m = makeManifest({ owner: u.address, ciphertext: ct });
      const before = await snapshot(t);
      const boundary = "XyZ";
      const body = Buffer.concat([
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="manifest"\r\n\r\n${JSON.stringify(m)}\r\n`,
        ),
        Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="ciphertext"\r\n\r\n`),
        ct.subarray(0, 1000),
      ]);
      const headers: Record<string, string> = {
        authorization: authAt(t, u),
        "content-type": `multipart/form-data; boundary=${boundary}`,
      };
      if (declared) headers["content-length"] = String(body.byteLength);
      const r = await t.json("/upload", { method: "POST", headers, body });
      expect(r.status).toBe(400);
      expectError(r, 400, "invalid_manifest");
      expect(await snapshot(t)).toEqual(before);
    });

  for (const declared of [false, true])
    for (const preamble of ["\r\n", "This is a preamble (RFC 2046 §5.1.1).\r\n"])
      test(`stores the file of a multipart body with a preamble ${JSON.stringify(preamble)} before its first boundary (200); body ${declared ? "held in memory (Content-Length)" : "spooled (no Content-Length)"}`, async () => {
        const u = newUser();
        const ct = binaryNotUtf8(2000);
        const m = makeManifest({ owner: u.address, ciphertext: ct });
        const boundary = "PrE";
        const body = Buffer.concat([
          Buffer.from(
            `${preamble}--${boundary}\r\nContent-Disposition: form-data; name="manifest"\r\n\r\n${JSON.stringify(m)}\r\n`,
          ),
          Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="ciphertext"\r\n\r\n`),
          ct,
          Buffer.from(`\r\n--${boundary}--\r\n`),
        ]);
        const headers: Record<string, string> = {
          authorization: authAt(t, u),
          "content-type": `multipart/form-data; boundary=${boundary}`,
        };
        if (declared) headers["content-length"] = String(body.byteLength);
        expectSuccess(await t.json("/upload", { method: "POST", headers, body }), UPLOAD_RESULT_KEYS);
        expect((await bytesOf(u, m)).equals(ct)).toBe(true);
      });

  test("leaves no spool file behind after many rejected bodies cut or refused mid-ciphertext (400)", async () => {
    const u = newUser();
    const boundary = "cut";
    for (let i = 0; i < 40; i++) {
      const ct = binaryNotUtf8(4000);
      const m = makeManifest({ owner: u.address, ciphertext: ct });
      const manifest = i % 2 ? m : { ...m, signature: new Array(64).fill(1) };
      const body = Buffer.concat([
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="manifest"\r\n\r\n${JSON.stringify(manifest)}\r\n`,
        ),
        Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="ciphertext"\r\n\r\n`),
        ct.subarray(0, 1000 + i * 50),
      ]);
      const r = await t.json("/upload", {
        method: "POST",
        headers: { authorization: authAt(t, u), "content-type": `multipart/form-data; boundary=${boundary}` },
        body,
      });
      expectError(r, 400, "invalid_manifest");
    }
    await Bun.sleep(100);
    expect(filesUnder(t.config.dataDir)).toEqual([]);
  });

  test("returns 409 with the Conflict envelope for a new file over an existing one", async () => {
    const u = newUser();
    const a = binaryNotUtf8(500);
    const ma = makeManifest({ owner: u.address, ciphertext: a });
    const ra = expectSuccess(await uploadSingle(t, authAt(t, u), ma, a), UPLOAD_RESULT_KEYS);
    const b = binaryNotUtf8(600);
    const before = await snapshot(t);
    const c = expectConflict(
      await uploadSingle(t, authAt(t, u), makeManifest({ owner: u.address, ciphertext: b }), b),
    );
    expect([c.current_revision_id, c.current_revision_seq]).toEqual([ra.revision_id, 1]);
    expect(await snapshot(t)).toEqual(before);
  });

  test("returns 400 stale_sequence for a revision_seq that does not grow", async () => {
    const u = newUser();
    const a = binaryNotUtf8(500);
    const ra = expectSuccess(
      await uploadSingle(
        t,
        authAt(t, u),
        makeManifest({ owner: u.address, ciphertext: a, revisionSeq: 3 }),
        a,
      ),
      UPLOAD_RESULT_KEYS,
    );
    const b = binaryNotUtf8(600);
    const mb = makeManifest({
      owner: u.address,
      ciphertext: b,
      revisionSeq: 3,
      baseRevisionId: ra.revision_id,
    });
    expectError(await uploadSingle(t, authAt(t, u), mb, b), 400, "stale_sequence");
  });

  test("accepts a revision (200), keeping created_at and moving updated_at", async () => {
    const u = newUser();
    const a = binaryNotUtf8(500);
    const ra = expectSuccess(
      await uploadSingle(t, authAt(t, u), makeManifest({ owner: u.address, ciphertext: a }), a),
      UPLOAD_RESULT_KEYS,
    );
    t.clock.advance(42);
    const b = binaryNotUtf8(700);
    const mb = makeManifest({
      owner: u.address,
      ciphertext: b,
      revisionSeq: 2,
      baseRevisionId: ra.revision_id,
    });
    const rb = expectSuccess(await uploadSingle(t, authAt(t, u), mb, b), UPLOAD_RESULT_KEYS);
    expect([rb.created_at, rb.updated_at]).toEqual([ra.created_at, ra.updated_at + 42]);
    expect((await bytesOf(u, mb)).equals(b)).toBe(true);
  });
});

describe("names longer than a PostgreSQL index entry holds", () => {
  // SQLite keeps any name within the 4096-character bound; PostgreSQL's b-tree entries hold at
  // most 2,704 bytes, so a longer file name or directory is the client's 400 there, never a
  // 500 database_error a client would retry forever (src/db/postgres/store.ts).
  // Random text: PostgreSQL compresses a long index entry, so a repeated letter would still fit.
  const randomText = (n: number, from: number, span: number) =>
    String.fromCodePoint(...Array.from({ length: n }, () => from + Math.floor(Math.random() * span)));
  for (const [what, path] of [
    ["file name of 3,000 bytes", `long/${randomText(3000, 0x61, 26)}.bin`],
    ["directory of 2,790 bytes (CJK)", `${randomText(930, 0x4e00, 0x5000)}/x.bin`],
  ] as const) {
    test(`a ${what}: ${testDatabase === "postgres" ? "400 invalid_manifest, nothing stored" : "stored"}`, async () => {
      const u = newUser();
      const ct = randomCiphertext(100);
      const m = makeManifest({ owner: u.address, ciphertext: ct, path });
      const before = await snapshot(t);
      const r = await uploadSingle(t, authAt(t, u), m, ct);
      if (testDatabase === "postgres") {
        expectError(r, 400, "invalid_manifest");
        expect(await snapshot(t)).toEqual(before);
      } else {
        expectSuccess(r, UPLOAD_RESULT_KEYS);
        expect(await bytesOf(u, m)).toEqual(ct);
      }
    });
  }
});

describe("a single-shot file and a finalized session file are indistinguishable", () => {
  test("get_state entries have the same fields and values, downloads and headers match", async () => {
    const u = newUser();
    const ct = binaryNotUtf8(3000);
    const salted = new Array(32).fill(9);
    const enc = [1, 2, 3];
    const common = { fileName: "same.txt", sizeBytes: 2952 };
    const single = makeManifest({ owner: u.address, ciphertext: ct, path: "a/same.txt", ...common });
    Object.assign(single, { salted_hash: salted, encrypted_path: enc });
    const rs = expectSuccess(await uploadSingle(t, authAt(t, u), single, ct), UPLOAD_RESULT_KEYS);
    // One chunk, so the session blob has the same layout as the single-shot one.
    const { result: rf, session } = await uploadViaSession(t, u, ct, {
      path: "b/same.txt",
      chunkSize: 4096,
      ...common,
    });
    void session;
    const files = (await stateOf(t, u)).files as Record<string, unknown>[];
    expect(files).toHaveLength(2);
    for (const e of files) expect(Object.keys(e).sort()).toEqual([...ENTRY_KEYS, "uploaded_by"].sort());
    const bySingle = files.find((e) => JSON.stringify(e.revision_id) === JSON.stringify(rs.revision_id))!;
    const bySession = files.find((e) => JSON.stringify(e.revision_id) === JSON.stringify(rf.revision_id))!;
    const neutral = (e: Record<string, unknown>) => {
      const { path_hash, revision_id, salted_hash, encrypted_path, relative_path, ...rest } = e;
      return rest;
    };
    expect(neutral(bySession)).toEqual(neutral(bySingle));
    expect(bySingle.store_hash).toBe(blake3Hex(ct));
    expect(bySingle.arion_hash).toBe(blake3Hex(ct));
    expect(bySingle.uploaded_by).toBe(u.address);

    const dl = async (m: Record<string, unknown>, range?: string) => {
      const r = await download(t, authAt(t, u), u.address, FOLDER, fileIdOf(m), range);
      const h: Record<string, string> = {};
      r.headers.forEach((v, k) => {
        if (k !== "x-revision-id" && k !== "etag" && k !== "x-request-id") h[k] = v;
      });
      return { status: r.status, h, body: Buffer.from(await r.arrayBuffer()) };
    };
    const a = await dl(single);
    const b = await dl(session.manifest);
    expect(b.h).toEqual(a.h);
    expect(b.body.equals(a.body)).toBe(true);
    const ar = await dl(single, "bytes=100-199");
    const br = await dl(session.manifest, "bytes=100-199");
    expect([br.status, br.h]).toEqual([ar.status, ar.h]);
    expect(br.body.equals(ar.body)).toBe(true);
  });

  test("a session revision over a single-shot file and a single-shot revision over a session file both work", async () => {
    const u = newUser();
    const v1 = binaryNotUtf8(800);
    const m1 = makeManifest({ owner: u.address, ciphertext: v1, path: "x.bin" });
    const r1 = expectSuccess(await uploadSingle(t, authAt(t, u), m1, v1), UPLOAD_RESULT_KEYS);
    const v2 = binaryNotUtf8(5000);
    const { result: r2 } = await uploadViaSession(t, u, v2, {
      path: "x.bin",
      chunkSize: 1024,
      revisionSeq: 2,
      baseRevisionId: r1.revision_id,
    });
    const v3 = binaryNotUtf8(900);
    const m3 = makeManifest({
      owner: u.address,
      ciphertext: v3,
      path: "x.bin",
      revisionSeq: 3,
      baseRevisionId: r2.revision_id,
    });
    expectSuccess(await uploadSingle(t, authAt(t, u), m3, v3), UPLOAD_RESULT_KEYS);
    expect((await bytesOf(u, m1)).equals(v3)).toBe(true);
    const [e] = (await stateOf(t, u)).files;
    expect(e.revision_seq).toBe(3);
  });
});

describe("how /upload stores its blob", () => {
  test("asks the store for a durable write of a fresh key (one put, no persist call afterwards), 200", async () => {
    const puts: { key: string; opts: PutOptions | undefined }[] = [];
    let persisted = 0;
    const app = makeTestApp({}, (inner) =>
      Object.assign(Object.create(inner) as BlobStore, {
        put: (key: string, body: ReadableStream<Uint8Array>, length: number, opts?: PutOptions) => {
          puts.push({ key, opts });
          return inner.put(key, body, length, opts);
        },
        persist: async (_keys: string[]) => {
          persisted++;
        },
      }),
    );
    try {
      const u = newUser();
      const ct = binaryNotUtf8(3000);
      const m = makeManifest({ owner: u.address, ciphertext: ct });
      expectSuccess(await uploadSingle(app, authAt(app, u), m, ct, true), UPLOAD_RESULT_KEYS);
      expect(puts).toHaveLength(1);
      expect(puts[0]?.opts).toMatchObject({ durable: true, fresh: true });
      expect(persisted).toBe(0);
    } finally {
      await app.close();
    }
  });
});

describe("the one-object blob of /upload (src/storage/layout.ts)", () => {
  test("stores the ciphertext as the one object b/<xx>/o<id>, no directory of its own, and serves it back (200)", async () => {
    const u = newUser();
    const ct = binaryNotUtf8(3000);
    const m = makeManifest({ owner: u.address, ciphertext: ct });
    expectSuccess(await uploadSingle(t, authAt(t, u), m, ct), UPLOAD_RESULT_KEYS);
    const [row] = (await rowsOf(t, "files")) as {
      blob_id: string;
      chunk_count: number;
      chunk_gens: string;
    }[];
    expect(row?.blob_id).toMatch(/^o[0-9a-f]{32}$/);
    expect([row?.chunk_count, row?.chunk_gens]).toEqual([1, '[""]']);
    const key = `b/${row?.blob_id.slice(1, 3)}/${row?.blob_id}`;
    expect(await t.blobs.list("")).toEqual([key]);
    if (t.blobs.kind === "disk") expect(statSync(join(t.config.blobDir, key)).isFile()).toBe(true);
    expect((await bytesOf(u, m)).equals(ct)).toBe(true);
  });

  test("a replaced one-object blob and a replaced blob of the directory layout are both deleted after the grace period, then an unregistered folder's", async () => {
    await t.close();
    t = makeTestApp({ ESYNC_BLOB_GRACE_SECONDS: "0" });
    const u = newUser();
    const folder = { ss58_address: u.address, folder_hash: FOLDER };
    expect(
      (await t.json("/register_folder", jsonInit("POST", authAt(t, u), { ...folder, label: "x" }))).status,
    ).toBe(200);
    // The directory layout: a session's blob, which is also how /upload stored files before.
    const v1 = binaryNotUtf8(700);
    const { result: r1 } = await uploadViaSession(t, u, v1, { path: "x.bin", chunkSize: 1024 });
    const v2 = binaryNotUtf8(900);
    const m2 = makeManifest({
      owner: u.address,
      ciphertext: v2,
      path: "x.bin",
      revisionSeq: 2,
      baseRevisionId: r1.revision_id,
    });
    const r2 = expectSuccess(await uploadSingle(t, authAt(t, u), m2, v2), UPLOAD_RESULT_KEYS);
    const v3 = binaryNotUtf8(1100);
    const m3 = makeManifest({
      owner: u.address,
      ciphertext: v3,
      path: "x.bin",
      revisionSeq: 3,
      baseRevisionId: r2.revision_id,
    });
    expectSuccess(await uploadSingle(t, authAt(t, u), m3, v3), UPLOAD_RESULT_KEYS);
    expect(await t.blobs.list("")).toHaveLength(3);
    await t.sweeper.runOnce();
    const [row] = (await rowsOf(t, "files")) as { blob_id: string }[];
    expect(await t.blobs.list("")).toEqual([`b/${row?.blob_id.slice(1, 3)}/${row?.blob_id}`]);
    expect((await bytesOf(u, m3)).equals(v3)).toBe(true);
    expect((await t.json("/unregister_folder", jsonInit("DELETE", authAt(t, u), folder))).status).toBe(200);
    await t.sweeper.runOnce();
    expect(await t.blobs.list("")).toEqual([]);
    expect(await rowsOf(t, "blob_deletions")).toEqual([]);
  });
});
