/**
 * Write races spread over three server processes on one metadata database (issue 11: "a new file
 * or a stale base revision gets the Conflict envelope however the racing requests are spread; the
 * per-user session limit is exact under concurrency"). Each race sends its requests to different
 * nodes at the same moment and expects exactly one winner; every loser gets 409 with the
 * Conflict envelope of docs/protocol.md#manifest naming the winner's revision.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { type Cluster, startCluster } from "../support/cluster.ts";
import { makeManifest, newUser, type TestUser } from "../support/fixtures.ts";
import { SETUP_TIMEOUT_MS, skipS3 } from "../support/s3-server.ts";
import {
  call,
  describeCluster,
  expectConflict,
  expectError,
  expectSuccess,
  finalize,
  openSession,
  putAllChunks,
  UPLOAD_RESULT_KEYS,
  uploadSingle,
} from "./support.ts";

const SESSION_LIMIT = 4;
let cluster: Cluster;
let urls: string[] = [];

beforeAll(async () => {
  if (skipS3) return;
  cluster = await startCluster({
    nodes: 3,
    label: "conflicts",
    env: { ESYNC_MAX_SESSIONS_PER_USER: String(SESSION_LIMIT) },
  });
  urls = cluster.nodes.map((n) => n.url);
}, SETUP_TIMEOUT_MS);

afterAll(async () => {
  await cluster?.close();
}, 120_000);

type Answer = Awaited<ReturnType<typeof uploadSingle>>;

/** Asserts one 200 among `answers` and 409 Conflict naming its revision for the rest; returns the winner's result. */
function oneWinner(answers: Answer[], seq: number) {
  expect(answers.map((a) => a.status).sort()).toEqual([200, ...Array(answers.length - 1).fill(409)]);
  const result = expectSuccess(answers.find((a) => a.status === 200)!, UPLOAD_RESULT_KEYS);
  for (const a of answers.filter((x) => x.status === 409)) {
    const c = expectConflict(a);
    expect(c.current_revision_id).toEqual(result.revision_id);
    expect(c.current_revision_seq).toBe(seq);
  }
  return result;
}

/** The `/get_state` entries of `user` at `path`, read from node `i`. */
async function entriesAt(i: number, user: TestUser, path: string) {
  const r = await call(urls[i]!, user, "GET", `/get_state/${user.address}/37a8eec1ce19687d`);
  return r.body.Success.files.filter((f: { relative_path: string }) => f.relative_path === path);
}

describeCluster("write races over three nodes", () => {
  test("a new file uploaded at one path on 3 nodes at once: one 200, two 409 Conflict naming the winner's revision, one row", async () => {
    const user = newUser();
    for (let round = 0; round < 5; round++) {
      const path = `new/r${round}.bin`;
      const answers = await Promise.all(
        urls.map((u) => {
          const ct = randomBytes(64 * 1024);
          return uploadSingle(u, user, makeManifest({ owner: user.address, ciphertext: ct, path }), ct);
        }),
      );
      const result = oneWinner(answers, 1);
      for (let i = 0; i < 3; i++) {
        const rows = await entriesAt(i, user, path);
        expect(rows).toHaveLength(1);
        expect(rows[0].revision_id).toEqual(result.revision_id);
      }
    }
  });

  test("a stale base revision raced on 3 nodes: one 200 (revision 2), two 409 Conflict naming it", async () => {
    const user = newUser();
    for (let round = 0; round < 5; round++) {
      const path = `stale/r${round}.bin`;
      const ct1 = randomBytes(32 * 1024);
      const first = await uploadSingle(
        urls[round % 3]!,
        user,
        makeManifest({ owner: user.address, ciphertext: ct1, path }),
        ct1,
      );
      const rev1 = expectSuccess(first, UPLOAD_RESULT_KEYS).revision_id;
      const answers = await Promise.all(
        urls.map((u) => {
          const ct = randomBytes(32 * 1024);
          const manifest = makeManifest({
            owner: user.address,
            ciphertext: ct,
            path,
            revisionSeq: 2,
            baseRevisionId: rev1,
          });
          return uploadSingle(u, user, manifest, ct);
        }),
      );
      const result = oneWinner(answers, 2);
      const rows = await entriesAt((round + 1) % 3, user, path);
      expect(rows).toHaveLength(1);
      expect(rows[0].revision_id).toEqual(result.revision_id);
      expect(rows[0].revision_seq).toBe(2);
    }
  });

  test("three sessions for one new path finalized on 3 nodes at once: one 200, two 409 Conflict naming the winner's revision", async () => {
    for (let round = 0; round < 3; round++) {
      const user = newUser();
      const path = `sessions/r${round}.bin`;
      const sessions = await Promise.all(
        urls.map(async (u, i) => {
          const ct = randomBytes(3 * 256 * 1024 + i);
          const s = await openSession(u, user, { path, chunkSize: 256 * 1024, ct });
          await putAllChunks(urls, user, s, ct);
          return s;
        }),
      );
      const answers = await Promise.all(sessions.map((s, i) => finalize(urls[i]!, user, s.sid)));
      const result = oneWinner(answers, 1);
      expect(await entriesAt(round % 3, user, path)).toEqual([
        expect.objectContaining({ revision_id: result.revision_id }),
      ]);
    }
  });

  test(`${3 * SESSION_LIMIT} session creates spread over 3 nodes at once: exactly ${SESSION_LIMIT} are 200, the rest 429 session_limit with Retry-After`, async () => {
    for (let round = 0; round < 3; round++) {
      const user = newUser();
      const answers = await Promise.all(
        [...Array(3 * SESSION_LIMIT).keys()].map(async (i) => {
          const ct = randomBytes(1024);
          const manifest = makeManifest({ owner: user.address, ciphertext: ct, path: `limit/f${i}.bin` });
          return call(urls[i % 3]!, user, "POST", "/upload/session", {
            manifest,
            chunk_count: 1,
            chunk_size: 1024,
            ciphertext_size: 1024,
          });
        }),
      );
      const ok = answers.filter((a) => a.status === 200);
      const refused = answers.filter((a) => a.status !== 200);
      expect(ok).toHaveLength(SESSION_LIMIT);
      for (const a of refused) {
        expectError(a, 429, "session_limit");
        expect(Number(a.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      }
      // The limit holds on every node afterwards; deleting one session on a node frees a place on another.
      for (const u of urls) {
        const ct = randomBytes(1024);
        const manifest = makeManifest({ owner: user.address, ciphertext: ct, path: "limit/more.bin" });
        const r = await call(u, user, "POST", "/upload/session", {
          manifest,
          chunk_count: 1,
          chunk_size: 1024,
          ciphertext_size: 1024,
        });
        expectError(r, 429, "session_limit");
      }
      const sid = ok[0]!.body.Success.session_id;
      expectSuccess(await call(urls[0]!, user, "DELETE", `/upload/session/${sid}`), ["deleted"]);
      const ct = randomBytes(1024);
      const manifest = makeManifest({ owner: user.address, ciphertext: ct, path: "limit/after.bin" });
      const again = await call(urls[2]!, user, "POST", "/upload/session", {
        manifest,
        chunk_count: 1,
        chunk_size: 1024,
        ciphertext_size: 1024,
      });
      expect(again.status).toBe(200);
    }
  });
});
