/**
 * @module server/auth/auth.service
 * Resolves `Authorization: Bearer <token>` to one SS58 address (docs/protocol.md#authentication), trying
 * in order: wallet-signed `sig1.` token, issued API token, and (only when enabled) the bare
 * SS58 address of insecure mode. Also issues and revokes API tokens for the admin CLI.
 */
import { createHash } from "node:crypto";
import { fail } from "@esync/protocol/errors.ts";
import { randomHex, randomToken } from "@esync/protocol/ids.ts";
import { isSs58 } from "@esync/protocol/ss58.ts";
import type { Clock } from "../util/clock.ts";
import { noteCaller } from "../util/request-context.ts";
import type { ApiTokenRow, ApiTokensRepository } from "./api-tokens.repository.ts";
import { WalletTokenVerifier } from "./wallet-token.ts";

/** Prefix of issued API tokens, so they are recognisable in logs and secret scanners. */
export const API_TOKEN_PREFIX = "esk_";

/** SHA-256 hex of a token string (how API tokens are stored). */
export function sha256Hex(s: string): string {
  return createHash("sha256").update(s).digest("hex");
}

/** A 401 `unauthorized` tagged with why (`authFailureReason`). */
function refused(reason: AuthFailureReason, message: string) {
  return Object.assign(fail("unauthorized", message), { authFailure: reason });
}

/** Why `e`, thrown by `authenticate`, refused the request; undefined for any other error. */
export function authFailureReason(e: unknown): AuthFailureReason | undefined {
  return (e as { authFailure?: AuthFailureReason } | null)?.authFailure;
}

/** A newly issued token: `token` is shown once and never stored. */
export interface IssuedToken {
  id: string;
  token: string;
  owner: string;
  label: string | null;
  /** Unix seconds, or null for no expiry. */
  expiresAt: number | null;
}

/** Why an authentication failed (the `reason` label of `esync_auth_failures_total`). */
export type AuthFailureReason =
  | "missing_or_malformed"
  | "wallet_token_invalid"
  | "api_token_revoked"
  | "api_token_expired"
  | "unknown_token";

/** Authentication of requests and management of issued API tokens. */
export class AuthService {
  private readonly wallet = new WalletTokenVerifier();

  constructor(
    private readonly tokens: ApiTokensRepository,
    private readonly clock: Clock,
    private readonly insecureSs58Tokens: boolean,
  ) {}

  /**
   * Resolves an `Authorization` header value to the address its token stands for, and notes it
   * as the caller of the request being served (access log).
   * @throws AppError `unauthorized` (401) when the header is missing, not `Bearer <token>`,
   *   or the token is malformed, expired, revoked or unknown.
   */
  async authenticate(header: string | null | undefined): Promise<string> {
    const address = await this.resolve(header);
    noteCaller(address);
    return address;
  }

  private async resolve(header: string | null | undefined): Promise<string> {
    const m = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!m?.[1])
      throw refused(
        "missing_or_malformed",
        "Missing or malformed Authorization header; expected 'Bearer <token>'",
      );
    const token = m[1];
    const now = this.clock.now();
    if (token.startsWith("sig1.")) {
      const addr = await this.wallet.verify(token, now);
      if (addr) return addr;
      throw refused("wallet_token_invalid", "Invalid or expired wallet-signed token");
    }
    if (token.length <= 512) {
      const row = await this.tokens.findBySha(sha256Hex(token));
      if (row) {
        if (row.revokedAt !== null) throw refused("api_token_revoked", "API token revoked");
        if (row.expiresAt !== null && now >= row.expiresAt)
          throw refused("api_token_expired", "API token expired");
        return row.owner;
      }
    }
    if (this.insecureSs58Tokens && isSs58(token)) return token;
    throw refused("unknown_token", "Unknown bearer token");
  }

  /** Issues an API token for `owner` (an SS58 address), optionally expiring after `ttlSeconds`. */
  async issue(owner: string, label: string | null, ttlSeconds: number | null): Promise<IssuedToken> {
    if (!isSs58(owner)) throw new Error(`not an SS58 address: ${owner}`);
    const now = this.clock.now();
    const token = `${API_TOKEN_PREFIX}${randomToken(32)}`;
    const row: ApiTokenRow = {
      id: randomHex(8),
      tokenSha256: sha256Hex(token),
      owner,
      label,
      createdAt: now,
      expiresAt: ttlSeconds === null ? null : now + ttlSeconds,
      revokedAt: null,
    };
    await this.tokens.insert(row);
    return { id: row.id, token, owner, label, expiresAt: row.expiresAt };
  }

  /** Lists issued tokens (never the token strings). */
  list(owner?: string): Promise<ApiTokenRow[]> {
    return this.tokens.list(owner);
  }

  /** Revokes token `id`; false when no such unrevoked token exists. */
  revoke(id: string): Promise<boolean> {
    return this.tokens.revoke(id, this.clock.now());
  }
}
