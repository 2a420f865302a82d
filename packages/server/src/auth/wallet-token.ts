/**
 * @module server/auth/wallet-token
 * Wallet-signed bearer tokens (docs/protocol.md#wallet-tokens): `sig1.<ss58>.<expires_unix>.<signature_hex>`,
 * the signature made by the key of `<ss58>` (sr25519, ed25519 or ecdsa) over the UTF-8 bytes of
 * `hcfs-auth:<ss58>:<expires_unix>`. Valid while `now < expires_unix <= now + 86400`.
 * `expires_unix` is canonical decimal (no sign, no leading zero), so one signature is one token string.
 */

import { isSs58 } from "@esync/protocol/ss58.ts";
import { cryptoWaitReady, signatureVerify } from "@polkadot/util-crypto";

/** Longest lifetime a wallet token may claim, seconds (docs/protocol.md#wallet-tokens). */
export const MAX_TOKEN_LIFETIME_SECONDS = 86400;

/** The message a wallet signs for a token. */
export function walletTokenMessage(address: string, expiresAt: number): string {
  return `hcfs-auth:${address}:${expiresAt}`;
}

/** Parts of a `sig1.` token. */
export interface WalletToken {
  address: string;
  /** Unix seconds. */
  expiresAt: number;
  /** Signature bytes as lowercase hex without `0x`. */
  signatureHex: string;
}

/**
 * Parses a `sig1.` token; null when the shape is wrong (not a signature check), including an
 * `expires_unix` that is not canonical decimal (`0123`).
 */
export function parseWalletToken(token: string): WalletToken | null {
  const parts = token.split(".");
  if (parts.length !== 4 || parts[0] !== "sig1") return null;
  const [, address, exp, sigRaw] = parts as [string, string, string, string];
  if (!isSs58(address) || !/^[1-9]\d{0,11}$/.test(exp)) return null;
  const sig = sigRaw.startsWith("0x") || sigRaw.startsWith("0X") ? sigRaw.slice(2) : sigRaw;
  if (!/^[0-9a-fA-F]+$/.test(sig) || sig.length % 2 !== 0 || sig.length < 128 || sig.length > 200)
    return null;
  return { address, expiresAt: Number(exp), signatureHex: sig.toLowerCase() };
}

let ready: Promise<boolean> | null = null;
/** Loads the WASM crypto used for sr25519 verification; call once before verifying. */
export function walletCryptoReady(): Promise<boolean> {
  ready ??= cryptoWaitReady();
  return ready;
}

/**
 * Verifies a wallet token at time `now` (Unix seconds). Returns the address it resolves to,
 * or null when it is expired, too long-lived, or its signature does not verify.
 * Verified tokens are cached until they expire (at most `cacheSize` entries).
 */
export class WalletTokenVerifier {
  private readonly cache = new Map<string, { address: string; expiresAt: number }>();

  constructor(private readonly cacheSize = 10_000) {}

  async verify(token: string, now: number): Promise<string | null> {
    const hit = this.cache.get(token);
    if (hit) {
      if (now < hit.expiresAt) return hit.address;
      this.cache.delete(token);
      return null;
    }
    const parsed = parseWalletToken(token);
    if (!parsed) return null;
    if (!(now < parsed.expiresAt && parsed.expiresAt <= now + MAX_TOKEN_LIFETIME_SECONDS)) return null;
    await walletCryptoReady();
    let valid = false;
    try {
      valid = signatureVerify(
        new TextEncoder().encode(walletTokenMessage(parsed.address, parsed.expiresAt)),
        `0x${parsed.signatureHex}`,
        parsed.address,
      ).isValid;
    } catch {
      valid = false;
    }
    if (!valid) return null;
    if (this.cache.size >= this.cacheSize) {
      const first = this.cache.keys().next();
      if (!first.done) this.cache.delete(first.value);
    }
    this.cache.set(token, { address: parsed.address, expiresAt: parsed.expiresAt });
    return parsed.address;
  }
}
