/**
 * Event-loop stalls from big answers and batches: while the server lists 10,000 folder entries of
 * about 2 KB, renames 1,000 files in one call and deletes 1,000 files in one call, a well-behaved
 * client's `/health` and its database reads (a small `/get_state` page) each keep a p99 under
 * 250 ms during the batches: a batch yields every few milliseconds, and reads go to SQLite's
 * read-only connection while the batch's transaction holds the writer (docs/operator-guide.md#big-answers-and-batches). During the listing both are reported, not asserted: this process also
 * reads the 20 MB answer, so its own probes measure its event loop as much as the server's.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { renameDeclaration } from "@esync/protocol/rename.ts";
import { ed25519Sign } from "@polkadot/util-crypto";
import { folderKey, newUser, pathHashOf } from "../support/fixtures.ts";
import { type ServerProcess, startServer } from "../support/server.ts";
import { ChaosClient, FOLDER, p99, reportFigure } from "./support.ts";

const ENTRIES = 10_000;
const FILES = 1000;
const P99_LIMIT_MS = 250;

let server: ServerProcess;

beforeAll(async () => {
  server = await startServer({ env: { ESYNC_LOG_LEVEL: "error" } });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  if (server) rmSync(server.dataDir, { recursive: true, force: true });
}, 60_000);

/**
 * Runs `work` while a good client probes (`/health`, and a small `/get_state` page that reads the
 * database); returns the latencies of each and `work`'s duration, ms.
 */
async function probed(
  good: ChaosClient,
  work: () => Promise<void>,
): Promise<{ health: number[]; db: number[]; ms: number }> {
  let probing = true;
  const health: number[] = [];
  const db: number[] = [];
  const probe = (async () => {
    for (let i = 0; probing; i++) {
      const t0 = performance.now();
      if (i % 2) {
        const r = await fetch(`${server.url}/health`, { signal: AbortSignal.timeout(30_000) });
        await r.arrayBuffer();
      } else {
        await good.json("GET", `/get_state/${good.user.address}/${FOLDER}?offset=0&limit=10`);
      }
      (i % 2 ? health : db).push(performance.now() - t0);
      await Bun.sleep(10);
    }
  })();
  await Bun.sleep(100);
  const t0 = performance.now();
  try {
    await work();
  } finally {
    probing = false;
    await probe;
  }
  return { health, db, ms: performance.now() - t0 };
}

test("a good client's /health and /get_state p99 stay under 250 ms during a 1000-file rename and a 1000-file delete; a 10k-entry listing answers whole", async () => {
  const owner = new ChaosClient(server.url, newUser(), 120_000);
  const good = new ChaosClient(server.url, newUser());
  await good.uploadSingle({ folder: FOLDER, path: "good.bin", ciphertext: new Uint8Array(100) });

  // 10,000 entries of about 2 KB, 500 per call.
  const seg = "d".repeat(250);
  const entry = (i: number) => `${[...Array(7)].map(() => seg).join("/")}/${String(i).padStart(6, "0")}`;
  for (let i = 0; i < ENTRIES; i += 500) {
    const r = await owner.json("POST", "/register_folder_entries", {
      ss58_address: owner.user.address,
      folder_hash: FOLDER,
      relative_paths: [...Array(500)].map((_, j) => entry(i + j)),
    });
    expect(r.status).toBe(200);
  }
  let listed = 0;
  const list = await probed(good, async () => {
    // Counted as the bytes stream in (the entries hold no quote): parsing 20 MB of JSON here would
    // stall this process's own probes.
    const r = await fetch(`${server.url}/list_folder_entries/${owner.user.address}/${FOLDER}`, {
      headers: { authorization: owner.user.auth },
    });
    expect(r.status).toBe(200);
    let quotes = 0;
    for await (const piece of r.body!) {
      const buf = Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
      for (let i = buf.indexOf(0x22); i !== -1; i = buf.indexOf(0x22, i + 1)) quotes++;
    }
    listed = (quotes - 2) / 2; // minus the key's quotes
  });
  expect(listed).toBe(ENTRIES);

  // 1,000 files, renamed in one call, then deleted in one call.
  const files: { path: string; revisionId: number[] }[] = [];
  for (let i = 0; i < FILES; i += 50)
    files.push(
      ...(await Promise.all(
        [...Array(50)].map(async (_, j) => {
          const path = `batch/${i + j}.txt`;
          const up = await owner.uploadSingle({ folder: FOLDER, path, ciphertext: new Uint8Array(100) });
          return { path, revisionId: up.revisionId };
        }),
      )),
    );
  const renames = files.map((f) => ({
    old_path_hash: pathHashOf(f.path),
    new_path_hash: pathHashOf(`moved/${f.path}`),
    new_file_name: f.path.split("/").pop(),
    new_relative_path: `moved/${f.path}`,
    new_encrypted_path: [1, 2, 3],
    base_revision_id: f.revisionId,
  }));
  const declaration = renameDeclaration(
    renames.map((r) => ({
      oldPathHash: Uint8Array.from(r.old_path_hash),
      newPathHash: Uint8Array.from(r.new_path_hash),
    })),
  );
  let renamed = 0;
  const rename = await probed(good, async () => {
    const r = await owner.json("POST", "/rename_files", {
      ss58_address: owner.user.address,
      folder_hash: FOLDER,
      renames,
      signature: Array.from(ed25519Sign(new TextEncoder().encode(declaration), folderKey)),
      signing_key: Array.from(folderKey.publicKey),
    });
    expect(r.status).toBe(200);
    renamed = r.body.Success.renamed_count;
  });
  expect(renamed).toBe(FILES);
  let deleted = 0;
  const del = await probed(good, async () => {
    const r = await owner.json("POST", "/delete_files", {
      ss58_address: owner.user.address,
      folder_hash: FOLDER,
      file_ids: files.map((f) => Buffer.from(pathHashOf(`moved/${f.path}`)).toString("hex")),
    });
    expect(r.status).toBe(200);
    deleted = (r.body.Success.deleted ?? []).length;
  });
  expect(deleted).toBe(FILES);

  const figures = { list, rename, delete: del };
  for (const [name, f] of Object.entries(figures)) {
    reportFigure(`stalls_${name}_ms`, Math.round(f.ms));
    reportFigure(`stalls_${name}_good_health_p99_ms`, Math.round(p99(f.health)));
    reportFigure(`stalls_${name}_good_db_read_p99_ms`, Math.round(p99(f.db)));
  }
  for (const [name, f] of Object.entries({ rename, delete: del })) {
    expect({ name, health: p99(f.health) < P99_LIMIT_MS, db: p99(f.db) < P99_LIMIT_MS }).toEqual({
      name,
      health: true,
      db: true,
    });
  }
}, 600_000);
