/**
 * Memory under many large chunk PUTs (issue 28 item 6): 10 accounts send 20 chunk PUTs of 16 MiB
 * each, all 200 at once, from raw sockets that write as fast as the server lets them. The
 * server's peak resident set (VmHWM) must stay under 300 MiB: it holds a bounded number of body
 * bytes, however many PUTs stream (docs/operator-guide.md#chunk-upload-slots). Meanwhile a good
 * client's `/health` and `/get_state` latencies are measured; their p99 (target 250 ms) is
 * reported in bench/results/chaos.json, not asserted: the 200 senders share the server's cores,
 * so it measures the machine as much as the server. Every PUT is answered: 200, or
 * 408/429/503 (or, past the server's bounded number of draining connections, closed before its
 * answer could be read), after which it is sent again a second later until all 200 chunks are
 * stored.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import net from "node:net";
import { makeManifest, newUser } from "../support/fixtures.ts";
import { type ServerProcess, startServer } from "../support/server.ts";
import { ChaosClient, FOLDER, memoryOf, p99, reportFigure } from "./support.ts";

const MiB = 1024 * 1024;
const CHUNK = 16 * MiB;
const ACCOUNTS = 10;
const PER_ACCOUNT = 20;
const RSS_LIMIT = 300 * MiB;

let server: ServerProcess;

beforeAll(async () => {
  server = await startServer({ env: { ESYNC_LOG_LEVEL: "error", ...extraEnv() } });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  if (server) rmSync(server.dataDir, { recursive: true, force: true });
}, 60_000);

/** Settings from `BIG_CHUNKS_ENV` (`A=1,B=2`), to compare configurations by hand. */
function extraEnv(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of (process.env.BIG_CHUNKS_ENV ?? "").split(",").filter(Boolean)) {
    const [k, v] = kv.split("=");
    if (k && v !== undefined) out[k] = v;
  }
  return out;
}

/** One chunk PUT over a raw socket, written as fast as the socket takes it; resolves with the status (0: no answer). */
function rawPut(port: number, path: string, auth: string, body: Uint8Array): Promise<number> {
  return new Promise((resolve) => {
    let answer = "";
    let settled = false;
    const settle = (status: number) => {
      if (settled) return;
      settled = true;
      s.destroy();
      resolve(status);
    };
    const s = net.connect(port, "127.0.0.1", () => {
      s.write(
        `PUT ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${auth}\r\n` +
          `Content-Type: application/octet-stream\r\nContent-Length: ${body.length}\r\n\r\n`,
      );
      pump();
    });
    // 256 KiB at a time, each as soon as the socket takes the last: as fast as the server reads.
    let sent = 0;
    const pump = () => {
      while (!settled && sent < body.length) {
        const piece = body.subarray(sent, sent + 256 * 1024);
        sent += piece.length;
        if (!s.write(piece)) {
          s.once("drain", pump);
          return;
        }
      }
    };
    s.on("data", (d: Buffer) => {
      answer += d.toString("latin1");
      const m = /^HTTP\/1\.1 (\d{3})/.exec(answer);
      if (m && answer.includes("\r\n\r\n")) settle(Number(m[1]));
    });
    s.on("error", () => settle(0));
    s.on("close", () => settle(0));
    s.setTimeout(180_000, () => settle(0));
  });
}

test("200 concurrent 16 MiB chunk PUTs from 10 accounts: server peak RSS under 300 MiB, every PUT answered and all 200 chunks stored", async () => {
  const body = randomBytes(CHUNK);
  const accounts = await Promise.all(
    [...Array(ACCOUNTS)].map(async (_, a) => {
      const c = new ChaosClient(server.url, newUser(), 60_000);
      const size = PER_ACCOUNT * CHUNK;
      // The upload is never finalized: the manifest only has to declare the size.
      const manifest = makeManifest({
        owner: c.user.address,
        ciphertext: { length: size } as Uint8Array,
        ciphertextHash: "0".repeat(64),
        path: `big/${a}.bin`,
      });
      const r = await c.json("POST", "/upload/session", {
        manifest,
        chunk_count: PER_ACCOUNT,
        chunk_size: CHUNK,
        ciphertext_size: size,
      });
      expect(r.status).toBe(200);
      return { c, sid: r.body.Success.session_id as string };
    }),
  );
  const good = new ChaosClient(server.url, newUser());
  await good.uploadSingle({ folder: FOLDER, path: "good.bin", ciphertext: new Uint8Array(100) });

  let peak = memoryOf(server.pid).rss;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, memoryOf(server.pid).rss);
      await Bun.sleep(20);
    }
  })();
  const health: number[] = [];
  const db: number[] = [];
  let probing = true;
  const prober = (async () => {
    for (let i = 0; probing; i++) {
      const t0 = performance.now();
      if (i % 2) await (await fetch(`${server.url}/health`)).arrayBuffer();
      else await good.json("GET", `/get_state/${good.user.address}/${FOLDER}?offset=0&limit=10`);
      (i % 2 ? health : db).push(performance.now() - t0);
      await Bun.sleep(20);
    }
  })();

  // Each PUT is retried after its 408, 429 or 503 (a second later, as Retry-After says) until it
  // is stored, so 200 stay in flight or knocking for the whole run.
  const t0 = performance.now();
  const deadline = t0 + 300_000;
  const statuses: number[] = [];
  await Promise.all(
    accounts.flatMap(({ c, sid }) =>
      [...Array(PER_ACCOUNT)].map(async (_, i) => {
        for (;;) {
          const status = await rawPut(server.port, `/upload/session/${sid}/chunk/${i}`, c.user.auth, body);
          statuses.push(status);
          // 0: the connection was closed before an answer could be read (past the server's
          // bounded number of draining connections); a client retries that too.
          if (status === 200 || ![0, 408, 429, 503].includes(status) || performance.now() > deadline) return;
          await Bun.sleep(1000);
        }
      }),
    ),
  );
  const ms = performance.now() - t0;
  probing = false;
  sampling = false;
  await Promise.all([prober, sampler]);
  const hwm = memoryOf(server.pid).hwm;

  const counts: Record<string, number> = {};
  for (const s of statuses) counts[s] = (counts[s] ?? 0) + 1;
  reportFigure("big_chunks_ms", Math.round(ms));
  reportFigure("big_chunks_statuses", JSON.stringify(counts));
  reportFigure("big_chunks_peak_rss_mib", Math.round(Math.max(peak, hwm) / MiB));
  reportFigure("big_chunks_good_health_p99_ms", Math.round(p99(health)));
  reportFigure("big_chunks_good_db_read_p99_ms", Math.round(p99(db)));

  expect(Math.max(peak, hwm)).toBeLessThan(RSS_LIMIT);
  for (const s of statuses) expect([0, 200, 408, 429, 503]).toContain(s);
  expect(counts[200] ?? 0).toBe(ACCOUNTS * PER_ACCOUNT);
}, 600_000);
