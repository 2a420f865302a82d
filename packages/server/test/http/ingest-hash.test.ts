/**
 * Finalize with chunks hashed while they streamed in (src/sessions/ingest-hash.ts): the verdict
 * is always that of the bytes the committed file points to.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import { makeTestApp, type TestApp } from "../support/app.ts";
import { newUser, randomCiphertext } from "../support/fixtures.ts";
import {
  blobFiles,
  chunkOf,
  download,
  expectError,
  expectSuccess,
  FOLDER,
  fileIdOf,
  finalize,
  openSession,
  putChunk,
  putChunks,
  UPLOAD_RESULT_KEYS,
} from "./helpers.ts";

for (const [name, env] of [
  ["read-back catch-up (disk default)", {}],
  ["look-ahead held in memory", { ESYNC_LOOKAHEAD_BYTES: String(1 << 20) }],
] as const) {
  describe(`finalize after in-order hashing during upload, ${name}`, () => {
    let t: TestApp;
    beforeEach(() => {
      t = makeTestApp(env);
    });
    afterEach(() => t.close());

    test("chunks sent in reverse order, several at once, finalize (200) to the right bytes", async () => {
      const u = newUser();
      const ct = randomCiphertext(12_345);
      const s = await openSession(t, u, ct, { chunkSize: 1000 });
      const order = [...Array(s.chunkCount).keys()].reverse();
      for (let i = 0; i < order.length; i += 4) {
        await Promise.all(
          order.slice(i, i + 4).map((k) => putChunk(t, s.auth, s.sessionId, k, chunkOf(ct, 1000, k))),
        );
      }
      expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
      const r = await download(t, s.auth, u.address, FOLDER, fileIdOf(s.manifest));
      expect(Buffer.from(await r.arrayBuffer()).equals(ct)).toBe(true);
    });

    test("an in-order upload finalizes (200) and downloads byte-identically", async () => {
      const u = newUser();
      const ct = randomCiphertext(10_000);
      const s = await openSession(t, u, ct, { chunkSize: 1000 });
      await putChunks(t, s, ct);
      expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
      const r = await download(t, s.auth, u.address, FOLDER, fileIdOf(s.manifest));
      expect(Buffer.from(await r.arrayBuffer()).equals(ct)).toBe(true);
    });

    test("re-uploading an already hashed chunk with other bytes: the manifest of the final bytes finalizes (200)", async () => {
      const u = newUser();
      const final = randomCiphertext(3000);
      const s = await openSession(t, u, final, { chunkSize: 1000 });
      const first = new Uint8Array(final);
      first[10] = first[10]! ^ 0xff;
      await putChunks(t, s, first); // every chunk hashed in order, chunk 0 with the wrong byte
      expectSuccess(await putChunk(t, s.auth, s.sessionId, 0, chunkOf(final, 1000, 0)), ["chunk_index"]);
      expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
      const r = await download(t, s.auth, u.address, FOLDER, fileIdOf(s.manifest));
      expect(Buffer.from(await r.arrayBuffer()).equals(final)).toBe(true);
    });

    test("re-uploading an already hashed chunk with other bytes: the manifest of the first bytes is 400 invalid_manifest", async () => {
      const u = newUser();
      const first = randomCiphertext(3000);
      const s = await openSession(t, u, first, { chunkSize: 1000 });
      await putChunks(t, s, first);
      const other = new Uint8Array(chunkOf(first, 1000, 1));
      other[0] = other[0]! ^ 1;
      expectSuccess(await putChunk(t, s.auth, s.sessionId, 1, other), ["chunk_index"]);
      expectError(await finalize(t, s.auth, s.sessionId), 400, "invalid_manifest");
    });

    test("a tapped chunk cut short (400) and sent again whole still finalizes with the right hash (200)", async () => {
      const u = newUser();
      const ct = randomCiphertext(2000);
      const s = await openSession(t, u, ct, { chunkSize: 1000 });
      expectError(
        await putChunk(t, s.auth, s.sessionId, 0, chunkOf(ct, 1000, 0).subarray(0, 600)),
        400,
        "invalid_manifest",
      );
      await putChunks(t, s, ct);
      expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
    });

    test("a chunk object that vanished after being hashed is 500 storage_inconsistency, not a committed file", async () => {
      const u = newUser();
      const ct = randomCiphertext(2000);
      const s = await openSession(t, u, ct, { chunkSize: 1000 });
      await putChunks(t, s, ct);
      const [victim] = (await blobFiles(t)).filter((f) => /\/1\.[0-9a-f]+$/.test(f));
      await t.blobs.delete([victim!]);
      expectError(await finalize(t, s.auth, s.sessionId), 500, "storage_inconsistency");
      expect(blake3Hex(ct)).toBe(s.manifest.ciphertext_hash as string);
    });
  });
}
