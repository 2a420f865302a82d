/**
 * @module server/db/postgres/files
 * `FilesRepository` on PostgreSQL (contract: `src/files/files.repository.ts`). `path_hash` is
 * `bytea`, whose order is bytewise as SQLite's BLOB order.
 */
import { and, asc, desc, eq, getTableColumns, or, type SQL, sql } from "drizzle-orm";
import type { FileRow } from "../../files/file-entry.ts";
import type { FilesRepository, PathColumns, RekeyColumns } from "../../files/files.repository.ts";
import type { PgConn } from "./conn.ts";
import { files } from "./schema.ts";

/** The primary-key condition of one file row. */
function fileKey(owner: string, folderHash: string, pathHash: Uint8Array) {
  return and(
    eq(files.owner, owner),
    eq(files.folderHash, folderHash),
    eq(files.pathHash, Buffer.from(pathHash)),
  );
}

const KEY_COLUMNS = ["owner", "folderHash", "pathHash"] as const;
/** On conflict, every non-key column from the new row. */
const UPSERT_SET = Object.fromEntries(
  Object.entries(getTableColumns(files))
    .filter(([k]) => !(KEY_COLUMNS as readonly string[]).includes(k))
    .map(([k, c]) => [k, sql.raw(`excluded."${c.name}"`)]),
);

/** File rows on PostgreSQL. */
export class PgFilesRepository implements FilesRepository {
  constructor(private readonly db: PgConn) {}

  async get(owner: string, folderHash: string, pathHash: Uint8Array): Promise<FileRow | undefined> {
    const [row] = await this.db
      .select()
      .from(files)
      .where(fileKey(owner, folderHash, pathHash));
    return row;
  }

  async byRelativePath(
    owner: string,
    folderHash: string,
    relativePath: string,
  ): Promise<FileRow | undefined> {
    // md5 first, so that the files_by_relative_path index finds the row.
    const [row] = await this.db
      .select()
      .from(files)
      .where(
        and(
          eq(files.owner, owner),
          eq(files.folderHash, folderHash),
          sql`md5(${files.relativePath}) = md5(${relativePath})`,
          eq(files.relativePath, relativePath),
        ),
      )
      .orderBy(desc(files.updatedAt))
      .limit(1);
    return row;
  }

  async upsert(row: FileRow): Promise<void> {
    await this.db
      .insert(files)
      .values(row)
      .onConflictDoUpdate({ target: KEY_COLUMNS.map((c) => files[c]), set: UPSERT_SET });
  }

  async remove(owner: string, folderHash: string, pathHash: Uint8Array): Promise<boolean> {
    const rows = await this.db
      .delete(files)
      .where(fileKey(owner, folderHash, pathHash))
      .returning({ owner: files.owner });
    return rows.length > 0;
  }

  async rekey(
    owner: string,
    folderHash: string,
    oldPathHash: Uint8Array,
    row: RekeyColumns,
  ): Promise<boolean> {
    const rows = await this.db
      .update(files)
      .set({ ...row, pathHash: Buffer.from(row.pathHash) })
      .where(fileKey(owner, folderHash, oldPathHash))
      .returning({ owner: files.owner });
    return rows.length > 0;
  }

  async setPath(owner: string, folderHash: string, pathHash: Uint8Array, cols: PathColumns): Promise<void> {
    await this.db
      .update(files)
      .set(cols)
      .where(fileKey(owner, folderHash, pathHash));
  }

  async blobIdsOfFolder(owner: string, folderHash: string): Promise<string[]> {
    const rows = await this.db
      .select({ blobId: files.blobId })
      .from(files)
      .where(and(eq(files.owner, owner), eq(files.folderHash, folderHash)));
    return rows.map((r) => r.blobId);
  }

  async removeFolder(owner: string, folderHash: string): Promise<number> {
    const [r] = await this.db.execute<{ n: number }>(
      sql`WITH d AS (DELETE FROM ${files} WHERE ${files.owner} = ${owner} AND ${files.folderHash} = ${folderHash} RETURNING 1) SELECT count(*)::int AS n FROM d`,
    );
    return Number(r?.n ?? 0);
  }

  async page(
    owner: string,
    folderHash: string,
    offset: number,
    limit: number,
    under: readonly string[] | null = null,
  ): Promise<{ rows: FileRow[]; total: number }> {
    const where = and(eq(files.owner, owner), eq(files.folderHash, folderHash), underAny(under));
    const rows = await this.db
      .select()
      .from(files)
      .where(where)
      .orderBy(asc(files.pathHash))
      .limit(limit)
      .offset(offset);
    const [t] = await this.db
      .select({ n: sql<number>`count(*)`.mapWith(Number) })
      .from(files)
      .where(where);
    return { rows, total: t?.n ?? 0 };
  }
}

/**
 * Rows whose `relative_path` is one of `prefixes` or lies under one (segment-wise, compared
 * as text, so no LIKE wildcard in a path matters); undefined (no condition) for null.
 */
function underAny(prefixes: readonly string[] | null): SQL | undefined {
  if (prefixes === null) return undefined;
  if (prefixes.length === 0) return sql`false`;
  return or(
    ...prefixes.map(
      (p) =>
        sql`(${files.relativePath} = ${p} OR substr(${files.relativePath}, 1, ${[...p].length + 1}) = ${`${p}/`})`,
    ),
  );
}
