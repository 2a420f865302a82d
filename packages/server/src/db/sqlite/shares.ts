/**
 * @module server/db/sqlite/shares
 * `SharesRepository` on SQLite (contract: `src/shares/shares.repository.ts`): `shares`,
 * `share_chunks`, `share_accesses` and `folder_shares`. Every method runs its statements
 * synchronously, so a call is atomic with respect to the store's gate.
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
import { changes, type Db } from "../client.ts";
import { folderShares, shareAccesses, shareChunks, shares } from "./schema.ts";

/** File and folder shares on SQLite. */
export class SqliteSharesRepository implements SharesRepository {
  constructor(private readonly db: Db) {}

  async insert(row: ShareRow): Promise<void> {
    this.db.insert(shares).values(row).run();
  }

  async byToken(token: string): Promise<ShareRow | undefined> {
    return this.db.select().from(shares).where(eq(shares.token, token)).get();
  }

  async getForUpdate(shareId: string): Promise<ShareRow | undefined> {
    return this.db.select().from(shares).where(eq(shares.shareId, shareId)).get();
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
      .orderBy(desc(shares.createdAt), asc(shares.shareId))
      .all();
  }

  async update(shareId: string, set: ShareUpdate): Promise<void> {
    this.db.update(shares).set(set).where(eq(shares.shareId, shareId)).run();
  }

  async setOwnerWrap(owner: string, token: string, wrap: string): Promise<boolean> {
    const r = this.db
      .update(shares)
      .set({ ownerWrap: wrap })
      .where(and(eq(shares.owner, owner), eq(shares.token, token)))
      .run();
    return changes(r) > 0;
  }

  async chunk(shareId: string, index: number): Promise<ShareChunkRow | undefined> {
    return this.db
      .select()
      .from(shareChunks)
      .where(and(eq(shareChunks.shareId, shareId), eq(shareChunks.chunkIndex, index)))
      .get();
  }

  async chunks(shareId: string): Promise<ShareChunkRow[]> {
    return this.db
      .select()
      .from(shareChunks)
      .where(eq(shareChunks.shareId, shareId))
      .orderBy(asc(shareChunks.chunkIndex))
      .all();
  }

  async putChunk(row: ShareChunkRow): Promise<void> {
    this.db
      .insert(shareChunks)
      .values(row)
      .onConflictDoUpdate({
        target: [shareChunks.shareId, shareChunks.chunkIndex],
        set: { gen: row.gen, size: row.size, receivedAt: row.receivedAt },
      })
      .run();
  }

  async removeChunks(shareId: string): Promise<void> {
    this.db.delete(shareChunks).where(eq(shareChunks.shareId, shareId)).run();
  }

  async remove(shareId: string): Promise<void> {
    this.db.delete(shareChunks).where(eq(shareChunks.shareId, shareId)).run();
    this.db.delete(shareAccesses).where(eq(shareAccesses.shareId, shareId)).run();
    this.db.delete(shares).where(eq(shares.shareId, shareId)).run();
  }

  async claimDownload(shareId: string): Promise<boolean> {
    const r = this.db
      .update(shares)
      .set({ downloadCount: sql`${shares.downloadCount} + 1` })
      .where(
        and(
          eq(shares.shareId, shareId),
          or(isNull(shares.maxDownloads), lt(shares.downloadCount, shares.maxDownloads)),
        ),
      )
      .run();
    return changes(r) > 0;
  }

  async insertAccess(row: ShareAccessRow): Promise<void> {
    this.db.insert(shareAccesses).values(row).run();
  }

  async accesses(shareId: string, limit: number): Promise<ShareAccessRow[]> {
    return this.db
      .select()
      .from(shareAccesses)
      .where(eq(shareAccesses.shareId, shareId))
      .orderBy(desc(shareAccesses.at), desc(shareAccesses.accessId))
      .limit(limit)
      .all();
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
      .limit(limit)
      .all();
  }

  async insertFolderShare(row: FolderShareRow): Promise<void> {
    this.db.insert(folderShares).values(row).run();
  }

  async folderShare(tokenHash: string): Promise<FolderShareRow | undefined> {
    return this.db.select().from(folderShares).where(eq(folderShares.tokenHash, tokenHash)).get();
  }

  async folderSharesOf(caller: string): Promise<FolderShareRow[]> {
    return this.db
      .select()
      .from(folderShares)
      .where(or(eq(folderShares.owner, caller), eq(folderShares.mintedBy, caller)))
      .orderBy(desc(folderShares.createdAt), asc(folderShares.tokenHash))
      .all();
  }

  async updateFolderShare(tokenHash: string, set: FolderShareUpdate): Promise<void> {
    this.db.update(folderShares).set(set).where(eq(folderShares.tokenHash, tokenHash)).run();
  }

  async setFolderOwnerWrap(mintedBy: string, tokenHash: string, wrap: string): Promise<boolean> {
    const r = this.db
      .update(folderShares)
      .set({ ownerWrap: wrap })
      .where(and(eq(folderShares.mintedBy, mintedBy), eq(folderShares.tokenHash, tokenHash)))
      .run();
    return changes(r) > 0;
  }

  async reapFolderShares(now: number): Promise<number> {
    const r = this.db
      .delete(folderShares)
      .where(
        or(
          isNotNull(folderShares.revokedAt),
          and(isNotNull(folderShares.expiresAt), lte(folderShares.expiresAt, now)),
        ),
      )
      .run();
    return changes(r);
  }

  async ids(): Promise<string[]> {
    return this.db
      .select({ id: shares.shareId })
      .from(shares)
      .all()
      .map((r) => r.id);
  }
}
