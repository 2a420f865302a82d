/** @module auth/ss58  SS58 address checks (decoding and checksum by @polkadot/util-crypto). */
import { decodeAddress } from "@polkadot/util-crypto";

const BASE58 = /^[1-9A-HJ-NP-Za-km-z]+$/;

/** True when `s` is a well-formed SS58 address (base58 text with a valid checksum). */
export function isSs58(s: string): boolean {
  if (s.length < 3 || s.length > 64 || !BASE58.test(s)) return false;
  try {
    decodeAddress(s);
    return true;
  } catch {
    return false;
  }
}
