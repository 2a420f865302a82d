/**
 * @module server/db/sqlite/folders
 * `FoldersRepository` on SQLite: registrations (label non-null) and the per-folder counters
 * (`file_count`, `total_bytes`, `updated_at`) that file writes keep in the same transaction.
 */
import { and, asc, eq, isNotNull, sql } from "drizzle-orm";
import type { FolderRow, FoldersRepository } from "../../folders/folders.repository.ts";
import { changes, type Db } from "../client.ts";
import { folders } from "./schema.ts";

/** The counter upsert of `applyFileChange`, prepared once (placeholders; adds the new row's deltas). */
function prepareCounterUpsert(db: Db) {
  return db
    .insert(folders)
    .values({
      owner: sql.placeholder("owner"),
      folderHash: sql.placeholder("folderHash"),
      updatedAt: sql.placeholder("now"),
      fileCount: sql.placeholder("dCount"),
      totalBytes: sql.placeholder("dBytes"),
    })
    .onConflictDoUpdate({
      target: [folders.owner, folders.folderHash],
      set: {
        fileCount: sql`${folders.fileCount} + excluded.file_count`,
        totalBytes: sql`${folders.totalBytes} + excluded.total_bytes`,
        updatedAt: sql`excluded.updated_at`,
      },
    })
    .prepare();
}

/** Folder registrations and counters on SQLite. */
export class SqliteFoldersRepository implements FoldersRepository {
  private readonly counterUpsert: ReturnType<typeof prepareCounterUpsert>;

  constructor(private readonly db: Db) {
    this.counterUpsert = prepareCounterUpsert(db);
  }

  async get(owner: string, folderHash: string): Promise<FolderRow | undefined> {
    return this.db
      .select()
      .from(folders)
      .where(and(eq(folders.owner, owner), eq(folders.folderHash, folderHash)))
      .get();
  }

  /** Registered folders of `owner`, oldest registration first. */
  async listRegistered(owner: string): Promise<FolderRow[]> {
    return this.db
      .select()
      .from(folders)
      .where(and(eq(folders.owner, owner), isNotNull(folders.label)))
      .orderBy(asc(folders.createdAt), asc(folders.folderHash))
      .all();
  }

  /**
   * Registers a folder: inserts the row, or labels an existing unregistered one (files were
   * uploaded before registration). Returns false when it is already registered.
   */
  async register(
    owner: string,
    folderHash: string,
    label: string,
    deviceName: string | null,
    now: number,
  ): Promise<boolean> {
    const r = this.db
      .insert(folders)
      .values({ owner, folderHash, label, deviceName, createdAt: now, updatedAt: now })
      .onConflictDoUpdate({
        target: [folders.owner, folders.folderHash],
        set: { label, deviceName, createdAt: now },
        setWhere: sql`${folders.label} IS NULL`,
      })
      .run();
    return changes(r) > 0;
  }

  /** Applies a file change to the counters: `dCount` files and `dBytes` plaintext bytes. */
  async applyFileChange(
    owner: string,
    folderHash: string,
    dCount: number,
    dBytes: number,
    now: number,
  ): Promise<void> {
    this.counterUpsert.run({ owner, folderHash, dCount, dBytes, now });
  }

  /** Deletes the folder row. */
  async remove(owner: string, folderHash: string): Promise<void> {
    this.db
      .delete(folders)
      .where(and(eq(folders.owner, owner), eq(folders.folderHash, folderHash)))
      .run();
  }
}
