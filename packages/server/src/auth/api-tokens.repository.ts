/**
 * @module server/auth/api-tokens.repository
 * The contract of the queries on `api_tokens` (docs/protocol.md#api-tokens). Implementations:
 * `src/db/sqlite/api-tokens.ts`, `src/db/postgres/api-tokens.ts`.
 */

/** A stored API token row (the token itself is never stored, only its SHA-256 hex). Times Unix seconds. */
export type ApiTokenRow = {
  id: string;
  tokenSha256: string;
  owner: string;
  label: string | null;
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
};

/** Queries on issued API tokens. Every method returns a Promise. */
export interface ApiTokensRepository {
  /** The row whose `token_sha256` equals `sha256Hex` (64 lowercase hex), or undefined. */
  findBySha(sha256Hex: string): Promise<ApiTokenRow | undefined>;

  /** Inserts a token row. @throws the dialect's unique-violation error on a duplicate id or hash. */
  insert(row: ApiTokenRow): Promise<void>;

  /** All tokens, newest first, optionally of one owner. */
  list(owner?: string): Promise<ApiTokenRow[]>;

  /** Marks token `id` revoked at `now`; false when there is no such unrevoked token. */
  revoke(id: string, now: number): Promise<boolean>;
}
