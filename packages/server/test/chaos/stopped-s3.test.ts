/**
 * A stopped S3 (issue 28 item 9): the radosgw process of an RGW of this file's own is frozen
 * with SIGSTOP, so its kernel still accepts connections and nothing answers them, the case
 * where, without time-outs, uploads and downloads hang until S3 returns. With the S3 time-outs
 * (docs/operator-guide.md#s3-time-outs) set to 2 s, chunk PUTs and downloads are answered 503
 * `storage_unavailable` with `Retry-After` within the time-out plus a margin, `/health` stays
 * quick meanwhile, and after SIGCONT the same upload completes and downloads byte-identical.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { makeManifest, newUser } from "../support/fixtures.ts";
import { type DedicatedS3, SETUP_TIMEOUT_MS, s3Env, skipS3, startDedicatedS3 } from "../support/s3-server.ts";
import { type ServerProcess, startServer } from "../support/server.ts";
import { tempDir } from "../support/tmp.ts";
import { FOLDER, p99, reportFigure } from "./support.ts";

const MiB = 1024 * 1024;
const TIMEOUT_MS = 2000;
const work = tempDir("esync-chaos-stopped-s3-");
let rgw: DedicatedS3 | undefined;
let server: ServerProcess | undefined;
let frozen: number | undefined;

beforeAll(async () => {
  if (skipS3) return;
  rgw = await startDedicatedS3(join(work, "rgw"));
  server = await startServer({
    dataDir: join(work, "data"),
    env: {
      ...s3Env({ ...rgw.server, bucket: `esync-stopped-${randomBytes(4).toString("hex")}`, prefix: "" }),
      ESYNC_S3_CONNECT_TIMEOUT_MS: String(TIMEOUT_MS),
      ESYNC_S3_FIRST_BYTE_TIMEOUT_MS: String(TIMEOUT_MS),
      ESYNC_S3_IDLE_TIMEOUT_MS: String(TIMEOUT_MS),
    },
  });
}, SETUP_TIMEOUT_MS);

afterAll(async () => {
  if (frozen !== undefined) process.kill(frozen, "SIGCONT");
  if (server && server.proc.exitCode === null) await server.kill();
  await rgw?.stop();
  rmSync(work, { recursive: true, force: true });
}, 120_000);

(skipS3 ? test.skip : test)(
  "with radosgw stopped (SIGSTOP), chunk PUTs and downloads get 503 storage_unavailable with Retry-After within the S3 time-out, /health p99 < 250 ms; after SIGCONT the upload completes",
  async () => {
    const srv = server!;
    const user = newUser();
    const ct = randomBytes(4 * MiB + 5);
    const call = (method: string, path: string, body?: BodyInit, headers: Record<string, string> = {}) =>
      fetch(`${srv.url}${path}`, { method, headers: { authorization: user.auth, ...headers }, body });
    const open = async (path: string) => {
      const manifest = makeManifest({ owner: user.address, ciphertext: ct, path });
      const r = await call(
        "POST",
        "/upload/session",
        JSON.stringify({ manifest, chunk_count: 2, chunk_size: 2 * MiB + 3, ciphertext_size: ct.length }),
        { "content-type": "application/json" },
      );
      expect(r.status).toBe(200);
      const sid = ((await r.json()) as { Success: { session_id: string } }).Success.session_id;
      return { sid, fileId: Buffer.from(manifest.path_hash as number[]).toString("hex") };
    };
    const put = (sid: string, i: number) =>
      call(
        "PUT",
        `/upload/session/${sid}/chunk/${i}`,
        ct.subarray(i * (2 * MiB + 3), (i + 1) * (2 * MiB + 3)),
        {
          "content-type": "application/octet-stream",
        },
      );
    const finalize = (sid: string) =>
      call("POST", `/upload/session/${sid}/finalize`, undefined, { "content-length": "0" });

    // A file stored while S3 runs, to download while it is stopped.
    const stored = await open("stopped/stored.bin");
    for (const i of [0, 1]) expect((await put(stored.sid, i)).status).toBe(200);
    expect((await finalize(stored.sid)).status).toBe(200);
    const download = `/download/${user.address}/${FOLDER}/${stored.fileId}`;

    const pending = await open("stopped/pending.bin");
    expect((await put(pending.sid, 0)).status).toBe(200);

    frozen = rgw!.pids()[2]!;
    process.kill(frozen, "SIGSTOP");
    const health: number[] = [];
    let probing = true;
    const prober = (async () => {
      while (probing) {
        const t0 = performance.now();
        await (await fetch(`${srv.url}/health`)).arrayBuffer();
        health.push(performance.now() - t0);
        await Bun.sleep(50);
      }
    })();
    const answers: {
      what: string;
      status: number;
      code: string | null;
      retryAfter: string | null;
      ms: number;
    }[] = [];
    const timed = async (what: string, send: () => Promise<Response>) => {
      const t0 = performance.now();
      const r = await send();
      const text = await r.text();
      let code: string | null = null;
      try {
        code = JSON.parse(text)?.Error?.error ?? null;
      } catch {}
      answers.push({
        what,
        status: r.status,
        code,
        retryAfter: r.headers.get("retry-after"),
        ms: performance.now() - t0,
      });
    };
    await Promise.all([
      timed("chunk PUT", () => put(pending.sid, 1)),
      timed("download", () => call("GET", download)),
      timed("chunk PUT", () => put(pending.sid, 1)),
      timed("download", () => call("GET", download)),
    ]);
    probing = false;
    await prober;
    process.kill(frozen, "SIGCONT");
    frozen = undefined;

    const slowest = Math.max(...answers.map((a) => a.ms));
    reportFigure("stopped_s3_timeout_ms", TIMEOUT_MS);
    reportFigure("stopped_s3_slowest_answer_ms", Math.round(slowest));
    reportFigure("stopped_s3_health_p99_ms", Math.round(p99(health)));
    for (const a of answers) {
      expect({ what: a.what, status: a.status, code: a.code }).toEqual({
        what: a.what,
        status: 503,
        code: "storage_unavailable",
      });
      expect(a.retryAfter).toMatch(/^[1-9][0-9]*$/);
    }
    expect(slowest).toBeLessThan(2 * TIMEOUT_MS + 3000);
    expect(p99(health)).toBeLessThan(250);

    // S3 back: the chunk goes in, the upload finalizes and downloads byte-identical.
    let status = 0;
    for (let attempt = 0; attempt < 10 && status !== 200; attempt++) {
      status = (await put(pending.sid, 1)).status;
      if (status !== 200) await Bun.sleep(1000);
    }
    expect(status).toBe(200);
    expect((await finalize(pending.sid)).status).toBe(200);
    const back = await call("GET", download);
    expect(back.status).toBe(200);
    expect(Buffer.from(await back.arrayBuffer()).equals(ct)).toBe(true);
  },
  180_000,
);
