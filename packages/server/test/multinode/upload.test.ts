/**
 * A 200 MiB upload spread over three server processes that share one metadata database and one
 * bucket (issue 11, "Multi-node end to end"): the chunks go round-robin over the nodes, 4 in
 * flight as real clients send them; node 2 is SIGKILLed mid-upload and the remaining chunks go to
 * nodes 0 and 1; node 2 is started again (a fresh process that received none of the chunks) and
 * finalizes, so it takes the full BLAKE3 pass; then every node serves the file byte-identical,
 * whole and by ranges.
 *
 * The ciphertext is 200 MiB of plaintext's worth of random bytes (docs/protocol.md#ciphertext size) in a file,
 * sent chunk by chunk from disk; nothing holds it in memory.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { createBlake3 } from "@esync/protocol/blake3.ts";
import { ciphertextSizeFor } from "@esync/protocol/framing.ts";
import { type Cluster, scrape, startCluster, sumMetric } from "../support/cluster.ts";
import { newUser } from "../support/fixtures.ts";
import { SETUP_TIMEOUT_MS, skipS3 } from "../support/s3-server.ts";
import { tempDir } from "../support/tmp.ts";
import {
  call,
  describeCluster,
  downloadPath,
  expectSuccess,
  finalize,
  openSession,
  UPLOAD_RESULT_KEYS,
} from "./support.ts";

const MiB = 1024 * 1024;
const PLAINTEXT = 200 * MiB;
const CHUNK = 8 * MiB;
const IN_FLIGHT = 4;
const CT_SIZE = ciphertextSizeFor(PLAINTEXT);
const CHUNKS = Math.ceil(CT_SIZE / CHUNK);

const ctPath = join(tempDir("esync-mn-upload-"), "ciphertext.bin");
let ctHash = "";
let cluster: Cluster;

beforeAll(async () => {
  if (skipS3) return;
  const fh = await open(ctPath, "w");
  const h = createBlake3();
  try {
    for (let at = 0; at < CT_SIZE; at += CHUNK) {
      const piece = randomBytes(Math.min(CHUNK, CT_SIZE - at));
      h.update(piece);
      await fh.write(piece);
    }
  } finally {
    await fh.close();
  }
  ctHash = h.digestHex();
  cluster = await startCluster({ nodes: 3, label: "upload" });
}, SETUP_TIMEOUT_MS);

afterAll(async () => {
  await cluster?.close();
}, 120_000);

/** Chunk `i` of the ciphertext file, read from disk as it is sent. */
function chunkBody(i: number): Blob {
  return Bun.file(ctPath).slice(i * CHUNK, Math.min(CT_SIZE, (i + 1) * CHUNK));
}

/** BLAKE3 and length of a response body, streamed. */
async function hashBody(r: Response): Promise<{ hash: string; length: number }> {
  const h = createBlake3();
  let length = 0;
  for await (const piece of r.body!) {
    h.update(piece);
    length += piece.byteLength;
  }
  return { hash: h.digestHex(), length };
}

describeCluster("a 200 MiB upload over three nodes", () => {
  test("chunks round-robin over 3 nodes, node 2 SIGKILLed mid-upload, finalize (200, full BLAKE3 pass) on a restarted node 2 that received none, every node serves it byte-identical whole and by ranges", async () => {
    const user = newUser();
    const s = await openSession(cluster.url(0), user, {
      path: "big/two-hundred.bin",
      chunkSize: CHUNK,
      size: CT_SIZE,
      hash: ctHash,
      sizeBytes: PLAINTEXT,
    });
    expect(s.chunkCount).toBe(CHUNKS);

    // Chunk i goes to alive[i % alive.length]; node 2 dies once a third of the chunks are in.
    let alive = [0, 1, 2];
    const ackedBy: number[][] = [[], [], []];
    const queue = [...Array(CHUNKS).keys()];
    let killed: Promise<number> | null = null;
    let acked = 0;
    const worker = async () => {
      for (;;) {
        const i = queue.shift();
        if (i === undefined) return;
        const node = alive[i % alive.length]!;
        let status = 0;
        let text = "";
        try {
          const r = await fetch(`${cluster.url(node)}/upload/session/${s.sid}/chunk/${i}`, {
            method: "PUT",
            headers: { authorization: user.auth, "content-type": "application/octet-stream" },
            body: chunkBody(i),
          });
          status = r.status;
          text = await r.text();
        } catch (e) {
          // Only the killed node may drop a connection.
          if (node !== 2 || killed === null) throw e;
        }
        if (status === 200) {
          expect(JSON.parse(text)).toEqual({ Success: { chunk_index: i } });
          ackedBy[node]!.push(i);
          acked++;
          if (acked >= CHUNKS / 3 && killed === null) {
            killed = cluster.kill(2);
            alive = [0, 1];
          }
          continue;
        }
        // Any answer but 200 fails the test; only a connection the kill broke is retried.
        if (status !== 0) throw new Error(`chunk ${i} on node ${node}: ${status} ${text}`);
        queue.push(i);
        await Bun.sleep(50);
      }
    };
    await Promise.all([...Array(IN_FLIGHT)].map(worker));
    expect(killed).not.toBeNull();
    expect(await killed!).not.toBe(0);
    expect(ackedBy[0]!.length).toBeGreaterThan(0);
    expect(ackedBy[1]!.length).toBeGreaterThan(0);
    expect(ackedBy[2]!.length).toBeGreaterThan(0);
    expect(ackedBy.flat().sort((a, b) => a - b)).toEqual([...Array(CHUNKS).keys()]);

    const st = await call(cluster.url(1), user, "GET", `/upload/session/${s.sid}/status`);
    expect(st.body.Success.state).toBe("receiving");
    expect(st.body.Success.chunks_received).toEqual([...Array(CHUNKS).keys()]);

    await cluster.start(2);
    const fin = await finalize(cluster.url(2), user, s.sid);
    const result = expectSuccess(fin, UPLOAD_RESULT_KEYS);
    const metrics = await scrape(cluster.url(2));
    expect(
      sumMetric(metrics, "esync_finalize_duration_seconds_count", { path: "full_pass", outcome: "ok" }),
    ).toBe(1);
    expect(sumMetric(metrics, "esync_finalize_duration_seconds_count")).toBe(1);

    const ranges: [string, number, number][] = [
      ["bytes=0-99", 0, 100],
      [`bytes=${CHUNK - 10}-${CHUNK + 9}`, CHUNK - 10, CHUNK + 10],
      [`bytes=${7 * CHUNK - 1}-${9 * CHUNK}`, 7 * CHUNK - 1, 9 * CHUNK + 1],
      [`bytes=${CT_SIZE - 3 * MiB}-`, CT_SIZE - 3 * MiB, CT_SIZE],
      ["bytes=-1000", CT_SIZE - 1000, CT_SIZE],
    ];
    for (const n of cluster.nodes) {
      const url = `${n.url}${downloadPath(user, s.manifest)}`;
      const whole = await fetch(url, { headers: { authorization: user.auth } });
      expect(whole.status).toBe(200);
      expect(whole.headers.get("x-revision-id")).toBe(Buffer.from(result.revision_id).toString("hex"));
      expect(await hashBody(whole)).toEqual({ hash: ctHash, length: CT_SIZE });
      for (const [header, start, end] of ranges) {
        const r = await fetch(url, { headers: { authorization: user.auth, range: header } });
        expect(r.status).toBe(206);
        expect(r.headers.get("content-range")).toBe(`bytes ${start}-${end - 1}/${CT_SIZE}`);
        const got = Buffer.from(await r.arrayBuffer());
        const want = Buffer.from(await Bun.file(ctPath).slice(start, end).arrayBuffer());
        expect(got.equals(want)).toBe(true);
      }
    }
  });
});
