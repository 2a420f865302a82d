/**
 * Server-side Ed25519 checks (src/auth/ed25519.ts) on native crypto agree with the signatures the
 * clients make (@polkadot/util-crypto), refuse every kind of bad input, and keep working after
 * the key cache has dropped keys; SS58 checks remember only valid addresses.
 */
import { describe, expect, test } from "bun:test";
import { createPrivateKey, sign } from "node:crypto";
import { cryptoWaitReady, ed25519PairFromSeed, ed25519Sign, encodeAddress } from "@polkadot/util-crypto";
import { ed25519Valid, KEY_CACHE_SIZE } from "../src/ed25519.ts";
import { isSs58 } from "../src/ss58.ts";

await cryptoWaitReady();
const pair = ed25519PairFromSeed(new Uint8Array(32).fill(9));
const message = new TextEncoder().encode("I here by declare that the file with hash abc");
const signature = ed25519Sign(message, pair);

/** A native signer of seed `seed` (32 bytes): its public key and sign function. */
function nativeSigner(seed: Uint8Array) {
  const key = createPrivateKey({
    key: Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), seed]),
    format: "der",
    type: "pkcs8",
  });
  return {
    publicKey: ed25519PairFromSeed(seed).publicKey,
    sign: (m: Uint8Array) => new Uint8Array(sign(null, m, key)),
  };
}

describe("ed25519Valid", () => {
  test("accepts a signature made by @polkadot/util-crypto", () => {
    expect(ed25519Valid(message, signature, pair.publicKey)).toBe(true);
  });

  test("refuses another message, another key, a flipped signature bit and wrong lengths", () => {
    const other = ed25519PairFromSeed(new Uint8Array(32).fill(10));
    const flipped = signature.slice();
    flipped[5] = (flipped[5] as number) ^ 1;
    expect(ed25519Valid(new TextEncoder().encode("something else"), signature, pair.publicKey)).toBe(false);
    expect(ed25519Valid(message, signature, other.publicKey)).toBe(false);
    expect(ed25519Valid(message, flipped, pair.publicKey)).toBe(false);
    expect(ed25519Valid(message, signature.subarray(0, 63), pair.publicKey)).toBe(false);
    expect(ed25519Valid(message, signature, pair.publicKey.subarray(0, 31))).toBe(false);
  });

  test("refuses a key of 32 bytes that is not a curve point instead of throwing", () => {
    expect(ed25519Valid(message, signature, new Uint8Array(32).fill(0xff))).toBe(false);
  });

  test("still verifies a key after more than the cache's worth of other keys were used", () => {
    for (let i = 0; i <= KEY_CACHE_SIZE; i++) {
      const seed = new Uint8Array(32);
      new DataView(seed.buffer).setUint32(0, i + 1);
      const s = nativeSigner(seed);
      if (i % 512 === 0) expect(ed25519Valid(message, s.sign(message), s.publicKey)).toBe(true);
      else ed25519Valid(message, signature, s.publicKey);
    }
    expect(ed25519Valid(message, signature, pair.publicKey)).toBe(true);
    expect(ed25519Valid(message, signature, ed25519PairFromSeed(new Uint8Array(32).fill(10)).publicKey)).toBe(
      false,
    );
  });
});

describe("isSs58", () => {
  test("a valid address stays valid when asked again, and a bad checksum is refused every time", () => {
    const address = encodeAddress(pair.publicKey, 42);
    const bad = `${address.slice(0, -1)}${address.endsWith("a") ? "b" : "a"}`;
    for (let i = 0; i < 3; i++) {
      expect(isSs58(address)).toBe(true);
      expect(isSs58(bad)).toBe(false);
    }
  });
});
