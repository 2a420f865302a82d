/**
 * Finalize across nodes (issue 11, docs/protocol.md#open-rules): three server processes on one metadata
 * database and one bucket. Concurrent finalize calls of one session on three nodes commit exactly
 * once and the losers get 409 with the Conflict envelope; a node finalizing is not undone by
 * another node restarting (start-up recovery must not reset a session a live node is finalizing),
 * so a chunk PUT can never replace bytes that finalize verified.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import { type Cluster, logEvents, scrape, startCluster, sumMetric } from "../support/cluster.ts";
import { newUser } from "../support/fixtures.ts";
import { SETUP_TIMEOUT_MS, skipS3 } from "../support/s3-server.ts";
import {
  call,
  describeCluster,
  download,
  expectConflict,
  expectSuccess,
  finalize,
  openSession,
  putAllChunks,
  putChunk,
  UPLOAD_RESULT_KEYS,
  waitFor,
} from "./support.ts";

const MiB = 1024 * 1024;
let cluster: Cluster;

beforeAll(async () => {
  if (skipS3) return;
  cluster = await startCluster({ nodes: 3, label: "finalize" });
}, SETUP_TIMEOUT_MS);

afterAll(async () => {
  await cluster?.close();
}, 120_000);

/** Finalize calls that reached hashing and committed (`outcome="ok"`), summed over every node. */
async function committedFinalizes(): Promise<number> {
  let n = 0;
  for (const node of cluster.nodes)
    if (node.process)
      n += sumMetric(await scrape(node.url), "esync_finalize_duration_seconds_count", { outcome: "ok" });
  return n;
}

/** Stored sessions in state `finalizing`, as the database says (through node `i`'s metrics). */
async function finalizingSessions(i: number): Promise<number> {
  return sumMetric(await scrape(cluster.url(i)), "esync_upload_sessions", { state: "finalizing" });
}

describeCluster("finalize of one session on three nodes", () => {
  test("three simultaneous finalize calls on three nodes commit once: one 200, two 409 with the Conflict envelope", async () => {
    const user = newUser();
    const urls = cluster.nodes.map((n) => n.url);
    for (let round = 0; round < 3; round++) {
      const before = await committedFinalizes();
      const ct = randomBytes(6 * MiB + 123);
      const s = await openSession(urls[round % 3]!, user, { path: `race/f${round}.bin`, chunkSize: MiB, ct });
      await putAllChunks(urls, user, s, ct);
      const answers = await Promise.all(urls.map((u) => finalize(u, user, s.sid)));
      const ok = answers.filter((a) => a.status === 200);
      expect(answers.map((a) => a.status).sort()).toEqual([200, 409, 409]);
      const result = expectSuccess(ok[0]!, UPLOAD_RESULT_KEYS);
      for (const a of answers.filter((x) => x.status === 409)) expectConflict(a);
      expect(await committedFinalizes()).toBe(before + 1);
      const state = await call(
        urls[(round + 1) % 3]!,
        user,
        "GET",
        `/get_state/${user.address}/${s.manifest.folder_hash}`,
      );
      const files = state.body.Success.files.filter(
        (f: { relative_path: string }) => f.relative_path === `race/f${round}.bin`,
      );
      expect(files).toHaveLength(1);
      expect(files[0].revision_id).toEqual(result.revision_id);
      expect(files[0].revision_seq).toBe(1);
      for (const u of urls) {
        const st = await call(u, user, "GET", `/upload/session/${s.sid}/status`);
        expect(st.body.Success.state).toBe("finalized");
        const again = await finalize(u, user, s.sid);
        expectConflict(again);
        const d = await download(u, user, s.manifest);
        expect(d.status).toBe(200);
        expect(blake3Hex(d.body)).toBe(blake3Hex(ct));
      }
    }
    const finalized = cluster.nodes.flatMap((n) => logEvents(cluster.output(n.index), "session.finalized"));
    expect(finalized).toHaveLength(3);
  });

  test("while node 0 is inside a finalize (frozen mid-hash), finalize on nodes 1 and 2 is 409 Conflict and node 0 then commits (200)", async () => {
    const user = newUser();
    const urls = cluster.nodes.map((n) => n.url);
    // Large enough that node 0 (which received none of the chunks) is still hashing when frozen.
    const ct = randomBytes(96 * MiB);
    const s = await openSession(urls[1]!, user, { path: "frozen/a.bin", chunkSize: 8 * MiB, ct });
    await putAllChunks([urls[1]!, urls[2]!], user, s, ct);
    const first = finalize(urls[0]!, user, s.sid);
    first.catch(() => {}); // awaited below; a failure before that must not be unhandled
    await waitFor(
      "node 0 to move the session to finalizing",
      async () => (await finalizingSessions(1)) === 1,
      30_000,
      10,
    );
    cluster.freeze(0);
    try {
      expect(await finalizingSessions(1)).toBe(1);
      for (const u of [urls[1]!, urls[2]!]) expectConflict(await finalize(u, user, s.sid));
      const put = await putChunk(urls[2]!, user, s.sid, 0, ct.subarray(0, 8 * MiB));
      expect(put.status).toBe(409);
      expect(put.body.Error.error).toBe("conflict");
    } finally {
      cluster.thaw(0);
    }
    expectSuccess(await first, UPLOAD_RESULT_KEYS);
    for (const u of urls) expect(blake3Hex((await download(u, user, s.manifest)).body)).toBe(blake3Hex(ct));
  });

  test("a node restarting while node 0 finalizes leaves the session finalizing: a chunk PUT and a finalize elsewhere are 409, node 0 commits (200) the bytes it verified", async () => {
    const user = newUser();
    const urls = cluster.nodes.map((n) => n.url);
    const ct = randomBytes(96 * MiB);
    const s = await openSession(urls[1]!, user, { path: "restart/a.bin", chunkSize: 8 * MiB, ct });
    await putAllChunks([urls[1]!, urls[2]!], user, s, ct);
    const first = finalize(urls[0]!, user, s.sid);
    first.catch(() => {}); // awaited below; a failure before that must not be unhandled
    await waitFor(
      "node 0 to move the session to finalizing",
      async () => (await finalizingSessions(2)) === 1,
      30_000,
      10,
    );
    cluster.freeze(0);
    try {
      // Node 1 crashes and comes back: its start-up recovery runs while node 0 is mid-finalize.
      await cluster.kill(1);
      await cluster.start(1);
      expect(await finalizingSessions(1)).toBe(1);
      const other = randomBytes(8 * MiB);
      const put = await putChunk(urls[2]!, user, s.sid, 0, other);
      expect(put.status).toBe(409);
      expect(put.body.Error.error).toBe("conflict");
      expectConflict(await finalize(urls[1]!, user, s.sid));
    } finally {
      cluster.thaw(0);
    }
    expectSuccess(await first, UPLOAD_RESULT_KEYS);
    for (const u of urls) {
      const st = await call(u, user, "GET", `/upload/session/${s.sid}/status`);
      expect(st.body.Success.state).toBe("finalized");
      expect(blake3Hex((await download(u, user, s.manifest)).body)).toBe(blake3Hex(ct));
    }
  });
});
