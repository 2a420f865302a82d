/**
 * S3 failing under the real server process (`bun run src/main.ts`, `ESYNC_STORAGE=s3`) on a
 * Ceph RGW of this file's own (never the shared test server, since its gateway is stopped here).
 *
 * How S3 is stopped: the radosgw process itself is killed (SIGKILL) and started again
 * (`scripts/s3/gateway.sh`), while the monitor and the OSD keep running, so objects stored
 * before the stop are still there after it. This is the real server going away (in-flight
 * connections reset, new ones refused), not a simulation; it is fast here (stop ~2 s, start
 * ~0.2 s), so no TCP proxy is needed. SIGKILL rather than SIGTERM: a crash is the harsher case,
 * and radosgw's graceful drain takes ~4 s.
 *
 * Also: the server started with an S3 endpoint where nothing listens exits non-zero at start-up
 * with a message naming the endpoint.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import type { S3Config } from "../../src/config/config.ts";
import type { Json } from "../http/helpers.ts";
import { makeManifest, newUser, type TestUser } from "../support/fixtures.ts";
import {
  type DedicatedS3,
  removeTestBucket,
  SETUP_TIMEOUT_MS,
  s3Env,
  s3TestConfig,
  skipS3,
  startDedicatedS3,
} from "../support/s3-server.ts";
import { freePort, SERVER_ROOT, type ServerProcess, startServer } from "../support/server.ts";
import { type StallProxy, startStallProxy } from "../support/stall-proxy.ts";

const MiB = 1024 * 1024;
const CHUNK = 4 * MiB;
const CHUNKS = 16;
const CONCURRENCY = 4;
const FOLDER = "37a8eec1ce19687d";

/** The outcome of one request: status, error code (if any) and Retry-After (if any). */
interface Outcome {
  status: number;
  code: string | null;
  retryAfter: string | null;
  body: Json;
}

async function outcomeOf(r: Response): Promise<Outcome> {
  const text = await r.text();
  let body: Json = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return {
    status: r.status,
    code: body?.Error?.error ?? null,
    retryAfter: r.headers.get("retry-after"),
    body,
  };
}

/** Asserts the documented answer to a chunk PUT while S3 is down: 503 storage_unavailable, retryable. */
function expectUnavailable(o: Outcome): void {
  expect({ status: o.status, code: o.code }).toEqual({ status: 503, code: "storage_unavailable" });
  expect(Object.keys(o.body)).toEqual(["Error"]);
  expect(o.retryAfter).toMatch(/^[1-9][0-9]*$/);
}

const describeS3 = skipS3 ? describe.skip : describe;

describeS3("S3 stopped and restarted under a running server", () => {
  const work = mkdtempSync(join(tmpdir(), "esync-s3-fault-"));
  let rgw: DedicatedS3 | undefined;
  let server: ServerProcess;
  let env: Record<string, string>;
  const ct = randomBytes(CHUNKS * CHUNK - 12345);
  const ctHash = blake3Hex(ct);
  const user: TestUser = newUser();

  beforeAll(async () => {
    rgw = await startDedicatedS3(join(work, "rgw"));
    env = s3Env({ ...rgw.server, bucket: `esync-fault-${randomBytes(4).toString("hex")}`, prefix: "" });
    server = await startServer({ dataDir: join(work, "data"), env });
  }, SETUP_TIMEOUT_MS);

  afterAll(async () => {
    if (server && server.proc.exitCode === null) await server.kill();
    await rgw?.stop();
    rmSync(work, { recursive: true, force: true });
  }, 60_000);

  function request(method: string, path: string, body?: BodyInit, headers: Record<string, string> = {}) {
    return fetch(`${server.url}${path}`, { method, headers: { authorization: user.auth, ...headers }, body });
  }
  const putChunk = async (sid: string, i: number) =>
    outcomeOf(
      await request("PUT", `/upload/session/${sid}/chunk/${i}`, ct.subarray(i * CHUNK, (i + 1) * CHUNK), {
        "content-type": "application/octet-stream",
      }),
    );
  const status = async (sid: string) => outcomeOf(await request("GET", `/upload/session/${sid}/status`));
  const finalize = async (sid: string) =>
    outcomeOf(await request("POST", `/upload/session/${sid}/finalize`, undefined, { "content-length": "0" }));

  test("chunk PUTs get 503 storage_unavailable while S3 is down, finalize 500 storage_inconsistency, the session stays receiving; after S3 is back the upload resumes from status, finalizes and downloads byte-identical", async () => {
    const manifest = makeManifest({ owner: user.address, ciphertext: ct, path: "fault/s3.bin" });
    const created = await outcomeOf(
      await request(
        "POST",
        "/upload/session",
        JSON.stringify({ manifest, chunk_count: CHUNKS, chunk_size: CHUNK, ciphertext_size: ct.length }),
        { "content-type": "application/json" },
      ),
    );
    expect(created.status).toBe(200);
    const sid: string = created.body.Success.session_id;

    // 1. Upload with 4 PUTs in flight; the 4th acknowledgement kills radosgw while others stream.
    const acked: number[] = [];
    const refused: Outcome[] = [];
    let stopping: Promise<void> | null = null;
    const queue = [...Array(CHUNKS).keys()];
    const worker = async () => {
      for (let i = queue.shift(); i !== undefined; i = queue.shift()) {
        const o = await putChunk(sid, i);
        if (o.status === 200) {
          expect(o.body.Success.chunk_index).toBe(i);
          acked.push(i);
          if (acked.length === 4) stopping ??= rgw!.stopGateway();
        } else {
          refused.push(o);
        }
        // Once S3 is being stopped, wait for it to be gone before the next PUT.
        if (stopping) await stopping;
      }
    };
    await Promise.all([...Array(CONCURRENCY)].map(worker));
    await stopping;
    expect(acked.length).toBeGreaterThanOrEqual(4);
    expect(acked.length).toBeLessThan(CHUNKS);
    expect(refused.length).toBe(CHUNKS - acked.length);
    for (const o of refused) expectUnavailable(o);

    // 2. With S3 gone: a chunk PUT is 503 with Retry-After; status shows exactly the acknowledged chunks.
    const missing = [...Array(CHUNKS).keys()].filter((i) => !acked.includes(i));
    expectUnavailable(await putChunk(sid, missing[0]!));
    let st = await status(sid);
    expect(st.status).toBe(200);
    expect(st.body.Success.state).toBe("receiving");
    expect(st.body.Success.chunks_received).toEqual([...acked].sort((a, b) => a - b));

    // 3. S3 back: resume from status with the chunks it lacks.
    await rgw!.startGateway();
    st = await status(sid);
    const toSend = [...Array(CHUNKS).keys()].filter((i) => !st.body.Success.chunks_received.includes(i));
    expect(toSend).toEqual(missing);
    for (const i of toSend) expect((await putChunk(sid, i)).status).toBe(200);
    expect((await status(sid)).body.Success.chunks_received).toEqual([...Array(CHUNKS).keys()]);

    // 4. S3 down again at finalize: 500 storage_inconsistency, twice; the session stays receiving.
    await rgw!.stopGateway();
    for (let attempt = 0; attempt < 2; attempt++) {
      const fin = await finalize(sid);
      expect({ status: fin.status, code: fin.code }).toEqual({ status: 500, code: "storage_inconsistency" });
      st = await status(sid);
      expect(st.body.Success.state).toBe("receiving");
      expect(st.body.Success.chunks_received).toEqual([...Array(CHUNKS).keys()]);
    }

    // 5. S3 back: finalize commits, and the download is the uploaded bytes.
    await rgw!.startGateway();
    const fin = await finalize(sid);
    expect(fin.status).toBe(200);
    expect((await status(sid)).body.Success.state).toBe("finalized");
    const fileId = Buffer.from(manifest.path_hash as number[]).toString("hex");
    const path = `/download/${user.address}/${FOLDER}/${fileId}`;
    const whole = await request("GET", path);
    expect(whole.status).toBe(200);
    const got = Buffer.from(await whole.arrayBuffer());
    expect(got.length).toBe(ct.length);
    expect(got.equals(ct)).toBe(true);
    const ranged = await request("GET", path, undefined, { range: `bytes=${CHUNK - 7}-${3 * CHUNK + 6}` });
    expect(ranged.status).toBe(206);
    expect(Buffer.from(await ranged.arrayBuffer()).equals(ct.subarray(CHUNK - 7, 3 * CHUNK + 7))).toBe(true);
    expect(blake3Hex(got)).toBe(ctHash);

    // The bucket goes with the dedicated RGW in afterAll.
    expect(await server.stop()).toBe(0);
  }, 120_000);
});

describe("S3 unreachable at start-up", () => {
  test("the server exits non-zero with a message naming the S3 endpoint", async () => {
    const endpoint = `http://127.0.0.1:${freePort()}`; // nothing listens there
    const dataDir = mkdtempSync(join(tmpdir(), "esync-s3-unreachable-"));
    const childEnv: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("ESYNC_") && v) childEnv[k] = v;
    try {
      const proc = Bun.spawn([process.execPath, "run", join(SERVER_ROOT, "src", "main.ts")], {
        cwd: SERVER_ROOT,
        env: {
          ...childEnv,
          ...s3Env({
            endpoint,
            bucket: "esync-unreachable",
            accessKey: "x",
            secretKey: "y",
            region: "us-east-1",
            prefix: "",
          }),
          ESYNC_HOST: "127.0.0.1",
          ESYNC_PORT: String(freePort()),
          ESYNC_DATA_DIR: dataDir,
        },
        stdin: "ignore",
        stdout: "pipe",
        stderr: "pipe",
      });
      const timer = setTimeout(() => proc.kill("SIGKILL"), 30_000);
      const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
      clearTimeout(timer);
      expect(code).not.toBe(0);
      expect(proc.signalCode).toBeNull();
      expect(stderr).toContain(endpoint);
      expect(stderr).toMatch(/unreachable/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 40_000);
});

describeS3("S3 that stops answering (connections accepted, nothing answered)", () => {
  const TIMEOUT_MS = 1500;
  const work = mkdtempSync(join(tmpdir(), "esync-s3-stall-"));
  let proxy: StallProxy;
  let server: ServerProcess;
  let cfg: S3Config;
  const user: TestUser = newUser();
  const ct = randomBytes(3 * MiB + 17);

  beforeAll(async () => {
    cfg = await s3TestConfig("stall");
    const upstream = new URL(cfg.endpoint);
    proxy = await startStallProxy(upstream.hostname, Number(upstream.port));
    server = await startServer({
      dataDir: join(work, "data"),
      env: {
        ...s3Env({ ...cfg, endpoint: `http://127.0.0.1:${proxy.port}` }),
        ESYNC_S3_CONNECT_TIMEOUT_MS: String(TIMEOUT_MS),
        ESYNC_S3_FIRST_BYTE_TIMEOUT_MS: String(TIMEOUT_MS),
        ESYNC_S3_IDLE_TIMEOUT_MS: String(TIMEOUT_MS),
      },
    });
  }, SETUP_TIMEOUT_MS);

  afterAll(async () => {
    proxy?.resume();
    if (server && server.proc.exitCode === null) await server.kill();
    await proxy?.close();
    if (cfg) await removeTestBucket(cfg);
    rmSync(work, { recursive: true, force: true });
  }, 60_000);

  const request = (method: string, path: string, body?: BodyInit, headers: Record<string, string> = {}) =>
    fetch(`${server.url}${path}`, { method, headers: { authorization: user.auth, ...headers }, body });
  const openSession = async (path: string) => {
    const manifest = makeManifest({ owner: user.address, ciphertext: ct, path });
    const r = await outcomeOf(
      await request(
        "POST",
        "/upload/session",
        JSON.stringify({ manifest, chunk_count: 1, chunk_size: ct.length, ciphertext_size: ct.length }),
        { "content-type": "application/json" },
      ),
    );
    expect(r.status).toBe(200);
    return {
      sid: r.body.Success.session_id as string,
      fileId: Buffer.from(manifest.path_hash as number[]).toString("hex"),
    };
  };
  const putChunk = async (sid: string) => {
    const t0 = performance.now();
    const o = await outcomeOf(
      await request("PUT", `/upload/session/${sid}/chunk/0`, ct, {
        "content-type": "application/octet-stream",
      }),
    );
    return { ...o, ms: performance.now() - t0 };
  };

  test("a chunk PUT and a download are answered 503 storage_unavailable with Retry-After within the time-out while S3 hangs, and succeed once it answers again", async () => {
    const first = await openSession("stall/a.bin");
    expect((await putChunk(first.sid)).status).toBe(200);
    const fin = await request("POST", `/upload/session/${first.sid}/finalize`, undefined, {
      "content-length": "0",
    });
    expect(fin.status).toBe(200);
    await fin.arrayBuffer();
    const download = `/download/${user.address}/${FOLDER}/${first.fileId}`;

    const second = await openSession("stall/b.bin");
    proxy.stall();
    const put = await putChunk(second.sid);
    expectUnavailable(put);
    expect(put.ms).toBeLessThan(TIMEOUT_MS * 2 + 3000);
    const t0 = performance.now();
    const got = await outcomeOf(await request("GET", download));
    const getMs = performance.now() - t0;
    expectUnavailable(got);
    expect(getMs).toBeLessThan(TIMEOUT_MS * 2 + 3000);
    console.log(
      `s3-stall: chunk PUT answered ${put.status} in ${put.ms.toFixed(0)} ms, download ${got.status} in ${getMs.toFixed(0)} ms (time-outs ${TIMEOUT_MS} ms)`,
    );

    proxy.resume();
    expect((await putChunk(second.sid)).status).toBe(200);
    const again = await request("GET", download);
    expect(again.status).toBe(200);
    expect(Buffer.from(await again.arrayBuffer()).equals(ct)).toBe(true);
  }, 120_000);
});
