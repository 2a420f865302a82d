/**
 * Memory bombs: proves that request bodies cannot grow the server's memory. Every endpoint gets,
 * all in parallel, a body sent with `Transfer-Encoding: chunked` (no `Content-Length`) far past
 * its limit (320 MiB where the endpoint reads a body: JSON, multipart `/upload` above its 256 MiB
 * limit, a chunk PUT above its chunk size; 64 MiB where it reads none), and a body declaring an
 * oversized `Content-Length` that then really streams. The server's peak resident set (VmHWM
 * of `/proc/<pid>/status`, sampled throughout) must stay under 300 MiB, and the server must
 * answer `/health` afterwards.
 *
 * Should the server be far past the limit (twice it), the attack stops early so that a broken
 * server does not take the test machine's memory with it; the test has failed by then.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import net from "node:net";
import { newUser } from "../support/fixtures.ts";
import { type ServerProcess, startServer } from "../support/server.ts";
import { ChaosClient, fileIdOfPath, memoryOf, Rng, reportFigure } from "./support.ts";

const MiB = 1024 * 1024;
const RSS_LIMIT = 300 * MiB;
const ATTACK_TIMEOUT_MS = 120_000;
const FOLDER = "37a8eec1ce19687d";

let server: ServerProcess;

beforeAll(async () => {
  server = await startServer({ env: { ESYNC_LOG_LEVEL: "error" } });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  if (server) rmSync(server.dataDir, { recursive: true, force: true });
}, 60_000);

/** One attack: a request head and how many body bytes to stream after it. */
interface Bomb {
  name: string;
  head: string;
  chunked: boolean;
  budget: number;
}

/** Streams a bomb until its budget is sent or the server closes; resolves with bytes sent. */
function detonate(port: number, bomb: Bomb, piece: Uint8Array, stop: { now: boolean }): Promise<number> {
  return new Promise((resolve) => {
    let sent = 0;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      s.destroy();
      resolve(sent);
    };
    const s = net.connect(port, "127.0.0.1", () => {
      s.write(bomb.head);
      pump();
    });
    s.on("error", finish);
    s.on("close", finish);
    s.on("data", () => {});
    const frameHead = Buffer.from(`${piece.length.toString(16)}\r\n`);
    const crlf = Buffer.from("\r\n");
    const pump = () => {
      while (!done && !stop.now && sent < bomb.budget) {
        let ok: boolean;
        if (bomb.chunked) {
          s.write(frameHead);
          ok = s.write(piece);
          ok = s.write(crlf) && ok;
        } else ok = s.write(piece);
        sent += piece.length;
        if (!ok) {
          s.once("drain", pump);
          return;
        }
      }
      if (!done) {
        if (bomb.chunked && !stop.now) s.write("0\r\n\r\n");
        // Give the server a moment to answer, then hang up.
        setTimeout(finish, 2000);
      }
    };
  });
}

test("chunked and oversized bodies on every endpoint, in parallel: server peak RSS stays under 300 MiB", async () => {
  const rng = new Rng(1);
  const c = new ChaosClient(server.url, newUser());
  const auth = c.user.auth;
  const addr = c.user.address;
  const ct = rng.bytes(8 * MiB);
  const sid = await c.openSession({ folder: FOLDER, path: "bomb/a.bin", ciphertext: ct }, 8 * MiB);
  const sid2 = await c.openSession({ folder: FOLDER, path: "bomb/b.bin", ciphertext: ct }, 8 * MiB);
  await c.uploadSingle({ folder: FOLDER, path: "bomb/c.bin", ciphertext: rng.bytes(4096) });
  const fileId = fileIdOfPath("bomb/c.bin");

  /** [method, path, content-type, reads a body] of every endpoint. */
  const endpoints: [string, string, string, boolean][] = [
    ["POST", "/register_folder", "application/json", true],
    ["DELETE", "/unregister_folder", "application/json", true],
    ["POST", "/upload/session", "application/json", true],
    ["PUT", `/upload/session/${sid}/chunk/0`, "application/octet-stream", true],
    ["POST", "/upload", "multipart/form-data; boundary=bombbomb", true],
    ["POST", `/upload/session/${sid}/finalize`, "application/json", false],
    ["GET", `/upload/session/${sid}/status`, "application/json", false],
    ["DELETE", `/upload/session/${sid2}`, "application/json", false],
    ["GET", `/list_folders/${addr}`, "application/json", false],
    ["GET", `/get_state/${addr}/${FOLDER}`, "application/json", false],
    ["GET", `/download/${addr}/${FOLDER}/${fileId}`, "application/json", false],
    ["DELETE", `/delete/${addr}/${FOLDER}/${"00".repeat(32)}`, "application/json", false],
    ["GET", `/search_files/${addr}?q=bomb`, "application/json", false],
    ["GET", `/browse/${addr}/${FOLDER}`, "application/json", false],
    ["GET", "/health", "application/json", false],
    ["POST", "/no/such/route", "application/json", true],
  ];
  const bombs: Bomb[] = [];
  for (const [method, path, type, readsBody] of endpoints) {
    const base = `${method} ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: ${auth}\r\ncontent-type: ${type}\r\n`;
    bombs.push({
      name: `${method} ${path} chunked`,
      head: `${base}transfer-encoding: chunked\r\n\r\n`,
      chunked: true,
      budget: readsBody ? 320 * MiB : 64 * MiB,
    });
    bombs.push({
      name: `${method} ${path} declared 2 GiB`,
      head: `${base}content-length: ${2 * 1024 * MiB}\r\n\r\n`,
      chunked: false,
      budget: 64 * MiB,
    });
  }
  // A body that keeps every parser going: the start of a JSON array / a multipart part, then digits.
  const piece = new Uint8Array(MiB).fill(0x31);
  piece.set(
    new TextEncoder().encode('--bombbomb\r\nContent-Disposition: form-data; name="manifest"\r\n\r\n[1'),
    0,
  );

  const stop = { now: false };
  let peak = memoryOf(server.pid).hwm;
  const baselineRss = memoryOf(server.pid).rss;
  const sampler = setInterval(() => {
    try {
      peak = Math.max(peak, memoryOf(server.pid).hwm);
      if (peak > 2 * RSS_LIMIT) stop.now = true;
    } catch {
      stop.now = true; // the process is gone
    }
  }, 50);
  const timer = setTimeout(() => {
    stop.now = true;
  }, ATTACK_TIMEOUT_MS);
  const t0 = performance.now();
  const sent = await Promise.all(bombs.map((b) => detonate(server.port, b, piece, stop)));
  clearTimeout(timer);
  const seconds = (performance.now() - t0) / 1000;
  await Bun.sleep(1000);
  clearInterval(sampler);
  let alive = true;
  let held = 0;
  try {
    const m = memoryOf(server.pid);
    peak = Math.max(peak, m.hwm);
    held = m.rss;
  } catch {
    alive = false;
  }
  const health = alive
    ? await fetch(`${server.url}/health`, { signal: AbortSignal.timeout(10_000) }).then(
        (r) => r.status,
        () => 0,
      )
    : 0;
  const totalSent = sent.reduce((a, b) => a + b, 0);

  reportFigure("memory_bombs", bombs.length);
  reportFigure("memory_bomb_mib_sent", Math.round(totalSent / MiB));
  reportFigure("memory_bomb_seconds", Math.round(seconds));
  reportFigure("memory_bomb_stopped_early", stop.now);
  reportFigure("memory_baseline_rss_mib", Math.round(baselineRss / MiB));
  reportFigure("memory_peak_rss_mib", Math.round(peak / MiB));
  reportFigure("memory_rss_after_mib", Math.round(held / MiB));

  expect(alive).toBe(true);
  expect(health).toBe(200);
  expect(peak).toBeLessThan(RSS_LIMIT);
}, 300_000);
