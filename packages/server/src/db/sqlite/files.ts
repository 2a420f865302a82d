/**
 * @module server/db/sqlite/files
 * `FilesRepository` on SQLite (`files`; the search-index, usage and counter triggers fire on its
 * writes). Every method runs its statements synchronously, so a call is atomic with respect to the
 * store's gate.
 */
import { and, asc, desc, eq, getTableColumns, or, type Placeholder, type SQL, sql } from "drizzle-orm";
import type { FileRow } from "../../files/file-entry.ts";
import type { FilesRepository, PathColumns, RekeyColumns } from "../../files/files.repository.ts";
import { changes, type Db } from "../client.ts";
import { files } from "./schema.ts";

/** The primary-key condition of one file row. */
function fileKey(owner: string, folderHash: string, pathHash: Uint8Array) {
  return and(
    eq(files.owner, owner),
    eq(files.folderHash, folderHash),
    eq(files.pathHash, Buffer.from(pathHash)),
  );
}

/** Key columns of a file row (the conflict target of `upsert`). */
const KEY_COLUMNS = ["owner", "folderHash", "pathHash"] as const;

/**
 * The upsert of one file row, prepared once: every column a named placeholder, and on conflict
 * every non-key column set from the new row (`excluded`). Preparing it per call would compile
 * the statement and the search-index triggers it fires on every write.
 */
function prepareUpsert(db: Db) {
  type Column = keyof typeof files.$inferInsert;
  const columns = Object.keys(getTableColumns(files)) as Column[];
  const values = Object.fromEntries(columns.map((c) => [c, sql.placeholder(c)])) as Record<
    Column,
    Placeholder
  >;
  const set = Object.fromEntries(
    columns
      .filter((c) => !(KEY_COLUMNS as readonly string[]).includes(c))
      .map((c) => [c, sql.raw(`excluded.${files[c].name}`)]),
  );
  return db
    .insert(files)
    .values(values)
    .onConflictDoUpdate({ target: KEY_COLUMNS.map((c) => files[c]), set })
    .prepare();
}

/** The read of one file row by its key, prepared once (built per call it was most of a read's time). */
function prepareGet(db: Db) {
  return db
    .select()
    .from(files)
    .where(
      and(
        eq(files.owner, sql.placeholder("owner")),
        eq(files.folderHash, sql.placeholder("folderHash")),
        eq(files.pathHash, sql.placeholder("pathHash")),
      ),
    )
    .prepare();
}

/** File rows on SQLite. */
export class SqliteFilesRepository implements FilesRepository {
  private readonly upsertStatement: ReturnType<typeof prepareUpsert>;
  private readonly getStatement: ReturnType<typeof prepareGet>;

  constructor(private readonly db: Db) {
    this.upsertStatement = prepareUpsert(db);
    this.getStatement = prepareGet(db);
  }

  async get(owner: string, folderHash: string, pathHash: Uint8Array): Promise<FileRow | undefined> {
    return this.getStatement.get({ owner, folderHash, pathHash: Buffer.from(pathHash) });
  }

  /** The most recently updated row at the plaintext path, or undefined. */
  async byRelativePath(
    owner: string,
    folderHash: string,
    relativePath: string,
  ): Promise<FileRow | undefined> {
    return this.db
      .select()
      .from(files)
      .where(
        and(eq(files.owner, owner), eq(files.folderHash, folderHash), eq(files.relativePath, relativePath)),
      )
      .orderBy(desc(files.updatedAt))
      .limit(1)
      .get();
  }

  /** Inserts or replaces the row at (owner, folder_hash, path_hash). */
  async upsert(row: FileRow): Promise<void> {
    this.upsertStatement.run(row);
  }

  /** Deletes one row; true when it existed. */
  async remove(owner: string, folderHash: string, pathHash: Uint8Array): Promise<boolean> {
    const r = this.db
      .delete(files)
      .where(fileKey(owner, folderHash, pathHash))
      .run();
    return changes(r) > 0;
  }

  /**
   * Moves the row at `oldPathHash` to `row.pathHash` with the new path metadata and revision
   * (rename, docs/protocol.md#rename-files); every other column stays. True when the row existed.
   */
  async rekey(
    owner: string,
    folderHash: string,
    oldPathHash: Uint8Array,
    row: RekeyColumns,
  ): Promise<boolean> {
    return (
      changes(
        this.db
          .update(files)
          .set(row)
          .where(fileKey(owner, folderHash, oldPathHash))
          .run(),
      ) > 0
    );
  }

  /** Sets the plaintext path columns of one row (relative-path back-fill, docs/protocol.md#relative-path-backfill). */
  async setPath(owner: string, folderHash: string, pathHash: Uint8Array, cols: PathColumns): Promise<void> {
    this.db
      .update(files)
      .set(cols)
      .where(fileKey(owner, folderHash, pathHash))
      .run();
  }

  /** Blob ids of every file of a folder. */
  async blobIdsOfFolder(owner: string, folderHash: string): Promise<string[]> {
    return this.db
      .select({ blobId: files.blobId })
      .from(files)
      .where(and(eq(files.owner, owner), eq(files.folderHash, folderHash)))
      .all()
      .map((r) => r.blobId);
  }

  /** Deletes every file of a folder; returns how many. */
  async removeFolder(owner: string, folderHash: string): Promise<number> {
    return changes(
      this.db
        .delete(files)
        .where(and(eq(files.owner, owner), eq(files.folderHash, folderHash)))
        .run(),
    );
  }

  /** A page of a folder's files in `path_hash` order, and the folder's total file count. */
  async page(
    owner: string,
    folderHash: string,
    offset: number,
    limit: number,
    under: readonly string[] | null = null,
  ): Promise<{ rows: FileRow[]; total: number }> {
    const where = and(eq(files.owner, owner), eq(files.folderHash, folderHash), underAny(under));
    const rows = this.db
      .select()
      .from(files)
      .where(where)
      .orderBy(asc(files.pathHash))
      .limit(limit)
      .offset(offset)
      .all();
    const total = this.db.select({ n: sql<number>`count(*)` }).from(files).where(where).get()?.n ?? 0;
    return { rows, total };
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
