/**
 * @module server/db/postgres/folders
 * `FoldersRepository` on PostgreSQL (contract: `src/folders/folders.repository.ts`).
 */
import { and, asc, eq, isNotNull, sql } from "drizzle-orm";
import type { FolderRow, FoldersRepository } from "../../folders/folders.repository.ts";
import type { PgConn } from "./conn.ts";
import { folders } from "./schema.ts";

/** Folder registrations and counters on PostgreSQL. */
export class PgFoldersRepository implements FoldersRepository {
  constructor(private readonly db: PgConn) {}

  async get(owner: string, folderHash: string): Promise<FolderRow | undefined> {
    const [row] = await this.db
      .select()
      .from(folders)
      .where(and(eq(folders.owner, owner), eq(folders.folderHash, folderHash)));
    return row;
  }

  listRegistered(owner: string): Promise<FolderRow[]> {
    return this.db
      .select()
      .from(folders)
      .where(and(eq(folders.owner, owner), isNotNull(folders.label)))
      .orderBy(asc(folders.createdAt), asc(folders.folderHash));
  }

  async register(
    owner: string,
    folderHash: string,
    label: string,
    deviceName: string | null,
    now: number,
  ): Promise<boolean> {
    const rows = await this.db
      .insert(folders)
      .values({ owner, folderHash, label, deviceName, createdAt: now, updatedAt: now })
      .onConflictDoUpdate({
        target: [folders.owner, folders.folderHash],
        set: { label, deviceName, createdAt: now },
        setWhere: sql`${folders.label} IS NULL`,
      })
      .returning({ owner: folders.owner });
    return rows.length > 0;
  }

  async applyFileChange(
    owner: string,
    folderHash: string,
    dCount: number,
    dBytes: number,
    now: number,
  ): Promise<void> {
    await this.db
      .insert(folders)
      .values({ owner, folderHash, updatedAt: now, fileCount: dCount, totalBytes: dBytes })
      .onConflictDoUpdate({
        target: [folders.owner, folders.folderHash],
        set: {
          fileCount: sql`${folders.fileCount} + excluded.file_count`,
          totalBytes: sql`${folders.totalBytes} + excluded.total_bytes`,
          updatedAt: sql`excluded.updated_at`,
        },
      });
  }

  async remove(owner: string, folderHash: string): Promise<void> {
    await this.db.delete(folders).where(and(eq(folders.owner, owner), eq(folders.folderHash, folderHash)));
  }
}
