/**
 * @module server/db/postgres/api-tokens
 * `ApiTokensRepository` on PostgreSQL (contract: `src/auth/api-tokens.repository.ts`).
 */
import { and, desc, eq, isNull } from "drizzle-orm";
import type { ApiTokenRow, ApiTokensRepository } from "../../auth/api-tokens.repository.ts";
import type { PgConn } from "./conn.ts";
import { apiTokens } from "./schema.ts";

/** Issued API tokens on PostgreSQL. */
export class PgApiTokensRepository implements ApiTokensRepository {
  constructor(private readonly db: PgConn) {}

  async findBySha(sha256Hex: string): Promise<ApiTokenRow | undefined> {
    const [row] = await this.db.select().from(apiTokens).where(eq(apiTokens.tokenSha256, sha256Hex)).limit(1);
    return row;
  }

  async insert(row: ApiTokenRow): Promise<void> {
    await this.db.insert(apiTokens).values(row);
  }

  list(owner?: string): Promise<ApiTokenRow[]> {
    const q = this.db.select().from(apiTokens);
    return (owner ? q.where(eq(apiTokens.owner, owner)) : q).orderBy(
      desc(apiTokens.createdAt),
      desc(apiTokens.id),
    );
  }

  async revoke(id: string, now: number): Promise<boolean> {
    const rows = await this.db
      .update(apiTokens)
      .set({ revokedAt: now })
      .where(and(eq(apiTokens.id, id), isNull(apiTokens.revokedAt)))
      .returning({ id: apiTokens.id });
    return rows.length > 0;
  }
}
