/** Folder shares (docs/sharing.md): mint, listing, expiry, revoke by token and hash, owner wraps, anonymous meta, browse and blob. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { tokenHash } from "../../src/shares/share-rules.ts";
import { jsonInit, makeTestApp } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext } from "../support/fixtures.ts";
import { authAt, FOLDER, uploadSingle } from "./helpers.ts";
import { expectFlat } from "./share-helpers.ts";

const t = makeTestApp();
afterAll(() => t.close());

const owner = newUser();
const stranger = newUser();
const files: Record<string, Buffer> = {};

async function put(path: string): Promise<void> {
  const ct = randomCiphertext(100 + Object.keys(files).length);
  files[path] = ct;
  const r = await uploadSingle(
    t,
    authAt(t, owner),
    makeManifest({ owner: owner.address, ciphertext: ct, relativePath: path }),
    ct,
  );
  expect(r.status).toBe(200);
}

beforeAll(async () => {
  const reg = await t.json(
    "/register_folder",
    jsonInit("POST", authAt(t, owner), {
      ss58_address: owner.address,
      folder_hash: FOLDER,
      label: "default",
    }),
  );
  expect(reg.status).toBe(200);
  for (const p of [
    "docs/a.txt",
    "docs/sub/b.txt",
    "docs/sub/deep/c.txt",
    "docs2/secret.txt",
    "secret.txt",
    "Cafe\u0301/secret.txt",
  ])
    await put(p);
});

function mint(body: Record<string, unknown>, user = owner) {
  return t.json("/v1/folder-shares", jsonInit("POST", authAt(t, user), body));
}

async function share(prefix: string, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await mint({ folder_hash: FOLDER, path_prefix: prefix, display_name: "Docs", ...extra });
  expect(r.status).toBe(201);
  return r.body.share_token;
}

describe("POST /v1/folder-shares", () => {
  test("returns 201 with a token and expires_at; the token is stored only as its BLAKE3 hash", async () => {
    const r = await mint({ folder_hash: FOLDER, path_prefix: "docs", display_name: "Docs", ttl: "7d" });
    expect(r.status).toBe(201);
    expect(Object.keys(r.body).sort()).toEqual(["expires_at", "share_token"]);
    expect(r.body.share_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(r.body.expires_at) / 1000).toBe(t.clock.now() + 7 * 86400);
    const rows = await (await import("../support/app.ts")).tableRows(t, "folder_shares");
    expect(rows.some((x) => x.token_hash === tokenHash(r.body.share_token))).toBe(true);
    expect(JSON.stringify(rows)).not.toContain(r.body.share_token);
  });

  test("returns 400 bad_request for an empty display_name, a bad prefix (.., leading /, NFD) and an unknown ttl", async () => {
    for (const body of [
      { folder_hash: FOLDER, path_prefix: "docs", display_name: "  " },
      { folder_hash: FOLDER, path_prefix: "../docs", display_name: "x" },
      { folder_hash: FOLDER, path_prefix: "/docs", display_name: "x" },
      { folder_hash: FOLDER, path_prefix: "docs/", display_name: "x" },
      { folder_hash: FOLDER, path_prefix: "Cafe\u0301", display_name: "x" },
      { folder_hash: FOLDER, path_prefix: "docs", display_name: "x", ttl: "1y" },
    ])
      expectFlat(await mint(body), 400, "bad_request");
  });

  test("returns 404 folder_not_found for an unregistered folder, another owner's folder or an owner_ss58 of someone else", async () => {
    expectFlat(
      await mint({ folder_hash: "0123456789abcdef", path_prefix: "", display_name: "x" }),
      404,
      "folder_not_found",
    );
    expectFlat(
      await mint({ folder_hash: FOLDER, path_prefix: "", display_name: "x" }, stranger),
      404,
      "folder_not_found",
    );
    expectFlat(
      await mint({ folder_hash: FOLDER, path_prefix: "", display_name: "x", owner_ss58: stranger.address }),
      404,
      "folder_not_found",
    );
  });
});

describe("anonymous reads", () => {
  test("meta gives display_name and expires_at; browse lists the prefix's directories and files only", async () => {
    const token = await share("docs");
    const meta = await t.json(`/v1/folder-shares/${token}/meta`);
    expect(meta.status).toBe(200);
    expect(Object.keys(meta.body).sort()).toEqual(["display_name", "expires_at"]);
    const root = await t.json(`/v1/folder-shares/${token}/browse`);
    expect(root.status).toBe(200);
    expect(root.body.directories).toEqual([
      { name: "sub", file_count: 2, total_bytes: expect.any(Number), created_at: null },
    ]);
    expect(root.body.files.map((f: { path: string }) => f.path)).toEqual(["a.txt"]);
    expect(root.body.files[0]).toMatchObject({
      name: "a.txt",
      path: "a.txt",
      size_bytes: expect.any(Number),
    });
    expect(root.body).toMatchObject({ total_count: 2, has_more: false, offset: 0, limit: 100 });
    const sub = await t.json(`/v1/folder-shares/${token}/browse?path=sub`);
    expect(sub.body.directories.map((d: { name: string }) => d.name)).toEqual(["deep"]);
    expect(sub.body.files.map((f: { path: string }) => f.path)).toEqual(["sub/b.txt"]);
    const paged = await t.json(`/v1/folder-shares/${token}/browse?limit=500&offset=1`);
    expect(paged.body).toMatchObject({ directories: [], files: [], limit: 200, offset: 1 });
    expectFlat(await t.json(`/v1/folder-shares/${token}/browse?path=nope`), 404, "not_found");
  });

  test("blob?path= returns the stored ciphertext with its exact length", async () => {
    const token = await share("docs");
    const r = await t.fetch(`/v1/folder-shares/${token}/blob?path=sub/deep/c.txt`);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-length")).toBe(String(files["docs/sub/deep/c.txt"]?.byteLength));
    expect(Buffer.from(await r.arrayBuffer()).equals(files["docs/sub/deep/c.txt"] as Buffer)).toBe(true);
    expectFlat(await t.json(`/v1/folder-shares/${token}/blob`), 400, "bad_request");
    expectFlat(await t.json(`/v1/folder-shares/${token}/blob?path=missing.txt`), 404, "not_found");
  });

  test("blob answers one Range with 206, the exact Content-Length, a strong ETag and If-Range; 416 past the end", async () => {
    const token = await share("docs");
    const ct = files["docs/a.txt"] as Buffer;
    const url = `/v1/folder-shares/${token}/blob?path=a.txt`;
    const whole = await t.fetch(url);
    const etag = whole.headers.get("etag") as string;
    expect(etag).toMatch(/^"[0-9a-f]+"$/);
    expect(whole.headers.get("accept-ranges")).toBe("bytes");
    await whole.arrayBuffer();
    const part = await t.fetch(url, { headers: { range: "bytes=10-19" } });
    expect(part.status).toBe(206);
    expect(part.headers.get("content-length")).toBe("10");
    expect(part.headers.get("content-range")).toBe(`bytes 10-19/${ct.byteLength}`);
    expect(part.headers.get("etag")).toBe(etag);
    expect(Buffer.from(await part.arrayBuffer()).equals(ct.subarray(10, 20))).toBe(true);
    const tail = await t.fetch(url, { headers: { range: "bytes=-5" } });
    expect(tail.status).toBe(206);
    expect(Buffer.from(await tail.arrayBuffer()).equals(ct.subarray(ct.byteLength - 5))).toBe(true);
    const matching = await t.fetch(url, { headers: { range: "bytes=0-3", "if-range": etag } });
    expect(matching.status).toBe(206);
    await matching.arrayBuffer();
    const stale = await t.fetch(url, { headers: { range: "bytes=0-3", "if-range": '"0000"' } });
    expect(stale.status).toBe(200);
    expect(stale.headers.get("content-length")).toBe(String(ct.byteLength));
    expect(Buffer.from(await stale.arrayBuffer()).equals(ct)).toBe(true);
    const head = await t.fetch(url, { method: "HEAD", headers: { range: "bytes=1-2" } });
    expect(head.status).toBe(206);
    expect(head.headers.get("content-length")).toBe("2");
    const past = await t.fetch(url, { headers: { range: `bytes=${ct.byteLength}-` } });
    expect(past.status).toBe(416);
    expect(past.headers.get("content-range")).toBe(`bytes */${ct.byteLength}`);
    await past.arrayBuffer();
  });

  test("nothing above the prefix is reachable: .., %2F, %2e%2e, a leading /, NFD spellings and the sibling docs2", async () => {
    const token = await share("docs");
    for (const p of [
      "..",
      "../docs2",
      "%2e%2e",
      "%2e%2e%2Fdocs2",
      "sub%2F..%2F..%2Fdocs2",
      "/docs2",
      "sub/../..",
      "./sub",
      "sub\\..\\..",
    ]) {
      expectFlat(await t.json(`/v1/folder-shares/${token}/browse?path=${p}`), 400, "bad_request");
      expectFlat(await t.json(`/v1/folder-shares/${token}/blob?path=${p}/secret.txt`), 400, "bad_request");
    }
    for (const p of [
      "../secret.txt",
      "..%2Fsecret.txt",
      "%2e%2e/docs2/secret.txt",
      encodeURI("../Cafe\u0301/secret.txt"),
    ])
      expectFlat(await t.json(`/v1/folder-shares/${token}/blob?path=${p}`), 400, "bad_request");
    // Names that only look like a way up are ordinary names under the prefix: nothing there.
    for (const p of ["\u2025/secret.txt", "2/secret.txt", "..secret.txt"])
      expectFlat(
        await t.json(`/v1/folder-shares/${token}/blob?path=${encodeURIComponent(p)}`),
        404,
        "not_found",
      );
    // A share of docs never shows docs2, although "docs2" starts with "docs".
    const root = await t.json(`/v1/folder-shares/${token}/browse`);
    expect(JSON.stringify(root.body)).not.toContain("secret");
    // A share of the NFC directory "Café" does not see the NFD-spelled sibling's files.
    const nfc = await share("Café");
    const cafe = await t.json(`/v1/folder-shares/${nfc}/browse`);
    expect(cafe.body.files).toEqual([]);
    expectFlat(await t.json(`/v1/folder-shares/${nfc}/blob?path=secret.txt`), 404, "not_found");
  });

  test('a share of the whole folder (prefix "") browses the root', async () => {
    const token = await share("");
    const root = await t.json(`/v1/folder-shares/${token}/browse`);
    expect(root.body.directories.map((d: { name: string }) => d.name).sort()).toEqual(
      ["Cafe\u0301", "docs", "docs2"].sort(),
    );
    expect(root.body.files.map((f: { path: string }) => f.path)).toEqual(["secret.txt"]);
  });

  test("unknown and revoked tokens answer 404; expired ones 410 gone on meta, browse and blob", async () => {
    expectFlat(await t.json(`/v1/folder-shares/${"x".repeat(43)}/meta`), 404, "not_found");
    const token = await share("docs");
    t.clock.advance(86400);
    for (const route of ["meta", "browse", "blob?path=a.txt"])
      expectFlat(await t.json(`/v1/folder-shares/${token}/${route}`), 410, "gone");
    const other = await share("docs");
    const del = await t.fetch(`/v1/folder-shares/${other}`, {
      method: "DELETE",
      headers: { authorization: authAt(t, owner) },
    });
    expect(del.status).toBe(204);
    for (const route of ["meta", "browse", "blob?path=a.txt"])
      expectFlat(await t.json(`/v1/folder-shares/${other}/${route}`), 404, "not_found");
  });
});

describe("owner routes", () => {
  test("GET lists token hashes with dead rows; PATCH and DELETE work by token and by hash; revoke of unknown is a bodiless 404", async () => {
    const a = authAt(t, owner);
    const token = await share("docs/sub");
    const hash = tokenHash(token);
    const list = await t.json("/v1/folder-shares", { headers: { authorization: a } });
    expect(list.status).toBe(200);
    const row = list.body.find((x: { token_hash: string }) => x.token_hash === hash);
    expect(row).toEqual({
      token_hash: hash,
      folder_hash: FOLDER,
      path_prefix: "docs/sub",
      display_name: "Docs",
      created_at: expect.any(String),
      expires_at: expect.any(String),
      revoked_at: null,
      owner_wrap: null,
      owner_ss58: owner.address,
      minted_by_ss58: owner.address,
      source: "drive",
    });
    expect(JSON.stringify(list.body)).not.toContain(token);
    expect((await t.json(`/v1/folder-shares/${token}`, jsonInit("PATCH", a, { ttl: "never" }))).body).toEqual(
      { expires_at: null },
    );
    const byHash = await t.json(`/v1/folder-shares/by-hash/${hash}`, jsonInit("PATCH", a, { ttl: "30d" }));
    expect(Date.parse(byHash.body.expires_at) / 1000).toBe(t.clock.now() + 30 * 86400);
    expectFlat(
      await t.json(`/v1/folder-shares/by-hash/${hash.toUpperCase()}`, jsonInit("PATCH", a, { ttl: "7d" })),
      400,
      "bad_request",
    );
    expectFlat(
      await t.json(
        `/v1/folder-shares/by-hash/${hash}`,
        jsonInit("PATCH", authAt(t, stranger), { ttl: "7d" }),
      ),
      404,
      "not_found",
    );
    const strangerDel = await t.fetch(`/v1/folder-shares/by-hash/${hash}`, {
      method: "DELETE",
      headers: { authorization: authAt(t, stranger) },
    });
    expect(strangerDel.status).toBe(404);
    expect(await strangerDel.text()).toBe("");
    const del = await t.fetch(`/v1/folder-shares/by-hash/${hash}`, {
      method: "DELETE",
      headers: { authorization: a },
    });
    expect(del.status).toBe(204);
    const again = await t.fetch(`/v1/folder-shares/${token}`, {
      method: "DELETE",
      headers: { authorization: a },
    });
    expect(again.status).toBe(404);
    expect(await again.text()).toBe("");
    expectFlat(
      await t.json(`/v1/folder-shares/${token}`, jsonInit("PATCH", a, { ttl: "7d" })),
      404,
      "not_found",
    );
    const dead = (await t.json("/v1/folder-shares", { headers: { authorization: a } })).body.find(
      (x: { token_hash: string }) => x.token_hash === hash,
    );
    expect(dead.revoked_at).toEqual(expect.any(String));
  });

  test("PUT owner-wraps stores wraps on the caller's shares only and lists them to the minter", async () => {
    const a = authAt(t, owner);
    const token = await share("docs");
    const wrap = Buffer.from([1, 2, 3, 4, 5, 6]).toString("base64");
    const r = await t.json(
      "/v1/folder-shares/owner-wraps",
      jsonInit("PUT", a, {
        wraps: [
          { token_hash: tokenHash(token), wrap },
          { token_hash: "0".repeat(64), wrap },
        ],
      }),
    );
    expect(r).toMatchObject({ status: 200, body: { applied: 1 } });
    const theirs = await t.json(
      "/v1/folder-shares/owner-wraps",
      jsonInit("PUT", authAt(t, stranger), { wraps: [{ token_hash: tokenHash(token), wrap: "AAAA" }] }),
    );
    expect(theirs.body).toEqual({ applied: 0 });
    const list = await t.json("/v1/folder-shares", { headers: { authorization: a } });
    expect(list.body.find((x: { token_hash: string }) => x.token_hash === tokenHash(token)).owner_wrap).toBe(
      wrap,
    );
    expectFlat(
      await t.json("/v1/folder-shares/owner-wraps", jsonInit("PUT", a, { wraps: [] })),
      400,
      "bad_request",
    );
  });

  test("the owner routes answer 401 flat without a token", async () => {
    expectFlat(await t.json("/v1/folder-shares"), 401, "unauthorized");
    expectFlat(await t.json("/v1/folder-shares", jsonInit("POST", null, {})), 401, "unauthorized");
  });
});
