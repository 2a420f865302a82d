/** Ciphertext format of docs/protocol.md#ciphertext: the KAT, round trips at every size boundary, and rejections. */
import { describe, expect, test } from "bun:test";
import {
  CiphertextError,
  ciphertextSizeFor,
  decryptBytes,
  decryptStream,
  encryptBytes,
  encryptFileStream,
  encryptStream,
  FRAME_PLAINTEXT_BYTES,
  frameCountFor,
  frameNonce,
  fromHex,
  HEADER_BYTES,
  PlaintextSizeError,
  plaintextSizeOf,
  readAll,
  toHex,
} from "../src/index.ts";

const KAT_KEY = fromHex("b8a5eaafb059a3ed9860023f33622205851004ea2ee3750bb2b5c06653b45eec");
const KAT_BLOB = fromHex(
  "b76413f1c1633749ed02dfaee004b11d44a8126ee12f0ed10100000033000000cfd276eb49236f6c3a83df13c42a769f2c478a0415ae380801be09e0d30c1052eb4bf1a090bba946bc2d284f7e621ee0137eb2",
);
const KEY = crypto.getRandomValues(new Uint8Array(32));
const MiB = 1024 * 1024;

/** Deterministic pseudo-random bytes (fast, no CSPRNG needed for test data). */
function testBytes(n: number, seed = 1): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** Splits `bytes` into a stream of chunks of irregular sizes, to exercise reassembly. */
function chunkedStream(bytes: Uint8Array, sizes = [1, 7, 65536, 300000, 13]): ReadableStream<Uint8Array> {
  let at = 0;
  let k = 0;
  return new ReadableStream<Uint8Array>({
    pull(c) {
      if (at >= bytes.byteLength) return c.close();
      const n = sizes[k++ % sizes.length] as number;
      c.enqueue(bytes.slice(at, at + n));
      at += n;
    },
  });
}

async function decryptAll(key: Uint8Array, blob: Uint8Array, expectedPlaintextSize?: number) {
  return readAll(decryptStream(key, chunkedStream(blob), { expectedPlaintextSize }));
}

async function rejection(p: Promise<unknown>): Promise<CiphertextError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(CiphertextError);
    return e as CiphertextError;
  }
  throw new Error("expected a CiphertextError");
}

describe("docs/protocol.md#ciphertext test vectors", () => {
  test("the KAT blob decrypts with the alpha folder key to its ASCII text", async () => {
    const plain = await decryptBytes(KAT_KEY, KAT_BLOB);
    expect(new TextDecoder().decode(plain)).toBe("hippius hcfs at-rest decrypt KAT v1");
  });

  test("re-encrypting the KAT plaintext with its base nonce reproduces the blob byte for byte", () => {
    const plain = new TextEncoder().encode("hippius hcfs at-rest decrypt KAT v1");
    const blob = encryptBytes(KAT_KEY, plain, { baseNonce: KAT_BLOB.slice(0, 24) });
    expect(toHex(blob)).toBe(toHex(KAT_BLOB));
  });

  test("a zero-byte file is one empty frame of 48 bytes", () => {
    const blob = encryptBytes(KEY, new Uint8Array(0));
    expect(blob.byteLength).toBe(48);
    expect(new DataView(blob.buffer).getUint32(24, true)).toBe(1);
    expect(new DataView(blob.buffer).getUint32(28, true)).toBe(16);
  });

  test("frame nonce XORs the index, little-endian, into the first 8 bytes only", () => {
    const base = fromHex("000102030405060708090a0b0c0d0e0f1011121314151617");
    expect(toHex(frameNonce(base, 0))).toBe(toHex(base));
    expect(toHex(frameNonce(base, 0x0102))).toBe("020002030405060708090a0b0c0d0e0f1011121314151617");
    expect(toHex(frameNonce(base, 2 ** 40)).slice(0, 16)).toBe("0001020304040607");
  });
});

describe("sizes", () => {
  test("frameCount and ciphertextSize follow max(1, ceil(n / 256 KiB)) and 28 + 20 × frames + n", () => {
    expect(frameCountFor(0)).toBe(1);
    expect(frameCountFor(1)).toBe(1);
    expect(frameCountFor(FRAME_PLAINTEXT_BYTES)).toBe(1);
    expect(frameCountFor(FRAME_PLAINTEXT_BYTES + 1)).toBe(2);
    expect(ciphertextSizeFor(0)).toBe(48);
    expect(ciphertextSizeFor(8 * MiB)).toBe(28 + 20 * 32 + 8 * MiB);
    expect(() => frameCountFor(-1)).toThrow(RangeError);
  });

  test("plaintextSizeOf inverts ciphertextSize and rejects impossible sizes", () => {
    for (const n of [
      0,
      1,
      35,
      FRAME_PLAINTEXT_BYTES - 1,
      FRAME_PLAINTEXT_BYTES,
      FRAME_PLAINTEXT_BYTES + 1,
      3 * 8 * MiB + 5,
    ]) {
      expect(plaintextSizeOf(ciphertextSizeFor(n))).toBe(n);
    }
    for (const bad of [0, 47, 28 + 20 + FRAME_PLAINTEXT_BYTES + 1, 28 + 20 + FRAME_PLAINTEXT_BYTES + 20]) {
      expect(() => plaintextSizeOf(bad)).toThrow(CiphertextError);
    }
  });
});

describe("round trips", () => {
  const sizes = [
    0,
    1,
    FRAME_PLAINTEXT_BYTES - 1,
    FRAME_PLAINTEXT_BYTES,
    FRAME_PLAINTEXT_BYTES + 1,
    8 * MiB - 1,
    8 * MiB,
    8 * MiB + 1,
    3 * 8 * MiB + 5,
  ];
  for (const size of sizes) {
    test(`${size} bytes: streamed encryption has 28 + 20 × frames + n bytes and decrypts back`, async () => {
      const plain = testBytes(size, size + 7);
      const blob = await readAll(encryptStream(KEY, chunkedStream(plain), size));
      expect(blob.byteLength).toBe(HEADER_BYTES + 20 * frameCountFor(size) + size);
      expect(blob.byteLength).toBe(ciphertextSizeFor(size));
      const back = await decryptAll(KEY, blob, size);
      expect(back.byteLength).toBe(size);
      expect(Buffer.compare(back, plain)).toBe(0);
    });
  }

  test("streamed and in-memory encryption give the same blob for the same base nonce", async () => {
    const plain = testBytes(FRAME_PLAINTEXT_BYTES * 2 + 3);
    const baseNonce = crypto.getRandomValues(new Uint8Array(24));
    const streamed = await readAll(encryptStream(KEY, chunkedStream(plain), plain.byteLength, { baseNonce }));
    expect(toHex(streamed)).toBe(toHex(encryptBytes(KEY, plain, { baseNonce })));
  });

  test("a file encrypts through encryptFileStream with its size taken from the file system", async () => {
    const path = `${process.env.TMPDIR ?? "/tmp"}/esync-frame-${process.pid}.bin`;
    const plain = testBytes(FRAME_PLAINTEXT_BYTES + 999);
    await Bun.write(path, plain);
    try {
      const { stream, plaintextSize, ciphertextSize: size } = encryptFileStream(KEY, path);
      const blob = await readAll(stream);
      expect(plaintextSize).toBe(plain.byteLength);
      expect(blob.byteLength).toBe(size);
      expect(Buffer.compare(await decryptBytes(KEY, blob), plain)).toBe(0);
    } finally {
      await Bun.file(path).delete();
    }
  });

  test("the encryptor errors when the source is shorter or longer than declared", async () => {
    const plain = testBytes(1000);
    await expect(readAll(encryptStream(KEY, chunkedStream(plain), 1001))).rejects.toBeInstanceOf(
      PlaintextSizeError,
    );
    await expect(readAll(encryptStream(KEY, chunkedStream(plain), 999))).rejects.toBeInstanceOf(
      PlaintextSizeError,
    );
  });
});

describe("decryptor rejections", () => {
  const size = 3 * FRAME_PLAINTEXT_BYTES + 100; // four frames
  const plain = testBytes(size, 99);
  const blob = encryptBytes(KEY, plain);
  const frameLen = 4 + FRAME_PLAINTEXT_BYTES + 16;

  test("rejects truncation inside a frame, at a frame boundary and inside the header", async () => {
    expect((await rejection(decryptAll(KEY, blob.slice(0, blob.byteLength - 1)))).reason).toBe("truncated");
    expect((await rejection(decryptAll(KEY, blob.slice(0, HEADER_BYTES + 2 * frameLen)))).reason).toBe(
      "truncated",
    );
    expect((await rejection(decryptAll(KEY, blob.slice(0, 20)))).reason).toBe("truncated");
    expect((await rejection(decryptAll(KEY, new Uint8Array(0)))).reason).toBe("truncated");
  });

  test("rejects a blob cut at a frame boundary with its frame count rewritten, given the expected size", async () => {
    const cut = blob.slice(0, HEADER_BYTES + 2 * frameLen);
    new DataView(cut.buffer).setUint32(24, 2, true);
    expect((await decryptAll(KEY, cut)).byteLength).toBe(2 * FRAME_PLAINTEXT_BYTES); // the format alone cannot tell
    expect((await rejection(decryptAll(KEY, cut, size))).reason).toBe("size_mismatch");
  });

  test("rejects two swapped frames: each frame's nonce is bound to its index", async () => {
    const swapped = blob.slice();
    const a = HEADER_BYTES;
    const b = HEADER_BYTES + frameLen;
    swapped.set(blob.subarray(b, b + frameLen), a);
    swapped.set(blob.subarray(a, a + frameLen), b);
    const e = await rejection(decryptAll(KEY, swapped));
    expect(e.reason).toBe("authentication_failed");
    expect(e.message).toContain("frame 0");
  });

  test("rejects a single flipped bit in a ciphertext, a tag and the base nonce", async () => {
    for (const at of [HEADER_BYTES + 4 + 1000, HEADER_BYTES + frameLen - 1, 3]) {
      const bad = blob.slice();
      bad[at] = (bad[at] as number) ^ 0x01;
      expect((await rejection(decryptAll(KEY, bad))).reason).toBe("authentication_failed");
    }
  });

  test("rejects trailing bytes after the last frame", async () => {
    const extra = new Uint8Array(blob.byteLength + 1);
    extra.set(blob);
    expect((await rejection(decryptAll(KEY, extra))).reason).toBe("trailing_bytes");
  });

  test("rejects the wrong key", async () => {
    expect((await rejection(decryptAll(crypto.getRandomValues(new Uint8Array(32)), blob))).reason).toBe(
      "authentication_failed",
    );
  });

  test("rejects a header of zero frames and a short frame before the last", async () => {
    const zero = blob.slice();
    new DataView(zero.buffer).setUint32(24, 0, true);
    expect((await rejection(decryptAll(KEY, zero))).reason).toBe("bad_header");
    const short = blob.slice();
    new DataView(short.buffer).setUint32(HEADER_BYTES, 1000, true);
    expect((await rejection(decryptAll(KEY, short))).reason).toBe("bad_frame_length");
    const huge = blob.slice();
    new DataView(huge.buffer).setUint32(HEADER_BYTES, 0xffffffff, true);
    expect((await rejection(decryptAll(KEY, huge))).reason).toBe("bad_frame_length");
  });

  test("rejects a header whose frame count disagrees with the expected plaintext size", async () => {
    expect((await rejection(decryptAll(KEY, blob, size + FRAME_PLAINTEXT_BYTES))).reason).toBe(
      "size_mismatch",
    );
    expect((await rejection(decryptAll(KEY, blob, size - 1))).reason).toBe("size_mismatch");
  });
});
