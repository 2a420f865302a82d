/**
 * Authentication (docs/protocol.md#authentication): wallet-signed `sig1.` tokens, issued API tokens,
 * insecure mode, 401 vs 403 on every endpoint, and the order of checks 401 → 400 → 403 → 404 → 409.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { u8aToHex } from "@polkadot/util";
import {
  blake2AsU8a,
  ed25519PairFromSeed,
  ed25519Sign,
  encodeAddress,
  secp256k1PairFromSeed,
  secp256k1Sign,
  sr25519PairFromSeed,
  sr25519Sign,
} from "@polkadot/util-crypto";
import { jsonInit, makeTestApp, type TestApp } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext, type TestUser } from "../support/fixtures.ts";
import {
  authAt,
  createSessionRaw,
  expectConflict,
  expectError,
  expectSuccess,
  FOLDER,
  finalize,
  openSession,
  putChunks,
  sessionCall,
  snapshot,
  status,
} from "./helpers.ts";

let t: TestApp;
beforeEach(() => {
  t = makeTestApp();
});
afterEach(() => t.close());

const enc = (s: string) => new TextEncoder().encode(s);

/** A `sig1.` token over `hcfs-auth:<address>:<exp>` signed by `sign`. */
function sig1(address: string, exp: number, sign: (msg: Uint8Array) => Uint8Array, prefix = ""): string {
  return `sig1.${address}.${exp}.${prefix}${u8aToHex(sign(enc(`hcfs-auth:${address}:${exp}`)), -1, false)}`;
}

function listFolders(auth: string | null, address: string) {
  return sessionCall(t, auth, "GET", `/list_folders/${address}`);
}

function bearer(token: string) {
  return `Bearer ${token}`;
}

/** Every endpoint with a request that would otherwise be valid in shape. */
function everyEndpoint(u: TestUser): [string, string, RequestInit][] {
  const fid = "ab".repeat(32);
  const json = (method: string, body: unknown): RequestInit => jsonInit(method, null, body);
  return [
    ["POST", "/register_folder", json("POST", { ss58_address: u.address, folder_hash: FOLDER, label: "x" })],
    ["GET", `/list_folders/${u.address}`, { method: "GET" }],
    ["DELETE", "/unregister_folder", json("DELETE", { ss58_address: u.address, folder_hash: FOLDER })],
    [
      "POST",
      "/upload/session",
      json("POST", { manifest: {}, chunk_count: 1, chunk_size: 1, ciphertext_size: 1 }),
    ],
    ["PUT", "/upload/session/abc/chunk/0", { method: "PUT", body: new Uint8Array(1) }],
    ["GET", "/upload/session/abc/status", { method: "GET" }],
    ["POST", "/upload/session/abc/finalize", { method: "POST" }],
    ["DELETE", "/upload/session/abc", { method: "DELETE" }],
    [
      "POST",
      "/upload",
      { method: "POST", headers: { "content-type": "multipart/form-data; boundary=x" }, body: "--x--" },
    ],
    ["GET", `/get_state/${u.address}/${FOLDER}`, { method: "GET" }],
    ["DELETE", `/delete/${u.address}/${FOLDER}/${fid}`, { method: "DELETE" }],
    ["GET", `/download/${u.address}/${FOLDER}/${fid}`, { method: "GET" }],
  ];
}

describe("401 unauthorized on every endpoint", () => {
  const cases: [string, (u: TestUser) => Record<string, string>][] = [
    ["a missing Authorization header", () => ({})],
    ["a non-Bearer scheme", (u) => ({ authorization: `Basic ${btoa(`${u.address}:x`)}` })],
    ["an empty Bearer token", () => ({ authorization: "Bearer " })],
    ["an unknown opaque token", () => ({ authorization: "Bearer esk_not-a-real-token-at-all" })],
    ["the bare address while insecure mode is off", (u) => ({ authorization: bearer(u.address) })],
  ];
  for (const [what, header] of cases) {
    test(`returns 401 unauthorized for ${what}, changing nothing`, async () => {
      const u = newUser();
      const before = await snapshot(t);
      for (const [method, path, init] of everyEndpoint(u)) {
        const headers = { ...(init.headers as Record<string, string> | undefined), ...header(u) };
        const r = await t.json(path, { ...init, headers });
        if (r.status !== 401) throw new Error(`${method} ${path}: expected 401, got ${r.status}`);
        expectError(r, 401, "unauthorized");
      }
      expect(await snapshot(t)).toEqual(before);
    });
  }

  test("answers /health without any token with 200", async () => {
    const r = await t.json("/health");
    expect(r.status).toBe(200);
  });
});

describe("wallet-signed sig1 tokens", () => {
  test("accepts an sr25519 token and resolves it to its address (200)", async () => {
    const u = newUser();
    const r = await listFolders(authAt(t, u, 60), u.address);
    expect(expectSuccess(r, ["base_address", "folders"]).base_address).toBe(u.address);
  });

  test("accepts an ed25519 wallet token (200)", async () => {
    const pair = ed25519PairFromSeed(new Uint8Array(32).fill(3));
    const address = encodeAddress(pair.publicKey, 42);
    const token = sig1(address, t.clock.now() + 600, (m) => ed25519Sign(m, pair));
    expectSuccess(await listFolders(bearer(token), address), ["base_address", "folders"]);
  });

  test("accepts an ecdsa wallet token (200)", async () => {
    const pair = secp256k1PairFromSeed(new Uint8Array(32).fill(9));
    const address = encodeAddress(blake2AsU8a(pair.publicKey), 42);
    const token = sig1(address, t.clock.now() + 600, (m) => secp256k1Sign(m, pair, "blake2"));
    expectSuccess(await listFolders(bearer(token), address), ["base_address", "folders"]);
  });

  test("accepts a signature written with a 0x prefix (200)", async () => {
    const pair = sr25519PairFromSeed(new Uint8Array(32).fill(5));
    const address = encodeAddress(pair.publicKey, 42);
    const token = sig1(address, t.clock.now() + 600, (m) => sr25519Sign(m, pair), "0x");
    expectSuccess(await listFolders(bearer(token), address), ["base_address", "folders"]);
  });

  test("accepts a token that lives exactly the maximum 86400 s (200)", async () => {
    const u = newUser();
    expectSuccess(await listFolders(bearer(u.token(t.clock.now(), 86400)), u.address), [
      "base_address",
      "folders",
    ]);
  });

  test("returns 401 for a token claiming more than 86400 s of life", async () => {
    const u = newUser();
    expectError(await listFolders(bearer(u.token(t.clock.now(), 86401)), u.address), 401, "unauthorized");
  });

  test("returns 401 for a token whose expiry is now (expired at the boundary)", async () => {
    const u = newUser();
    expectError(await listFolders(bearer(u.token(t.clock.now(), 0)), u.address), 401, "unauthorized");
  });

  test("returns 401 for a token that expired a second ago", async () => {
    const u = newUser();
    expectError(await listFolders(bearer(u.token(t.clock.now(), -1)), u.address), 401, "unauthorized");
  });

  test("returns 401 once a token that was accepted (and cached) expires", async () => {
    const u = newUser();
    const auth = bearer(u.token(t.clock.now(), 100));
    expect((await listFolders(auth, u.address)).status).toBe(200);
    t.clock.advance(100);
    expectError(await listFolders(auth, u.address), 401, "unauthorized");
  });

  test("returns 401 for a signature made by another key for the address", async () => {
    const u = newUser();
    const mallory = sr25519PairFromSeed(new Uint8Array(32).fill(11));
    const token = sig1(u.address, t.clock.now() + 600, (m) => sr25519Sign(m, mallory));
    expectError(await listFolders(bearer(token), u.address), 401, "unauthorized");
  });

  test("returns 401 when the expiry was changed after signing", async () => {
    const u = newUser();
    const [p, a, exp, sig] = u.token(t.clock.now(), 600).split(".");
    const forged = [p, a, String(Number(exp) + 1), sig].join(".");
    expectError(await listFolders(bearer(forged), u.address), 401, "unauthorized");
  });

  test("returns 401 for a valid token whose expires_unix is written with a leading zero", async () => {
    const u = newUser();
    const [p, a, exp, sig] = u.token(t.clock.now(), 600).split(".");
    expect((await listFolders(bearer([p, a, exp, sig].join(".")), u.address)).status).toBe(200);
    const padded = [p, a, `0${exp}`, sig].join(".");
    expectError(await listFolders(bearer(padded), u.address), 401, "unauthorized");
  });

  test("returns 401 when the signature has one flipped bit", async () => {
    const u = newUser();
    const tok = u.token(t.clock.now(), 600);
    const last = tok.at(-1)!;
    const flipped = tok.slice(0, -1) + (last === "0" ? "1" : "0");
    expectError(await listFolders(bearer(flipped), u.address), 401, "unauthorized");
  });

  const malformed: [string, (u: TestUser, now: number) => string][] = [
    ["three parts", (u, now) => `sig1.${u.address}.${now + 60}`],
    ["five parts", (u, now) => `${u.token(now, 60)}.00`],
    ["a wrong version prefix", (u, now) => u.token(now, 60).replace(/^sig1/, "sig2")],
    [
      "an address with a bad checksum",
      (u, now) =>
        u
          .token(now, 60)
          .replace(u.address, `${u.address.slice(0, -1)}${u.address.endsWith("a") ? "b" : "a"}`),
    ],
    ["a non-numeric expiry", (u) => `sig1.${u.address}.soon.${"ab".repeat(64)}`],
    ["a non-hex signature", (u, now) => `sig1.${u.address}.${now + 60}.${"zz".repeat(64)}`],
    ["a too short signature", (u, now) => `sig1.${u.address}.${now + 60}.${"ab".repeat(10)}`],
    ["an odd-length signature", (u, now) => `sig1.${u.address}.${now + 60}.${"a".repeat(129)}`],
  ];
  for (const [what, make] of malformed) {
    test(`returns 401 for a sig1 token with ${what}`, async () => {
      const u = newUser();
      expectError(await listFolders(bearer(make(u, t.clock.now())), u.address), 401, "unauthorized");
    });
  }

  test("returns 403 forbidden for a valid token of another address", async () => {
    const a = newUser();
    const b = newUser();
    expectError(await listFolders(authAt(t, a), b.address), 403, "forbidden");
  });
});

describe("issued API tokens", () => {
  test("resolve to their owner (200) and are stored only as a hash", async () => {
    const u = newUser();
    const issued = await t.services.auth.issue(u.address, "ci", null);
    expectSuccess(await listFolders(bearer(issued.token), u.address), ["base_address", "folders"]);
    const dump = JSON.stringify((await snapshot(t)).rows.api_tokens);
    expect(dump).not.toContain(issued.token);
  });

  test("return 403 forbidden for another address", async () => {
    const a = newUser();
    const b = newUser();
    const issued = await t.services.auth.issue(a.address, null, null);
    expectError(await listFolders(bearer(issued.token), b.address), 403, "forbidden");
  });

  test("return 401 once revoked", async () => {
    const u = newUser();
    const issued = await t.services.auth.issue(u.address, null, null);
    expect((await listFolders(bearer(issued.token), u.address)).status).toBe(200);
    expect(await t.services.auth.revoke(issued.id)).toBe(true);
    expectError(await listFolders(bearer(issued.token), u.address), 401, "unauthorized");
  });

  test("return 401 once expired", async () => {
    const u = newUser();
    const issued = await t.services.auth.issue(u.address, null, 60);
    expect((await listFolders(bearer(issued.token), u.address)).status).toBe(200);
    t.clock.advance(60);
    expectError(await listFolders(bearer(issued.token), u.address), 401, "unauthorized");
  });

  test("return 401 for a token that differs by one character", async () => {
    const u = newUser();
    const issued = await t.services.auth.issue(u.address, null, null);
    const wrong = `${issued.token.slice(0, -1)}${issued.token.endsWith("A") ? "B" : "A"}`;
    expectError(await listFolders(bearer(wrong), u.address), 401, "unauthorized");
  });
});

describe("insecure mode (ESYNC_INSECURE_SS58_TOKENS)", () => {
  test("accepts the bare address as a token when on (200)", async () => {
    const ti = makeTestApp({ ESYNC_INSECURE_SS58_TOKENS: "1" });
    try {
      const u = newUser();
      const r = await ti.json(`/list_folders/${u.address}`, {
        headers: { authorization: bearer(u.address) },
      });
      expectSuccess(r, ["base_address", "folders"]);
    } finally {
      await ti.close();
    }
  });

  test("returns 403 when on and the bare address is another user's", async () => {
    const ti = makeTestApp({ ESYNC_INSECURE_SS58_TOKENS: "true" });
    try {
      const a = newUser();
      const b = newUser();
      const r = await ti.json(`/list_folders/${b.address}`, {
        headers: { authorization: bearer(a.address) },
      });
      expectError(r, 403, "forbidden");
    } finally {
      await ti.close();
    }
  });

  test("returns 401 when on and the token is neither an address nor a known token", async () => {
    const ti = makeTestApp({ ESYNC_INSECURE_SS58_TOKENS: "on" });
    try {
      const u = newUser();
      const r = await ti.json(`/list_folders/${u.address}`, { headers: { authorization: bearer("hello") } });
      expectError(r, 401, "unauthorized");
    } finally {
      await ti.close();
    }
  });

  test("still rejects an expired sig1 token when on (401)", async () => {
    const ti = makeTestApp({ ESYNC_INSECURE_SS58_TOKENS: "1" });
    try {
      const u = newUser();
      const r = await ti.json(`/list_folders/${u.address}`, {
        headers: { authorization: bearer(u.token(ti.clock.now(), -5)) },
      });
      expectError(r, 401, "unauthorized");
    } finally {
      await ti.close();
    }
  });

  test("is off by default: the bare address is 401", async () => {
    const u = newUser();
    expectError(await listFolders(bearer(u.address), u.address), 401, "unauthorized");
  });
});

describe("order of checks 401 → 400 → 403 → 404 → 409", () => {
  test("401 before 400: a garbage body without a token is 401", async () => {
    expectError(await t.json("/register_folder", jsonInit("POST", null, "{not json")), 401, "unauthorized");
    expectError(await t.json("/list_folders/..%2F..", {}), 401, "unauthorized");
  });

  test("400 before 403: a malformed path address with another user's token is 400 invalid_user_id", async () => {
    const a = newUser();
    expectError(await listFolders(authAt(t, a), "not-an-address"), 400, "invalid_user_id");
    expectError(await getState(a, "5%2F..", FOLDER), 400, "invalid_user_id");
  });

  test("400 before 403: a malformed folder_hash on /get_state for another user's address is 400", async () => {
    const a = newUser();
    const b = newUser();
    expectError(await getState(a, b.address, "XYZ"), 400, "invalid_parameter");
  });

  test("400 before 403: a malformed register body naming another user is 400 invalid_manifest", async () => {
    const a = newUser();
    const b = newUser();
    const r = await t.json(
      "/register_folder",
      jsonInit("POST", authAt(t, a), { ss58_address: b.address, folder_hash: "nothex", label: "x" }),
    );
    expectError(r, 400, "invalid_manifest");
  });

  test("400 before 403: a register body with a malformed ss58_address is 400 invalid_manifest, not 403", async () => {
    const a = newUser();
    const r = await t.json(
      "/register_folder",
      jsonInit("POST", authAt(t, a), { ss58_address: "not-an-address", folder_hash: FOLDER, label: "x" }),
    );
    expectError(r, 400, "invalid_manifest");
  });

  test("400 before 403: an invalid manifest owned by another user is 400 invalid_manifest", async () => {
    const a = newUser();
    const b = newUser();
    const ct = randomCiphertext(100);
    const manifest = { ...makeManifest({ owner: b.address, ciphertext: ct }), signature: [1, 2, 3] };
    const r = await createSessionRaw(t, authAt(t, a), {
      manifest,
      chunk_count: 1,
      chunk_size: 100,
      ciphertext_size: 100,
    });
    expectError(r, 400, "invalid_manifest");
  });

  test("400 before 403: a malformed chunk index on another user's session is 400", async () => {
    const a = newUser();
    const b = newUser();
    const ct = randomCiphertext(100);
    const s = await openSession(t, a, ct, { chunkSize: 100 });
    const r = await t.json(`/upload/session/${s.sessionId}/chunk/x1`, {
      method: "PUT",
      headers: { authorization: authAt(t, b) },
      body: ct as BodyInit,
    });
    expectError(r, 400, "invalid_manifest");
  });

  test("403 before 404: unregistering a never-registered folder of another user is 403", async () => {
    const a = newUser();
    const b = newUser();
    const r = await t.json(
      "/unregister_folder",
      jsonInit("DELETE", authAt(t, a), { ss58_address: b.address, folder_hash: FOLDER }),
    );
    expectError(r, 403, "forbidden");
  });

  test("403 before 404: deleting a missing file of another user is 403", async () => {
    const a = newUser();
    const b = newUser();
    const r = await sessionCall(
      t,
      authAt(t, a),
      "DELETE",
      `/delete/${b.address}/${FOLDER}/${"00".repeat(32)}`,
    );
    expectError(r, 403, "forbidden");
  });

  test("403 before 409: registering another user's existing folder is 403", async () => {
    const a = newUser();
    const b = newUser();
    const body = { ss58_address: b.address, folder_hash: FOLDER, label: "b" };
    expect((await t.json("/register_folder", jsonInit("POST", authAt(t, b), body))).status).toBe(200);
    expectError(await t.json("/register_folder", jsonInit("POST", authAt(t, a), body)), 403, "forbidden");
  });

  test("403 before 409: finalizing another user's finalized session is 403", async () => {
    const a = newUser();
    const b = newUser();
    const ct = randomCiphertext(300);
    const s = await openSession(t, a, ct, { chunkSize: 100 });
    await putChunks(t, s, ct);
    expect((await finalize(t, s.auth, s.sessionId)).status).toBe(200);
    expectError(await finalize(t, authAt(t, b), s.sessionId), 403, "forbidden");
    expectConflict(await finalize(t, s.auth, s.sessionId));
  });

  test("404 before 409: finalizing a deleted session is 404, not 409", async () => {
    const a = newUser();
    const ct = randomCiphertext(300);
    const s = await openSession(t, a, ct, { chunkSize: 100 });
    await putChunks(t, s, ct);
    expect((await finalize(t, s.auth, s.sessionId)).status).toBe(200);
    expect((await sessionCall(t, s.auth, "DELETE", `/upload/session/${s.sessionId}`)).status).toBe(200);
    expectError(await finalize(t, s.auth, s.sessionId), 404, "not_found");
    expectError(await status(t, s.auth, s.sessionId), 404, "not_found");
  });
});

function getState(u: TestUser, address: string, folder: string) {
  return sessionCall(t, authAt(t, u), "GET", `/get_state/${address}/${folder}`);
}
