/**
 * Manifests whose fields contradict each other are refused with a clear 400 (issue 10 defect 8),
 * on both write paths (session create and single-shot /upload), and nothing is stored: path_hash
 * must be BLAKE3(utf8(NFC(relative_path))), relative_path a clean relative path, and size_bytes
 * must be exactly what the ciphertext's framing gives (docs/protocol.md#ciphertext). What real clients send still passes.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { ciphertextSizeFor } from "@esync/protocol/framing.ts";
import { makeTestApp, type TestApp } from "../support/app.ts";
import { makeManifest, newUser, pathHashOf, randomCiphertext, type TestUser } from "../support/fixtures.ts";
import {
  authAt,
  createSessionRaw,
  expectError,
  expectSuccess,
  rowsOf,
  snapshot,
  UPLOAD_RESULT_KEYS,
  uploadSingle,
} from "./helpers.ts";

let t: TestApp;
beforeEach(() => {
  t = makeTestApp();
});
afterEach(() => t.close());

/** Sends `manifest` for `ct` through both write paths; returns both answers. */
async function both(u: TestUser, manifest: Record<string, unknown>, ct: Uint8Array) {
  const session = await createSessionRaw(t, authAt(t, u), {
    manifest,
    chunk_count: 1,
    chunk_size: ct.length,
    ciphertext_size: ct.length,
  });
  const single = await uploadSingle(t, authAt(t, u), manifest, ct);
  return { session, single };
}

async function expectRefused(u: TestUser, manifest: Record<string, unknown>, ct: Uint8Array, field: string) {
  const before = await snapshot(t);
  const { session, single } = await both(u, manifest, ct);
  for (const r of [session, single]) {
    expectError(r, 400, "invalid_manifest");
    expect(r.body.Error.message).toContain(field);
  }
  expect(await snapshot(t)).toEqual(before);
}

describe("path_hash against relative_path", () => {
  test("returns 400 invalid_manifest naming path_hash when it is not BLAKE3 of the NFC relative_path", async () => {
    const u = newUser();
    const ct = randomCiphertext(500);
    const m = {
      ...makeManifest({ owner: u.address, ciphertext: ct, path: "a/b.txt" }),
      path_hash: pathHashOf("a/c.txt"),
    };
    await expectRefused(u, m, ct, "path_hash");
  });

  test("returns 400 invalid_manifest naming file_name when it is not the relative_path's last segment", async () => {
    const u = newUser();
    const ct = randomCiphertext(500);
    const m = makeManifest({
      owner: u.address,
      ciphertext: ct,
      path: "docs/report.pdf",
      fileName: "evil.exe",
    });
    await expectRefused(u, m, ct, "file_name");
  });

  test("accepts a file_name that is the last segment in another Unicode form (200)", async () => {
    const u = newUser();
    const ct = randomCiphertext(500);
    const m = makeManifest({
      owner: u.address,
      ciphertext: ct,
      path: "p/Caf\u00e9.txt",
      fileName: "Cafe\u0301.txt",
    });
    expectSuccess(await uploadSingle(t, authAt(t, u), m, ct), UPLOAD_RESULT_KEYS);
  });

  test("accepts an NFD relative_path whose path_hash is of its NFC form (macOS names)", async () => {
    const u = newUser();
    const ct = randomCiphertext(500);
    const nfd = "notes/cafe\u0301.txt";
    const m = {
      ...makeManifest({ owner: u.address, ciphertext: ct, path: nfd }),
      path_hash: pathHashOf(nfd.normalize("NFC")),
    };
    expectSuccess(await uploadSingle(t, authAt(t, u), m, ct), UPLOAD_RESULT_KEYS);
  });

  test("accepts any path_hash when relative_path is null", async () => {
    const u = newUser();
    const ct = randomCiphertext(500);
    const m = {
      ...makeManifest({ owner: u.address, ciphertext: ct, relativePath: null, path: "x" }),
      path_hash: Array(32).fill(7),
    };
    expectSuccess(await uploadSingle(t, authAt(t, u), m, ct), UPLOAD_RESULT_KEYS);
  });
});

describe("relative_path shape", () => {
  const refused: [string, string][] = [
    ["absolute", "/etc/passwd"],
    ["an empty path", ""],
    ["an empty segment", "a//b.txt"],
    ["a trailing slash", "a/b/"],
    ["a . segment", "a/./b.txt"],
    ["a .. segment", "a/../../b.txt"],
    ["only ..", ".."],
    ["a backslash", "a\\b.txt"],
    ["a NUL", "a\u0000b.txt"],
    ["a newline", "a\nb.txt"],
    ["a DEL", "a\u007fb.txt"],
  ];
  for (const [what, path] of refused) {
    test(`returns 400 invalid_manifest naming relative_path for ${what}`, async () => {
      const u = newUser();
      const ct = randomCiphertext(300);
      await expectRefused(
        u,
        makeManifest({ owner: u.address, ciphertext: ct, path, relativePath: path }),
        ct,
        "relative_path",
      );
    });
  }

  test("accepts dots inside names, spaces, Unicode and a leading dot file", async () => {
    const u = newUser();
    for (const path of ["a/..b/c..d.txt", "with space/ü/日本.txt", ".hidden", "a.../b"]) {
      const ct = randomCiphertext(300);
      expectSuccess(
        await uploadSingle(t, authAt(t, u), makeManifest({ owner: u.address, ciphertext: ct, path }), ct),
        UPLOAD_RESULT_KEYS,
      );
    }
  });
});

describe("size_bytes against the ciphertext size", () => {
  test("returns 400 invalid_manifest naming size_bytes for 2^53-1 bytes in a 1 KB ciphertext", async () => {
    const u = newUser();
    const ct = randomCiphertext(1000);
    await expectRefused(
      u,
      makeManifest({ owner: u.address, ciphertext: ct, sizeBytes: 2 ** 53 - 1 }),
      ct,
      "size_bytes",
    );
  });

  test("returns 400 for one byte more than the framing leaves (ciphertext_size - 47)", async () => {
    const u = newUser();
    const ct = randomCiphertext(1000);
    await expectRefused(
      u,
      makeManifest({ owner: u.address, ciphertext: ct, sizeBytes: 953 }),
      ct,
      "size_bytes",
    );
  });

  test("returns 400 naming size_bytes for a claim below the framing (0, or ciphertext_size - 49)", async () => {
    const u = newUser();
    for (const size of [0, 951]) {
      const ct = randomCiphertext(1000);
      await expectRefused(
        u,
        makeManifest({ owner: u.address, ciphertext: ct, sizeBytes: size }),
        ct,
        "size_bytes",
      );
    }
  });

  test("accepts exactly the size the framing gives (ciphertext_size - 48 for one frame, 20 more per frame)", async () => {
    const u = newUser();
    for (const [path, size] of [
      ["a", 952],
      ["b", 300_000],
    ] as const) {
      const ct = randomCiphertext(ciphertextSizeFor(size));
      const m = makeManifest({ owner: u.address, ciphertext: ct, sizeBytes: size, path });
      expectSuccess(await uploadSingle(t, authAt(t, u), m, ct), UPLOAD_RESULT_KEYS);
    }
    expect(await rowsOf(t, "folders")).toEqual([
      expect.objectContaining({ file_count: 2, total_bytes: 300_952 }),
    ]);
  });
});
