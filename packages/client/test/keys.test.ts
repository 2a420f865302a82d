/** Keys and hashes of docs/protocol.md#manifest, #ciphertext, #client-keys, checked against the real clients' test vectors. */
import { describe, expect, test } from "bun:test";
import { blake3 as nobleBlake3 } from "@noble/hashes/blake3.js";
import { decodeAddress, ed25519PairFromSeed, ed25519Sign, signatureVerify } from "@polkadot/util-crypto";
import {
  Blake3,
  bip39Seed,
  bip39SeedAsync,
  blake3Hex,
  deriveFolderKeys,
  deriveFolderKeysAsync,
  ed25519FromSeed,
  folderHash,
  folderMnemonic,
  generateMnemonic,
  InvalidMnemonicError,
  identityFromMnemonic,
  keysReady,
  toHex,
  utf8,
  validateMnemonic,
} from "../src/index.ts";

const MASTER = `${"abandon ".repeat(11)}about`;

describe("docs/protocol.md#ciphertext, #client-keys test vectors", () => {
  test('folder_hash("default") is 37a8eec1ce19687d', () => {
    expect(folderHash("default")).toBe("37a8eec1ce19687d");
  });

  test("BLAKE3 of the empty input", () => {
    expect(blake3Hex(new Uint8Array(0))).toBe(
      "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",
    );
  });

  test("the alpha folder key of the abandon…about master, and its mnemonic's first words", () => {
    const keys = deriveFolderKeys(MASTER, "alpha");
    expect(toHex(keys.key)).toBe("b8a5eaafb059a3ed9860023f33622205851004ea2ee3750bb2b5c06653b45eec");
    expect(keys.mnemonic.startsWith("charge random negative")).toBe(true);
    expect(keys.mnemonic.split(" ")).toHaveLength(24);
    expect(folderMnemonic(MASTER, "alpha")).toBe(keys.mnemonic);
  });

  test("the native-PBKDF2 derivations give the same BIP39 seed and alpha folder keys as the pure-JS ones", async () => {
    expect(toHex(await bip39SeedAsync(MASTER))).toBe(toHex(bip39Seed(MASTER)));
    const keys = await deriveFolderKeysAsync(MASTER, "alpha");
    expect(toHex(keys.key)).toBe("b8a5eaafb059a3ed9860023f33622205851004ea2ee3750bb2b5c06653b45eec");
    expect(keys.mnemonic).toBe(deriveFolderKeys(MASTER, "alpha").mnemonic);
    expect(toHex(keys.signingKey)).toBe(toHex(deriveFolderKeys(MASTER, "alpha").signingKey));
    await expect(bip39SeedAsync("not a mnemonic")).rejects.toBeInstanceOf(InvalidMnemonicError);
  });

  test("the Ed25519 public key of BIP39_seed(master)[0..32]", () => {
    const pub = ed25519FromSeed(bip39Seed(MASTER).slice(0, 32)).publicKey;
    expect(toHex(pub)).toBe("c5785e1865b708938aff8161d573006496663b1aa10834e396dc566869a2c66a");
  });

  test("BLAKE3 agrees with an independent implementation on the official vector inputs (i mod 251)", () => {
    for (const n of [
      0, 1, 63, 64, 65, 1023, 1024, 1025, 2048, 2049, 3072, 3073, 4096, 4097, 5120, 8193, 16385, 31745,
      102400,
    ]) {
      const input = Uint8Array.from({ length: n }, (_, i) => i % 251);
      expect(blake3Hex(input)).toBe(toHex(nobleBlake3(input)));
      const split = new Blake3()
        .update(input.subarray(0, n >> 1))
        .update(input.subarray(n >> 1))
        .digestHex();
      expect(split).toBe(blake3Hex(input));
    }
  });
});

describe("identity", () => {
  test("the account is the standard Substrate sr25519 key: the dev phrase's //Alice is the well-known address", async () => {
    const dev = "bottom drive obey lake curtain smoke basket hold race lonely fit walk";
    const alice = await identityFromMnemonic(dev, { derivationPath: "//Alice" });
    expect(alice.address).toBe("5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY");
  });

  test("the address uses prefix 42 by default and the prefix asked for otherwise", async () => {
    const a = await identityFromMnemonic(MASTER);
    const b = await identityFromMnemonic(MASTER, { ss58Prefix: 0 });
    expect(a.address.startsWith("5")).toBe(true);
    expect(b.address.startsWith("1")).toBe(true);
    expect(toHex(decodeAddress(a.address))).toBe(toHex(decodeAddress(b.address)));
    expect(toHex(decodeAddress(a.address))).toBe(toHex(a.publicKey));
  });

  test("the account signs what signatureVerify accepts for its address", async () => {
    const id = await identityFromMnemonic(MASTER);
    const msg = utf8("hello");
    expect(signatureVerify(msg, id.sign(msg), id.address).isValid).toBe(true);
  });

  test("folder keys are cached per label, and differ between labels", async () => {
    const id = await identityFromMnemonic(MASTER);
    expect(id.folder("alpha")).toBe(id.folder("alpha"));
    expect(toHex(id.folder("alpha").key)).toBe(
      "b8a5eaafb059a3ed9860023f33622205851004ea2ee3750bb2b5c06653b45eec",
    );
    expect(toHex(id.folder("beta").key)).not.toBe(toHex(id.folder("alpha").key));
    expect(id.folder("beta").folderHash).toBe(folderHash("beta"));
  });

  test("folderKeys derives the same keys as folder, sharing its cache either way round", async () => {
    const id = await identityFromMnemonic(MASTER);
    const gamma = await id.folderKeys("gamma");
    expect(id.folder("gamma")).toBe(gamma);
    expect(toHex(gamma.key)).toBe(toHex(deriveFolderKeys(MASTER, "gamma").key));
    const alpha = id.folder("alpha");
    expect(await id.folderKeys("alpha")).toBe(alpha);
  });

  test("whitespace and case of a mnemonic do not change the identity", async () => {
    const a = await identityFromMnemonic(MASTER);
    const b = await identityFromMnemonic(`  ${MASTER.toUpperCase().replaceAll(" ", "   ")}\n`);
    expect(b.address).toBe(a.address);
  });

  test("an invalid mnemonic is rejected with InvalidMnemonicError", async () => {
    expect(validateMnemonic(`${"abandon ".repeat(11)}abandon`)).toBe(false);
    await expect(identityFromMnemonic(`${"abandon ".repeat(11)}abandon`)).rejects.toBeInstanceOf(
      InvalidMnemonicError,
    );
    expect(() => bip39Seed("not a mnemonic")).toThrow(InvalidMnemonicError);
  });

  test("generated mnemonics are valid 24- or 12-word phrases", () => {
    expect(generateMnemonic().split(" ")).toHaveLength(24);
    expect(generateMnemonic(12).split(" ")).toHaveLength(12);
    expect(validateMnemonic(generateMnemonic())).toBe(true);
  });
});

describe("folder signing key", () => {
  test("signs byte-identically to @polkadot/util-crypto's Ed25519 from the same seed, with the same public key", async () => {
    await keysReady();
    const seed = bip39Seed(MASTER).slice(0, 32);
    const ours = ed25519FromSeed(seed);
    const theirs = ed25519PairFromSeed(seed);
    expect(Array.from(ours.publicKey)).toEqual(Array.from(theirs.publicKey));
    for (const text of ["", "I here by declare that the file with hash 00", "x".repeat(5000)]) {
      const msg = new TextEncoder().encode(text);
      expect(Array.from(ours.sign(msg))).toEqual(Array.from(ed25519Sign(msg, theirs)));
    }
  });
});
