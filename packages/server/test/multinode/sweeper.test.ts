/**
 * Three sweepers on one deletion queue (issue 11: "the sweeper and the deletion queue run on every
 * node and each object is deleted once"). Files are uploaded, replaced, deleted and sessions
 * aborted over three nodes; then every node is frozen while a batch of 240 deletions becomes due,
 * and all three are thawed at once, so their sweepers start the same pass over the same due rows.
 * Every released blob must be gone from the bucket, every live blob intact, and the deletions done
 * (counted by each node's blob store metrics and its `blob.deleted` log events) must add up to
 * exactly one per queued row.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import { type Cluster, logEvents, scrape, startCluster, sumMetric } from "../support/cluster.ts";
import { makeManifest, newUser } from "../support/fixtures.ts";
import { SETUP_TIMEOUT_MS, skipS3 } from "../support/s3-server.ts";
import {
  call,
  describeCluster,
  download,
  expectSuccess,
  FOLDER,
  openSession,
  putAllChunks,
  putChunk,
  UPLOAD_RESULT_KEYS,
  uploadSingle,
  waitFor,
} from "./support.ts";

const GRACE_SECONDS = 4;
const DELETED = 240;
const LIVE_SINGLE = 20;
const REPLACED = 10;
const LIVE_SESSIONS = 4;
const ABORTED = 6;
let cluster: Cluster;

beforeAll(async () => {
  if (skipS3) return;
  cluster = await startCluster({
    nodes: 3,
    label: "sweeper",
    // Versions off: every replaced or deleted blob goes to the deletion queue, which this tests.
    env: {
      ESYNC_SWEEP_INTERVAL_SECONDS: "1",
      ESYNC_BLOB_GRACE_SECONDS: String(GRACE_SECONDS),
      ESYNC_VERSION_RETENTION_DAYS: "0",
    },
  });
}, SETUP_TIMEOUT_MS);

afterAll(async () => {
  await cluster?.close();
}, 120_000);

/**
 * Blob id → number of objects, from the bucket listing: a chunked blob's chunks
 * (`<prefix>/b/xx/<blob>/<i>.<gen>`) or a one-object blob's object (`<prefix>/b/xx/o<blob>`).
 */
function blobsOf(keys: string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const k of keys) {
    const m =
      /\/b\/[0-9a-f]{2}\/([0-9a-f]+)\/\d+\.[0-9a-f]+$/.exec(k) ??
      /\/b\/[0-9a-f]{2}\/(o[0-9a-f]{32})$/.exec(k);
    if (!m) throw new Error(`unexpected object key ${k}`);
    out.set(m[1]!, (out.get(m[1]!) ?? 0) + 1);
  }
  return out;
}

/** Blob deletions (`delete` and `delete_prefix` store operations) done by every node so far. */
async function deletionsByNode(): Promise<number[]> {
  return Promise.all(
    cluster.nodes.map(async (n) => {
      const m = await scrape(n.url);
      return (
        sumMetric(m, "esync_blob_operation_duration_seconds_count", { op: "delete" }) +
        sumMetric(m, "esync_blob_operation_duration_seconds_count", { op: "delete_prefix" })
      );
    }),
  );
}

describeCluster("three sweepers", () => {
  test("with 3 sweepers started on the same due rows, every released blob is deleted exactly once (metrics and logs of all nodes) and no live blob is touched", async () => {
    const user = newUser();
    const urls = cluster.nodes.map((n) => n.url);
    const node = (i: number) => urls[i % urls.length]!;
    const live = new Map<string, { manifest: Record<string, unknown>; hash: string }>();

    // Live files: single-shot, of which REPLACED get a second revision below.
    const revisions: number[][] = [];
    for (let i = 0; i < LIVE_SINGLE; i++) {
      const ct = randomBytes(4096 + i);
      const manifest = makeManifest({ owner: user.address, ciphertext: ct, path: `live/s${i}.bin` });
      const r = expectSuccess(await uploadSingle(node(i), user, manifest, ct), UPLOAD_RESULT_KEYS);
      live.set(`live/s${i}.bin`, { manifest, hash: blake3Hex(ct) });
      revisions.push(r.revision_id);
    }
    // Live files through sessions, chunks spread over the nodes.
    for (let i = 0; i < LIVE_SESSIONS; i++) {
      const ct = randomBytes(3 * 65536 + i);
      const s = await openSession(node(i), user, { path: `live/m${i}.bin`, chunkSize: 65536, ct });
      await putAllChunks(urls, user, s, ct);
      expectSuccess(
        await call(node(i + 2), user, "POST", `/upload/session/${s.sid}/finalize`),
        UPLOAD_RESULT_KEYS,
      );
      live.set(`live/m${i}.bin`, { manifest: s.manifest, hash: blake3Hex(ct) });
    }
    // Aborted sessions with stored chunks (their blobs are due at once).
    for (let i = 0; i < ABORTED; i++) {
      const ct = randomBytes(2 * 65536);
      const s = await openSession(node(i), user, { path: `aborted/a${i}.bin`, chunkSize: 65536, ct });
      expect((await putChunk(node(i + 1), user, s.sid, 0, ct.subarray(0, 65536))).status).toBe(200);
      expectSuccess(await call(node(i + 2), user, "DELETE", `/upload/session/${s.sid}`), ["deleted"]);
    }
    // Files deleted in one batch: DELETED rows due GRACE_SECONDS from now.
    const ids: string[] = [];
    for (let i = 0; i < DELETED; i++) {
      const ct = randomBytes(1024);
      const manifest = makeManifest({ owner: user.address, ciphertext: ct, path: `gone/g${i}.bin` });
      expectSuccess(await uploadSingle(node(i), user, manifest, ct), UPLOAD_RESULT_KEYS);
      ids.push(Buffer.from(manifest.path_hash as number[]).toString("hex"));
    }
    // Second revisions: the first blobs are released, due GRACE_SECONDS from now like the batch.
    for (let i = 0; i < REPLACED; i++) {
      const ct = randomBytes(5000 + i);
      const manifest = makeManifest({
        owner: user.address,
        ciphertext: ct,
        path: `live/s${i}.bin`,
        revisionSeq: 2,
        baseRevisionId: revisions[i],
      });
      expectSuccess(await uploadSingle(node(i + 1), user, manifest, ct), UPLOAD_RESULT_KEYS);
      live.set(`live/s${i}.bin`, { manifest, hash: blake3Hex(ct) });
    }
    const beforeAll = blobsOf(await cluster.listObjects());
    const batch = await call(urls[0]!, user, "POST", "/delete_files", {
      ss58_address: user.address,
      folder_hash: FOLDER,
      file_ids: ids,
      quiet: true,
    });
    expect(expectSuccess(batch, ["errors", "files_deleted"]).files_deleted).toBe(DELETED);
    const dueAt = Date.now() + GRACE_SECONDS * 1000;
    for (const n of cluster.nodes) cluster.freeze(n.index);
    await Bun.sleep(Math.max(0, dueAt - Date.now()) + 1500);
    for (const n of cluster.nodes) cluster.thaw(n.index);

    // Queued rows: the deleted and replaced files' blobs, the aborted sessions' chunks, and the
    // chunks of each live session, which finalize copied into one object (due at once, like the
    // aborted ones, so gone before `beforeAll` was listed).
    const queued = DELETED + REPLACED + ABORTED + LIVE_SESSIONS;
    await waitFor(
      "the deletion queue to empty",
      async () => sumMetric(await scrape(urls[1]!), "esync_deletion_queue_depth") === 0,
      60_000,
      200,
    );
    // Let any pass still running finish: the counts must be stable over two sweep intervals.
    let counts = await deletionsByNode();
    for (;;) {
      await Bun.sleep(2500);
      const again = await deletionsByNode();
      if (again.join() === counts.join()) break;
      counts = again;
    }
    expect(counts.reduce((a, b) => a + b, 0)).toBe(queued);
    const logged = cluster.nodes
      .flatMap((n) => logEvents(cluster.output(n.index), "blob.deleted"))
      .reduce((a, e) => a + Number(e.count), 0);
    expect(logged).toBe(queued);

    const after = blobsOf(await cluster.listObjects());
    expect(after.size).toBe(live.size);
    for (const [blob, chunks] of after) expect(beforeAll.get(blob)).toBe(chunks);
    expect([...beforeAll.keys()].filter((b) => !after.has(b))).toHaveLength(DELETED + REPLACED);
    for (const [path, f] of live) {
      const d = await download(node(path.length), user, f.manifest);
      expect({ path, status: d.status, hash: blake3Hex(d.body) }).toEqual({
        path,
        status: 200,
        hash: f.hash,
      });
    }
  });
});
