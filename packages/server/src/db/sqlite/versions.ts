/**
 * @module server/db/sqlite/versions
 * `VersionsRepository` on SQLite (contract: `src/versions/versions.repository.ts`).
 */
import { and, asc, desc, eq, inArray, lt, lte, sql } from "drizzle-orm";
import type { NewVersion, VersionRow, VersionsRepository } from "../../versions/versions.repository.ts";
import { changes, type Db } from "../client.ts";
import { files, fileVersions } from "./schema.ts";

/** Kept versions on SQLite. */
export class SqliteVersionsRepository implements VersionsRepository {
  constructor(private readonly db: Db) {}

  async keep(row: NewVersion): Promise<number> {
    const r = this.db.insert(fileVersions).values(row).returning({ id: fileVersions.versionId }).get();
    return r.id;
  }

  async ofFile(owner: string, folderHash: string, pathHash: Uint8Array): Promise<VersionRow[]> {
    return this.db
      .select()
      .from(fileVersions)
      .where(
        and(
          eq(fileVersions.owner, owner),
          eq(fileVersions.folderHash, folderHash),
          eq(fileVersions.pathHash, Buffer.from(pathHash)),
        ),
      )
      .orderBy(desc(fileVersions.versionId))
      .all();
  }

  async get(owner: string, folderHash: string, versionId: number): Promise<VersionRow | undefined> {
    return this.db
      .select()
      .from(fileVersions)
      .where(
        and(
          eq(fileVersions.versionId, versionId),
          eq(fileVersions.owner, owner),
          eq(fileVersions.folderHash, folderHash),
        ),
      )
      .get();
  }

  async trash(
    owner: string,
    folderHash: string,
    before: number | null,
    limit: number,
  ): Promise<VersionRow[]> {
    const v = fileVersions;
    return this.db
      .select()
      .from(v)
      .where(
        and(
          eq(v.owner, owner),
          eq(v.folderHash, folderHash),
          eq(v.reason, "deleted"),
          before === null ? undefined : lt(v.versionId, before),
          sql`NOT EXISTS (SELECT 1 FROM ${files} f WHERE f.owner = ${v.owner} AND f.folder_hash = ${v.folderHash} AND f.path_hash = ${v.pathHash})`,
          sql`NOT EXISTS (SELECT 1 FROM file_versions n WHERE n.owner = ${v.owner} AND n.folder_hash = ${v.folderHash} AND n.path_hash = ${v.pathHash} AND n.reason = 'deleted' AND n.version_id > ${v.versionId})`,
        ),
      )
      .orderBy(desc(v.versionId))
      .limit(limit)
      .all();
  }

  async expired(now: number, limit: number): Promise<VersionRow[]> {
    return this.db
      .select()
      .from(fileVersions)
      .where(lte(fileVersions.expiresAt, now))
      .orderBy(asc(fileVersions.expiresAt))
      .limit(limit)
      .all();
  }

  async remove(versionIds: readonly number[]): Promise<number> {
    if (versionIds.length === 0) return 0;
    return changes(
      this.db
        .delete(fileVersions)
        .where(inArray(fileVersions.versionId, [...versionIds]))
        .run(),
    );
  }

  async blobInUse(blobId: string): Promise<boolean> {
    if (this.db.select({ n: sql`1` }).from(files).where(eq(files.blobId, blobId)).limit(1).get()) return true;
    return (
      this.db
        .select({ n: sql`1` })
        .from(fileVersions)
        .where(eq(fileVersions.blobId, blobId))
        .limit(1)
        .get() !== undefined
    );
  }

  async removeFolder(owner: string, folderHash: string): Promise<string[]> {
    const rows = this.db
      .delete(fileVersions)
      .where(and(eq(fileVersions.owner, owner), eq(fileVersions.folderHash, folderHash)))
      .returning({ blobId: fileVersions.blobId })
      .all();
    return [...new Set(rows.map((r) => r.blobId))];
  }
}
