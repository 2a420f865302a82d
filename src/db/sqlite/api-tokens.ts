/** @module auth/api-tokens.repository  Queries on `api_tokens` (complement §3.2). */
import { and, desc, eq, isNull } from "drizzle-orm";
import type { ApiTokenRow } from "../../auth/api-tokens.repository.ts";
import { changes, type Db } from "../client.ts";
import { apiTokens } from "../schema.ts";

/** Repository of issued API tokens. */
export class SqliteApiTokensRepository {
  constructor(private readonly db: Db) {}

  /** Row whose `token_sha256` equals `sha256Hex`, or undefined. */
  findBySha(sha256Hex: string): ApiTokenRow | undefined {
    return this.db.select().from(apiTokens).where(eq(apiTokens.tokenSha256, sha256Hex)).get();
  }

  insert(row: ApiTokenRow): void {
    this.db.insert(apiTokens).values(row).run();
  }

  /** All tokens, newest first, optionally of one owner. */
  list(owner?: string): ApiTokenRow[] {
    const q = this.db.select().from(apiTokens);
    return (owner ? q.where(eq(apiTokens.owner, owner)) : q).orderBy(desc(apiTokens.createdAt)).all();
  }

  /** Marks token `id` revoked at `now`; returns false when there is no such unrevoked token. */
  revoke(id: string, now: number): boolean {
    const r = this.db
      .update(apiTokens)
      .set({ revokedAt: now })
      .where(and(eq(apiTokens.id, id), isNull(apiTokens.revokedAt)))
      .run();
    return changes(r) > 0;
  }
}
