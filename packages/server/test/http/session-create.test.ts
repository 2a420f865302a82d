/**
 * `POST /upload/session` (docs/protocol.md#upload-sessions, #manifest, #open-rules): manifest validation of every field,
 * the Ed25519 signature over the exact sentence, chunk layout consistency, ownership and the
 * per-user session limit (429 `session_limit` with Retry-After).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import { ciphertextSizeFor } from "@esync/protocol/framing.ts";
import { signedSentence } from "@esync/protocol/manifest.ts";
import { ed25519PairFromSeed, ed25519Sign } from "@polkadot/util-crypto";
import { makeTestApp, type TestApp } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext } from "../support/fixtures.ts";
import {
  abort,
  authAt,
  createSessionRaw,
  expectError,
  expectSuccess,
  finalize,
  openSession,
  putChunks,
  STATUS_KEYS,
  snapshot,
  status,
} from "./helpers.ts";

let t: TestApp;
beforeEach(() => {
  t = makeTestApp({ ESYNC_MAX_SESSIONS_PER_USER: "3", ESYNC_SESSION_TTL_SECONDS: "3600" });
});
afterEach(() => t.close());

const MiB = 1024 * 1024;

describe("opening a session", () => {
  test("returns 200 with exactly session_id and expires_at = now + TTL, and status shows receiving with no chunks", async () => {
    const u = newUser();
    const ct = randomCiphertext(2500);
    const s = await openSession(t, u, ct, { chunkSize: 1000 });
    expect(typeof s.sessionId).toBe("string");
    expect(s.sessionId.length).toBeGreaterThanOrEqual(16);
    expect(s.expiresAt).toBe(t.clock.now() + 3600);
    const st = expectSuccess(await status(t, s.auth, s.sessionId), STATUS_KEYS);
    expect(st).toEqual({
      session_id: s.sessionId,
      state: "receiving",
      total_chunks: 3,
      chunks_received: [],
      expires_at: t.clock.now() + 3600,
      ciphertext_hash: blake3Hex(ct),
    });
  });

  test("gives every session a distinct id", async () => {
    const u = newUser();
    const ct = randomCiphertext(100);
    const a = await openSession(t, u, ct, { chunkSize: 100 });
    const b = await openSession(t, u, ct, { chunkSize: 100 });
    expect(a.sessionId).not.toBe(b.sessionId);
  });

  test("accepts the manifest alias user_id for ss58_address (200)", async () => {
    const u = newUser();
    const ct = randomCiphertext(100);
    const { ss58_address, ...rest } = makeManifest({ owner: u.address, ciphertext: ct });
    const r = await createSessionRaw(t, authAt(t, u), {
      manifest: { ...rest, user_id: ss58_address },
      chunk_count: 1,
      chunk_size: 100,
      ciphertext_size: 100,
    });
    expectSuccess(r, ["session_id", "expires_at"]);
  });

  test("ignores unknown manifest keys and accepts optional fields left out (200)", async () => {
    const u = newUser();
    const ct = randomCiphertext(100);
    const m = makeManifest({ owner: u.address, ciphertext: ct });
    delete m.encrypted_path;
    delete m.file_name;
    delete m.relative_path;
    const r = await createSessionRaw(t, authAt(t, u), {
      manifest: { ...m, source: "python-sdk", some_future_field: { x: 1 } },
      chunk_count: 1,
      chunk_size: 100,
      ciphertext_size: 100,
    });
    expectSuccess(r, ["session_id", "expires_at"]);
  });

  test("accepts chunk_size of exactly 16 MiB (200)", async () => {
    const u = newUser();
    const m = makeManifest({
      owner: u.address,
      ciphertext: new Uint8Array(1),
      ciphertextHash: "ab".repeat(32),
      sizeBytes: 16 * MiB,
    });
    const r = await createSessionRaw(t, authAt(t, u), {
      manifest: m,
      chunk_count: 2,
      chunk_size: 16 * MiB,
      ciphertext_size: ciphertextSizeFor(16 * MiB),
    });
    expectSuccess(r, ["session_id", "expires_at"]);
  });

  test("returns 403 forbidden when manifest.ss58_address is not the token's address, creating nothing", async () => {
    const a = newUser();
    const b = newUser();
    const ct = randomCiphertext(100);
    const before = await snapshot(t);
    const r = await createSessionRaw(t, authAt(t, a), {
      manifest: makeManifest({ owner: b.address, ciphertext: ct }),
      chunk_count: 1,
      chunk_size: 100,
      ciphertext_size: 100,
    });
    expectError(r, 403, "forbidden");
    expect(await snapshot(t)).toEqual(before);
  });
});

describe("manifest validation: 400 invalid_manifest naming the field, nothing created", () => {
  const cases: [string, string, unknown][] = [
    ["ss58_address", "missing (and no user_id)", undefined],
    ["ss58_address", "not an SS58 address", "hello"],
    ["ss58_address", "a number", 42],
    ["folder_hash", "missing", undefined],
    ["folder_hash", "15 hex characters", "37a8eec1ce19687"],
    ["folder_hash", "upper case", "37A8EEC1CE19687D"],
    ["ciphertext_hash", "63 hex characters", "a".repeat(63)],
    ["ciphertext_hash", "upper case", "A".repeat(64)],
    ["ciphertext_hash", "not a string", 7],
    ["size_bytes", "negative", -1],
    ["size_bytes", "fractional", 1.5],
    ["size_bytes", "a numeric string", "100"],
    ["size_bytes", "beyond 2^53", 2 ** 64],
    ["timestamp", "a string", "now"],
    ["timestamp", "fractional", 1.25],
    ["signature", "63 bytes", new Array(63).fill(1)],
    ["signature", "a value over 255", [...new Array(63).fill(1), 256]],
    ["signature", "a hex string", "ab".repeat(64)],
    ["signing_key", "31 bytes", new Array(31).fill(1)],
    ["signing_key", "missing", undefined],
    ["path_hash", "33 bytes", new Array(33).fill(1)],
    ["path_hash", "negative bytes", new Array(32).fill(-1)],
    ["salted_hash", "31 bytes", new Array(31).fill(0)],
    ["salted_hash", "missing", undefined],
    ["revision_seq", "negative", -3],
    ["revision_seq", "a string", "1"],
    ["base_revision_id", "31 bytes", new Array(31).fill(0)],
    ["base_revision_id", "a hex string", "00".repeat(32)],
    ["encrypted_path", "not an array", "abc"],
    ["encrypted_path", "over 8192 bytes", new Array(8193).fill(0)],
    ["file_name", "a number", 12],
    ["file_name", "over 4096 characters", "x".repeat(4097)],
    ["relative_path", "an object", { p: "a" }],
    ["source", "a number", 1],
  ];
  for (const [field, what, value] of cases) {
    test(`returns 400 invalid_manifest for ${field} ${what}`, async () => {
      const u = newUser();
      const ct = randomCiphertext(100);
      const m = makeManifest({ owner: u.address, ciphertext: ct });
      if (value === undefined) delete m[field];
      else m[field] = value;
      const before = await snapshot(t);
      const r = await createSessionRaw(t, authAt(t, u), {
        manifest: m,
        chunk_count: 1,
        chunk_size: 100,
        ciphertext_size: 100,
      });
      expectError(r, 400, "invalid_manifest");
      expect(r.body.Error.message).toContain(field);
      expect(await snapshot(t)).toEqual(before);
    });
  }

  test("returns 400 invalid_manifest when the manifest is missing", async () => {
    const u = newUser();
    expectError(
      await createSessionRaw(t, authAt(t, u), { chunk_count: 1, chunk_size: 1, ciphertext_size: 1 }),
      400,
      "invalid_manifest",
    );
  });

  test("returns 400 invalid_manifest when the manifest is an array", async () => {
    const u = newUser();
    const r = await createSessionRaw(t, authAt(t, u), {
      manifest: [],
      chunk_count: 1,
      chunk_size: 1,
      ciphertext_size: 1,
    });
    expectError(r, 400, "invalid_manifest");
  });
});

describe("manifest signature: Ed25519 over the exact sentence", () => {
  const key = ed25519PairFromSeed(new Uint8Array(32).fill(21));
  const signed = (m: Record<string, unknown>, sentence: string) => ({
    ...m,
    signature: Array.from(ed25519Sign(new TextEncoder().encode(sentence), key)),
    signing_key: Array.from(key.publicKey),
  });

  async function create(manifest: unknown, auth: string) {
    return createSessionRaw(t, auth, { manifest, chunk_count: 1, chunk_size: 100, ciphertext_size: 100 });
  }

  test("accepts a signature over the sentence with its original spelling (200)", async () => {
    const u = newUser();
    const ct = randomCiphertext(100);
    const m = makeManifest({ owner: u.address, ciphertext: ct });
    const r = await create(signed(m, signedSentence(blake3Hex(ct))), authAt(t, u));
    expectSuccess(r, ["session_id", "expires_at"]);
    expect(signedSentence("H")).toBe(
      "I here by declare that the file with hash H that i am uploading is in par with the ToS of the provider",
    );
  });

  for (const [what, sentence] of [
    [
      "with the spelling corrected",
      (h: string) =>
        `I hereby declare that the file with hash ${h} that I am uploading is in par with the ToS of the provider`,
    ],
    ["with a trailing period", (h: string) => `${signedSentence(h)}.`],
    ["over another ciphertext hash", () => signedSentence("b".repeat(64))],
    ["over the hash in upper case", (h: string) => signedSentence(h.toUpperCase())],
    ["over the bare hash", (h: string) => h],
  ] as const) {
    test(`returns 400 invalid_manifest for a signature ${what}`, async () => {
      const u = newUser();
      const ct = randomCiphertext(100);
      const m = makeManifest({ owner: u.address, ciphertext: ct });
      const before = await snapshot(t);
      expectError(await create(signed(m, sentence(blake3Hex(ct))), authAt(t, u)), 400, "invalid_manifest");
      expect(await snapshot(t)).toEqual(before);
    });
  }

  test("returns 400 invalid_manifest when signing_key is another key than the one that signed", async () => {
    const u = newUser();
    const ct = randomCiphertext(100);
    const m = makeManifest({ owner: u.address, ciphertext: ct });
    const other = ed25519PairFromSeed(new Uint8Array(32).fill(99));
    expectError(
      await create({ ...m, signing_key: Array.from(other.publicKey) }, authAt(t, u)),
      400,
      "invalid_manifest",
    );
  });

  test("returns 400 invalid_manifest for an all-zero signature", async () => {
    const u = newUser();
    const ct = randomCiphertext(100);
    const m = makeManifest({ owner: u.address, ciphertext: ct });
    expectError(
      await create({ ...m, signature: new Array(64).fill(0) }, authAt(t, u)),
      400,
      "invalid_manifest",
    );
  });
});

describe("chunk layout consistency: 400 invalid_manifest, nothing created", () => {
  const cases: [string, Record<string, unknown>][] = [
    [
      "chunk_count above ceil(ciphertext_size / chunk_size)",
      { chunk_count: 4, chunk_size: 1000, ciphertext_size: 2500 },
    ],
    [
      "chunk_count below ceil(ciphertext_size / chunk_size)",
      { chunk_count: 2, chunk_size: 1000, ciphertext_size: 2500 },
    ],
    ["chunk_count 0", { chunk_count: 0, chunk_size: 1000, ciphertext_size: 2500 }],
    ["chunk_size 0", { chunk_count: 3, chunk_size: 0, ciphertext_size: 2500 }],
    ["chunk_size over 16 MiB", { chunk_count: 1, chunk_size: 16 * MiB + 1, ciphertext_size: 16 * MiB + 1 }],
    ["ciphertext_size 0", { chunk_count: 1, chunk_size: 1000, ciphertext_size: 0 }],
    ["negative ciphertext_size", { chunk_count: 1, chunk_size: 1000, ciphertext_size: -5 }],
    ["fractional chunk_size", { chunk_count: 3, chunk_size: 1000.5, ciphertext_size: 2500 }],
    ["chunk_count as a string", { chunk_count: "3", chunk_size: 1000, ciphertext_size: 2500 }],
    ["chunk_size missing", { chunk_count: 3, ciphertext_size: 2500 }],
    ["ciphertext_size missing", { chunk_count: 3, chunk_size: 1000 }],
    ["chunk_count above u32", { chunk_count: 2 ** 32, chunk_size: 1, ciphertext_size: 2 ** 32 }],
    ["a huge ciphertext_size (1e300)", { chunk_count: 1, chunk_size: 1000, ciphertext_size: 1e300 }],
    ["ciphertext_size 2^64", { chunk_count: 1, chunk_size: 1000, ciphertext_size: 2 ** 64 }],
    ["chunk_count null", { chunk_count: null, chunk_size: 1000, ciphertext_size: 2500 }],
  ];
  for (const [what, layout] of cases) {
    test(`returns 400 invalid_manifest for ${what}`, async () => {
      const u = newUser();
      const m = makeManifest({
        owner: u.address,
        ciphertext: new Uint8Array(1),
        ciphertextHash: "cd".repeat(32),
      });
      const before = await snapshot(t);
      expectError(
        await createSessionRaw(t, authAt(t, u), { manifest: m, ...layout }),
        400,
        "invalid_manifest",
      );
      expect(await snapshot(t)).toEqual(before);
    });
  }

  test("returns 400 invalid_manifest for a body that is not JSON", async () => {
    const u = newUser();
    expectError(await createSessionRaw(t, authAt(t, u), '{"manifest": '), 400, "invalid_manifest");
  });

  test("returns 413 payload_too_large for a JSON body over 1 MiB", async () => {
    const u = newUser();
    const m = makeManifest({ owner: u.address, ciphertext: new Uint8Array(1) });
    const body = JSON.stringify({
      manifest: m,
      chunk_count: 1,
      chunk_size: 1,
      ciphertext_size: 1,
      pad: "x".repeat(MiB),
    });
    expectError(await createSessionRaw(t, authAt(t, u), body), 413, "payload_too_large");
  });
});

describe("session limit per user", () => {
  async function openOne(u: ReturnType<typeof newUser>) {
    return openSession(t, u, randomCiphertext(100), { chunkSize: 100 });
  }

  test("returns 429 session_limit with Retry-After once the user has the maximum live sessions", async () => {
    const u = newUser();
    for (let i = 0; i < 3; i++) await openOne(u);
    const ct = randomCiphertext(100);
    const before = await snapshot(t);
    const r = await createSessionRaw(t, authAt(t, u), {
      manifest: makeManifest({ owner: u.address, ciphertext: ct }),
      chunk_count: 1,
      chunk_size: 100,
      ciphertext_size: 100,
    });
    expectError(r, 429, "session_limit");
    const retry = Number(r.headers.get("retry-after"));
    expect(Number.isInteger(retry)).toBe(true);
    expect(retry).toBeGreaterThan(0);
    expect(retry).toBeLessThanOrEqual(3600);
    expect(await snapshot(t)).toEqual(before);
  });

  test("counts sessions per user: another user still opens one (200)", async () => {
    const a = newUser();
    const b = newUser();
    for (let i = 0; i < 3; i++) await openOne(a);
    await openOne(b);
  });

  test("frees a slot when a session is deleted", async () => {
    const u = newUser();
    const first = await openOne(u);
    await openOne(u);
    await openOne(u);
    expect((await abort(t, first.auth, first.sessionId)).status).toBe(200);
    await openOne(u);
  });

  test("frees a slot when a session is finalized", async () => {
    const u = newUser();
    const ct = randomCiphertext(100);
    const s = await openSession(t, u, ct, { chunkSize: 100, path: "done.bin" });
    await openOne(u);
    await openOne(u);
    await putChunks(t, s, ct);
    expect((await finalize(t, s.auth, s.sessionId)).status).toBe(200);
    await openOne(u);
  });

  test("frees every slot when the sessions expire", async () => {
    const u = newUser();
    for (let i = 0; i < 3; i++) await openOne(u);
    t.clock.advance(3600);
    await openOne(u);
  });
});
