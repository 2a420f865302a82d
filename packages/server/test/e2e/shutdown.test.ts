/**
 * Graceful shutdown of the real server process (issue 13): SIGTERM during parallel chunk PUTs
 * and a finalize lets every in-flight request finish, exits 0 with a log line, and loses nothing
 * acknowledged (after a restart the session resumes and finalizes); a request still running when
 * the grace period ends is cut and the process still exits 0; a second signal exits at once.
 * Also: with ESYNC_METRICS_PORT, /metrics is served only on that port.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import { makeManifest, newUser, randomCiphertext } from "../support/fixtures.ts";
import { freePort, type ServerProcess, startServer } from "../support/server.ts";

const MiB = 1024 * 1024;
const user = newUser();
const dirs: string[] = [];
const running: ServerProcess[] = [];

afterEach(async () => {
  for (const s of running.splice(0)) if (s.proc.exitCode === null) await s.kill();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function start(env: Record<string, string>, dataDir?: string): Promise<ServerProcess> {
  const s = await startServer({
    dataDir,
    env: { ESYNC_LOG_LEVEL: "info", ...env },
  });
  running.push(s);
  if (!dataDir) dirs.push(s.dataDir);
  return s;
}

/** Opens a session for `ct` in chunks of `chunkSize`; returns its id. */
async function openSession(
  s: ServerProcess,
  ct: Uint8Array,
  chunkSize: number,
  path: string,
): Promise<string> {
  const r = await fetch(`${s.url}/upload/session`, {
    method: "POST",
    headers: { authorization: user.auth, "content-type": "application/json" },
    body: JSON.stringify({
      manifest: makeManifest({ owner: user.address, ciphertext: ct, path }),
      chunk_count: Math.ceil(ct.length / chunkSize),
      chunk_size: chunkSize,
      ciphertext_size: ct.length,
    }),
  });
  expect(r.status).toBe(200);
  return ((await r.json()) as { Success: { session_id: string } }).Success.session_id;
}

/** A body that sends `data` in two halves, `pauseMs` apart (so the request is in flight for a while). */
function slowBody(data: Uint8Array, pauseMs: number): ReadableStream<Uint8Array> {
  const half = Math.floor(data.length / 2);
  let step = 0;
  return new ReadableStream<Uint8Array>({
    async pull(c) {
      if (step === 0) c.enqueue(data.subarray(0, half));
      else if (step === 1) {
        await Bun.sleep(pauseMs);
        c.enqueue(data.subarray(half));
      } else c.close();
      step++;
    },
  });
}

/** The outcome of a request: its status, or `failed` when the connection failed; never hangs past 30 s. */
async function outcome(p: Promise<Response>): Promise<number | "failed"> {
  const timeout = Bun.sleep(30_000).then(() => "hung" as const);
  const r = await Promise.race([p.then((res) => res.status).catch(() => "failed" as const), timeout]);
  if (r === "hung") throw new Error("a request hung through the shutdown");
  return r;
}

function putChunk(s: ServerProcess, sid: string, i: number, body: BodyInit): Promise<Response> {
  return fetch(`${s.url}/upload/session/${sid}/chunk/${i}`, {
    method: "PUT",
    headers: { authorization: user.auth },
    body,
    // @ts-expect-error Bun's fetch takes `duplex` for streamed request bodies
    duplex: "half",
  });
}

async function sessionStatus(
  s: ServerProcess,
  sid: string,
): Promise<{ state: string; chunks_received: number[] }> {
  const r = await fetch(`${s.url}/upload/session/${sid}/status`, { headers: { authorization: user.auth } });
  expect(r.status).toBe(200);
  return ((await r.json()) as { Success: { state: string; chunks_received: number[] } }).Success;
}

function finalize(s: ServerProcess, sid: string): Promise<Response> {
  return fetch(`${s.url}/upload/session/${sid}/finalize`, {
    method: "POST",
    headers: { authorization: user.auth, "content-length": "0" },
  });
}

describe("graceful shutdown", () => {
  test("SIGTERM during parallel chunk PUTs and a finalize: every request completes, exit 0, and after a restart the session resumes and finalizes", async () => {
    const first = await start({ ESYNC_SHUTDOWN_GRACE_SECONDS: "20" });
    const chunk = MiB;
    const big = randomCiphertext(8 * chunk);
    const bigSid = await openSession(first, big, chunk, "shutdown/big.bin");
    const small = randomCiphertext(3 * chunk);
    const smallSid = await openSession(first, small, chunk, "shutdown/small.bin");
    for (let i = 0; i < 3; i++) {
      const r = await putChunk(first, smallSid, i, small.subarray(i * chunk, (i + 1) * chunk) as BodyInit);
      expect(r.status).toBe(200);
    }
    // Chunks 0-5 of the big file are in flight (each paused 800 ms mid-body) when SIGTERM arrives.
    const puts = [0, 1, 2, 3, 4, 5].map((i) =>
      outcome(putChunk(first, bigSid, i, slowBody(big.subarray(i * chunk, (i + 1) * chunk), 800))),
    );
    const fin = outcome(finalize(first, smallSid));
    await Bun.sleep(250);
    const signalled = performance.now();
    first.proc.kill("SIGTERM");
    const results = await Promise.all(puts);
    const finResult = await fin;
    const code = await first.proc.exited;
    expect(code).toBe(0);
    expect(performance.now() - signalled).toBeLessThan(15_000);
    for (const r of results) expect(r === 200 || r === "failed" || r === 503).toBe(true);
    // They were in flight before the listener closed: the grace period lets them finish.
    expect(results.filter((r) => r === 200).length).toBe(6);
    expect(finResult === 200 || finResult === "failed").toBe(true);
    const out = first.output();
    expect(out).toContain('"event":"server.shutting_down"');
    expect(out).toMatch(/"event":"server.stopped".*"drained":true/);

    const second = await start({}, first.dataDir);
    const st = await sessionStatus(second, bigSid);
    const acknowledged = results.flatMap((r, i) => (r === 200 ? [i] : []));
    expect(st.state).toBe("receiving");
    expect(st.chunks_received).toEqual(acknowledged);
    for (let i = 0; i < 8; i++) {
      if (st.chunks_received.includes(i)) continue;
      const r = await putChunk(second, bigSid, i, big.subarray(i * chunk, (i + 1) * chunk) as BodyInit);
      expect(r.status).toBe(200);
    }
    expect((await finalize(second, bigSid)).status).toBe(200);
    if (finResult !== 200) expect((await finalize(second, smallSid)).status).toBe(200);
    else expect((await sessionStatus(second, smallSid)).state).toBe("finalized");
    const manifest = makeManifest({ owner: user.address, ciphertext: big, path: "shutdown/big.bin" });
    const fileId = Buffer.from(manifest.path_hash as number[]).toString("hex");
    const dl = await fetch(`${second.url}/download/${user.address}/${manifest.folder_hash}/${fileId}`, {
      headers: { authorization: user.auth },
    });
    expect(dl.status).toBe(200);
    expect(blake3Hex(new Uint8Array(await dl.arrayBuffer()))).toBe(blake3Hex(big));
    expect(await second.stop()).toBe(0);
  }, 120_000);

  test("a request still running when the grace period ends is cut, nothing of it is recorded, and the process exits 0", async () => {
    const s = await start({ ESYNC_SHUTDOWN_GRACE_SECONDS: "1" });
    const ct = randomCiphertext(MiB);
    const sid = await openSession(s, ct, MiB, "shutdown/cut.bin");
    const put = outcome(putChunk(s, sid, 0, slowBody(ct, 8_000)));
    await Bun.sleep(250);
    const signalled = performance.now();
    s.proc.kill("SIGTERM");
    expect(await s.proc.exited).toBe(0);
    expect(performance.now() - signalled).toBeLessThan(6_000);
    expect(await put).not.toBe(200);
    expect(s.output()).toMatch(/"event":"server.stopped".*"drained":false/);
    const again = await start({}, s.dataDir);
    dirs.push(s.dataDir);
    expect((await sessionStatus(again, sid)).chunks_received).toEqual([]);
    expect(await again.stop()).toBe(0);
  }, 60_000);

  test("a second signal during the shutdown exits at once", async () => {
    const s = await start({ ESYNC_SHUTDOWN_GRACE_SECONDS: "60" });
    const ct = randomCiphertext(MiB);
    const sid = await openSession(s, ct, MiB, "shutdown/twice.bin");
    const put = outcome(putChunk(s, sid, 0, slowBody(ct, 30_000)));
    await Bun.sleep(250);
    s.proc.kill("SIGTERM");
    await Bun.sleep(300);
    expect(s.proc.exitCode).toBeNull();
    const signalled = performance.now();
    s.proc.kill("SIGTERM");
    expect(await s.proc.exited).toBe(143);
    expect(performance.now() - signalled).toBeLessThan(3_000);
    expect(s.output()).toContain('"event":"server.shutdown_forced"');
    expect(await put).not.toBe(200);
  }, 60_000);
});

describe("ESYNC_METRICS_PORT on the real process", () => {
  test("serves /metrics only on the metrics port (404 on the public port)", async () => {
    const metricsPort = freePort();
    const s = await start({ ESYNC_METRICS_PORT: String(metricsPort) });
    expect((await fetch(`${s.url}/metrics`)).status).toBe(404);
    const r = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(r.status).toBe(200);
    const text = await r.text();
    expect(text).toContain('esync_http_requests_total{method="GET",route="/health",status_class="2xx"}');
    expect(text).toContain("process_cpu_user_seconds_total");
    expect(await s.stop()).toBe(0);
  }, 60_000);
});
