/** Worker-thread encryption gives the very same blob as encryption on the calling thread. */
import { afterAll, expect, test } from "bun:test";
import { EncryptPool, encryptBytes, encryptStream, readAll, toHex } from "../src/index.ts";

const pool = new EncryptPool(2);
afterAll(() => pool.close());
const KEY = crypto.getRandomValues(new Uint8Array(32));

test("a pooled stream of 9 frames plus a partial one equals encryptBytes with the same base nonce", async () => {
  const plain = crypto.getRandomValues(new Uint8Array(65536 * 37 + 11));
  const baseNonce = crypto.getRandomValues(new Uint8Array(24));
  const pooled = await readAll(
    encryptStream(KEY, new Blob([plain]).stream(), plain.byteLength, { baseNonce, pool }),
  );
  expect(toHex(pooled)).toBe(toHex(encryptBytes(KEY, plain, { baseNonce })));
});

test("a closed pool falls back to encrypting on the calling thread", async () => {
  const closed = new EncryptPool(1);
  closed.close();
  const plain = crypto.getRandomValues(new Uint8Array(1000));
  const baseNonce = crypto.getRandomValues(new Uint8Array(24));
  const blob = await readAll(
    encryptStream(KEY, new Blob([plain]).stream(), 1000, { baseNonce, pool: closed }),
  );
  expect(toHex(blob)).toBe(toHex(encryptBytes(KEY, plain, { baseNonce })));
});
