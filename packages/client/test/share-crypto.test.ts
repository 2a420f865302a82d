/**
 * Share-link cryptography and formats (docs/sharing.md): key and password-wrap fragments of the
 * exact lengths, the encrypted file name, the link grammar of both share kinds, and owner wraps
 * that only the same mnemonic and account open.
 */
import { describe, expect, test } from "bun:test";
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { argon2id } from "@noble/hashes/argon2.js";
import { bip39Seed } from "../src/keys.ts";
import {
  base64url,
  decryptFileName,
  encryptFileName,
  fromBase64url,
  generateShareKey,
  parseShareLink,
  SHARE_WRAP_SIZE,
  ShareLinkError,
  ShareSecretError,
  shareLink,
  unwrapShareKey,
  wrapShareKey,
} from "../src/share-crypto.ts";
import {
  folderShareTokenHash,
  openOwnerWrap,
  ownerWrapKey,
  sealOwnerWrap,
  shareChunkCount,
} from "../src/shares.ts";

const MNEMONIC =
  "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon art";
const TOKEN = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcde";

describe("share links", () => {
  test("a key link has a 43-character #k= fragment and parses back to the same key", () => {
    const key = generateShareKey();
    const link = shareLink("https://console.hippius.com/", TOKEN, { password: false, material: key }, false);
    expect(link.startsWith(`https://console.hippius.com/share/${TOKEN}#k=`)).toBe(true);
    expect(link.split("#k=")[1]).toHaveLength(43);
    const parsed = parseShareLink(link);
    expect(parsed).toMatchObject({ folder: false, token: TOKEN, origin: "https://console.hippius.com" });
    expect(parsed.secret?.material).toEqual(key);
  });

  test("a password link has a 119-character #p= fragment; the right password opens it, a wrong one throws", async () => {
    const key = generateShareKey();
    const wrap = await wrapShareKey("correct horse", key);
    expect(wrap).toHaveLength(SHARE_WRAP_SIZE);
    expect(wrap[0]).toBe(1);
    const link = shareLink("http://127.0.0.1:8080", TOKEN, { password: true, material: wrap }, true);
    expect(link.startsWith(`http://127.0.0.1:8080/share/folder/${TOKEN}#p=`)).toBe(true);
    expect(link.split("#p=")[1]).toHaveLength(119);
    const parsed = parseShareLink(link);
    expect(parsed.folder).toBe(true);
    expect(parsed.secret?.password).toBe(true);
    expect(await unwrapShareKey("correct horse", parsed.secret?.material as Uint8Array)).toEqual(key);
    expect(unwrapShareKey("wrong horse", wrap)).rejects.toBeInstanceOf(ShareSecretError);
  });

  test("the password wrap is 0x01 ‖ salt ‖ nonce ‖ XChaCha20-Poly1305 under Argon2id(19456 KiB, t=2, p=1, v=0x13)", async () => {
    const key = new Uint8Array(32).fill(7);
    const salt = new Uint8Array(16).fill(1);
    const nonce = new Uint8Array(24).fill(2);
    const wrap = await wrapShareKey("password1", key, { salt, nonce });
    const kek = argon2id(new TextEncoder().encode("password1"), salt, {
      m: 19456,
      t: 2,
      p: 1,
      version: 0x13,
      dkLen: 32,
    });
    const expected = new Uint8Array([1, ...salt, ...nonce, ...xchacha20poly1305(kek, nonce).encrypt(key)]);
    expect(wrap).toEqual(expected);
  });

  test("a share password shorter than 8 characters is refused", () => {
    expect(wrapShareKey("short", generateShareKey())).rejects.toBeInstanceOf(RangeError);
  });

  test("the encrypted file name opens with its key and refuses another key", () => {
    const key = generateShareKey();
    const { ciphertext, nonce } = encryptFileName("Bericht ü.pdf", key);
    expect(nonce).toHaveLength(24);
    expect(ciphertext).toHaveLength(new TextEncoder().encode("Bericht ü.pdf").byteLength + 16);
    expect(decryptFileName(ciphertext, nonce, key)).toBe("Bericht ü.pdf");
    expect(() => decryptFileName(ciphertext, nonce, generateShareKey())).toThrow(ShareSecretError);
  });

  test("malformed links are refused: other paths, bad tokens, short fragments, non-base64url", () => {
    expect(() => parseShareLink("https://x.org/download/abc#k=AA")).toThrow(ShareLinkError);
    expect(() => parseShareLink("https://x.org/share/a.b#k=AA")).toThrow(ShareLinkError);
    expect(() => parseShareLink(`https://x.org/share/${TOKEN}#k=AAAA`)).toThrow(ShareLinkError);
    expect(() => parseShareLink(`https://x.org/share/${TOKEN}#k=${"+".repeat(43)}`)).toThrow(ShareLinkError);
    expect(parseShareLink(`https://x.org/share/${TOKEN}`).secret).toBeNull();
  });

  test("base64url has no padding and round-trips", () => {
    const bytes = new Uint8Array([251, 255, 0, 1]);
    expect(base64url(bytes)).toBe("-_8AAQ");
    expect(fromBase64url("-_8AAQ")).toEqual(bytes);
  });

  test("chunk count is max(1, ceil(size / 8 MiB))", () => {
    expect(shareChunkCount(0)).toBe(1);
    expect(shareChunkCount(8 * 1024 * 1024)).toBe(1);
    expect(shareChunkCount(8 * 1024 * 1024 + 1)).toBe(2);
  });
});

describe("owner wraps", () => {
  const key = ownerWrapKey(bip39Seed(MNEMONIC));
  const ss58 = "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY";

  test("a file share's wrap opens with the same mnemonic and account and gives back the key", () => {
    const secret = { password: false, material: generateShareKey() };
    const wrap = sealOwnerWrap({ key, ss58, secret, fileToken: TOKEN });
    expect(wrap).toHaveLength(1 + 24 + 1 + 32 + 16);
    const opened = openOwnerWrap({ key, ss58, rowKey: TOKEN, wrap });
    expect(opened.folderToken).toBeNull();
    expect(opened.secret).toEqual(secret);
  });

  test("a folder share's wrap is keyed by the token hash and carries the token", () => {
    const secret = { password: true, material: new Uint8Array(89).fill(3) };
    const wrap = sealOwnerWrap({ key, ss58, secret, folderToken: TOKEN });
    const opened = openOwnerWrap({ key, ss58, rowKey: folderShareTokenHash(TOKEN), wrap });
    expect(opened.folderToken).toBe(TOKEN);
    expect(opened.secret).toEqual(secret);
    expect(folderShareTokenHash(TOKEN)).toMatch(/^[0-9a-f]{64}$/);
  });

  test("a wrap does not open for another account, another row or another mnemonic", () => {
    const wrap = sealOwnerWrap({
      key,
      ss58,
      secret: { password: false, material: generateShareKey() },
      fileToken: TOKEN,
    });
    expect(() => openOwnerWrap({ key, ss58: `${ss58}x`, rowKey: TOKEN, wrap })).toThrow(ShareSecretError);
    expect(() => openOwnerWrap({ key, ss58, rowKey: `${TOKEN}x`, wrap })).toThrow(ShareSecretError);
    expect(() => openOwnerWrap({ key: new Uint8Array(32), ss58, rowKey: TOKEN, wrap })).toThrow(
      ShareSecretError,
    );
  });

  test("the owner-wrap key is BLAKE3 derive_key('hippius.hcfs.share-wrap.v1', seed[0..32])", async () => {
    const { blake3 } = await import("@noble/hashes/blake3.js");
    const seed = bip39Seed(MNEMONIC);
    expect(key).toEqual(
      blake3(seed.subarray(0, 32), { context: new TextEncoder().encode("hippius.hcfs.share-wrap.v1") }),
    );
  });
});

describe("v1 error bodies", () => {
  test("a flat {error, message} body becomes the ApiError's code and message", async () => {
    const { errorFromResponse } = await import("../src/api-error.ts");
    const e = await errorFromResponse(
      new Response(JSON.stringify({ error: "gone", message: "the share expired" }), { status: 410 }),
    );
    expect([e.status, e.code, e.message]).toEqual([410, "gone", "the share expired"]);
    const off = await errorFromResponse(new Response(null, { status: 404 }));
    expect(off.code).toBe("http_404");
  });
});
