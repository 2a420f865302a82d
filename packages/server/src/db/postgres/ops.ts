/**
 * @module server/db/postgres/ops
 * `OpsRepository` on PostgreSQL (contract: `src/ops/ops.repository.ts`). The fsck snapshot is
 * one `REPEATABLE READ READ ONLY` transaction, so every row it reads (and each counter beside
 * the files it counts) comes from the same moment however many nodes write meanwhile. Counters
 * are `bigint` here, so the only drift is a wrong value or a missing row.
 */
import { and, asc, count, eq, gt, inArray, isNotNull, isNull, lte, or, sql } from "drizzle-orm";
import {
  type AccountedPage,
  chunkKeysOf,
  type FileKey,
  type FileLayout,
  type FsckSnapshot,
  type OpsRepository,
  prefixesOf,
  type StoreTotals,
  type VersionLayout,
} from "../../ops/ops.repository.ts";
import { shareIdOfKey } from "../../shares/share-rules.ts";
import { blobIdOfKey, isOneObjectBlob, multipartTarget } from "../../storage/layout.ts";
import type { PgDb } from "./client.ts";
import type { PgConn } from "./conn.ts";
import { apiTokens, blobDeletions, files, fileVersions, folders, shares, uploadSessions } from "./schema.ts";

/** Sessions stuck at `now`: finalizing with a lease that ran out, or without one. */
function stuckAt(now: number) {
  return and(
    eq(uploadSessions.state, "finalizing"),
    or(isNull(uploadSessions.finalizingUntil), lte(uploadSessions.finalizingUntil, now)),
  );
}

/** The columns of a `FileLayout`. */
const LAYOUT = {
  owner: files.owner,
  folderHash: files.folderHash,
  pathHash: files.pathHash,
  blobId: files.blobId,
  chunkSize: files.chunkSize,
  chunkCount: files.chunkCount,
  ciphertextSize: files.ciphertextSize,
  chunkGens: files.chunkGens,
};

/** Up to `limit` file layouts after `after` in primary-key order, through `db`. */
async function layoutsAfter(db: PgConn, after: FileKey | null, limit: number): Promise<FileLayout[]> {
  const rows = await db
    .select(LAYOUT)
    .from(files)
    .where(
      after === null
        ? undefined
        : sql`(${files.owner}, ${files.folderHash}, ${files.pathHash}) > (${after.owner}, ${after.folderHash}, ${Buffer.from(after.pathHash)})`,
    )
    .orderBy(asc(files.owner), asc(files.folderHash), asc(files.pathHash))
    .limit(limit);
  return rows.map((f) => ({ ...f, pathHash: new Uint8Array(f.pathHash) }));
}

/** Up to `limit` kept-version layouts with `version_id` above `after`, in id order, through `db`. */
async function versionLayoutsAfter(
  db: PgConn,
  after: number | null,
  limit: number,
): Promise<VersionLayout[]> {
  const v = fileVersions;
  const rows = await db
    .select({
      versionId: v.versionId,
      owner: v.owner,
      folderHash: v.folderHash,
      pathHash: v.pathHash,
      blobId: v.blobId,
      chunkSize: v.chunkSize,
      chunkCount: v.chunkCount,
      ciphertextSize: v.ciphertextSize,
      chunkGens: v.chunkGens,
    })
    .from(v)
    .where(after === null ? undefined : gt(v.versionId, after))
    .orderBy(asc(v.versionId))
    .limit(limit);
  return rows.map((f) => ({ ...f, pathHash: new Uint8Array(f.pathHash) }));
}

/** True for the pool (a transaction of its own can be begun), false for an open transaction. */
function isPool(db: PgConn): db is PgDb {
  return "$client" in db;
}

/** Operator queries on the PostgreSQL metadata database. */
export class PgOpsRepository implements OpsRepository {
  constructor(private readonly db: PgConn) {}

  async snapshot(now: number, pageSize: number, visit: (page: AccountedPage) => void): Promise<FsckSnapshot> {
    if (!isPool(this.db)) return this.read(this.db, now, pageSize, visit);
    return this.db.transaction((tx) => this.read(tx, now, pageSize, visit), {
      isolationLevel: "repeatable read",
      accessMode: "read only",
    });
  }

  /** The snapshot through `db` (one transaction): keyset pages of each table, then the small parts. */
  private async read(
    db: PgConn,
    now: number,
    pageSize: number,
    visit: (page: AccountedPage) => void,
  ): Promise<FsckSnapshot> {
    for (let after: FileKey | null = null; ; ) {
      const rows = await layoutsAfter(db, after, pageSize);
      if (rows.length > 0) visit({ kind: "files", rows });
      if (rows.length < pageSize) break;
      after = rows[rows.length - 1] as FileLayout;
    }
    for (let after: number | null = null; ; ) {
      const rows = await versionLayoutsAfter(db, after, pageSize);
      if (rows.length > 0) visit({ kind: "files", rows });
      if (rows.length < pageSize) break;
      after = (rows[rows.length - 1] as VersionLayout).versionId;
    }
    for (let after: string | null = null; ; ) {
      const rows = await db
        .select({ id: uploadSessions.sessionId, blobId: uploadSessions.blobId })
        .from(uploadSessions)
        .where(after === null ? undefined : gt(uploadSessions.sessionId, after))
        .orderBy(asc(uploadSessions.sessionId))
        .limit(pageSize);
      if (rows.length > 0) visit({ kind: "sessions", blobIds: rows.map((r) => r.blobId) });
      if (rows.length < pageSize) break;
      after = (rows[rows.length - 1] as { id: string }).id;
    }
    for (let after: string | null = null; ; ) {
      const rows = await db
        .select({ id: shares.shareId })
        .from(shares)
        .where(after === null ? undefined : gt(shares.shareId, after))
        .orderBy(asc(shares.shareId))
        .limit(pageSize);
      if (rows.length > 0) visit({ kind: "shares", shareIds: rows.map((r) => r.id) });
      if (rows.length < pageSize) break;
      after = (rows[rows.length - 1] as { id: string }).id;
    }
    for (let after: number | null = null; ; ) {
      const rows = await db
        .select({ id: blobDeletions.id, target: blobDeletions.target })
        .from(blobDeletions)
        .where(after === null ? undefined : gt(blobDeletions.id, after))
        .orderBy(asc(blobDeletions.id))
        .limit(pageSize);
      if (rows.length > 0) visit({ kind: "deletions", targets: rows.map((r) => r.target) });
      if (rows.length < pageSize) break;
      after = (rows[rows.length - 1] as { id: number }).id;
    }
    const counters = (await db.execute(sql`
      SELECT k.owner, k.folder_hash, f.file_count::text AS file_count, f.total_bytes::text AS total_bytes,
             coalesce(c.n, 0)::bigint::text AS n, coalesce(c.bytes, 0)::numeric::text AS bytes,
             f.owner IS NOT NULL AS has_row
        FROM (SELECT owner, folder_hash FROM folders UNION SELECT owner, folder_hash FROM files) k
        LEFT JOIN folders f ON f.owner = k.owner AND f.folder_hash = k.folder_hash
        LEFT JOIN (SELECT owner, folder_hash, count(*) AS n, sum(size_bytes) AS bytes
                     FROM files GROUP BY owner, folder_hash) c
               ON c.owner = k.owner AND c.folder_hash = k.folder_hash
       WHERE f.owner IS NULL OR f.file_count <> coalesce(c.n, 0) OR f.total_bytes <> coalesce(c.bytes, 0)
       ORDER BY k.owner, k.folder_hash`)) as unknown as {
      owner: string;
      folder_hash: string;
      file_count: string | null;
      total_bytes: string | null;
      n: string;
      bytes: string;
      has_row: boolean;
    }[];
    const stuck = await db
      .select({
        sessionId: uploadSessions.sessionId,
        owner: uploadSessions.owner,
        folderHash: uploadSessions.folderHash,
        finalizingUntil: uploadSessions.finalizingUntil,
      })
      .from(uploadSessions)
      .where(stuckAt(now));
    return {
      counterMismatches: counters.map((c) => ({
        owner: c.owner,
        folderHash: c.folder_hash,
        hasRow: c.has_row,
        fileCount: String(c.file_count),
        totalBytes: String(c.total_bytes),
        files: Number(c.n),
        bytes: Number(c.bytes),
      })),
      stuckSessions: stuck,
    };
  }

  fileLayouts(after: FileKey | null, limit: number): Promise<FileLayout[]> {
    return layoutsAfter(this.db, after, limit);
  }

  versionLayouts(after: number | null, limit: number): Promise<VersionLayout[]> {
    return versionLayoutsAfter(this.db, after, limit);
  }

  async isUploadOwned(key: string, uploadId: string): Promise<boolean> {
    const [session] = await this.db
      .select({ n: sql`1` })
      .from(uploadSessions)
      .where(eq(uploadSessions.uploadId, uploadId))
      .limit(1);
    if (session) return true;
    const [queued] = await this.db
      .select({ n: sql`1` })
      .from(blobDeletions)
      .where(eq(blobDeletions.target, multipartTarget(key)))
      .limit(1);
    return queued !== undefined;
  }

  async isReferenced(key: string): Promise<boolean> {
    const [queued] = await this.db
      .select({ n: sql`1` })
      .from(blobDeletions)
      .where(inArray(blobDeletions.target, [key, ...prefixesOf(key)]))
      .limit(1);
    if (queued) return true;
    const shareId = shareIdOfKey(key);
    if (shareId !== null) {
      const [share] = await this.db
        .select({ n: sql`1` })
        .from(shares)
        .where(eq(shares.shareId, shareId))
        .limit(1);
      return share !== undefined;
    }
    const blobId = blobIdOfKey(key);
    if (blobId === null) return false;
    const [session] = await this.db
      .select({ n: sql`1` })
      .from(uploadSessions)
      .where(eq(uploadSessions.blobId, blobId))
      .limit(1);
    if (session) return true;
    // The object a multipart session's upload completes into (`multipartBlobId`).
    if (isOneObjectBlob(blobId)) {
      const [multipart] = await this.db
        .select({ n: sql`1` })
        .from(uploadSessions)
        .where(and(eq(uploadSessions.blobId, blobId.slice(1)), isNotNull(uploadSessions.uploadId)))
        .limit(1);
      if (multipart) return true;
    }
    const rows = await this.db
      .select({ blobId: files.blobId, chunkCount: files.chunkCount, chunkGens: files.chunkGens })
      .from(files)
      .where(eq(files.blobId, blobId));
    const kept = await this.db
      .select({
        blobId: fileVersions.blobId,
        chunkCount: fileVersions.chunkCount,
        chunkGens: fileVersions.chunkGens,
      })
      .from(fileVersions)
      .where(eq(fileVersions.blobId, blobId));
    return [...rows, ...kept].some((r) => chunkKeysOf(r).includes(key));
  }

  /**
   * In three statements, so that no counter change of a concurrent writer is lost, whether or
   * not it holds the owner lock: the row is created if missing (waiting
   * for a concurrent creator), locked `FOR UPDATE` (waiting for a writer that already changed the
   * counters to commit), then set from a count whose snapshot is taken after that wait. A writer
   * that changes the counters later waits for this transaction and applies its change after it.
   */
  async recountFolder(owner: string, folderHash: string, now: number): Promise<void> {
    await this.db
      .insert(folders)
      .values({ owner, folderHash, updatedAt: now, fileCount: 0, totalBytes: 0 })
      .onConflictDoNothing();
    const where = and(eq(folders.owner, owner), eq(folders.folderHash, folderHash));
    await this.db.select({ owner: folders.owner }).from(folders).where(where).for("update");
    await this.db.execute(sql`
      UPDATE folders SET file_count = c.n, total_bytes = c.bytes
        FROM (SELECT count(*) AS n, coalesce(sum(size_bytes), 0) AS bytes
                FROM files WHERE owner = ${owner} AND folder_hash = ${folderHash}) c
       WHERE folders.owner = ${owner} AND folders.folder_hash = ${folderHash}`);
  }

  async releaseStuckSession(sessionId: string, now: number, expiresAt: number): Promise<boolean> {
    if (sessionId.includes("\u0000")) return false;
    const rows = await this.db
      .update(uploadSessions)
      .set({ state: "receiving", finalizingUntil: null, finalizingHolder: null, expiresAt })
      .where(and(eq(uploadSessions.sessionId, sessionId), stuckAt(now)))
      .returning({ id: uploadSessions.sessionId });
    return rows.length > 0;
  }

  async totals(now: number): Promise<StoreTotals> {
    const read = async (db: PgConn): Promise<StoreTotals> => {
      const [accounts] = (await db.execute(
        sql`SELECT count(*)::int AS n FROM (SELECT owner FROM folders UNION SELECT owner FROM files) o`,
      )) as unknown as { n: number }[];
      const [f] = await db
        .select({
          n: count(),
          plain: sql<string>`coalesce(sum(${files.sizeBytes}), 0)::text`,
          cipher: sql<string>`coalesce(sum(${files.ciphertextSize}), 0)::text`,
        })
        .from(files);
      const [fo] = await db.select({ n: count() }).from(folders);
      const [tokens] = await db
        .select({ n: count() })
        .from(apiTokens)
        .where(
          and(isNull(apiTokens.revokedAt), or(isNull(apiTokens.expiresAt), gt(apiTokens.expiresAt, now))),
        );
      return {
        accounts: Number(accounts?.n ?? 0),
        folders: fo?.n ?? 0,
        files: f?.n ?? 0,
        plaintextBytes: Number(f?.plain ?? 0),
        ciphertextBytes: Number(f?.cipher ?? 0),
        activeApiTokens: tokens?.n ?? 0,
      };
    };
    if (!isPool(this.db)) return read(this.db);
    return this.db.transaction(read, { isolationLevel: "repeatable read", accessMode: "read only" });
  }
}
