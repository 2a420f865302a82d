/**
 * A server SIGKILLed after a single-shot upload's ciphertext is in the blob store but before its
 * row commits leaves nothing behind for long (issue 28 item 8): the restarted process's sweeper
 * proves the writer dead (its pid is gone) and deletes what its write intent covers at once,
 * not when the intent's 6-hour lease ends. The real server process runs on SQLite and the local
 * disk; the test holds the database's write lock once the intent is recorded, so the commit
 * cannot happen before the kill.
 */
import { Database } from "bun:sqlite";
import { afterAll, expect, test } from "bun:test";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { ciphertextSizeFor } from "@esync/protocol/framing.ts";
import { uploadSingle } from "../multinode/support.ts";
import { makeManifest, newUser, randomCiphertext } from "../support/fixtures.ts";
import { type ServerProcess, startServer } from "../support/server.ts";
import { tempDir } from "../support/tmp.ts";

const MiB = 1024 * 1024;
const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const s of servers) await s.kill().catch(() => {});
});

/** Bytes of every file under `dir` (recursively). */
function bytesUnder(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) n += statSync(join(e.parentPath, e.name)).size;
  }
  return n;
}

test("a SIGKILL between a single-shot upload's stored bytes and its commit leaves 0 bytes 10 s after restart", async () => {
  const dataDir = tempDir("esync-crash-bytes-");
  const blobDir = join(dataDir, "blobs");
  const env = { ESYNC_STORAGE: "disk" };
  const first = await startServer({ dataDir, env });
  servers.push(first);
  const db = new Database(join(dataDir, "esync.sqlite"));
  db.exec("PRAGMA busy_timeout = 10000");
  const user = newUser();
  const size = ciphertextSizeFor(64 * MiB);
  const ct = randomCiphertext(size);
  const manifest = makeManifest({ owner: user.address, ciphertext: ct, path: "crash/after-bytes.bin" });
  const upload = uploadSingle(first.url, user, manifest, ct).catch(() => null);
  // The intent is recorded (committed) before the first byte lands: then hold the write lock,
  // so that the upload's commit waits while its bytes are stored.
  const intents = db.query<{ n: number }, []>("SELECT count(*) AS n FROM blob_deletions");
  for (const deadline = Date.now() + 60_000; intents.get()!.n === 0; ) {
    if (Date.now() > deadline) throw new Error(`no write intent seen:\n${first.output()}`);
    await Bun.sleep(1);
  }
  db.exec("BEGIN IMMEDIATE");
  for (const deadline = Date.now() + 60_000; bytesUnder(blobDir) < size; ) {
    if (Date.now() > deadline) throw new Error(`the ciphertext never reached the store:\n${first.output()}`);
    await Bun.sleep(5);
  }
  await first.kill();
  db.exec("ROLLBACK");
  expect(await upload).toBeNull(); // the connection died with the process
  expect(bytesUnder(blobDir)).toBe(size);
  const [intent] = db.query<{ not_before: number }, []>("SELECT not_before FROM blob_deletions").all();
  expect(intent!.not_before).toBeGreaterThan(Date.now() / 1000 + 3600); // the lease alone: hours

  const restarted = await startServer({ dataDir, env });
  servers.push(restarted);
  const started = Date.now();
  const queued = db.query<{ n: number }, []>("SELECT count(*) AS n FROM blob_deletions");
  let left = bytesUnder(blobDir);
  while ((left > 0 || queued.get()!.n > 0) && Date.now() - started < 10_000) {
    await Bun.sleep(100);
    left = bytesUnder(blobDir);
  }
  expect(left).toBe(0);
  expect(db.query("SELECT * FROM blob_deletions").all()).toEqual([]);
  expect(db.query("SELECT * FROM files").all()).toEqual([]);
  db.close();
  expect(await restarted.stop()).toBe(0);
}, 180_000);
