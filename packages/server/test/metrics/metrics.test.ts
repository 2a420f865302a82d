/**
 * `GET /metrics` (issue 13): after a known workload served over real HTTP, the scrape shows
 * exactly the requests, bytes, store operations, finalize path, auth failures, sessions and
 * queue depth that workload caused, and no label value names a user, session or path.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { InstrumentedBlobStore } from "../../src/metrics/blob-store.ts";
import { serveMetrics } from "../../src/metrics/metrics.controller.ts";
import { Metrics } from "../../src/metrics/metrics.ts";
import {
  BlobNotFoundError,
  type BlobStore,
  isFileBacked,
  isPersistable,
} from "../../src/storage/blob-store.ts";
import { authAt, chunkOf, FOLDER, fileIdOf, openSession, uploadSingle } from "../http/helpers.ts";
import { makeTestApp, type TestApp } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext } from "../support/fixtures.ts";

/** Parses the text exposition into `name{labels}` → value (labels as printed). */
function parse(text: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const i = line.lastIndexOf(" ");
    m.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return m;
}

/** Sum of every series of `name` whose labels include all of `labels`. */
function sum(m: Map<string, number>, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const [k, v] of m) {
    const brace = k.indexOf("{");
    const n = brace === -1 ? k : k.slice(0, brace);
    if (n !== name) continue;
    if (Object.entries(labels).every(([l, val]) => k.includes(`${l}="${val}"`))) total += v;
  }
  return total;
}

let t: TestApp;
let server: Server<undefined>;
let base: string;
beforeEach(() => {
  t = makeTestApp();
  server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (r) => t.handle(r) });
  base = `http://127.0.0.1:${server.port}`;
});
afterEach(async () => {
  await server.stop(true);
  await t.close();
});

/** Counts the bytes a request sends and its response returns, as the test sees them. */
const wire = { sent: 0, received: 0 };
async function call(
  path: string,
  init: Omit<RequestInit, "body"> & { body?: string | Uint8Array } = {},
): Promise<Response> {
  if (init.body !== undefined)
    wire.sent += typeof init.body === "string" ? Buffer.byteLength(init.body) : init.body.byteLength;
  const r = await fetch(`${base}${path}`, init as RequestInit);
  const body = new Uint8Array(await r.arrayBuffer());
  wire.received += body.byteLength;
  return new Response(body, { status: r.status, headers: r.headers });
}

async function scrape(): Promise<{ text: string; m: Map<string, number> }> {
  const r = await fetch(`${base}/metrics`);
  expect(r.status).toBe(200);
  expect(r.headers.get("content-type")).toContain("text/plain");
  const text = await r.text();
  return { text, m: parse(text) };
}

describe("GET /metrics", () => {
  test("counts exactly the requests, bytes, store operations and finalize of a known workload", async () => {
    wire.sent = 0;
    wire.received = 0;
    const user = newUser();
    const auth = authAt(t, user);
    const ct = randomCiphertext(5 * 1024 + 300);
    const chunkSize = 1024;
    const manifest = makeManifest({ owner: user.address, ciphertext: ct });
    const chunkCount = Math.ceil(ct.length / chunkSize);
    const open = await call("/upload/session", {
      method: "POST",
      headers: { authorization: auth, "content-type": "application/json" },
      body: JSON.stringify({
        manifest,
        chunk_count: chunkCount,
        chunk_size: chunkSize,
        ciphertext_size: ct.length,
      }),
    });
    expect(open.status).toBe(200);
    const sid = ((await open.json()) as { Success: { session_id: string } }).Success.session_id;
    for (let i = 0; i < chunkCount; i++) {
      const r = await call(`/upload/session/${sid}/chunk/${i}`, {
        method: "PUT",
        headers: { authorization: auth },
        body: chunkOf(ct, chunkSize, i),
      });
      expect(r.status).toBe(200);
    }
    const fin = await call(`/upload/session/${sid}/finalize`, {
      method: "POST",
      headers: { authorization: auth },
    });
    expect(fin.status).toBe(200);
    const dl = await call(`/download/${user.address}/${FOLDER}/${fileIdOf(manifest)}`, {
      headers: { authorization: auth },
    });
    expect(dl.status).toBe(200);
    expect((await dl.arrayBuffer()).byteLength).toBe(ct.length);
    const bad = await call(`/upload/session/${sid}/status`, { headers: { authorization: "Bearer nope" } });
    expect(bad.status).toBe(401);
    expect((await call("/no/such/route")).status).toBe(404);
    const search = await call(`/search_files/${user.address}?q=report`, { headers: { authorization: auth } });
    expect(search.status).toBe(200);
    // A second session, aborted: its chunk goes to the deletion queue.
    const small = randomCiphertext(100);
    const otherOpen = await call("/upload/session", {
      method: "POST",
      headers: { authorization: auth, "content-type": "application/json" },
      body: JSON.stringify({
        manifest: makeManifest({ owner: user.address, ciphertext: small, path: "other.bin" }),
        chunk_count: 1,
        chunk_size: 1024,
        ciphertext_size: small.length,
      }),
    });
    expect(otherOpen.status).toBe(200);
    const other = {
      sessionId: ((await otherOpen.json()) as { Success: { session_id: string } }).Success.session_id,
    };
    expect(
      (
        await call(`/upload/session/${other.sessionId}`, {
          method: "DELETE",
          headers: { authorization: auth },
        })
      ).status,
    ).toBe(200);

    const { text, m } = await scrape();
    const chunkRoute = "/upload/session/:session_id/chunk/:chunk_index";
    expect(
      sum(m, "esync_http_requests_total", { method: "PUT", route: chunkRoute, status_class: "2xx" }),
    ).toBe(chunkCount);
    expect(sum(m, "esync_http_request_duration_seconds_count", { route: chunkRoute })).toBe(chunkCount);
    expect(sum(m, "esync_chunk_put_duration_seconds_count", { outcome: "ok" })).toBe(chunkCount);
    expect(sum(m, "esync_http_requests_total", { route: "unmatched", status_class: "4xx" })).toBe(1);
    expect(
      sum(m, "esync_http_requests_total", {
        route: "/upload/session/:session_id/status",
        status_class: "4xx",
      }),
    ).toBe(1);
    expect(sum(m, "esync_auth_failures_total", { reason: "unknown_token" })).toBe(1);
    // Bytes: what the test put on the wire and read back, the in-process session open excepted.
    expect(sum(m, "esync_http_received_bytes_total")).toBe(wire.sent);
    expect(sum(m, "esync_http_sent_bytes_total")).toBe(wire.received);
    expect(sum(m, "esync_finalize_duration_seconds_count", { outcome: "ok" })).toBe(1);
    expect(sum(m, "esync_download_duration_seconds_count", { outcome: "ok" })).toBe(1);
    expect(sum(m, "esync_blob_operation_duration_seconds_count", { op: "put", outcome: "ok" })).toBe(
      chunkCount,
    );
    expect(sum(m, "esync_blob_put_bytes_total")).toBe(ct.length);
    expect(sum(m, "esync_blake3_hashed_bytes_total")).toBeGreaterThanOrEqual(ct.length);
    expect(sum(m, "esync_search_duration_seconds_count")).toBe(1);
    expect(sum(m, "esync_upload_sessions", { state: "finalized" })).toBe(1);
    expect(sum(m, "esync_upload_sessions", { state: "receiving" })).toBe(0);
    // The aborted session's chunks, and those the finalized file was assembled from.
    expect(sum(m, "esync_deletion_queue_depth")).toBe(2);
    expect(sum(m, "esync_blob_operation_duration_seconds_count", { op: "compose", outcome: "ok" })).toBe(1);
    expect(sum(m, "esync_sweeper_runs_total")).toBe(0);
    // No label value names the user, the session or a file.
    for (const secret of [user.address, sid, other.sessionId, fileIdOf(manifest)])
      expect(text).not.toContain(secret);

    await t.sweeper.tick();
    const after = (await scrape()).m;
    expect(sum(after, "esync_sweeper_runs_total", { outcome: "ok" })).toBe(1);
    expect(sum(after, "esync_deletion_queue_depth")).toBe(0);
    expect(
      sum(after, "esync_blob_operation_duration_seconds_count", { op: "delete_prefix", outcome: "ok" }),
    ).toBe(2);
  });

  test("labels a finalize by its hashing path: running_hash for an in-order upload", async () => {
    const user = newUser();
    const ct = randomCiphertext(3000);
    const s = await openSession(t, user, ct, { chunkSize: 1024 });
    for (let i = 0; i < s.chunkCount; i++) {
      const r = await t.fetch(`/upload/session/${s.sessionId}/chunk/${i}`, {
        method: "PUT",
        headers: { authorization: s.auth },
        body: chunkOf(ct, 1024, i) as BodyInit,
      });
      expect(r.status).toBe(200);
    }
    const fin = await t.fetch(`/upload/session/${s.sessionId}/finalize`, {
      method: "POST",
      headers: { authorization: s.auth },
    });
    expect(fin.status).toBe(200);
    const m = parse(await t.metrics.render());
    expect(sum(m, "esync_finalize_duration_seconds_count", { path: "running_hash", outcome: "ok" })).toBe(1);
  });

  test("does not label a finalize running_hash when a hashed chunk was uploaded again", async () => {
    const user = newUser();
    const ct = randomCiphertext(3000);
    const s = await openSession(t, user, ct, { chunkSize: 1024 });
    for (const i of [...Array(s.chunkCount).keys(), 0]) {
      const r = await t.fetch(`/upload/session/${s.sessionId}/chunk/${i}`, {
        method: "PUT",
        headers: { authorization: s.auth },
        body: chunkOf(ct, 1024, i) as BodyInit,
      });
      expect(r.status).toBe(200);
    }
    const fin = await t.fetch(`/upload/session/${s.sessionId}/finalize`, {
      method: "POST",
      headers: { authorization: s.auth },
    });
    expect(fin.status).toBe(200);
    const m = parse(await t.metrics.render());
    expect(sum(m, "esync_finalize_duration_seconds_count", { outcome: "ok" })).toBe(1);
    expect(sum(m, "esync_finalize_duration_seconds_count", { path: "running_hash" })).toBe(0);
  });
});

describe("single-shot uploads and the blob store decorator", () => {
  test("counts a single-shot upload by outcome and times its store operations", async () => {
    const user = newUser();
    const ct = randomCiphertext(2000);
    const r = await uploadSingle(
      t,
      authAt(t, user),
      makeManifest({ owner: user.address, ciphertext: ct }),
      ct,
    );
    expect(r.status).toBe(200);
    const m = parse(await t.metrics.render());
    expect(sum(m, "esync_single_upload_duration_seconds_count", { outcome: "ok" })).toBe(1);
    expect(
      sum(m, "esync_http_requests_total", { method: "POST", route: "/upload", status_class: "2xx" }),
    ).toBe(1);
    expect(sum(m, "esync_blob_put_bytes_total")).toBe(ct.length);
  });

  test("InstrumentedBlobStore is Persistable and FileBacked exactly when the wrapped store is, and labels a missing object not_found", async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    const wrapped = new InstrumentedBlobStore(t.blobs, metrics);
    expect(isPersistable(wrapped)).toBe(isPersistable(t.blobs));
    expect(isFileBacked(wrapped)).toBe(isFileBacked(t.blobs));
    const plain: BlobStore = {
      kind: "plain",
      put: async () => {},
      get: async (key) => {
        throw new BlobNotFoundError(key);
      },
      size: async () => null,
      list: async () => [],
      delete: async () => {},
      deletePrefix: async () => {},
      check: async () => {},
      close: async () => {},
    };
    const p = new InstrumentedBlobStore(plain, metrics);
    expect(isPersistable(p)).toBe(false);
    expect(isFileBacked(p)).toBe(false);
    await expect(p.get("a/b")).rejects.toBeInstanceOf(BlobNotFoundError);
    const m = parse(await metrics.render());
    expect(
      sum(m, "esync_blob_operation_duration_seconds_count", {
        backend: "plain",
        op: "get",
        outcome: "not_found",
      }),
    ).toBe(1);
  });
});

describe("ESYNC_METRICS_PORT", () => {
  test("returns 404 for /metrics on the public app when a metrics port is set, and serves it on that port", async () => {
    const app = makeTestApp({ ESYNC_METRICS_PORT: "0" });
    const metricsServer = serveMetrics(app.metrics, "127.0.0.1", 0);
    try {
      expect((await app.fetch("/metrics")).status).toBe(404);
      expect((await app.fetch("/health")).status).toBe(200);
      const r = await fetch(`http://127.0.0.1:${metricsServer.port}/metrics`);
      expect(r.status).toBe(200);
      expect(
        parse(await r.text()).get(
          'esync_http_requests_total{method="GET",route="/health",status_class="2xx"}',
        ),
      ).toBe(1);
      expect((await fetch(`http://127.0.0.1:${metricsServer.port}/health`)).status).toBe(404);
    } finally {
      await metricsServer.stop(true);
      await app.close();
    }
  });

  test("a fresh Metrics has its own registry: two apps never see each other's counts", async () => {
    const a = new Metrics({ defaultMetrics: false });
    const b = new Metrics({ defaultMetrics: false });
    a.httpSentBytes.inc(5);
    expect(sum(parse(await a.render()), "esync_http_sent_bytes_total")).toBe(5);
    expect(sum(parse(await b.render()), "esync_http_sent_bytes_total")).toBe(0);
  });
});
