/**
 * Shares over their life (docs/sharing.md): quota at mint, the reaper (revoked, expired, idle
 * uploads, dead folder shares) through the deletion queue, fsck, the anonymous rate limit and
 * what the logs show of tokens.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { redactedPath } from "../../src/http/instrument.ts";
import { runFsck } from "../../src/ops/fsck.ts";
import { SHARE_REAP_INTERVAL_SECONDS } from "../../src/shares/share-rules.ts";
import { createLogger } from "../../src/util/log.ts";
import { jsonInit, makeTestApp, type TestApp } from "../support/app.ts";
import { newUser } from "../support/fixtures.ts";
import { authAt, FOLDER } from "./helpers.ts";
import { expectFlat, mintChunked, mintSingle, putShareChunk, shareBlob } from "./share-helpers.ts";

// Three apps in all (the PostgreSQL runs have three databases ready at a time): the log of the
// main one is kept for the log test.
const lines: string[] = [];
const main = makeTestApp(
  { ESYNC_BLOB_GRACE_SECONDS: "0" },
  undefined,
  createLogger("debug", (l) => void lines.push(l)),
);
const quota = makeTestApp({ ESYNC_BLOB_GRACE_SECONDS: "0", ESYNC_DEFAULT_QUOTA_BYTES: "1500" });
const limited = makeTestApp({ ESYNC_SHARE_RATE_LIMIT: "3" });
afterAll(() => Promise.all([main, quota, limited].map((a) => a.close())));

/** Objects of the file shares `tokens` in the app's store. */
async function shareObjects(t: TestApp, ...tokens: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const token of tokens) {
    const row = await t.store.repos.shares.byToken(token);
    if (row) out.push(...(await t.blobs.list(`s/${row.shareId}/`)));
  }
  return out.sort();
}

/** Ids of every file share row of the app. */
async function shareRows(t: TestApp, ...tokens: string[]): Promise<number> {
  let n = 0;
  for (const token of tokens) if (await t.store.repos.shares.byToken(token)) n++;
  return n;
}

/** A sweeper pass once the reaper's interval has passed. */
async function reapNow(t: TestApp) {
  t.clock.advance(SHARE_REAP_INTERVAL_SECONDS);
  return t.sweeper.runOnce();
}

describe("quota", () => {
  test("a mint over the allowance answers 402 drive_quota_exceeded (flat) at POST /v1/shares and at init", async () => {
    const t = quota;
    const u = newUser();
    const a = authAt(t, u);
    const one = shareBlob(1000);
    expect((await mintSingle(t, a, one.metadata, one.ciphertext)).status).toBe(201);
    const two = shareBlob(1000);
    const r = await mintSingle(t, a, two.metadata, two.ciphertext);
    expect(r.status).toBe(402);
    expect(r.body.error).toBe("drive_quota_exceeded");
    expect(r.body.Error).toBeUndefined();
    const init = await t.json("/v1/shares/init", jsonInit("POST", a, { ...two.metadata, total_chunks: 1 }));
    expect(init.status).toBe(402);
    expect(init.body.error).toBe("drive_quota_exceeded");
  });

  test("a revoked share keeps counting until the reaper removes it, then its bytes are released", async () => {
    const t = quota;
    const u = newUser();
    const a = authAt(t, u);
    const one = shareBlob(1000);
    const m = await mintSingle(t, a, one.metadata, one.ciphertext);
    await t.fetch(`/v1/shares/${m.body.share_token}`, { method: "DELETE", headers: { authorization: a } });
    const two = shareBlob(1000);
    expect((await mintSingle(t, a, two.metadata, two.ciphertext)).status).toBe(402);
    await reapNow(t);
    expect((await mintSingle(t, a, two.metadata, two.ciphertext)).status).toBe(201);
  });
});

describe("reaper", () => {
  test("revoked and expired shares lose their rows and objects; live ones stay", async () => {
    const t = main;
    const u = newUser();
    const a = authAt(t, u);
    const live = shareBlob(10, { ttl: "never" });
    const keep = await mintSingle(t, a, live.metadata, live.ciphertext);
    const revoked = shareBlob(10);
    const gone = await mintSingle(t, a, revoked.metadata, revoked.ciphertext);
    const expiring = shareBlob(10);
    const exp = await mintSingle(t, a, expiring.metadata, expiring.ciphertext);
    const tokens = [keep, gone, exp].map((r) => r.body.share_token as string);
    expect((await shareObjects(t, ...tokens)).length).toBe(3);
    await t.fetch(`/v1/shares/${gone.body.share_token}`, { method: "DELETE", headers: { authorization: a } });
    t.clock.advance(86400);
    const before = await shareObjects(t, ...tokens);
    const pass = await reapNow(t);
    expect(pass.shares).toBeGreaterThanOrEqual(2);
    expect(await shareRows(t, ...tokens)).toBe(1);
    const after = await t.blobs.list("s/");
    expect(before.filter((k) => after.includes(k)).length).toBe(1);
    expect(await t.json(`/v1/shares/${keep.body.share_token}/meta`)).toMatchObject({ status: 200 });
    // Expired and reaped: now unknown, 404.
    expectFlat(await t.json(`/v1/shares/${gone.body.share_token}/meta`), 404, "not_found");
    expect((await runFsck({ store: t.store, blobs: t.blobs, clock: t.clock })).problems).toEqual([]);
  });

  test("an upload idle for an hour is reaped with its chunks; an active one is not", async () => {
    const t = main;
    const u = newUser();
    const a = authAt(t, u);
    const { ciphertext, metadata } = shareBlob(100);
    const init = await t.json("/v1/shares/init", jsonInit("POST", a, { ...metadata, total_chunks: 1 }));
    const token = init.body.share_token as string;
    expect((await putShareChunk(t, a, token, 0, ciphertext)).status).toBe(200);
    const chunk = await shareObjects(t, token);
    expect(chunk.length).toBe(1);
    expect((await runFsck({ store: t.store, blobs: t.blobs, clock: t.clock })).problems).toEqual([]);
    await reapNow(t);
    expect(await shareRows(t, token)).toBe(1);
    t.clock.advance(3601);
    await t.sweeper.runOnce();
    expect(await shareRows(t, token)).toBe(0);
    expect((await t.blobs.list("s/")).includes(chunk[0] as string)).toBe(false);
    expectFlat(await putShareChunk(t, a, token, 0, ciphertext), 404, "not_found");
  });

  test("reaping runs at most every 5 minutes; dead folder shares leave the listing when reaped", async () => {
    const t = main;
    const u = newUser();
    const a = authAt(t, u);
    await t.json(
      "/register_folder",
      jsonInit("POST", a, { ss58_address: u.address, folder_hash: FOLDER, label: "x" }),
    );
    const m = await t.json(
      "/v1/folder-shares",
      jsonInit("POST", a, { folder_hash: FOLDER, path_prefix: "", display_name: "x" }),
    );
    await t.sweeper.runOnce();
    await t.fetch(`/v1/folder-shares/${m.body.share_token}`, {
      method: "DELETE",
      headers: { authorization: a },
    });
    expect((await t.sweeper.runOnce()).shares).toBe(0);
    expect((await t.json("/v1/folder-shares", { headers: { authorization: a } })).body.length).toBe(1);
    t.clock.advance(SHARE_REAP_INTERVAL_SECONDS);
    expect((await t.sweeper.runOnce()).shares).toBe(1);
    expect((await t.json("/v1/folder-shares", { headers: { authorization: a } })).body).toEqual([]);
  });

  test("a chunked share leaves one object once complete, and fsck finds no orphan; an unreferenced share object is one", async () => {
    const t = main;
    const u = newUser();
    const { token } = await mintChunked(t, authAt(t, u), 9 * 1024 * 1024);
    await t.sweeper.runOnce();
    const objects = await shareObjects(t, token);
    expect(objects.length).toBe(1);
    expect(objects[0]).toMatch(/^s\/[0-9a-f]{32}\/b\.[0-9a-f]{16}$/);
    expect((await runFsck({ store: t.store, blobs: t.blobs, clock: t.clock })).problems).toEqual([]);
    await t.blobs.put("s/0123456789abcdef0123456789abcdef/b.00", new Blob(["x"]).stream(), 1);
    const report = await runFsck({ store: t.store, blobs: t.blobs, clock: t.clock });
    expect(report.problems.map((p) => [p.kind, p.key])).toEqual([
      ["orphan_object", "s/0123456789abcdef0123456789abcdef/b.00"],
    ]);
    await t.blobs.delete(["s/0123456789abcdef0123456789abcdef/b.00"]);
  });
});

describe("anonymous routes", () => {
  test("past ESYNC_SHARE_RATE_LIMIT requests a minute, meta and blob answer 429 with Retry-After; owner routes are not limited", async () => {
    const t = limited;
    const u = newUser();
    const { ciphertext, metadata } = shareBlob(10);
    const m = await mintSingle(t, authAt(t, u), metadata, ciphertext);
    const url = `/v1/shares/${m.body.share_token}`;
    for (let i = 0; i < 3; i++) expect((await t.fetch(`${url}/meta`)).status).toBe(200);
    const r = await t.json(`${url}/blob`);
    expectFlat(r, 429, "too_many_requests");
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
    expectFlat(await t.json(`/v1/folder-shares/${"a".repeat(43)}/meta`), 429, "too_many_requests");
    expect((await t.json("/v1/shares", { headers: { authorization: authAt(t, u) } })).status).toBe(200);
    t.clock.advance(60);
    expect((await t.fetch(`${url}/meta`)).status).toBe(200);
  });

  test("no log line holds a token; the access log shows the share path with the token cut to 6 characters", async () => {
    const t = main;
    const u = newUser();
    const { ciphertext, metadata } = shareBlob(10);
    const m = await mintSingle(t, authAt(t, u), metadata, ciphertext);
    const token = m.body.share_token as string;
    await t.fetch(`/v1/shares/${token}/meta`);
    await (await t.fetch(`/v1/shares/${token}/blob`)).arrayBuffer();
    await t.fetch(`/v1/shares/${token}`, { method: "DELETE", headers: { authorization: authAt(t, u) } });
    await t.fetch(`/v1/shares/${token}/meta`);
    expect(lines.length).toBeGreaterThan(3);
    for (const line of lines) expect(line).not.toContain(token.slice(0, 12));
    const access = lines
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg === "http.request" || l.event === "http.request");
    expect(access.some((l) => l.path === `/v1/shares/${token.slice(0, 6)}…/meta`)).toBe(true);
  });

  test("the answers of unknown and revoked tokens are identical, so they do not tell which existed", async () => {
    const t = main;
    const u = newUser();
    const { ciphertext, metadata } = shareBlob(10);
    const m = await mintSingle(t, authAt(t, u), metadata, ciphertext);
    await t.fetch(`/v1/shares/${m.body.share_token}`, {
      method: "DELETE",
      headers: { authorization: authAt(t, u) },
    });
    const revoked = await t.json(`/v1/shares/${m.body.share_token}/meta`);
    const unknown = await t.json(`/v1/shares/${"Q".repeat(43)}/meta`);
    expect(revoked.status).toBe(unknown.status);
    expect(revoked.body).toEqual(unknown.body);
  });

  test("redactedPath cuts tokens of every sharing path and leaves fixed segments and token hashes whole", () => {
    const tok = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcde";
    expect(redactedPath(`/v1/shares/${tok}`)).toBe("/v1/shares/AbCdEf…");
    expect(redactedPath(`/v1/shares/${tok}/chunks/3`)).toBe("/v1/shares/AbCdEf…/chunks/3");
    expect(redactedPath(`/v1/folder-shares/${tok}/browse`)).toBe("/v1/folder-shares/AbCdEf…/browse");
    expect(redactedPath(`/share/${tok}`)).toBe("/share/AbCdEf…");
    expect(redactedPath(`/share/folder/${tok}`)).toBe("/share/folder/AbCdEf…");
    for (const p of [
      "/v1/shares",
      "/v1/shares/init",
      "/v1/shares/owner-wraps",
      "/v1/folder-shares/owner-wraps",
      `/v1/folder-shares/by-hash/${"a".repeat(64)}`,
      "/upload",
    ])
      expect(redactedPath(p)).toBe(p);
  });
});
