/** File shares (docs/sharing.md): mint, chunked upload, listing, expiry, revoke, owner wraps, anonymous reads. */
import { afterAll, describe, expect, test } from "bun:test";
import { SHARE_CHUNK_BYTES } from "../../src/shares/share-rules.ts";
import { jsonInit, makeTestApp } from "../support/app.ts";
import { newUser } from "../support/fixtures.ts";
import { authAt } from "./helpers.ts";
import { anonymous, expectFlat, mintChunked, mintSingle, putShareChunk, shareBlob } from "./share-helpers.ts";

const t = makeTestApp();
afterAll(() => t.close());

const alice = newUser();
const bob = newUser();

describe("POST /v1/shares (single request)", () => {
  test("returns 201 with a 43-character token and expires_at 24 h ahead; meta and blob open without a token", async () => {
    const { ciphertext, metadata } = shareBlob(1000);
    const r = await mintSingle(t, authAt(t, alice), metadata, ciphertext);
    expect(r.status).toBe(201);
    expect(Object.keys(r.body).sort()).toEqual(["expires_at", "share_token"]);
    expect(r.body.share_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(r.body.expires_at) / 1000).toBe(t.clock.now() + 86400);
    const meta = await t.json(`/v1/shares/${r.body.share_token}/meta`);
    expect(meta.status).toBe(200);
    expect(meta.body).toEqual({
      ciphertext_size: ciphertext.byteLength,
      plaintext_size: 1000,
      filename_ct: metadata.filename_ct,
      filename_nonce: metadata.filename_nonce,
      mime_type: "application/pdf",
      expires_at: r.body.expires_at,
    });
    const blob = await anonymous(t, `/v1/shares/${r.body.share_token}/blob`);
    expect(blob.status).toBe(200);
    expect(blob.headers.get("content-length")).toBe(String(ciphertext.byteLength));
    expect(blob.headers.get("etag")).toMatch(/^"[0-9a-f]{32}"$/);
    expect(Buffer.from(await blob.arrayBuffer()).equals(ciphertext)).toBe(true);
  });

  test("ttl 7d, 30d and never set expires_at from now; never is null", async () => {
    for (const [ttl, secs] of [
      ["7d", 7 * 86400],
      ["30d", 30 * 86400],
      ["never", null],
    ] as const) {
      const { ciphertext, metadata } = shareBlob(10, { ttl });
      const r = await mintSingle(t, authAt(t, alice), metadata, ciphertext);
      expect(r.status).toBe(201);
      if (secs === null) expect(r.body.expires_at).toBeNull();
      else expect(Date.parse(r.body.expires_at) / 1000).toBe(t.clock.now() + secs);
    }
  });

  test("returns 400 bad_request for an unknown ttl, a wrong ciphertext_size, a bad nonce and parts out of order", async () => {
    const a = authAt(t, alice);
    const { ciphertext, metadata } = shareBlob(10);
    expectFlat(await mintSingle(t, a, { ...metadata, ttl: "1h" }, ciphertext), 400, "bad_request");
    expectFlat(await mintSingle(t, a, metadata, ciphertext.subarray(1)), 400, "bad_request");
    expectFlat(await mintSingle(t, a, { ...metadata, plaintext_size: 11 }, ciphertext), 400, "bad_request");
    expectFlat(
      await mintSingle(
        t,
        a,
        { ...metadata, filename_nonce: Buffer.alloc(12).toString("base64") },
        ciphertext,
      ),
      400,
      "bad_request",
    );
    expectFlat(await mintSingle(t, a, { ...metadata, filename: "a/b" }, ciphertext), 400, "bad_request");
    const { multipart } = await import("./helpers.ts");
    const { body, contentType } = multipart([
      { name: "ciphertext", data: ciphertext },
      { name: "metadata", data: JSON.stringify(metadata) },
    ]);
    const r = await t.json("/v1/shares", {
      method: "POST",
      headers: { authorization: a, "content-type": contentType },
      body: body as BodyInit,
    });
    expectFlat(r, 400, "bad_request");
  });

  test("returns 413 for a ciphertext over 8 MiB and 401 flat without a token", async () => {
    const { ciphertext, metadata } = shareBlob(SHARE_CHUNK_BYTES);
    expectFlat(await mintSingle(t, authAt(t, alice), metadata, ciphertext), 413, "payload_too_large");
    const small = shareBlob(5);
    expectFlat(await mintSingle(t, null, small.metadata, small.ciphertext), 401, "unauthorized");
  });
});

describe("chunked shares", () => {
  test("init, two chunks and complete give a readable share equal to the chunks joined", async () => {
    const a = authAt(t, alice);
    const { token, ciphertext } = await mintChunked(t, a, SHARE_CHUNK_BYTES + 5000);
    expect(ciphertext.byteLength).toBeGreaterThan(SHARE_CHUNK_BYTES);
    const blob = await anonymous(t, `/v1/shares/${token}/blob`);
    expect(blob.status).toBe(200);
    expect(blob.headers.get("content-length")).toBe(String(ciphertext.byteLength));
    expect(Buffer.from(await blob.arrayBuffer()).equals(ciphertext)).toBe(true);
    const ranged = await anonymous(t, `/v1/shares/${token}/blob`, {
      range: `bytes=${SHARE_CHUNK_BYTES - 2}-${SHARE_CHUNK_BYTES + 1}`,
    });
    expect(ranged.status).toBe(206);
    expect(ranged.headers.get("content-range")).toBe(
      `bytes ${SHARE_CHUNK_BYTES - 2}-${SHARE_CHUNK_BYTES + 1}/${ciphertext.byteLength}`,
    );
    expect(
      Buffer.from(await ranged.arrayBuffer()).equals(
        ciphertext.subarray(SHARE_CHUNK_BYTES - 2, SHARE_CHUNK_BYTES + 2),
      ),
    ).toBe(true);
  });

  test("an uploading share answers 404 on meta and blob; chunk and complete rules answer 400, 403 and 409", async () => {
    const a = authAt(t, alice);
    const { ciphertext, metadata } = shareBlob(3000);
    expectFlat(
      await t.json("/v1/shares/init", jsonInit("POST", a, { ...metadata, total_chunks: 2 })),
      400,
      "bad_request",
    );
    const init = await t.json("/v1/shares/init", jsonInit("POST", a, { ...metadata, total_chunks: 1 }));
    expect(init.status).toBe(201);
    const token = init.body.share_token;
    expectFlat(await t.json(`/v1/shares/${token}/meta`), 404, "not_found");
    expectFlat(await t.json(`/v1/shares/${token}/blob`), 404, "not_found");
    expectFlat(await putShareChunk(t, a, token, 1, ciphertext), 400, "bad_request");
    expectFlat(await putShareChunk(t, a, token, 0, ciphertext.subarray(1)), 400, "bad_request");
    expectFlat(await putShareChunk(t, authAt(t, bob), token, 0, ciphertext), 403, "forbidden");
    const complete = () =>
      t.json(`/v1/shares/${token}/complete`, {
        method: "POST",
        headers: { authorization: a, "content-length": "0" },
      });
    expectFlat(await complete(), 400, "bad_request");
    // A re-sent chunk replaces the first one.
    expect((await putShareChunk(t, a, token, 0, Buffer.alloc(ciphertext.byteLength))).status).toBe(200);
    expect(await putShareChunk(t, a, token, 0, ciphertext)).toMatchObject({
      status: 200,
      body: { chunk_index: 0 },
    });
    const done = await complete();
    expect(done.status).toBe(200);
    expect(done.body).toEqual(init.body);
    expect(
      Buffer.from(await (await anonymous(t, `/v1/shares/${token}/blob`)).arrayBuffer()).equals(ciphertext),
    ).toBe(true);
    expectFlat(await complete(), 409, "conflict");
    expectFlat(await putShareChunk(t, a, token, 0, ciphertext), 409, "conflict");
  });

  test("init refuses a plaintext over 5,000,000,000 bytes with 413", async () => {
    const { metadata } = shareBlob(10);
    const plaintext = 5_000_000_001;
    const frames = Math.ceil(plaintext / 262144);
    const ct = 28 + 20 * frames + plaintext;
    const r = await t.json(
      "/v1/shares/init",
      jsonInit("POST", authAt(t, alice), {
        ...metadata,
        plaintext_size: plaintext,
        ciphertext_size: ct,
        total_chunks: Math.ceil(ct / SHARE_CHUNK_BYTES),
      }),
    );
    expectFlat(r, 413, "payload_too_large");
  });
});

describe("listing, expiry and revoke", () => {
  test("GET /v1/shares lists live shares only; PATCH re-times; DELETE revokes (204, then 404 everywhere)", async () => {
    const carol = newUser();
    const a = authAt(t, carol);
    const one = shareBlob(100);
    const m1 = await mintSingle(t, a, one.metadata, one.ciphertext);
    const two = shareBlob(200, { ttl: "never" });
    const m2 = await mintSingle(t, a, two.metadata, two.ciphertext);
    const list = await t.json("/v1/shares", { headers: { authorization: a } });
    expect(list.status).toBe(200);
    expect(list.body.map((x: { share_token: string }) => x.share_token).sort()).toEqual(
      [m1.body.share_token, m2.body.share_token].sort(),
    );
    const row = list.body.find((x: { share_token: string }) => x.share_token === m1.body.share_token);
    expect(row).toEqual({
      share_token: m1.body.share_token,
      filename: "report.pdf",
      plaintext_size: 100,
      ciphertext_size: one.ciphertext.byteLength,
      mime_type: "application/pdf",
      created_at: new Date(t.clock.now() * 1000).toISOString().replace(".000Z", "Z"),
      expires_at: m1.body.expires_at,
      owner_wrap: null,
    });
    const patched = await t.json(`/v1/shares/${m1.body.share_token}`, jsonInit("PATCH", a, { ttl: "never" }));
    expect(patched).toMatchObject({
      status: 200,
      body: { share_token: m1.body.share_token, expires_at: null },
    });
    expectFlat(
      await t.json(`/v1/shares/${m1.body.share_token}`, jsonInit("PATCH", a, { ttl: "2d" })),
      400,
      "bad_request",
    );
    expectFlat(
      await t.json(`/v1/shares/${m1.body.share_token}`, jsonInit("PATCH", authAt(t, bob), { ttl: "7d" })),
      404,
      "not_found",
    );
    const del = await t.fetch(`/v1/shares/${m1.body.share_token}`, {
      method: "DELETE",
      headers: { authorization: a },
    });
    expect(del.status).toBe(204);
    expect(await del.text()).toBe("");
    expectFlat(await t.json(`/v1/shares/${m1.body.share_token}/meta`), 404, "not_found");
    expectFlat(await t.json(`/v1/shares/${m1.body.share_token}/blob`), 404, "not_found");
    expectFlat(
      await t.json(`/v1/shares/${m1.body.share_token}`, { method: "DELETE", headers: { authorization: a } }),
      404,
      "not_found",
    );
    expectFlat(
      await t.json(`/v1/shares/${m2.body.share_token}`, {
        method: "DELETE",
        headers: { authorization: authAt(t, bob) },
      }),
      404,
      "not_found",
    );
    expectFlat(
      await t.json(`/v1/shares/${m1.body.share_token}`, jsonInit("PATCH", a, { ttl: "7d" })),
      404,
      "not_found",
    );
    const after = await t.json("/v1/shares", { headers: { authorization: a } });
    expect(after.body.map((x: { share_token: string }) => x.share_token)).toEqual([m2.body.share_token]);
  });

  test("returns 410 gone for an expired share on meta and blob, 404 for an unknown token, and PATCH of it is 404", async () => {
    const dave = newUser();
    const { ciphertext, metadata } = shareBlob(50);
    const m = await mintSingle(t, authAt(t, dave), metadata, ciphertext);
    t.clock.advance(86400);
    expectFlat(await t.json(`/v1/shares/${m.body.share_token}/meta`), 410, "gone");
    expectFlat(await t.json(`/v1/shares/${m.body.share_token}/blob`), 410, "gone");
    expectFlat(
      await t.json(`/v1/shares/${m.body.share_token}`, jsonInit("PATCH", authAt(t, dave), { ttl: "7d" })),
      404,
      "not_found",
    );
    expect((await t.json("/v1/shares", { headers: { authorization: authAt(t, dave) } })).body).toEqual([]);
    expectFlat(await t.json(`/v1/shares/${"A".repeat(43)}/meta`), 404, "not_found");
    expectFlat(await t.json("/v1/shares/not%20a%20token/meta"), 404, "not_found");
  });

  test("blob answers Range with 206 and an exact Content-Length, If-Range with another ETag with the whole blob, and 416 past the end", async () => {
    const { ciphertext, metadata } = shareBlob(4000);
    const m = await mintSingle(t, authAt(t, alice), metadata, ciphertext);
    const url = `/v1/shares/${m.body.share_token}/blob`;
    const r = await anonymous(t, url, { range: "bytes=10-19" });
    expect(r.status).toBe(206);
    expect(r.headers.get("content-length")).toBe("10");
    expect(Buffer.from(await r.arrayBuffer()).equals(ciphertext.subarray(10, 20))).toBe(true);
    const whole = await anonymous(t, url, { range: "bytes=10-19", "if-range": '"other"' });
    expect(whole.status).toBe(200);
    expect(whole.headers.get("content-length")).toBe(String(ciphertext.byteLength));
    await whole.arrayBuffer();
    const bad = await t.json(url, { headers: { range: `bytes=${ciphertext.byteLength}-` } });
    expectFlat(bad, 416, "range_not_satisfiable");
    expect(bad.headers.get("content-range")).toBe(`bytes */${ciphertext.byteLength}`);
  });
});

describe("PUT /v1/shares/owner-wraps", () => {
  test("stores wraps on the caller's shares, skips other tokens, and lists them", async () => {
    const erin = newUser();
    const a = authAt(t, erin);
    const { ciphertext, metadata } = shareBlob(10);
    const m = await mintSingle(t, a, metadata, ciphertext);
    const theirs = await mintSingle(t, authAt(t, bob), metadata, ciphertext);
    const wrap = Buffer.from([1, ...new Array(60).fill(7)]).toString("base64");
    const r = await t.json(
      "/v1/shares/owner-wraps",
      jsonInit("PUT", a, {
        wraps: [
          { token: m.body.share_token, wrap },
          { token: theirs.body.share_token, wrap },
          { token: "unknown", wrap },
        ],
      }),
    );
    expect(r).toMatchObject({ status: 200, body: { applied: 1 } });
    const list = await t.json("/v1/shares", { headers: { authorization: a } });
    expect(list.body[0].owner_wrap).toBe(wrap);
    const other = await t.json("/v1/shares", { headers: { authorization: authAt(t, bob) } });
    expect(other.body.every((x: { owner_wrap: string | null }) => x.owner_wrap === null)).toBe(true);
  });

  test("returns 400 bad_request for an empty list, more than 64 entries and bad base64", async () => {
    const a = authAt(t, alice);
    expectFlat(await t.json("/v1/shares/owner-wraps", jsonInit("PUT", a, { wraps: [] })), 400, "bad_request");
    const many = Array.from({ length: 65 }, () => ({ token: "x", wrap: "AAAA" }));
    expectFlat(
      await t.json("/v1/shares/owner-wraps", jsonInit("PUT", a, { wraps: many })),
      400,
      "bad_request",
    );
    expectFlat(
      await t.json(
        "/v1/shares/owner-wraps",
        jsonInit("PUT", a, { wraps: [{ token: "x", wrap: "not base64!" }] }),
      ),
      400,
      "bad_request",
    );
  });
});

describe("streamed bodies and HEAD", () => {
  test("a chunk body longer than the chunk, streamed without Content-Length, is refused with 400 and stores nothing", async () => {
    const a = authAt(t, alice);
    const { ciphertext, metadata } = shareBlob(100);
    const init = await t.json("/v1/shares/init", jsonInit("POST", a, { ...metadata, total_chunks: 1 }));
    const token = init.body.share_token as string;
    const long = Buffer.concat([ciphertext, Buffer.alloc(10)]);
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(long.subarray(0, 50));
        c.enqueue(long.subarray(50));
        c.close();
      },
    });
    const r = await t.json(`/v1/shares/${token}/chunks/0`, {
      method: "PUT",
      headers: { authorization: a, "content-type": "application/octet-stream" },
      body,
    });
    expectFlat(r, 400, "bad_request");
    const row = await t.store.repos.shares.byToken(token);
    expect(await t.store.repos.shares.chunks(row?.shareId as string)).toEqual([]);
  });

  test("HEAD of a share blob answers the GET's status and headers without a body", async () => {
    const { ciphertext, metadata } = shareBlob(300);
    const m = await mintSingle(t, authAt(t, alice), metadata, ciphertext);
    const r = await t.fetch(`/v1/shares/${m.body.share_token}/blob`, { method: "HEAD" });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-length")).toBe(String(ciphertext.byteLength));
    expect((await r.arrayBuffer()).byteLength).toBe(0);
  });
});
