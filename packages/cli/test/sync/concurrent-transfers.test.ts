/**
 * `esync sync` runs the uploads and downloads of a pass `jobs` at once (src/sync/engine.ts,
 * `runSyncPass`): a counting proxy in front of a real server sees how many `/upload` and
 * `/download` requests are in flight. Deletions and moves still run alone, after the transfers
 * planned before them; a fatal answer (no server, 401, 403, 5xx once retries end) stops the pass once the running transfers have ended.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ApiError } from "@esync/client/api-error.ts";
import { type ServerProcess, startServer } from "@esync/server/test/support/server.ts";
import { makeDevice, snapshotTree } from "./support.ts";

let server: ServerProcess;
let proxy: ReturnType<typeof Bun.serve>;
let work: string;
/** Requests in flight through the proxy, by kind, and the most seen at once. */
const inFlight = { upload: 0, download: 0 };
const peak = { upload: 0, download: 0 };
/** When set, the proxy answers the n-th `/upload` from now with this status. */
let failUploadAt: { n: number; status: number } | null = null;
/** Whether a request started while a failing answer was already sent (must stay false). */
let startedAfterFatal = false;
let fatalSent = false;

function kindOf(req: Request): "upload" | "download" | null {
  const path = new URL(req.url).pathname;
  if (req.method === "POST" && path === "/upload") return "upload";
  if (req.method === "GET" && path.startsWith("/download/")) return "download";
  return null;
}

beforeAll(async () => {
  server = await startServer({ env: { ESYNC_DISK_FSYNC: "off" } });
  work = mkdtempSync(join(tmpdir(), "esync-sync-jobs-"));
  proxy = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const kind = kindOf(req);
      const url = new URL(req.url);
      const target = `${server.url}${url.pathname}${url.search}`;
      if (kind === null) return fetch(target, { method: req.method, headers: req.headers, body: req.body });
      if (fatalSent) startedAfterFatal = true;
      inFlight[kind]++;
      peak[kind] = Math.max(peak[kind], inFlight[kind]);
      try {
        // Hold each transfer a little so that concurrent ones overlap.
        await Bun.sleep(30);
        if (kind === "upload" && failUploadAt && --failUploadAt.n === 0) {
          fatalSent = true;
          await req.arrayBuffer();
          return Response.json(
            { success: false, error: { code: "forbidden", message: "injected" } },
            { status: failUploadAt.status },
          );
        }
        const res = await fetch(target, { method: req.method, headers: req.headers, body: req.body });
        const body = await res.arrayBuffer();
        return new Response(body, { status: res.status, headers: res.headers });
      } finally {
        inFlight[kind]--;
      }
    },
  });
});

afterAll(async () => {
  proxy?.stop(true);
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

function reset() {
  peak.upload = 0;
  peak.download = 0;
  failUploadAt = null;
  startedAfterFatal = false;
  fatalSent = false;
}

function writeTree(root: string, n: number) {
  mkdirSync(join(root, "sub"), { recursive: true });
  for (let i = 0; i < n; i++) writeFileSync(join(root, i % 2 ? "sub" : "", `f${i}.txt`), `content ${i}\n`);
}

describe("sync runs transfers at once", () => {
  test("uploads and downloads of one pass overlap up to `jobs`, and both trees end identical", async () => {
    reset();
    const url = `http://127.0.0.1:${proxy.port}`;
    const a = await makeDevice("a", join(work, "a1"), url, "jobs-overlap", 4);
    const b = await makeDevice("b", join(work, "b1"), url, "jobs-overlap", 4);
    writeTree(a.root, 12);
    const up = await a.sync();
    expect(up.uploaded).toBe(12);
    expect(peak.upload).toBeGreaterThan(1);
    expect(peak.upload).toBeLessThanOrEqual(4);
    mkdirSync(b.root, { recursive: true });
    const down = await b.sync();
    expect(down.downloaded).toBe(12);
    expect(peak.download).toBeGreaterThan(1);
    expect(peak.download).toBeLessThanOrEqual(4);
    expect(snapshotTree(b.root)).toEqual(snapshotTree(a.root));
  });

  test("jobs 1 runs one transfer at a time", async () => {
    reset();
    const url = `http://127.0.0.1:${proxy.port}`;
    const a = await makeDevice("a", join(work, "a2"), url, "jobs-one", 1);
    writeTree(a.root, 6);
    expect((await a.sync()).uploaded).toBe(6);
    expect(peak.upload).toBe(1);
  });

  test("a 403 answer ends the pass after the running transfers, starting no new one", async () => {
    reset();
    const url = `http://127.0.0.1:${proxy.port}`;
    const a = await makeDevice("a", join(work, "a3"), url, "jobs-fatal", 4);
    writeTree(a.root, 16);
    failUploadAt = { n: 3, status: 403 };
    const err = await a.sync().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(403);
    expect(startedAfterFatal).toBe(false);
    expect(inFlight.upload).toBe(0);
    // The next pass uploads what is left; nothing is lost.
    failUploadAt = null;
    const again = await a.sync();
    expect(again.failures).toEqual([]);
    const b = await makeDevice("b", join(work, "b3"), url, "jobs-fatal", 4);
    mkdirSync(b.root, { recursive: true });
    await b.sync();
    expect(snapshotTree(b.root)).toEqual(snapshotTree(a.root));
  });
});
