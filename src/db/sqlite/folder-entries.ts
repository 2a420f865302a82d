/**
 * @module folders/folder-entries.repository
 * Queries on `folder_entries`: the explicit directories of a folder (extensions.md §1.5).
 */
import { and, asc, eq, inArray, sql } from "drizzle-orm";
import { changes, type Db } from "../client.ts";
import { folderEntries } from "../schema.ts";

/** Repository of folder entries. */
export class SqliteFolderEntriesRepository {
  constructor(private readonly db: Db) {}

  /** Every directory path of a folder, in BINARY order. */
  list(owner: string, folderHash: string): string[] {
    return this.db
      .select({ p: folderEntries.relativePath })
      .from(folderEntries)
      .where(and(eq(folderEntries.owner, owner), eq(folderEntries.folderHash, folderHash)))
      .orderBy(asc(folderEntries.relativePath))
      .all()
      .map((r) => r.p);
  }

  /** Inserts the paths that are not there yet (existing rows are left as they are). */
  add(owner: string, folderHash: string, paths: readonly string[], now: number): void {
    if (paths.length === 0) return;
    this.db
      .insert(folderEntries)
      .values(paths.map((relativePath) => ({ owner, folderHash, relativePath, createdAt: now })))
      .onConflictDoNothing()
      .run();
  }

  /** Deletes exactly the named paths; returns how many existed. */
  remove(owner: string, folderHash: string, paths: readonly string[]): number {
    if (paths.length === 0) return 0;
    return changes(
      this.db
        .delete(folderEntries)
        .where(
          and(
            eq(folderEntries.owner, owner),
            eq(folderEntries.folderHash, folderHash),
            inArray(folderEntries.relativePath, [...paths]),
          ),
        )
        .run(),
    );
  }

  /** Deletes every entry of a folder. */
  removeFolder(owner: string, folderHash: string): void {
    this.db
      .delete(folderEntries)
      .where(and(eq(folderEntries.owner, owner), eq(folderEntries.folderHash, folderHash)))
      .run();
  }

  /**
   * The names of the entries directly inside `path` (`""` = the folder root): the next path
   * segment of every entry at or below `path/`.
   */
  childNames(owner: string, folderHash: string, path: string): string[] {
    const prefix = path === "" ? "" : `${path}/`;
    const rows = this.db
      .select({ p: folderEntries.relativePath })
      .from(folderEntries)
      .where(
        and(
          eq(folderEntries.owner, owner),
          eq(folderEntries.folderHash, folderHash),
          prefix === ""
            ? sql`1`
            : sql`${folderEntries.relativePath} > ${prefix} AND ${folderEntries.relativePath} < ${`${path}0`}`,
        ),
      )
      .all();
    const names = new Set<string>();
    for (const { p } of rows) {
      const rest = p.slice(prefix.length);
      if (rest !== "") names.add(rest.split("/")[0]!);
    }
    return [...names];
  }
}
