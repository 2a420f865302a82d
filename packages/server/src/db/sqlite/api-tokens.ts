/** @module server/db/sqlite/api-tokens  `ApiTokensRepository` on SQLite (`api_tokens`, docs/protocol.md#api-tokens). */
import { and, desc, eq, isNull } from "drizzle-orm";
import type { ApiTokenRow, ApiTokensRepository } from "../../auth/api-tokens.repository.ts";
import { changes, type Db } from "../client.ts";
import { apiTokens } from "./schema.ts";

/** Issued API tokens on SQLite. */
export class SqliteApiTokensRepository implements ApiTokensRepository {
  constructor(private readonly db: Db) {}

  /** Row whose `token_sha256` equals `sha256Hex`, or undefined. */
  async findBySha(sha256Hex: string): Promise<ApiTokenRow | undefined> {
    return this.db.select().from(apiTokens).where(eq(apiTokens.tokenSha256, sha256Hex)).get();
  }

  async insert(row: ApiTokenRow): Promise<void> {
    this.db.insert(apiTokens).values(row).run();
  }

  /** All tokens, newest first, optionally of one owner. */
  async list(owner?: string): Promise<ApiTokenRow[]> {
    const q = this.db.select().from(apiTokens);
    return (owner ? q.where(eq(apiTokens.owner, owner)) : q).orderBy(desc(apiTokens.createdAt)).all();
  }

  /** Marks token `id` revoked at `now`; returns false when there is no such unrevoked token. */
  async revoke(id: string, now: number): Promise<boolean> {
    const r = this.db
      .update(apiTokens)
      .set({ revokedAt: now })
      .where(and(eq(apiTokens.id, id), isNull(apiTokens.revokedAt)))
      .run();
    return changes(r) > 0;
  }
}
