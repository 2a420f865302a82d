/**
 * Chunk-slot starvation: 8 self-made accounts keep 32 chunk PUTs each open (256, the default
 * `ESYNC_MAX_INFLIGHT_CHUNKS`), trickling one byte a second and reopening each connection as soon
 * as the server closes it. Meanwhile a well-behaved client of another account PUTs 4 MiB chunks
 * one after the other for `WINDOW_MS`: at least 90% of its tries must succeed, each within a few
 * seconds, because slots go to clients that move bytes (docs/operator-guide.md#chunk-upload-slots): the minimum body rate applies after a short grace, a newcomer evicts the slowest
 * holder of an account over its fair share, and accounts share the cap.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import net from "node:net";
import { newUser } from "../support/fixtures.ts";
import { type ServerProcess, startServer } from "../support/server.ts";
import { ChaosClient, chaosSeed, FOLDER, p99, Rng, reportFigure } from "./support.ts";

const ACCOUNTS = 8;
const PER_ACCOUNT = 32;
const ATTACK_CHUNK = 64 * 1024;
const GOOD_CHUNK = 4 * 1024 * 1024;
const GOOD_CHUNKS = 4;
const WINDOW_MS = 30_000;
/** Longest a good chunk PUT may take (its time limit), ms. */
const TRY_LIMIT_MS = 5_000;
const SUCCESS_RATE = 0.9;

let server: ServerProcess;
const sockets = new Set<net.Socket>();

beforeAll(async () => {
  server = await startServer({ env: { ESYNC_LOG_LEVEL: "error" } });
}, 60_000);

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await server?.stop();
  if (server) rmSync(server.dataDir, { recursive: true, force: true });
}, 60_000);

test("under 8 accounts × 32 chunk PUTs trickling 1 byte/s, a good client's 4 MiB chunk PUTs succeed ≥ 90% of tries within 5 s", async () => {
  const seed = chaosSeed();
  console.log(`chaos: trickle seed ${seed}`);
  const rng = new Rng(seed);

  // The attackers: one real session each, of PER_ACCOUNT small chunks.
  const attackers = await Promise.all(
    [...Array(ACCOUNTS)].map(async () => {
      const c = new ChaosClient(server.url, newUser());
      const sid = await c.openSession(
        { folder: FOLDER, path: "attack.bin", ciphertext: rng.bytes(ATTACK_CHUNK * PER_ACCOUNT) },
        ATTACK_CHUNK,
      );
      return { c, sid };
    }),
  );
  const good = new ChaosClient(server.url, newUser(), TRY_LIMIT_MS, false);
  const goodCt = rng.bytes(GOOD_CHUNK * GOOD_CHUNKS);
  const goodSid = await good.openSession(
    { folder: FOLDER, path: "good.bin", ciphertext: goodCt },
    GOOD_CHUNK,
  );
  // Warm-up of the chunk route, before the attack.
  expect((await good.putChunk(goodSid, goodCt, GOOD_CHUNK, 0)).status).toBe(200);

  const attackAnswers = new Map<string, number>();
  let attacking = true;
  const open = (a: { c: ChaosClient; sid: string }, index: number) => {
    if (!attacking) return;
    const s = net.connect(server.port, "127.0.0.1", () => {
      s.write(
        `PUT /upload/session/${a.sid}/chunk/${index} HTTP/1.1\r\nhost: 127.0.0.1\r\n` +
          `authorization: ${a.c.user.auth}\r\ncontent-type: application/octet-stream\r\n` +
          `content-length: ${ATTACK_CHUNK}\r\n\r\n`,
      );
    });
    sockets.add(s);
    let head = "";
    s.on("data", (d: Buffer) => {
      if (head.length < 12) {
        head += d.toString("latin1");
        if (head.length >= 12) {
          const status = head.slice(9, 12);
          attackAnswers.set(status, (attackAnswers.get(status) ?? 0) + 1);
        }
      }
    });
    s.on("error", () => {});
    s.on("close", () => {
      sockets.delete(s);
      // Reopen at once, as the attack of the issue does.
      setTimeout(() => open(a, index), 20);
    });
  };
  for (const a of attackers) for (let i = 0; i < PER_ACCOUNT; i++) open(a, i);
  const trickle = setInterval(() => {
    for (const s of sockets) if (!s.destroyed && s.readyState === "open") s.write("x");
  }, 1000);

  const outcomes = new Map<string, number>();
  const latencies: number[] = [];
  let ok = 0;
  let tries = 0;
  try {
    await Bun.sleep(3000); // the attackers fill the slots
    const end = Date.now() + WINDOW_MS;
    while (Date.now() < end) {
      const i = tries % GOOD_CHUNKS;
      tries++;
      const t0 = performance.now();
      let what: string;
      try {
        const r = await good.putChunk(goodSid, goodCt, GOOD_CHUNK, i);
        what = String(r.status);
        if (r.status === 200) ok++;
      } catch (e) {
        what = (e as Error).name;
      }
      latencies.push(performance.now() - t0);
      outcomes.set(what, (outcomes.get(what) ?? 0) + 1);
      await Bun.sleep(100);
    }
  } finally {
    attacking = false;
    clearInterval(trickle);
    for (const s of sockets) s.destroy();
  }
  const rate = ok / tries;
  reportFigure("trickle_seed", seed);
  reportFigure("trickle_good_tries", tries);
  reportFigure("trickle_good_success_rate", Math.round(rate * 1000) / 1000);
  reportFigure("trickle_good_outcomes", JSON.stringify(Object.fromEntries(outcomes)));
  reportFigure("trickle_good_p99_ms", Math.round(p99(latencies)));
  reportFigure("trickle_good_max_ms", Math.round(Math.max(...latencies)));
  reportFigure("trickle_attacker_answers", JSON.stringify(Object.fromEntries(attackAnswers)));
  expect(rate).toBeGreaterThanOrEqual(SUCCESS_RATE);
  expect(Math.max(...latencies)).toBeLessThan(TRY_LIMIT_MS);
}, 180_000);
