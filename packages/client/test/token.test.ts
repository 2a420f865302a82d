/** `sig1.` wallet tokens of docs/protocol.md#authentication: format, signature, lifetime bounds and renewal. */
import { describe, expect, test } from "bun:test";
import { signatureVerify } from "@polkadot/util-crypto";
import {
  createWalletToken,
  identityFromMnemonic,
  MAX_TOKEN_LIFETIME_SECONDS,
  staticTokenSource,
  tokenMessage,
  WalletTokenSource,
} from "../src/index.ts";

const MASTER = `${"abandon ".repeat(11)}about`;
const identity = await identityFromMnemonic(MASTER);

describe("createWalletToken", () => {
  test("makes sig1.<ss58>.<expires>.<lowercase hex> whose signature signatureVerify accepts", () => {
    const now = 1_800_000_000;
    const { token, expiresAt } = createWalletToken(identity, 600, now);
    expect(expiresAt).toBe(now + 600);
    const [prefix, address, exp, sig] = token.split(".") as [string, string, string, string];
    expect(prefix).toBe("sig1");
    expect(address).toBe(identity.address);
    expect(exp).toBe(String(now + 600));
    expect(sig).toMatch(/^[0-9a-f]{128}$/);
    const msg = new TextEncoder().encode(`hcfs-auth:${identity.address}:${now + 600}`);
    expect(signatureVerify(msg, `0x${sig}`, address).isValid).toBe(true);
    expect(tokenMessage(address, now + 600)).toBe(`hcfs-auth:${identity.address}:${now + 600}`);
  });

  test("a signature over another expiry does not verify", () => {
    const { token } = createWalletToken(identity, 600, 1000);
    const sig = token.split(".")[3] as string;
    const other = new TextEncoder().encode(tokenMessage(identity.address, 1601));
    expect(signatureVerify(other, `0x${sig}`, identity.address).isValid).toBe(false);
  });

  test("refuses lifetimes the server would reject (0 or over 86400 s)", () => {
    expect(() => createWalletToken(identity, 0)).toThrow(RangeError);
    expect(() => createWalletToken(identity, MAX_TOKEN_LIFETIME_SECONDS + 1)).toThrow(RangeError);
    expect(() => createWalletToken(identity, MAX_TOKEN_LIFETIME_SECONDS)).not.toThrow();
  });
});

describe("WalletTokenSource", () => {
  test("reuses a token until it is within renewBeforeSeconds of expiry, then signs a new one", () => {
    let now = 1_000_000;
    const source = new WalletTokenSource(identity, {
      lifetimeSeconds: 3600,
      renewBeforeSeconds: 300,
      clock: () => now,
    });
    const first = source.getToken();
    now += 3000;
    expect(source.getToken()).toBe(first);
    now += 301; // 299 s left
    const second = source.getToken();
    expect(second).not.toBe(first);
    expect(second.split(".")[2]).toBe(String(now + 3600));
  });

  test("invalidate forces a fresh token", () => {
    let now = 5_000;
    const source = new WalletTokenSource(identity, { clock: () => now });
    const first = source.getToken();
    now += 1;
    source.invalidate();
    expect(source.getToken()).not.toBe(first);
  });

  test("staticTokenSource always gives its token", () => {
    expect(staticTokenSource("abc").getToken()).toBe("abc");
  });
});
