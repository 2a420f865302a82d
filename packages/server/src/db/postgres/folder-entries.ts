/**
 * @module server/db/postgres/folder-entries
 * `FolderEntriesRepository` on PostgreSQL (contract: `src/folders/folder-entries.repository.ts`).
 * `relative_path` is `COLLATE "C"`, so order and the prefix range are bytewise as on SQLite.
 */
import { and, asc, eq, gt, inArray, lt, sql } from "drizzle-orm";
import type { FolderEntriesRepository, FolderEntryRow } from "../../folders/folder-entries.repository.ts";
import type { PgConn } from "./conn.ts";
import { folderEntries } from "./schema.ts";

/** Folder entries (explicit directories) on PostgreSQL. */
export class PgFolderEntriesRepository implements FolderEntriesRepository {
  constructor(private readonly db: PgConn) {}

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
    return await (limit === undefined ? q : q.limit(limit));
  }

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
    if (plain.length > 0) await this.db.insert(folderEntries).values(plain.map(row)).onConflictDoNothing();
    if (sealed.length > 0)
      await this.db
        .insert(folderEntries)
        .values(sealed.map((p) => ({ ...row(p), attributes: Buffer.from(attributes?.get(p) as Uint8Array) })))
        .onConflictDoUpdate({
          target: [folderEntries.owner, folderEntries.folderHash, folderEntries.relativePath],
          set: { attributes: sql`excluded.attributes` },
        });
  }

  async remove(owner: string, folderHash: string, paths: readonly string[]): Promise<number> {
    if (paths.length === 0) return 0;
    const rows = await this.db
      .delete(folderEntries)
      .where(
        and(
          eq(folderEntries.owner, owner),
          eq(folderEntries.folderHash, folderHash),
          inArray(folderEntries.relativePath, [...paths]),
        ),
      )
      .returning({ p: folderEntries.relativePath });
    return rows.length;
  }

  async removeFolder(owner: string, folderHash: string): Promise<void> {
    await this.db
      .delete(folderEntries)
      .where(and(eq(folderEntries.owner, owner), eq(folderEntries.folderHash, folderHash)));
  }

  async childNames(owner: string, folderHash: string, path: string): Promise<string[]> {
    const prefix = path === "" ? "" : `${path}/`;
    const rows = await this.db
      .select({ p: folderEntries.relativePath })
      .from(folderEntries)
      .where(
        and(
          eq(folderEntries.owner, owner),
          eq(folderEntries.folderHash, folderHash),
          prefix === "" ? undefined : gt(folderEntries.relativePath, prefix),
          // "0" is the code point after "/": every path below `path/` sorts before `path0`.
          prefix === "" ? undefined : lt(folderEntries.relativePath, `${path}0`),
        ),
      );
    const names = new Set<string>();
    for (const { p } of rows) {
      const rest = p.slice(prefix.length);
      if (rest !== "") names.add(rest.split("/")[0] ?? rest);
    }
    return [...names];
  }
}
