/**
 * @module client/token
 * Wallet-signed bearer tokens (docs/protocol.md#wallet-tokens): `sig1.<ss58>.<expires_unix>.<signature_hex>`,
 * the signature (lowercase hex) made by the account key over the UTF-8 bytes of
 * `hcfs-auth:<ss58>:<expires_unix>`. The server accepts it while
 * `now < expires_unix <= now + 86400`.
 *
 * `TokenSource` is what the API client asks for a bearer token before each request;
 * `WalletTokenSource` signs a fresh token when the current one is about to expire.
 */
import { toHex, utf8 } from "./hash.ts";
import type { AccountSigner } from "./keys.ts";

/** Longest lifetime the server accepts, seconds (docs/protocol.md#wallet-tokens). */
export const MAX_TOKEN_LIFETIME_SECONDS = 86400;
/** Lifetime of tokens made by `WalletTokenSource` unless told otherwise, seconds. */
export const DEFAULT_TOKEN_LIFETIME_SECONDS = 3600;
/** A token is renewed when fewer than this many seconds remain, unless told otherwise. */
export const DEFAULT_RENEW_BEFORE_SECONDS = 300;

/** Unix seconds now. */
export type Clock = () => number;
/** The wall clock in whole Unix seconds. */
export const systemClock: Clock = () => Math.floor(Date.now() / 1000);

/** The exact text a token signs: `hcfs-auth:<ss58>:<expires_unix>`. */
export function tokenMessage(address: string, expiresAt: number): string {
  return `hcfs-auth:${address}:${expiresAt}`;
}

/** A signed token and when it expires (Unix seconds). */
export interface SignedToken {
  token: string;
  expiresAt: number;
}

/**
 * Signs a `sig1.` token for `signer` that expires at `now + lifetimeSeconds`.
 * Throws `RangeError` when the lifetime is not in 1..86400 seconds.
 */
export function createWalletToken(
  signer: AccountSigner,
  lifetimeSeconds = DEFAULT_TOKEN_LIFETIME_SECONDS,
  now: number = systemClock(),
): SignedToken {
  if (
    !Number.isInteger(lifetimeSeconds) ||
    lifetimeSeconds < 1 ||
    lifetimeSeconds > MAX_TOKEN_LIFETIME_SECONDS
  ) {
    throw new RangeError(`token lifetime must be 1..${MAX_TOKEN_LIFETIME_SECONDS} s, got ${lifetimeSeconds}`);
  }
  const expiresAt = now + lifetimeSeconds;
  const signature = signer.sign(utf8(tokenMessage(signer.address, expiresAt)));
  return { token: `sig1.${signer.address}.${expiresAt}.${toHex(signature)}`, expiresAt };
}

/** Gives the bearer token for the next request. */
export interface TokenSource {
  /** A token valid now; may sign or fetch a new one. */
  getToken(): string | Promise<string>;
}

/** A fixed token (an issued API token, or the SS58 address on an insecure-mode server). */
export function staticTokenSource(token: string): TokenSource {
  return { getToken: () => token };
}

/** Options of `WalletTokenSource`. */
export interface WalletTokenSourceOptions {
  /** Lifetime of each signed token, seconds (1..86400); default 3600. */
  lifetimeSeconds?: number;
  /** Renew when fewer than this many seconds remain; default 300 (capped at half the lifetime). */
  renewBeforeSeconds?: number;
  /** Time source; default the wall clock. */
  clock?: Clock;
}

/** Signs `sig1.` tokens on demand and reuses each until it is close to expiry. */
export class WalletTokenSource implements TokenSource {
  private current: SignedToken | null = null;
  private readonly lifetime: number;
  private readonly renewBefore: number;
  private readonly clock: Clock;

  constructor(
    private readonly signer: AccountSigner,
    options: WalletTokenSourceOptions = {},
  ) {
    this.lifetime = options.lifetimeSeconds ?? DEFAULT_TOKEN_LIFETIME_SECONDS;
    this.renewBefore = Math.min(
      options.renewBeforeSeconds ?? DEFAULT_RENEW_BEFORE_SECONDS,
      this.lifetime / 2,
    );
    this.clock = options.clock ?? systemClock;
    createWalletToken(signer, this.lifetime, 0); // validates the lifetime up front
  }

  /** The current token, or a freshly signed one when it expires within `renewBeforeSeconds`. */
  getToken(): string {
    const now = this.clock();
    if (!this.current || this.current.expiresAt - now <= this.renewBefore) {
      this.current = createWalletToken(this.signer, this.lifetime, now);
    }
    return this.current.token;
  }

  /** Drops the cached token so the next `getToken` signs a new one (e.g. after a 401). */
  invalidate(): void {
    this.current = null;
  }
}
