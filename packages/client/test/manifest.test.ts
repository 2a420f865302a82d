/** Manifests of docs/protocol.md#manifest: every field, the Ed25519 signature over the exact sentence, revisions. */
import { describe, expect, test } from "bun:test";
import { createPublicKey, verify } from "node:crypto";
import {
  Blake3,
  blake3,
  blake3Hex,
  buildManifest,
  fileId,
  folderHash,
  InvalidRelativePathError,
  identityFromMnemonic,
  nextRevision,
  normalizeRelativePath,
  pathHash,
  rebaseManifest,
  SaltedHasher,
  saltedHash,
  signedSentence,
  toHex,
  utf8,
  verifyWireManifestSignature,
} from "../src/index.ts";

const identity = await identityFromMnemonic(`${"abandon ".repeat(11)}about`);
const folder = identity.folder("alpha");
const HASH = "a".repeat(64);

/** Ed25519 verification by node:crypto (OpenSSL), independent of the signing library. */
function opensslVerify(message: Uint8Array, signature: number[], publicKey: number[]): boolean {
  const spki = Buffer.concat([Buffer.from("302a300506032b6570032100", "hex"), Buffer.from(publicKey)]);
  const key = createPublicKey({ key: spki, format: "der", type: "spki" });
  return verify(null, message, key, Buffer.from(signature));
}

function sample(overrides: Partial<Parameters<typeof buildManifest>[0]> = {}) {
  return buildManifest(
    {
      ss58Address: identity.address,
      folderHash: folder.folderHash,
      ciphertextHash: HASH,
      sizeBytes: 35,
      saltedHash: saltedHash(identity.address, utf8("hello")),
      relativePath: "docs/notes.md",
      timestamp: 1_700_000_000,
      ...overrides,
    },
    folder,
  );
}

describe("signature", () => {
  test("the sentence is exactly the wire text, misspellings included", () => {
    expect(signedSentence("abc")).toBe(
      "I here by declare that the file with hash abc that i am uploading is in par with the ToS of the provider",
    );
  });

  test("the signature verifies with Ed25519 (OpenSSL) over the exact sentence and the folder's signing key", () => {
    const m = sample();
    expect(m.signature).toHaveLength(64);
    expect(m.signing_key).toEqual(Array.from(folder.signingKey));
    expect(opensslVerify(utf8(signedSentence(HASH)), m.signature, m.signing_key)).toBe(true);
    expect(opensslVerify(utf8(signedSentence("b".repeat(64))), m.signature, m.signing_key)).toBe(false);
    expect(verifyWireManifestSignature(m)).toBe(true);
    expect(verifyWireManifestSignature({ ...m, ciphertext_hash: "b".repeat(64) })).toBe(false);
  });
});

describe("fields", () => {
  test("carries every field of docs/protocol.md#manifest, byte fields as JSON arrays of integers", () => {
    const m = sample();
    const json = JSON.parse(JSON.stringify(m));
    expect(Object.keys(json)).toEqual([
      "ss58_address",
      "folder_hash",
      "ciphertext_hash",
      "size_bytes",
      "timestamp",
      "signature",
      "signing_key",
      "path_hash",
      "salted_hash",
      "revision_seq",
      "base_revision_id",
      "encrypted_path",
      "file_name",
      "relative_path",
      "source",
    ]);
    expect(json.ss58_address).toBe(identity.address);
    expect(json.folder_hash).toBe(folderHash("alpha"));
    expect(json.size_bytes).toBe(35);
    expect(json.timestamp).toBe(1_700_000_000);
    expect(json.path_hash).toEqual(Array.from(blake3("docs/notes.md")));
    expect(json.salted_hash).toEqual(Array.from(blake3(utf8(`${identity.address}hello`))));
    expect(json.revision_seq).toBe(1);
    expect(json.base_revision_id).toBeNull();
    expect(json.encrypted_path).toEqual([]);
    expect(json.file_name).toBe("notes.md");
    expect(json.relative_path).toBe("docs/notes.md");
    for (const f of ["signature", "signing_key", "path_hash", "salted_hash"]) {
      expect(
        json[f].every((b: unknown) => Number.isInteger(b) && (b as number) >= 0 && (b as number) < 256),
      ).toBe(true);
    }
  });

  test("path_hash hashes the NFC form: composed and decomposed spellings give one file id", () => {
    const composed = "caf\u00e9/r\u00e9sum\u00e9.txt";
    const decomposed = composed.normalize("NFD");
    expect(decomposed).not.toBe(composed);
    expect(toHex(pathHash(decomposed))).toBe(toHex(blake3(utf8(composed))));
    const m = sample({ relativePath: decomposed });
    expect(m.relative_path).toBe(composed);
    expect(fileId(m.path_hash)).toBe(toHex(blake3(utf8(composed))));
  });

  test("relative paths are normalised to / separators and refuse empty, . and .. segments", () => {
    expect(normalizeRelativePath("./a\\b/c.txt")).toBe("a/b/c.txt");
    expect(normalizeRelativePath("/a/b")).toBe("a/b");
    for (const bad of ["", "/", "a/../b", "a//b", "a/./b", "a/"]) {
      expect(() => normalizeRelativePath(bad)).toThrow(InvalidRelativePathError);
    }
  });

  test("salted_hash streamed in pieces equals the one-shot BLAKE3(ss58 ‖ plaintext), below and above 64 KiB", () => {
    for (const size of [0, 1, 4000, 65_536, 65_537, 100_000]) {
      const data = crypto.getRandomValues(new Uint8Array(size));
      const h = new SaltedHasher(identity.address)
        .update(data.subarray(0, 3))
        .update(data.subarray(3))
        .digest();
      expect(toHex(h)).toBe(toHex(saltedHash(identity.address, data)));
    }
  });

  test("one-shot BLAKE3 gives the reference test vectors and the incremental hasher's digest", () => {
    // BLAKE3 reference vectors (test_vectors.json): the empty input, and 1 byte [0].
    expect(toHex(blake3(new Uint8Array(0)))).toBe(
      "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",
    );
    expect(toHex(blake3(new Uint8Array(1)))).toBe(
      "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213",
    );
    expect(blake3Hex("docs/notes.md")).toBe(new Blake3().update("docs/notes.md").digestHex());
    expect(toHex(blake3("é/ü"))).toBe(new Blake3().update(utf8("é/ü")).digestHex());
  });

  test("rejects a malformed ciphertext hash, folder hash or salted hash", () => {
    expect(() => sample({ ciphertextHash: "ABC" })).toThrow(RangeError);
    expect(() => sample({ folderHash: "xyz" })).toThrow(RangeError);
    expect(() => sample({ saltedHash: new Uint8Array(31) })).toThrow(RangeError);
  });
});

describe("revisions", () => {
  const rid = Array.from({ length: 32 }, (_, i) => i);

  test("a new file is seq 1 with a null base; an update is current seq + 1 on the current revision id", () => {
    expect(nextRevision(null)).toEqual({ revisionSeq: 1, baseRevisionId: null });
    const next = nextRevision({ revision_seq: 4, revision_id: rid });
    const m = sample({ revision: next });
    expect(m.revision_seq).toBe(5);
    expect(m.base_revision_id).toEqual(rid);
  });

  test("rebasing on a Conflict envelope moves seq and base and keeps a valid signature", () => {
    const m = sample();
    const rebased = rebaseManifest(m, { currentRevisionId: Uint8Array.from(rid), currentRevisionSeq: 7 });
    expect(rebased.revision_seq).toBe(8);
    expect(rebased.base_revision_id).toEqual(rid);
    expect(verifyWireManifestSignature(rebased)).toBe(true);
    const gone = rebaseManifest(rebased, { currentRevisionId: null, currentRevisionSeq: 0 });
    expect(gone.revision_seq).toBe(1);
    expect(gone.base_revision_id).toBeNull();
  });
});
