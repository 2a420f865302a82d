/**
 * Two attacks of issue 28 against the real server process: the quota attack (item 3: with a full
 * 1,000,000-byte allowance, 5 MiB single-shot uploads declaring `size_bytes` 0 store nothing,
 * docs/framing.md) and the path/hash mismatch (item 4: a rename whose `new_path_hash` is the hash
 * of the NFD bytes of its path is refused, and the folder never shows two rows for one path,
 * docs/paths.md).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { ciphertextSizeFor } from "@esync/protocol/framing.ts";
import { renameDeclaration } from "@esync/protocol/rename.ts";
import { ed25519Sign } from "@polkadot/util-crypto";
import { folderKey, makeManifest, newUser, pathHashOf, randomCiphertext } from "../support/fixtures.ts";
import { type ServerProcess, startServer } from "../support/server.ts";
import { blake3Hex, ChaosClient, FOLDER, reportFigure } from "./support.ts";

const ALLOWANCE = 1_000_000;
let server: ServerProcess;

beforeAll(async () => {
  server = await startServer({
    env: { ESYNC_LOG_LEVEL: "error", ESYNC_STORAGE: "disk", ESYNC_DEFAULT_QUOTA_BYTES: String(ALLOWANCE) },
  });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  if (server) rmSync(server.dataDir, { recursive: true, force: true });
}, 60_000);

/** Bytes of every file under `dir`. */
function bytesUnder(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true }))
    if (e.isFile()) n += statSync(join(e.parentPath, e.name)).size;
  return n;
}

test("quota attack: with the allowance full, 21 uploads of 5 MiB declaring size_bytes 0 are refused 400 and store 0 bytes beyond it", async () => {
  const c = new ChaosClient(server.url, newUser(), 60_000);
  const full = randomCiphertext(ciphertextSizeFor(ALLOWANCE));
  await c.uploadSingle({ folder: FOLDER, path: "full.bin", ciphertext: full });
  const blobs = join(server.dataDir, "blobs");
  const before = bytesUnder(blobs);
  const statuses: number[] = [];
  for (let i = 0; i < 21; i++) {
    const ct = randomCiphertext(5 * 1024 * 1024);
    const manifest = makeManifest({
      owner: c.user.address,
      ciphertext: ct,
      path: `free/${i}.bin`,
      sizeBytes: 0,
    });
    const form = new FormData();
    form.append("manifest", new Blob([JSON.stringify(manifest)], { type: "application/json" }));
    form.append(
      "ciphertext",
      new Blob([ct as Uint8Array<ArrayBuffer>], { type: "application/octet-stream" }),
    );
    const r = await fetch(`${server.url}/upload`, {
      method: "POST",
      headers: { authorization: c.user.auth },
      body: form,
    });
    statuses.push(r.status);
    await r.arrayBuffer();
  }
  const beyond = bytesUnder(blobs) - before;
  reportFigure("quota_attack_bytes_beyond_allowance", beyond);
  expect(statuses).toEqual(Array(21).fill(400));
  expect(beyond).toBe(0);
  const state = await c.listFolder(FOLDER);
  expect(state?.length).toBe(1);
}, 120_000);

test("path/hash mismatch: a rename to the hash of the path's NFD bytes is refused 400 and get_state keeps one row for the path", async () => {
  const c = new ChaosClient(server.url, newUser(), 60_000);
  const nfc = "docs/dupe\u0301.txt".normalize("NFC");
  const up = await c.uploadSingle({
    folder: FOLDER,
    path: "docs/old.txt",
    ciphertext: randomCiphertext(100),
  });
  await c.uploadSingle({ folder: FOLDER, path: nfc, ciphertext: randomCiphertext(100) });
  const nfdHash = Array.from(Buffer.from(blake3Hex(new TextEncoder().encode(nfc.normalize("NFD"))), "hex"));
  const renames = [
    {
      old_path_hash: pathHashOf("docs/old.txt"),
      new_path_hash: nfdHash,
      new_file_name: nfc.split("/").pop(),
      new_relative_path: nfc,
      new_encrypted_path: [1, 2, 3],
      base_revision_id: up.revisionId,
    },
  ];
  const declaration = renameDeclaration(
    renames.map((r) => ({
      oldPathHash: Uint8Array.from(r.old_path_hash),
      newPathHash: Uint8Array.from(r.new_path_hash),
    })),
  );
  const r = await c.json("POST", "/rename_files", {
    ss58_address: c.user.address,
    folder_hash: FOLDER,
    renames,
    signature: Array.from(ed25519Sign(new TextEncoder().encode(declaration), folderKey)),
    signing_key: Array.from(folderKey.publicKey),
  });
  expect(r.status).toBe(400);
  const rows = (await c.listFolder(FOLDER)) ?? [];
  const paths = rows.map((f) => f.relative_path ?? f.file_name);
  reportFigure("path_hash_mismatch_rows_for_path", paths.filter((p) => p === nfc).length);
  expect(paths.filter((p) => p === nfc)).toHaveLength(1);
  expect(rows).toHaveLength(2);
}, 60_000);
