/**
 * esync's own share features (docs/sharing.md, "Download limits" and "Access log"): max_downloads
 * counts only complete blobs, parallel downloads of a one-download link give one complete body,
 * meta, HEAD and page views never count, a used-up link answers 410 with reason download_limit,
 * and the owner's access log (no client address unless configured) goes with the share.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { makeTestApp, type TestApp } from "../support/app.ts";
import { newUser } from "../support/fixtures.ts";
import { authAt } from "./helpers.ts";
import { expectFlat, mintSingle, shareBlob } from "./share-helpers.ts";

const t = makeTestApp({ ESYNC_BLOB_GRACE_SECONDS: "0" });
const withAddresses = makeTestApp({ ESYNC_SHARE_LOG_ADDRESSES: "true" });
afterAll(() => Promise.all([t.close(), withAddresses.close()]));

const owner = newUser();
const other = newUser();

async function mint(app: TestApp, plaintextSize: number, extra: Record<string, unknown>) {
  const { ciphertext, metadata } = shareBlob(plaintextSize, extra);
  const r = await mintSingle(app, authAt(app, owner), metadata, ciphertext);
  expect(r.status).toBe(201);
  return { token: r.body.share_token as string, ciphertext };
}

/** Reads a blob answer to its end; the body, or null when the stream failed before the end. */
async function readBody(r: Response): Promise<Buffer | null> {
  try {
    return Buffer.from(await r.arrayBuffer());
  } catch {
    return null;
  }
}

describe("max_downloads", () => {
  test("a one-download link: meta and HEAD never count, one GET gives the body, then 410 gone with reason download_limit", async () => {
    const { token, ciphertext } = await mint(t, 1000, { max_downloads: 1 });
    for (let i = 0; i < 3; i++) {
      expect((await t.json(`/v1/shares/${token}/meta`)).status).toBe(200);
      const head = await t.fetch(`/v1/shares/${token}/blob`, { method: "HEAD" });
      expect(head.status).toBe(200);
      expect(head.headers.get("accept-ranges")).toBe("none");
    }
    const got = await t.fetch(`/v1/shares/${token}/blob`);
    expect(got.status).toBe(200);
    expect((await readBody(got))?.equals(ciphertext)).toBe(true);
    for (const path of [`/v1/shares/${token}/blob`, `/v1/shares/${token}/meta`]) {
      const r = await t.json(path);
      expect(r.status).toBe(410);
      expect(r.body).toEqual({
        error: "gone",
        message: "This link has reached its download limit",
        reason: "download_limit",
      });
    }
  });

  test("five parallel downloads of a one-download link give exactly one complete body", async () => {
    const { token, ciphertext } = await mint(t, 3_000_000, { max_downloads: 1 });
    const answers = await Promise.all(Array.from({ length: 5 }, () => t.fetch(`/v1/shares/${token}/blob`)));
    const bodies = await Promise.all(answers.map((r) => (r.status === 200 ? readBody(r) : r.arrayBuffer())));
    const complete = bodies.filter((b) => b instanceof Buffer && b.equals(ciphertext));
    expect(complete.length).toBe(1);
    const row = await t.store.repos.shares.byToken(token);
    expect(row?.downloadCount).toBe(1);
    expect((await t.json(`/v1/shares/${token}/blob`)).status).toBe(410);
  });

  test("a Range is ignored on a limited link (the whole blob is sent and counted)", async () => {
    const { token, ciphertext } = await mint(t, 500, { max_downloads: 2 });
    const r = await t.fetch(`/v1/shares/${token}/blob`, { headers: { range: "bytes=0-9" } });
    expect(r.status).toBe(200);
    expect((await readBody(r))?.equals(ciphertext)).toBe(true);
    expect((await t.store.repos.shares.byToken(token))?.downloadCount).toBe(1);
  });

  test("a download cut before its end does not count", async () => {
    const { token } = await mint(t, 3_000_000, { max_downloads: 1 });
    const r = await t.fetch(`/v1/shares/${token}/blob`);
    const reader = (r.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    await reader.cancel();
    await Bun.sleep(50);
    expect((await t.store.repos.shares.byToken(token))?.downloadCount).toBe(0);
    expect((await t.fetch(`/v1/shares/${token}/meta`)).status).toBe(200);
  });

  test("max_downloads must be an integer from 1; the listing shows the limit and the count", async () => {
    for (const bad of [0, -1, 1.5, "3"]) {
      const { ciphertext, metadata } = shareBlob(10, { max_downloads: bad });
      expectFlat(await mintSingle(t, authAt(t, owner), metadata, ciphertext), 400, "bad_request");
    }
    const { token } = await mint(t, 10, { max_downloads: 3 });
    const list = await t.json("/v1/shares", { headers: { authorization: authAt(t, owner) } });
    const row = (list.body as Record<string, unknown>[]).find((s) => s.share_token === token);
    expect(row).toMatchObject({ max_downloads: 3, download_count: 0, access_log: true });
    const plain = await mint(t, 10, {});
    const plainRow = (
      (await t.json("/v1/shares", { headers: { authorization: authAt(t, owner) } })).body as Record<
        string,
        unknown
      >[]
    ).find((s) => s.share_token === plain.token);
    expect(plainRow && "max_downloads" in plainRow).toBe(false);
    expect(plainRow && "access_log" in plainRow).toBe(false);
  });
});

describe("GET /v1/shares/{token}/accesses", () => {
  test("lists each blob answer newest first: time, bytes sent, completed; no client address by default", async () => {
    const { token, ciphertext } = await mint(t, 2000, { access_log: true });
    t.clock.advance(10);
    const part = await t.fetch(`/v1/shares/${token}/blob`, { headers: { range: "bytes=0-99" } });
    expect(part.status).toBe(206);
    expect((await readBody(part))?.byteLength).toBe(100);
    t.clock.advance(10);
    await readBody(await t.fetch(`/v1/shares/${token}/blob`));
    await t.fetch(`/v1/shares/${token}/meta`);
    await Bun.sleep(20);
    const r = await t.json(`/v1/shares/${token}/accesses`, { headers: { authorization: authAt(t, owner) } });
    expect(r.status).toBe(200);
    expect(r.body.max_downloads).toBeNull();
    expect(r.body.download_count).toBe(1);
    expect(r.body.truncated).toBe(false);
    const accesses = r.body.accesses as Record<string, unknown>[];
    expect(accesses.length).toBe(2);
    expect(accesses[0]).toEqual({ at: accesses[0]?.at, bytes_sent: ciphertext.byteLength, completed: true });
    expect(accesses[1]).toEqual({ at: accesses[1]?.at, bytes_sent: 100, completed: false });
    expect((accesses[0]?.at as number) - (accesses[1]?.at as number)).toBe(10);
  });

  test("keeps the client address only when ESYNC_SHARE_LOG_ADDRESSES is on", async () => {
    const { token } = await mint(withAddresses, 100, { access_log: true });
    await readBody(await withAddresses.fetch(`/v1/shares/${token}/blob`));
    await Bun.sleep(20);
    const r = await withAddresses.json(`/v1/shares/${token}/accesses`, {
      headers: { authorization: authAt(withAddresses, owner) },
    });
    expect(typeof r.body.accesses[0].client_address).toBe("string");
  });

  test("answers 404 to another account, for a revoked share and an unknown token; 401 without a token", async () => {
    const { token } = await mint(t, 100, { access_log: true });
    expectFlat(
      await t.json(`/v1/shares/${token}/accesses`, { headers: { authorization: authAt(t, other) } }),
      404,
      "not_found",
    );
    expectFlat(
      await t.json(`/v1/shares/${"A".repeat(43)}/accesses`, { headers: { authorization: authAt(t, owner) } }),
      404,
      "not_found",
    );
    expect((await t.json(`/v1/shares/${token}/accesses`)).status).toBe(401);
    await t.fetch(`/v1/shares/${token}`, { method: "DELETE", headers: { authorization: authAt(t, owner) } });
    expectFlat(
      await t.json(`/v1/shares/${token}/accesses`, { headers: { authorization: authAt(t, owner) } }),
      404,
      "not_found",
    );
  });

  test("the log lives as long as the share: the reaper removes its rows with the share", async () => {
    const { token } = await mint(t, 100, { access_log: true, ttl: "24h" });
    await readBody(await t.fetch(`/v1/shares/${token}/blob`));
    await Bun.sleep(20);
    const id = (await t.store.repos.shares.byToken(token))?.shareId as string;
    expect((await t.store.repos.shares.accesses(id, 10)).length).toBe(1);
    t.clock.advance(25 * 3600);
    await t.services.shares.reap();
    expect(await t.store.repos.shares.byToken(token)).toBeUndefined();
    expect((await t.store.repos.shares.accesses(id, 10)).length).toBe(0);
  });

  test("a share minted without access_log or max_downloads keeps no log", async () => {
    const { token } = await mint(t, 100, {});
    await readBody(await t.fetch(`/v1/shares/${token}/blob`));
    await Bun.sleep(20);
    const r = await t.json(`/v1/shares/${token}/accesses`, { headers: { authorization: authAt(t, owner) } });
    expect(r.body.accesses).toEqual([]);
  });
});
