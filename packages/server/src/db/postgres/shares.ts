/**
 * @module server/db/postgres/shares
 * `SharesRepository` on PostgreSQL (contract: `src/shares/shares.repository.ts`): `shares`,
 * `share_chunks`, `share_accesses` and `folder_shares`. Tokens and hashes reach the queries only
 * after the services checked their alphabet (base64url, hex), so no NUL reaches a text column.
 */
import { and, asc, desc, eq, gt, isNotNull, isNull, lt, lte, or, sql } from "drizzle-orm";
import type {
  FolderShareRow,
  FolderShareUpdate,
  ShareAccessRow,
  ShareChunkRow,
  ShareRow,
  SharesRepository,
  ShareUpdate,
} from "../../shares/shares.repository.ts";
import type { PgConn } from "./conn.ts";
import { folderShares, shareAccesses, shareChunks, shares } from "./schema.ts";

/** File and folder shares on PostgreSQL. */
export class PgSharesRepository implements SharesRepository {
  constructor(private readonly db: PgConn) {}

  async insert(row: ShareRow): Promise<void> {
    await this.db.insert(shares).values(row);
  }

  async byToken(token: string): Promise<ShareRow | undefined> {
    const [row] = await this.db.select().from(shares).where(eq(shares.token, token));
    return row;
  }

  async getForUpdate(shareId: string): Promise<ShareRow | undefined> {
    const [row] = await this.db.select().from(shares).where(eq(shares.shareId, shareId)).for("update");
    return row;
  }

  async listActive(owner: string, now: number): Promise<ShareRow[]> {
    return this.db
      .select()
      .from(shares)
      .where(
        and(
          eq(shares.owner, owner),
          eq(shares.state, "complete"),
          isNull(shares.revokedAt),
          or(isNull(shares.expiresAt), gt(shares.expiresAt, now)),
        ),
      )
      .orderBy(desc(shares.createdAt), asc(shares.shareId));
  }

  async update(shareId: string, set: ShareUpdate): Promise<void> {
    await this.db.update(shares).set(set).where(eq(shares.shareId, shareId));
  }

  async setOwnerWrap(owner: string, token: string, wrap: string): Promise<boolean> {
    const rows = await this.db
      .update(shares)
      .set({ ownerWrap: wrap })
      .where(and(eq(shares.owner, owner), eq(shares.token, token)))
      .returning({ id: shares.shareId });
    return rows.length > 0;
  }

  async chunk(shareId: string, index: number): Promise<ShareChunkRow | undefined> {
    const [row] = await this.db
      .select()
      .from(shareChunks)
      .where(and(eq(shareChunks.shareId, shareId), eq(shareChunks.chunkIndex, index)));
    return row;
  }

  async chunks(shareId: string): Promise<ShareChunkRow[]> {
    return this.db
      .select()
      .from(shareChunks)
      .where(eq(shareChunks.shareId, shareId))
      .orderBy(asc(shareChunks.chunkIndex));
  }

  async putChunk(row: ShareChunkRow): Promise<void> {
    await this.db
      .insert(shareChunks)
      .values(row)
      .onConflictDoUpdate({
        target: [shareChunks.shareId, shareChunks.chunkIndex],
        set: { gen: row.gen, size: row.size, receivedAt: row.receivedAt },
      });
  }

  async removeChunks(shareId: string): Promise<void> {
    await this.db.delete(shareChunks).where(eq(shareChunks.shareId, shareId));
  }

  async remove(shareId: string): Promise<void> {
    await this.db.delete(shareChunks).where(eq(shareChunks.shareId, shareId));
    await this.db.delete(shareAccesses).where(eq(shareAccesses.shareId, shareId));
    await this.db.delete(shares).where(eq(shares.shareId, shareId));
  }

  async claimDownload(shareId: string): Promise<boolean> {
    const rows = await this.db
      .update(shares)
      .set({ downloadCount: sql`${shares.downloadCount} + 1` })
      .where(
        and(
          eq(shares.shareId, shareId),
          or(isNull(shares.maxDownloads), lt(shares.downloadCount, shares.maxDownloads)),
        ),
      )
      .returning({ id: shares.shareId });
    return rows.length > 0;
  }

  async insertAccess(row: ShareAccessRow): Promise<void> {
    await this.db.insert(shareAccesses).values(row);
  }

  async accesses(shareId: string, limit: number): Promise<ShareAccessRow[]> {
    return this.db
      .select()
      .from(shareAccesses)
      .where(eq(shareAccesses.shareId, shareId))
      .orderBy(desc(shareAccesses.at), desc(shareAccesses.accessId))
      .limit(limit);
  }

  async reapable(now: number, idleBefore: number, limit: number): Promise<ShareRow[]> {
    return this.db
      .select()
      .from(shares)
      .where(
        or(
          isNotNull(shares.revokedAt),
          and(isNotNull(shares.expiresAt), lte(shares.expiresAt, now)),
          and(eq(shares.state, "uploading"), lt(shares.updatedAt, idleBefore)),
        ),
      )
      .limit(limit);
  }

  async insertFolderShare(row: FolderShareRow): Promise<void> {
    await this.db.insert(folderShares).values(row);
  }

  async folderShare(tokenHash: string): Promise<FolderShareRow | undefined> {
    const [row] = await this.db.select().from(folderShares).where(eq(folderShares.tokenHash, tokenHash));
    return row;
  }

  async folderSharesOf(caller: string): Promise<FolderShareRow[]> {
    return this.db
      .select()
      .from(folderShares)
      .where(or(eq(folderShares.owner, caller), eq(folderShares.mintedBy, caller)))
      .orderBy(desc(folderShares.createdAt), asc(folderShares.tokenHash));
  }

  async updateFolderShare(tokenHash: string, set: FolderShareUpdate): Promise<void> {
    await this.db.update(folderShares).set(set).where(eq(folderShares.tokenHash, tokenHash));
  }

  async setFolderOwnerWrap(mintedBy: string, tokenHash: string, wrap: string): Promise<boolean> {
    const rows = await this.db
      .update(folderShares)
      .set({ ownerWrap: wrap })
      .where(and(eq(folderShares.mintedBy, mintedBy), eq(folderShares.tokenHash, tokenHash)))
      .returning({ h: folderShares.tokenHash });
    return rows.length > 0;
  }

  async reapFolderShares(now: number): Promise<number> {
    const rows = await this.db
      .delete(folderShares)
      .where(
        or(
          isNotNull(folderShares.revokedAt),
          and(isNotNull(folderShares.expiresAt), lte(folderShares.expiresAt, now)),
        ),
      )
      .returning({ h: folderShares.tokenHash });
    return rows.length;
  }

  async ids(): Promise<string[]> {
    const rows = await this.db.select({ id: shares.shareId }).from(shares);
    return rows.map((r) => r.id);
  }
}
