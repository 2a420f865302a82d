/** Sealing a file: one encryption pass gives the blob, its BLAKE3 and the salted hash, in memory or spilled. */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm, utimes } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  blake3FileHex,
  blake3Hex,
  ciphertextSizeFor,
  decryptBytes,
  EncryptPool,
  encryptRange,
  type FileIdentity,
  openSealedFile,
  saltedHash,
  sealBytes,
  sealedFileRecord,
  sealFile,
  sealFileStreaming,
  toHex,
} from "../src/index.ts";
import { WHOLE_READ_BYTES } from "../src/seal.ts";

const dir = await mkdtemp(join(tmpdir(), "esync-seal-"));
afterAll(() => rm(dir, { recursive: true, force: true }));
const KEY = crypto.getRandomValues(new Uint8Array(32));
const SS58 = "5EPCUjPxiHAcNooYipQFWr9NmmXJKpNG5RhcntXwbtUySrgH";

async function fileOf(name: string, size: number): Promise<{ path: string; data: Uint8Array }> {
  const data = new Uint8Array(size);
  for (let i = 0; i < size; i += 65536) crypto.getRandomValues(data.subarray(i, Math.min(size, i + 65536)));
  const path = join(dir, name);
  await Bun.write(path, data);
  return { path, data };
}

describe("sealFile", () => {
  test("keeps a small blob in memory with correct hashes, and it decrypts to the file", async () => {
    const { path, data } = await fileOf("small.bin", 300_000);
    const sealed = await sealFile(path, { key: KEY, ss58Address: SS58 });
    expect(sealed.spillPath).toBeNull();
    expect(sealed.ciphertextSize).toBe(ciphertextSizeFor(data.byteLength));
    const blob = await sealed.slice().bytes();
    expect(blob.byteLength).toBe(sealed.ciphertextSize);
    expect(sealed.ciphertextHash).toBe(blake3Hex(blob));
    expect(toHex(sealed.saltedHash)).toBe(toHex(saltedHash(SS58, data)));
    expect(Buffer.compare(await decryptBytes(KEY, blob), data)).toBe(0);
  });

  test("spills a blob above the memory limit to a 0600 file whose slices are the blob's bytes", async () => {
    const { path, data } = await fileOf("large.bin", 2_000_000);
    const spillPath = join(dir, "large.blob");
    const sealed = await sealFile(path, { key: KEY, ss58Address: SS58, memoryLimit: 1_000_000, spillPath });
    expect(sealed.spillPath).toBe(spillPath);
    expect((await Bun.file(spillPath).stat()).mode & 0o777).toBe(0o600);
    expect(await blake3FileHex(spillPath)).toBe(sealed.ciphertextHash);
    const whole = await Bun.file(spillPath).bytes();
    expect(toHex(await sealed.slice(1000, 5000).bytes())).toBe(toHex(whole.subarray(1000, 5000)));
    expect(Buffer.compare(await decryptBytes(KEY, whole), data)).toBe(0);
    await sealed.dispose();
    expect(await Bun.file(spillPath).exists()).toBe(false);
  });

  test("the same base nonce reproduces the identical blob (what resume relies on)", async () => {
    const { path } = await fileOf("again.bin", 600_000);
    const a = await sealFile(path, { key: KEY, ss58Address: SS58 });
    const b = await sealFile(path, { key: KEY, ss58Address: SS58, baseNonce: a.baseNonce });
    const c = await sealFile(path, { key: KEY, ss58Address: SS58 });
    expect(b.ciphertextHash).toBe(a.ciphertextHash);
    expect(c.ciphertextHash).not.toBe(a.ciphertextHash);
  });

  test("a spill file is reopened from its record only while its bytes still match", async () => {
    const { path } = await fileOf("reopen.bin", 1_500_000);
    const sealed = await sealFile(path, {
      key: KEY,
      ss58Address: SS58,
      memoryLimit: 0,
      spillPath: join(dir, "r.blob"),
    });
    const record = sealedFileRecord(sealed);
    if (!record) throw new Error("expected a spilled blob");
    const again = await openSealedFile(record);
    expect(again?.ciphertextHash).toBe(sealed.ciphertextHash);
    expect(toHex(again?.baseNonce ?? new Uint8Array())).toBe(toHex(sealed.baseNonce));
    const spill = record.spillPath as string;
    const bytes = await Bun.file(spill).bytes();
    bytes[100] = (bytes[100] as number) ^ 1;
    await Bun.write(spill, bytes);
    expect(await openSealedFile(record)).toBeNull();
    await sealed.dispose();
    expect(await openSealedFile(record)).toBeNull();
  });

  test("reports plaintext progress up to the file size", async () => {
    const { path } = await fileOf("progress.bin", 700_000);
    const seen: number[] = [];
    await sealFile(path, { key: KEY, ss58Address: SS58, onProgress: (done) => seen.push(done) });
    expect(seen.at(-1)).toBe(700_000);
    expect(seen.every((v, i) => i === 0 || v >= (seen[i - 1] as number))).toBe(true);
  });

  test("refuses a file modified while it was encrypted", async () => {
    const { path } = await fileOf("moving.bin", 2_000_000);
    let touched = false;
    const p = sealFile(path, {
      key: KEY,
      ss58Address: SS58,
      onProgress: () => {
        if (!touched) {
          touched = true;
          void utimes(path, new Date(), new Date(Date.now() + 5000));
        }
      },
    });
    await expect(p).rejects.toThrow(/changed while/);
  });

  test("a file read in one piece (up to 1 MiB, empty included) and one streamed (above) seal to the blob the streaming encryptor gives", async () => {
    for (const size of [0, 1, WHOLE_READ_BYTES, WHOLE_READ_BYTES + 1]) {
      const { path, data } = await fileOf(`edge-${size}.bin`, size);
      const a = await sealFile(path, { key: KEY, ss58Address: SS58 });
      const b = await sealBytes(data, { key: KEY, ss58Address: SS58, baseNonce: a.baseNonce });
      expect(toHex(await a.slice().bytes())).toBe(toHex(await b.slice().bytes()));
      expect(a.ciphertextHash).toBe(b.ciphertextHash);
      expect(toHex(a.saltedHash)).toBe(toHex(b.saltedHash));
    }
  });

  test("a small file changed since the size and mtime given as `before` is sealed as it is now", async () => {
    const { path } = await fileOf("hinted.bin", 5000);
    const seen = await Bun.file(path).stat();
    const now = new Uint8Array(7000).fill(7);
    await Bun.write(path, now);
    await utimes(path, new Date(), new Date(seen.mtimeMs + 5000));
    const sealed = await sealFile(path, {
      key: KEY,
      ss58Address: SS58,
      before: { size: seen.size, mtimeMs: seen.mtimeMs },
    });
    expect(sealed.plaintextSize).toBe(7000);
    expect(Buffer.compare(await decryptBytes(KEY, await sealed.slice().bytes()), now)).toBe(0);
    expect(toHex(sealed.saltedHash)).toBe(toHex(saltedHash(SS58, now)));
  });

  test("sealBytes matches sealFile's hashes for the same nonce", async () => {
    const { path, data } = await fileOf("bytes.bin", 12345);
    const a = await sealFile(path, { key: KEY, ss58Address: SS58 });
    const b = await sealBytes(data, { key: KEY, ss58Address: SS58, baseNonce: a.baseNonce });
    expect(b.ciphertextHash).toBe(a.ciphertextHash);
    expect(toHex(b.saltedHash)).toBe(toHex(a.saltedHash));
  });
});

describe("sealFileStreaming", () => {
  test("hashes without keeping the blob; any range it reads is the same bytes as the whole blob under that nonce", async () => {
    const size = 3 * 262_144 + 12_345;
    const { path, data } = await fileOf("stream.bin", size);
    const streamed = await sealFileStreaming(path, { key: KEY, ss58Address: SS58, memoryLimit: 0 });
    expect(streamed.spillPath).toBeNull();
    expect(streamed.source?.size).toBe(size);
    const whole = await sealFile(path, {
      key: KEY,
      ss58Address: SS58,
      baseNonce: streamed.baseNonce,
      memoryLimit: 1 << 30,
    });
    const expected = await whole.slice().bytes();
    expect(streamed.ciphertextHash).toBe(blake3Hex(expected));
    expect(toHex(streamed.saltedHash)).toBe(toHex(saltedHash(SS58, data)));
    const total = streamed.ciphertextSize;
    const frame = 262_164;
    const ranges: Array<[number, number]> = [
      [0, total],
      [0, 10],
      [10, 28],
      [27, 29],
      [28 + frame - 1, 28 + 2 * frame + 1],
      [100_000, 600_000],
      [total - 5, total],
      [500, 500],
    ];
    for (const [a, b] of ranges) {
      const got = await (await streamed.read(a, b)).bytes();
      expect(Buffer.compare(got, expected.subarray(a, b))).toBe(0);
    }
    const pool = new EncryptPool(2);
    try {
      const viaPool = await encryptRange(
        streamed.source as FileIdentity,
        KEY,
        streamed.baseNonce,
        5,
        total - 7,
        pool,
      );
      expect(Buffer.compare(viaPool, expected.subarray(5, total - 7))).toBe(0);
    } finally {
      pool.close();
    }
  });

  test("a read after the file changed throws FileChangedError; the record reopens only the unchanged file", async () => {
    const { path } = await fileOf("stream-change.bin", 2 * 262_144);
    const streamed = await sealFileStreaming(path, { key: KEY, ss58Address: SS58, memoryLimit: 0 });
    const record = sealedFileRecord(streamed);
    if (!record) throw new Error("expected a record");
    expect(record.spillPath).toBeNull();
    const again = await openSealedFile(record, { key: KEY });
    expect(again?.ciphertextHash).toBe(streamed.ciphertextHash);
    expect(await openSealedFile(record)).toBeNull(); // a streamed blob needs the key
    await utimes(path, new Date(), new Date(Date.now() + 5_000));
    expect(await openSealedFile(record, { key: KEY })).toBeNull();
    expect(streamed.read(0, 100)).rejects.toThrow(/changed while it was being encrypted/);
  });
});
