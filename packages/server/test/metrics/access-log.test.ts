/**
 * Request ids, the access log and the probes (issue 13, docs/protocol.md#health-probes): every response carries
 * `x-request-id` (the client's when well-formed), every request writes one `http.request` line,
 * every log line a request causes names its id, and `/readyz` tells ready from not ready.
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { BlobStore } from "../../src/storage/blob-store.ts";
import { createLogger } from "../../src/util/log.ts";
import { chunkOf, FOLDER, fileIdOf, openSession, uploadViaSession } from "../http/helpers.ts";
import { makeTestApp, type TestApp } from "../support/app.ts";
import { newUser, randomCiphertext } from "../support/fixtures.ts";

type Line = Record<string, unknown>;

let t: TestApp | null = null;
afterEach(async () => {
  await t?.close();
  t = null;
});

/** A test app whose log lines (the real JSON logger) are collected in `lines`. */
function appWithLog(blobs?: (store: BlobStore) => BlobStore): { app: TestApp; lines: Line[] } {
  const lines: Line[] = [];
  const log = createLogger("debug", (line) => void lines.push(JSON.parse(line) as Line));
  const app = makeTestApp({}, blobs, log);
  t = app;
  return { app, lines };
}

/** Set to make `failingStore`'s `get` fail. */
const broken = { get: false };

/** A store whose `check` fails with an I/O error, and `get` too while `broken.get` is set. */
function failingStore(store: BlobStore): BlobStore {
  const io = () => Object.assign(new Error("EIO: disk gone"), { code: "EIO" });
  broken.get = false;
  return {
    kind: store.kind,
    put: (k, b, n, o) => store.put(k, b, n, o),
    get: async (k, r) => {
      if (broken.get) throw io();
      return store.get(k, r);
    },
    size: (k) => store.size(k),
    list: (p) => store.list(p),
    delete: (k) => store.delete(k),
    deletePrefix: (p) => store.deletePrefix(p),
    check: async () => {
      throw io();
    },
    close: () => store.close(),
  };
}

describe("x-request-id and the access log", () => {
  test("writes one http.request line with the route template, status, bytes, duration, truncated caller and the client's request id", async () => {
    const { app, lines } = appWithLog();
    const user = newUser();
    const ct = randomCiphertext(2048);
    const s = await openSession(app, user, ct, { chunkSize: 1024 });
    lines.length = 0;
    const r = await app.fetch(`/upload/session/${s.sessionId}/chunk/1`, {
      method: "PUT",
      headers: { authorization: s.auth, "content-length": "1024", "x-request-id": "client-Req.42_a" },
      body: chunkOf(ct, 1024, 1) as BodyInit,
    });
    expect(r.status).toBe(200);
    expect(r.headers.get("x-request-id")).toBe("client-Req.42_a");
    const access = lines.filter((l) => l.event === "http.request");
    expect(access).toHaveLength(1);
    const a = access[0] as Line;
    expect(a).toMatchObject({
      level: "info",
      request_id: "client-Req.42_a",
      method: "PUT",
      route: "/upload/session/:session_id/chunk/:chunk_index",
      status: 200,
      bytes_in: 1024,
      bytes_out: Buffer.byteLength(await r.text()),
      caller: user.address.slice(0, 8),
    });
    expect(typeof a.duration_ms).toBe("number");
    expect(JSON.stringify(a)).not.toContain(s.sessionId);
    // Every line the request caused names it.
    for (const l of lines) expect(l.request_id).toBe("client-Req.42_a");
  });

  test("replaces a malformed or over-long x-request-id with a generated one", async () => {
    const { app } = appWithLog();
    for (const sent of ["has space", "a".repeat(65), "semi;colon", ""]) {
      const r = await app.fetch("/health", { headers: { "x-request-id": sent } });
      expect(r.status).toBe(200);
      const id = r.headers.get("x-request-id");
      expect(id).toMatch(/^[0-9a-f]{16}$/);
      expect(id).not.toBe(sent);
    }
    const a = await app.fetch("/health");
    const b = await app.fetch("/health");
    expect(a.headers.get("x-request-id")).not.toBe(b.headers.get("x-request-id"));
  });

  test("returns 404 not_found for an unknown route with x-request-id and logs it as route unmatched", async () => {
    const { app, lines } = appWithLog();
    const r = await app.fetch("/definitely/not/here", { headers: { "x-request-id": "r404" } });
    expect(r.status).toBe(404);
    expect(r.headers.get("x-request-id")).toBe("r404");
    expect(lines.find((l) => l.event === "http.request")).toMatchObject({
      request_id: "r404",
      route: "unmatched",
      status: 404,
    });
  });

  test("a download while the store cannot be read: 503 storage_unavailable naming the same request id in the message, the header and every log line", async () => {
    const { app, lines } = appWithLog(failingStore);
    const user = newUser();
    const ct = randomCiphertext(1024);
    const { session } = await uploadViaSession(app, user, ct, { chunkSize: 1024 });
    broken.get = true;
    lines.length = 0;
    const r = await app.fetch(`/download/${user.address}/${FOLDER}/${fileIdOf(session.manifest)}`, {
      headers: { authorization: session.auth, "x-request-id": "fail-1" },
    });
    expect(r.status).toBe(503);
    expect(r.headers.get("x-request-id")).toBe("fail-1");
    expect(r.headers.get("retry-after")).toBe("1");
    const body = (await r.json()) as { Error: { error: string; message: string } };
    expect(body.Error.error).toBe("storage_unavailable");
    expect(body.Error.message).toContain("fail-1");
    expect(lines.map((l) => l.event)).toEqual(expect.arrayContaining(["request.failed", "http.request"]));
    expect(lines.length).toBeGreaterThan(1);
    for (const l of lines) expect(l.request_id).toBe("fail-1");
  });
});

describe("GET /healthz and GET /readyz", () => {
  test("returns 200 {status: ok} for /healthz and 200 ready with both checks ok for /readyz", async () => {
    const { app } = appWithLog();
    const h = await app.fetch("/healthz");
    expect(h.status).toBe(200);
    expect(await h.json()).toEqual({ status: "ok" });
    const r = await app.fetch("/readyz");
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: "ready", checks: { database: "ok", storage: "ok" } });
    const legacy = (await (await app.fetch("/health")).json()) as { status: string };
    expect(legacy.status).toBe("healthy");
  });

  test("returns 503 not_ready naming the storage when the blob store check fails", async () => {
    const { app } = appWithLog(failingStore);
    const r = await app.fetch("/readyz");
    expect(r.status).toBe(503);
    expect(await r.json()).toEqual({ status: "not_ready", checks: { database: "ok", storage: "error" } });
    expect((await app.fetch("/healthz")).status).toBe(200);
  });

  test("returns 503 not_ready from the moment the process drains for shutdown", async () => {
    const { app } = appWithLog();
    expect((await app.fetch("/readyz")).status).toBe(200);
    app.services.readiness.drain();
    const r = await app.fetch("/readyz");
    expect(r.status).toBe(503);
    expect(await r.json()).toEqual({
      status: "not_ready",
      checks: { database: "ok", storage: "ok", draining: "shutting_down" },
    });
  });
});
