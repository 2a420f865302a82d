/**
 * @module protocol/ss58
 * SS58 address checks (decoding and checksum by @polkadot/util-crypto). Addresses found valid
 * are remembered (at most `VALID_CACHE_SIZE`), since every request of an account names the same
 * address again.
 */
import { decodeAddress } from "@polkadot/util-crypto";

const BASE58 = /^[1-9A-HJ-NP-Za-km-z]+$/;

/** Valid addresses remembered. */
export const VALID_CACHE_SIZE = 4096;

const valid = new Set<string>();

/** True when `s` is a well-formed SS58 address (base58 text with a valid checksum). */
export function isSs58(s: string): boolean {
  if (valid.has(s)) return true;
  if (s.length < 3 || s.length > 64 || !BASE58.test(s)) return false;
  try {
    decodeAddress(s);
  } catch {
    return false;
  }
  if (valid.size >= VALID_CACHE_SIZE) valid.clear();
  valid.add(s);
  return true;
}
