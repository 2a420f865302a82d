/**
 * @module server/db/postgres/schema
 * Drizzle schema of the metadata database on PostgreSQL: the tables of `src/db/sqlite/schema.ts`
 * (SQLite) with the same names, columns and meaning, so that rows have the same TypeScript
 * shape in both dialects. Times are Unix seconds and sizes bytes, both `bigint` read as numbers
 * (SQLite integers are 64-bit); byte arrays are `bytea` read as `Buffer`. Text that is sorted or
 * compared by range is `COLLATE "C"` (bytewise, as SQLite's BINARY), whatever the database's
 * default collation.
 *
 * The SQLite search index tables have no counterpart: on PostgreSQL, search reads `files`
 * through a `pg_trgm` GIN index on the folded `search_name`, one b-tree per sort column ending
 * in `path_hash` and one per directory (src/db/postgres/search/index.ts). The counters `account_usage` and `usage_buckets` are kept by plpgsql triggers
 * on `files` (drizzle/postgres/0001_counters.sql), as SQLite triggers keep them.
 * Migrations are generated from this file into `drizzle/postgres/` by `bun run db:generate:postgres`.
 */
import { sql } from "drizzle-orm";
import {
  bigint,
  bigserial,
  boolean,
  customType,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  uniqueIndex,
} from "drizzle-orm/pg-core";

/** `bytea`, read as a `Buffer` like SQLite's BLOB columns. */
const bytes = customType<{ data: Buffer; driverData: Uint8Array }>({
  dataType: () => "bytea",
  fromDriver: (v) => (Buffer.isBuffer(v) ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength)),
});
/** `text COLLATE "C"`: bytewise order and range comparisons. */
const ctext = customType<{ data: string }>({ dataType: () => 'text COLLATE "C"' });
/** A 64-bit integer read as a JavaScript number (Unix seconds, bytes, counts). */
const int64 = (name: string) => bigint(name, { mode: "number" });

/** Folder registrations and per-folder counters (see `folders` in `src/db/sqlite/schema.ts`). */
export const folders = pgTable(
  "folders",
  {
    owner: ctext("owner").notNull(),
    folderHash: ctext("folder_hash").notNull(),
    label: text("label"),
    deviceName: text("device_name"),
    createdAt: int64("created_at"),
    updatedAt: int64("updated_at").notNull(),
    fileCount: int64("file_count").notNull().default(0),
    totalBytes: int64("total_bytes").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.owner, t.folderHash] })],
);

/** One row per live file (see `files` in `src/db/sqlite/schema.ts`). */
export const files = pgTable(
  "files",
  {
    owner: ctext("owner").notNull(),
    folderHash: ctext("folder_hash").notNull(),
    pathHash: bytes("path_hash").notNull(),
    saltedHash: bytes("salted_hash").notNull(),
    sizeBytes: int64("size_bytes").notNull(),
    revisionSeq: int64("revision_seq").notNull(),
    revisionId: bytes("revision_id").notNull(),
    encryptedPath: bytes("encrypted_path").notNull(),
    fileName: ctext("file_name"),
    relativePath: ctext("relative_path"),
    /** NFC, case-folded `file_name ?? relative_path` (the search key for `q`). */
    searchName: ctext("search_name"),
    ext: ctext("ext"),
    storeHash: text("store_hash"),
    chunkHashes: text("chunk_hashes"),
    createdAt: int64("created_at").notNull(),
    updatedAt: int64("updated_at").notNull(),
    clientTimestamp: int64("client_timestamp").notNull(),
    source: text("source"),
    attributes: bytes("attributes"),
    uploadId: text("upload_id").notNull(),
    ciphertextHash: text("ciphertext_hash").notNull(),
    ciphertextSize: int64("ciphertext_size").notNull(),
    blobId: text("blob_id").notNull(),
    chunkSize: int64("chunk_size").notNull(),
    chunkCount: int64("chunk_count").notNull(),
    chunkGens: text("chunk_gens").notNull(),
    uploadedBy: ctext("uploaded_by"),
  },
  (t) => [
    primaryKey({ columns: [t.owner, t.folderHash, t.pathHash] }),
    // A folder share's blob route finds a file by its plaintext path (docs/sharing.md); by the
    // path's MD5, since a long path could exceed a b-tree entry.
    index("files_by_relative_path").on(t.owner, t.folderHash, sql`md5(${t.relativePath})`),
    // Search (`q`, src/db/postgres/search/index.ts): trigram matches on the folded search name
    // (word-final ς read as σ, as `foldCase` folds `q`).
    index("files_search_fold_trgm").using("gin", sql`replace(${t.searchName}, 'ς', 'σ') gin_trgm_ops`),
    // Search and browse pages: one per sort key (docs/protocol.md#search, #api-profiles), `path_hash` next
    // as the tiebreak, so that a page is read in index order; nullable keys sort nulls first
    // ascending (SQLite's order), and the same index read backwards gives descending nulls last.
    // Then folder_hash (a page's keys) and the filtered columns, so that a walk skipping to an
    // offset and testing file_type, size and date bounds reads the index only.
    index("files_by_file_name").on(
      t.owner,
      t.fileName.asc().nullsFirst(),
      t.pathHash,
      t.folderHash,
      t.ext,
      t.sizeBytes,
      t.createdAt,
    ),
    index("files_by_size").on(t.owner, t.sizeBytes, t.pathHash, t.folderHash, t.ext, t.createdAt),
    index("files_by_created").on(t.owner, t.createdAt, t.pathHash, t.folderHash, t.ext, t.sizeBytes),
    index("files_by_updated").on(
      t.owner,
      t.updatedAt,
      t.pathHash,
      t.folderHash,
      t.ext,
      t.sizeBytes,
      t.createdAt,
    ),
    index("files_by_uploader").on(t.owner, t.uploadedBy.asc().nullsFirst(), t.pathHash, t.folderHash),
    index("files_by_ext").on(
      t.owner,
      t.ext.asc().nullsFirst(),
      t.pathHash,
      t.folderHash,
      t.sizeBytes,
      t.createdAt,
    ),
    // Browse: the files directly in one directory of a folder (`search_entries.dir` on SQLite),
    // in name order (the default order of a listing; descending reads it backwards).
    index("files_by_dir").on(
      t.owner,
      t.folderHash,
      sql`btrim(regexp_replace(${t.relativePath}, '[^/]*$', ''), '/')`,
      t.fileName.asc().nullsFirst(),
      t.pathHash,
    ),
    // A kept version's blob is deleted only when no live row uses it (docs/versions.md).
    index("files_by_blob").on(t.blobId),
  ],
);

/** Kept versions of replaced and deleted files (see `file_versions` in `src/db/sqlite/schema.ts`). */
export const fileVersions = pgTable(
  "file_versions",
  {
    versionId: bigserial("version_id", { mode: "number" }).primaryKey(),
    owner: ctext("owner").notNull(),
    folderHash: ctext("folder_hash").notNull(),
    pathHash: bytes("path_hash").notNull(),
    saltedHash: bytes("salted_hash").notNull(),
    sizeBytes: int64("size_bytes").notNull(),
    revisionSeq: int64("revision_seq").notNull(),
    revisionId: bytes("revision_id").notNull(),
    encryptedPath: bytes("encrypted_path").notNull(),
    fileName: ctext("file_name"),
    relativePath: ctext("relative_path"),
    storeHash: text("store_hash"),
    chunkHashes: text("chunk_hashes"),
    createdAt: int64("created_at").notNull(),
    updatedAt: int64("updated_at").notNull(),
    clientTimestamp: int64("client_timestamp").notNull(),
    source: text("source"),
    attributes: bytes("attributes"),
    ciphertextHash: text("ciphertext_hash").notNull(),
    ciphertextSize: int64("ciphertext_size").notNull(),
    blobId: text("blob_id").notNull(),
    chunkSize: int64("chunk_size").notNull(),
    chunkCount: int64("chunk_count").notNull(),
    chunkGens: text("chunk_gens").notNull(),
    uploadedBy: ctext("uploaded_by"),
    reason: text("reason", { enum: ["replaced", "deleted"] }).notNull(),
    keptAt: int64("kept_at").notNull(),
    expiresAt: int64("expires_at").notNull(),
  },
  (t) => [
    index("file_versions_by_file").on(t.owner, t.folderHash, t.pathHash, t.versionId),
    index("file_versions_deleted").on(t.owner, t.folderHash, t.versionId).where(sql`${t.reason} = 'deleted'`),
    index("file_versions_expires").on(t.expiresAt),
    index("file_versions_by_blob").on(t.blobId),
  ],
);

/** Upload sessions (see `upload_sessions` in `src/db/sqlite/schema.ts`). */
export const uploadSessions = pgTable(
  "upload_sessions",
  {
    sessionId: text("session_id").primaryKey(),
    owner: ctext("owner").notNull(),
    folderHash: ctext("folder_hash").notNull(),
    pathHash: bytes("path_hash").notNull(),
    manifest: text("manifest").notNull(),
    ciphertextHash: text("ciphertext_hash").notNull(),
    ciphertextSize: int64("ciphertext_size").notNull(),
    chunkSize: int64("chunk_size").notNull(),
    chunkCount: int64("chunk_count").notNull(),
    blobId: text("blob_id").notNull(),
    state: text("state", { enum: ["receiving", "finalizing", "finalized"] }).notNull(),
    createdAt: int64("created_at").notNull(),
    expiresAt: int64("expires_at").notNull(),
    /** While `finalizing`: Unix second the finalizing node's lease runs out; null otherwise. */
    finalizingUntil: int64("finalizing_until"),
    /** While `finalizing`: the process holding the lease (see `src/db/sqlite/schema.ts`); null otherwise. */
    finalizingHolder: text("finalizing_holder"),
    /** The S3 multipart upload of the session's chunks (see `src/db/sqlite/schema.ts`); null otherwise. */
    uploadId: text("upload_id"),
    result: text("result"),
  },
  (t) => [
    index("sessions_owner").on(t.owner, t.state),
    index("sessions_expires").on(t.expiresAt),
    index("sessions_finalizing").on(t.finalizingUntil).where(sql`${t.finalizingUntil} IS NOT NULL`),
  ],
);

/** Chunks received by a session (see `session_chunks` in `src/db/sqlite/schema.ts`). */
export const sessionChunks = pgTable(
  "session_chunks",
  {
    sessionId: text("session_id").notNull(),
    chunkIndex: integer("chunk_index").notNull(),
    gen: text("gen").notNull(),
    size: int64("size").notNull(),
    receivedAt: int64("received_at").notNull(),
    /** ETag of the chunk's part when the session has a multipart upload; null otherwise. */
    etag: text("etag"),
  },
  (t) => [primaryKey({ columns: [t.sessionId, t.chunkIndex] })],
);

/** The deletion queue and write-intent log (see `blob_deletions` in `src/db/sqlite/schema.ts`). */
export const blobDeletions = pgTable(
  "blob_deletions",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    target: text("target").notNull(),
    notBefore: int64("not_before").notNull(),
    attempts: integer("attempts").notNull().default(0),
    lastError: text("last_error"),
    /** Unix second until which a sweeper that claimed the row holds it; null when unclaimed. */
    leasedUntil: int64("leased_until"),
    /** The process that reserved this write intent (see `holder` in `src/db/sqlite/schema.ts`). */
    holder: text("holder"),
  },
  (t) => [
    index("blob_deletions_due").on(t.notBefore),
    index("blob_deletions_holder").on(t.holder).where(sql`${t.holder} IS NOT NULL`),
  ],
);

/** Issued API tokens (see `api_tokens` in `src/db/sqlite/schema.ts`). */
export const apiTokens = pgTable(
  "api_tokens",
  {
    id: text("id").primaryKey(),
    tokenSha256: text("token_sha256").notNull(),
    owner: ctext("owner").notNull(),
    label: text("label"),
    createdAt: int64("created_at").notNull(),
    expiresAt: int64("expires_at"),
    revokedAt: int64("revoked_at"),
  },
  (t) => [uniqueIndex("api_tokens_sha").on(t.tokenSha256), index("api_tokens_owner").on(t.owner)],
);

/** Explicit directories of a folder (see `folder_entries` in `src/db/sqlite/schema.ts`). */
export const folderEntries = pgTable(
  "folder_entries",
  {
    owner: ctext("owner").notNull(),
    folderHash: ctext("folder_hash").notNull(),
    relativePath: ctext("relative_path").notNull(),
    createdAt: int64("created_at").notNull(),
    attributes: bytes("attributes"),
  },
  (t) => [primaryKey({ columns: [t.owner, t.folderHash, t.relativePath] })],
);

/** Per-account totals of live files, kept by triggers on `files` (see `account_usage` in `src/db/sqlite/schema.ts`). */
export const accountUsage = pgTable("account_usage", {
  owner: ctext("owner").primaryKey(),
  fileCount: int64("file_count").notNull().default(0),
  totalBytes: int64("total_bytes").notNull().default(0),
  createdAt: int64("created_at").notNull(),
  updatedAt: int64("updated_at").notNull(),
});

/** Per-account allowances (see `quota_overrides` in `src/db/sqlite/schema.ts`). */
export const quotaOverrides = pgTable("quota_overrides", {
  owner: ctext("owner").primaryKey(),
  quotaBytes: int64("quota_bytes"),
  updatedAt: int64("updated_at").notNull(),
});

/** Per-folder summary buckets, kept by triggers on `files` (see `usage_buckets` in `src/db/sqlite/schema.ts`). */
export const usageBuckets = pgTable(
  "usage_buckets",
  {
    owner: ctext("owner").notNull(),
    folderHash: ctext("folder_hash").notNull(),
    kind: text("kind", { enum: ["type", "source"] }).notNull(),
    bucket: text("bucket").notNull(),
    fileCount: int64("file_count").notNull(),
    totalBytes: int64("total_bytes").notNull(),
  },
  (t) => [primaryKey({ columns: [t.owner, t.folderHash, t.kind, t.bucket] })],
);

/** Shared-drive invites (see `drive_invites` in `src/db/sqlite/schema.ts`). */
export const driveInvites = pgTable(
  "drive_invites",
  {
    inviteId: ctext("invite_id").primaryKey(),
    owner: ctext("owner").notNull(),
    folderHash: ctext("folder_hash").notNull(),
    role: text("role").notNull(),
    pathPrefix: ctext("path_prefix"),
    mintedBy: ctext("minted_by").notNull(),
    expiresAt: int64("expires_at").notNull(),
    maxUses: integer("max_uses").notNull(),
    useCount: integer("use_count").notNull().default(0),
    revokedAt: int64("revoked_at"),
    sealedToken: text("sealed_token"),
    createdAt: int64("created_at").notNull(),
  },
  (t) => [index("drive_invites_by_drive").on(t.owner, t.folderHash, t.createdAt)],
);

/** Whole-drive members (see `drive_members` in `src/db/sqlite/schema.ts`). */
export const driveMembers = pgTable(
  "drive_members",
  {
    owner: ctext("owner").notNull(),
    folderHash: ctext("folder_hash").notNull(),
    member: ctext("member").notNull(),
    role: text("role").notNull(),
    grantBlob: text("grant_blob").notNull(),
    inviteId: ctext("invite_id"),
    createdAt: int64("created_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.owner, t.folderHash, t.member] }),
    index("drive_members_by_member").on(t.member),
  ],
);

/** Folder grants (see `drive_folder_grants` in `src/db/sqlite/schema.ts`). */
export const driveFolderGrants = pgTable(
  "drive_folder_grants",
  {
    owner: ctext("owner").notNull(),
    folderHash: ctext("folder_hash").notNull(),
    member: ctext("member").notNull(),
    pathPrefix: ctext("path_prefix").notNull(),
    role: text("role").notNull(),
    grantBlob: text("grant_blob").notNull(),
    inviteId: ctext("invite_id"),
    createdAt: int64("created_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.owner, t.folderHash, t.member, t.pathPrefix] }),
    index("drive_folder_grants_by_member").on(t.member),
  ],
);

/** Published invite public keys (see `account_invite_keys` in `src/db/sqlite/schema.ts`). */
export const accountInviteKeys = pgTable("account_invite_keys", {
  account: ctext("account").primaryKey(),
  pubkey: text("pubkey").notNull(),
  updatedAt: int64("updated_at").notNull(),
});

/** Frozen accounts (see `account_freezes` in `src/db/sqlite/schema.ts`). */
export const accountFreezes = pgTable("account_freezes", {
  account: ctext("account").primaryKey(),
  frozenUntil: int64("frozen_until"),
  createdAt: int64("created_at").notNull(),
});
/** File shares (see `shares` in `src/db/sqlite/schema.ts`). */
export const shares = pgTable(
  "shares",
  {
    shareId: text("share_id").primaryKey(),
    token: text("token").notNull(),
    owner: ctext("owner").notNull(),
    state: text("state", { enum: ["uploading", "complete"] }).notNull(),
    filename: text("filename").notNull(),
    filenameCt: text("filename_ct").notNull(),
    filenameNonce: text("filename_nonce").notNull(),
    mimeType: text("mime_type").notNull(),
    plaintextSize: int64("plaintext_size").notNull(),
    ciphertextSize: int64("ciphertext_size").notNull(),
    totalChunks: integer("total_chunks").notNull(),
    blobKey: text("blob_key"),
    createdAt: int64("created_at").notNull(),
    updatedAt: int64("updated_at").notNull(),
    expiresAt: int64("expires_at"),
    revokedAt: int64("revoked_at"),
    ownerWrap: text("owner_wrap"),
    maxDownloads: integer("max_downloads"),
    downloadCount: integer("download_count").notNull().default(0),
    accessLog: boolean("access_log").notNull().default(false),
  },
  (t) => [uniqueIndex("shares_token").on(t.token), index("shares_owner").on(t.owner, t.state)],
);

/** A file share's access log (see `share_accesses` in `src/db/sqlite/schema.ts`). */
export const shareAccesses = pgTable(
  "share_accesses",
  {
    accessId: text("access_id").primaryKey(),
    shareId: text("share_id").notNull(),
    at: int64("at").notNull(),
    bytesSent: int64("bytes_sent").notNull(),
    completed: boolean("completed").notNull(),
    clientAddress: text("client_address"),
  },
  (t) => [index("share_accesses_share").on(t.shareId, t.at)],
);

/** Chunks of uploading file shares (see `share_chunks` in `src/db/sqlite/schema.ts`). */
export const shareChunks = pgTable(
  "share_chunks",
  {
    shareId: text("share_id").notNull(),
    chunkIndex: integer("chunk_index").notNull(),
    gen: text("gen").notNull(),
    size: int64("size").notNull(),
    receivedAt: int64("received_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.shareId, t.chunkIndex] })],
);

/** Folder shares (see `folder_shares` in `src/db/sqlite/schema.ts`). */
export const folderShares = pgTable(
  "folder_shares",
  {
    tokenHash: text("token_hash").primaryKey(),
    owner: ctext("owner").notNull(),
    folderHash: ctext("folder_hash").notNull(),
    pathPrefix: ctext("path_prefix").notNull(),
    displayName: text("display_name").notNull(),
    mintedBy: ctext("minted_by").notNull(),
    createdAt: int64("created_at").notNull(),
    expiresAt: int64("expires_at"),
    revokedAt: int64("revoked_at"),
    ownerWrap: text("owner_wrap"),
  },
  (t) => [index("folder_shares_owner").on(t.owner), index("folder_shares_minter").on(t.mintedBy)],
);
