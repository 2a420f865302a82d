/**
 * @module server/db/sqlite/folder-entries
 * `FolderEntriesRepository` on SQLite: the explicit directories of a folder (docs/protocol.md#folder-entries).
 */
import { and, asc, eq, gt, inArray, sql } from "drizzle-orm";
import type { FolderEntriesRepository, FolderEntryRow } from "../../folders/folder-entries.repository.ts";
import { changes, type Db } from "../client.ts";
import { folderEntries } from "./schema.ts";

/** Folder entries on SQLite. */
export class SqliteFolderEntriesRepository implements FolderEntriesRepository {
  constructor(private readonly db: Db) {}

  /** Directory paths of a folder in BINARY order, after `after`, at most `limit`. */
  async list(
    owner: string,
    folderHash: string,
    after?: string | null,
    limit?: number,
  ): Promise<FolderEntryRow[]> {
    const q = this.db
      .select({ path: folderEntries.relativePath, attributes: folderEntries.attributes })
      .from(folderEntries)
      .where(
        and(
          eq(folderEntries.owner, owner),
          eq(folderEntries.folderHash, folderHash),
          after == null ? undefined : gt(folderEntries.relativePath, after),
        ),
      )
      .orderBy(asc(folderEntries.relativePath));
    return (limit === undefined ? q : q.limit(limit)).all();
  }

  /**
   * Inserts the paths that are not there yet (existing rows are left as they are); a path in
   * `attributes` gets those attributes, replacing the ones it had.
   */
  async add(
    owner: string,
    folderHash: string,
    paths: readonly string[],
    now: number,
    attributes?: ReadonlyMap<string, Uint8Array>,
  ): Promise<void> {
    const row = (relativePath: string) => ({ owner, folderHash, relativePath, createdAt: now });
    const plain = paths.filter((p) => !attributes?.has(p));
    const sealed = paths.filter((p) => attributes?.has(p));
    if (plain.length > 0) this.db.insert(folderEntries).values(plain.map(row)).onConflictDoNothing().run();
    if (sealed.length > 0)
      this.db
        .insert(folderEntries)
        .values(sealed.map((p) => ({ ...row(p), attributes: Buffer.from(attributes?.get(p) as Uint8Array) })))
        .onConflictDoUpdate({
          target: [folderEntries.owner, folderEntries.folderHash, folderEntries.relativePath],
          set: { attributes: sql`excluded.attributes` },
        })
        .run();
  }

  /** Deletes exactly the named paths; returns how many existed. */
  async remove(owner: string, folderHash: string, paths: readonly string[]): Promise<number> {
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
  async removeFolder(owner: string, folderHash: string): Promise<void> {
    this.db
      .delete(folderEntries)
      .where(and(eq(folderEntries.owner, owner), eq(folderEntries.folderHash, folderHash)))
      .run();
  }

  /**
   * The names of the entries directly inside `path` (`""` = the folder root): the next path
   * segment of every entry at or below `path/`.
   */
  async childNames(owner: string, folderHash: string, path: string): Promise<string[]> {
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
