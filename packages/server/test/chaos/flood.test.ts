/**
 * Connection floods: proves that 2,000 slow-body connections (bodies trickled at one byte a
 * second: chunk PUTs from self-made keys to sessions that do not exist, chunk PUTs to a real
 * session of the attacker, session creates and single-shot uploads) and 500 idle connections
 * (nothing sent) do not starve a well-behaved client: while the flood lasts, its uploads
 * (sessions and single-shot) and downloads all succeed and their p99 latency stays under
 * 250 ms; once the attackers go silent, the server closes what they left open (body idle and
 * header timeouts, `ESYNC_BODY_IDLE_TIMEOUT_SECONDS` / `ESYNC_HEADER_TIMEOUT_SECONDS`, set to 3 s
 * here) and its descriptor count returns to its baseline.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import net from "node:net";
import { newUser, type TestUser } from "../support/fixtures.ts";
import { type ServerProcess, startServer } from "../support/server.ts";
import {
  blake3Hex,
  ChaosClient,
  chaosSeed,
  fdCount,
  fileIdOfPath,
  p99,
  Rng,
  reportFigure,
} from "./support.ts";

const SLOW = 2000;
const IDLE = 500;
const WINDOW_MS = 15_000;
const P99_LIMIT_MS = 250;
/** Most upload/download rounds of the well-behaved client (the window usually ends first). */
const MAX_ROUNDS = 5000;
/** Seconds the server is told to wait for a silent body or incomplete headers. */
const TIMEOUT_S = 3;
/** How long the descriptors may take to come back once the attackers are silent. */
const SETTLE_MS = 30_000;
const FOLDER = "37a8eec1ce19687d";

let server: ServerProcess;
const sockets: net.Socket[] = [];

beforeAll(async () => {
  server = await startServer({
    env: {
      ESYNC_BODY_IDLE_TIMEOUT_SECONDS: String(TIMEOUT_S),
      ESYNC_HEADER_TIMEOUT_SECONDS: String(TIMEOUT_S),
      ESYNC_LOG_LEVEL: "error",
    },
  });
}, 60_000);

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await server?.stop();
  if (server) rmSync(server.dataDir, { recursive: true, force: true });
}, 60_000);

/** Soft RLIMIT_NOFILE of this process (from /proc/self/limits). */
function nofileLimit(): number {
  const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync("/proc/self/limits", "utf8"));
  return !m || m[1] === "unlimited" ? Number.POSITIVE_INFINITY : Number(m[1]);
}

/** Opens a TCP connection to the server and resolves once connected. */
function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1", () => {
      s.off("error", reject);
      s.on("error", () => {});
      resolve(s);
    });
    s.once("error", reject);
  });
}

test("2,000 slow-body and 500 idle connections: the well-behaved client never fails, p99 under 250 ms, descriptors back to baseline", async () => {
  const limit = nofileLimit();
  const need = SLOW + IDLE + 500;
  if (limit < need)
    throw new Error(
      `RLIMIT_NOFILE of the test process is ${limit}, the flood needs ${need}: run with \`ulimit -n ${need}\``,
    );
  const seed = chaosSeed();
  console.log(`chaos: flood seed ${seed}`);
  const rng = new Rng(seed);

  // Its own connection per request: the server closes connections idle for TIMEOUT_S (set short
  // here to reclaim the attackers quickly), and a pooled one reused at that instant is reset.
  const good = new ChaosClient(server.url, newUser(), 10_000, false);
  // Warm up the good client (keep-alive connections, first compile of every route) and take the baseline.
  const warm = rng.bytes(64 * 1024);
  await good.uploadSingle({ folder: FOLDER, path: "warm.bin", ciphertext: warm });
  expect((await good.download(FOLDER, fileIdOfPath("warm.bin"))).hash).toBe(blake3Hex(warm));
  await Bun.sleep(500);
  const baseline = fdCount(server.pid);

  // The attacker: one real session of its own, and self-made keys.
  const attacker = new ChaosClient(server.url, newUser());
  const big = 8 * 1024 * 1024;
  const attackSid = await attacker.openSession(
    { folder: FOLDER, path: "attack.bin", ciphertext: rng.bytes(big) },
    big,
  );
  const selfMade: TestUser[] = [...Array(100)].map(() => newUser());
  const heads = [
    (i: number) =>
      `PUT /upload/session/${crypto.randomUUID()}/chunk/0 HTTP/1.1\r\nhost: 127.0.0.1\r\n` +
      `authorization: ${selfMade[i % selfMade.length]!.auth}\r\ncontent-type: application/octet-stream\r\n` +
      `content-length: ${big}\r\n\r\n`,
    () =>
      `PUT /upload/session/${attackSid}/chunk/0 HTTP/1.1\r\nhost: 127.0.0.1\r\n` +
      `authorization: ${attacker.user.auth}\r\ncontent-type: application/octet-stream\r\n` +
      `content-length: ${big}\r\n\r\n`,
    (i: number) =>
      `POST /upload/session HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: ${selfMade[i % selfMade.length]!.auth}\r\n` +
      "content-type: application/json\r\ncontent-length: 1000000\r\n\r\n",
    (i: number) =>
      `POST /upload HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: ${selfMade[i % selfMade.length]!.auth}\r\n` +
      `content-type: multipart/form-data; boundary=xx\r\ncontent-length: ${big}\r\n\r\n--xx\r\n`,
  ];

  let closedByServer = 0;
  const slow: net.Socket[] = [];
  for (let i = 0; i < SLOW; i += 100) {
    const batch = await Promise.all([...Array(Math.min(100, SLOW - i))].map(() => connect(server.port)));
    batch.forEach((s, j) => {
      s.on("close", () => closedByServer++);
      s.on("data", () => {});
      s.write(heads[(i + j) % heads.length]!(i + j));
      slow.push(s);
    });
  }
  const idle: net.Socket[] = [];
  for (let i = 0; i < IDLE; i += 100) {
    const batch = await Promise.all([...Array(Math.min(100, IDLE - i))].map(() => connect(server.port)));
    for (const s of batch) {
      s.on("close", () => closedByServer++);
      idle.push(s);
    }
  }
  sockets.push(...slow, ...idle);
  const fdsUnderFlood = fdCount(server.pid);
  const trickle = setInterval(() => {
    for (const s of slow) if (!s.destroyed) s.write(s.bytesWritten % 2 ? " " : "{");
  }, 1000);

  // The well-behaved client, for the whole window.
  const latencies: number[] = [];
  const failures: string[] = [];
  const timed = async (what: string, f: () => Promise<void>) => {
    const t0 = performance.now();
    try {
      await f();
    } catch (e) {
      failures.push(`${what}: ${(e as Error).message}`);
    }
    latencies.push(performance.now() - t0);
  };
  const end = Date.now() + WINDOW_MS;
  let n = 0;
  try {
    while (Date.now() < end && n < MAX_ROUNDS) {
      n++;
      const path = `good/${n}.bin`;
      const ct = rng.bytes(rng.int(16, 256) * 1024);
      const chunk = 128 * 1024;
      if (n % 2) {
        let sid = "";
        await timed("session create", async () => {
          sid = await good.openSession({ folder: FOLDER, path, ciphertext: ct }, chunk);
        });
        for (let i = 0; sid && i < Math.ceil(ct.length / chunk); i++)
          await timed(`chunk ${i}`, async () => {
            const r = await good.putChunk(sid, ct, chunk, i);
            if (r.status !== 200) throw new Error(`${r.status} ${JSON.stringify(r.body)}`);
          });
        if (sid)
          await timed("finalize", async () => {
            await good.finalize(sid);
          });
      } else {
        await timed("upload", async () => {
          await good.uploadSingle({ folder: FOLDER, path, ciphertext: ct });
        });
      }
      await timed("download", async () => {
        const d = await good.download(FOLDER, fileIdOfPath(path));
        if (d.status !== 200 || d.hash !== blake3Hex(ct)) throw new Error(`download ${d.status} ${d.hash}`);
      });
      await timed("health", async () => {
        const r = await fetch(`${server.url}/health`, {
          signal: AbortSignal.timeout(10_000),
          keepalive: false,
        });
        await r.arrayBuffer();
        if (r.status !== 200) throw new Error(`health ${r.status}`);
      });
    }
  } finally {
    clearInterval(trickle);
  }
  const p99ms = Math.round(p99(latencies));
  const closedDuringFlood = closedByServer;

  // The attackers go silent without closing: the server's timeouts must close what is left.
  const settleEnd = Date.now() + SETTLE_MS;
  let fds = fdCount(server.pid);
  while (Date.now() < settleEnd && fds > baseline + 8) {
    await Bun.sleep(500);
    fds = fdCount(server.pid);
  }
  const health = await fetch(`${server.url}/health`)
    .then((r) => r.status)
    .catch(() => 0);

  reportFigure("flood_seed", seed);
  reportFigure("flood_good_requests", latencies.length);
  reportFigure("flood_good_failures", failures.length);
  reportFigure("flood_p99_ms", p99ms);
  reportFigure("flood_server_fds_baseline", baseline);
  reportFigure("flood_server_fds_under_flood", fdsUnderFlood);
  reportFigure("flood_server_fds_after", fds);
  reportFigure("flood_connections_closed_by_server_during_window", closedDuringFlood);
  reportFigure("flood_connections_closed_by_server_after_settle", closedByServer);
  if (failures.length)
    console.log(`chaos: flood failures (first 10):\n  ${failures.slice(0, 10).join("\n  ")}`);

  expect(health).toBe(200);
  expect(failures).toEqual([]);
  expect(p99ms).toBeLessThan(P99_LIMIT_MS);
  expect(fds).toBeLessThanOrEqual(baseline + 8);
}, 180_000);
