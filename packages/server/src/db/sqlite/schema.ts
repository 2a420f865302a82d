/**
 * @module server/db/sqlite/schema
 * Drizzle schema of the metadata database (SQLite). Times are Unix seconds, sizes bytes.
 * Byte arrays (`path_hash`, `salted_hash`, `revision_id`, `encrypted_path`) are BLOBs.
 * Migrations are generated from this file into `drizzle/sqlite/` by `bun run db:generate`.
 */
import { sql } from "drizzle-orm";
import { blob, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

const bytes = (name: string) => blob(name, { mode: "buffer" });

/**
 * One row per (owner, folder_hash) that is registered or holds files (docs/protocol.md#folders).
 * `label` is null while the folder is unregistered (files uploaded to an unknown hash);
 * `file_count`/`total_bytes` (plaintext) are kept in the same transaction as file writes.
 */
export const folders = sqliteTable(
  "folders",
  {
    owner: text("owner").notNull(),
    folderHash: text("folder_hash").notNull(),
    /** Null = not registered. */
    label: text("label"),
    deviceName: text("device_name"),
    /** Registration time; null while unregistered. */
    createdAt: integer("created_at"),
    /** Last time a file in the folder changed (or the registration time). */
    updatedAt: integer("updated_at").notNull(),
    fileCount: integer("file_count").notNull().default(0),
    totalBytes: integer("total_bytes").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.owner, t.folderHash] })],
);

/**
 * One row per live file: the RemoteFileEntry fields (docs/protocol.md#file-entries) plus where its ciphertext lives.
 * The ciphertext is the blob `blob_id`, stored as `chunk_count` chunk objects of `chunk_size`
 * bytes (last one shorter); their object keys are `chunkKey(blob_id, i, chunk_gens[i])`
 * (src/storage/layout.ts).
 */
export const files = sqliteTable(
  "files",
  {
    owner: text("owner").notNull(),
    folderHash: text("folder_hash").notNull(),
    pathHash: bytes("path_hash").notNull(),
    saltedHash: bytes("salted_hash").notNull(),
    /** Plaintext size in bytes. */
    sizeBytes: integer("size_bytes").notNull(),
    revisionSeq: integer("revision_seq").notNull(),
    revisionId: bytes("revision_id").notNull(),
    encryptedPath: bytes("encrypted_path").notNull(),
    fileName: text("file_name"),
    relativePath: text("relative_path"),
    /** Lower-cased `file_name ?? relative_path` (search key for `q`); null when both are null. */
    searchName: text("search_name"),
    /** Lower-cased extension of the search name including the dot (`.png`), or null. */
    ext: text("ext"),
    storeHash: text("store_hash"),
    /** JSON array of strings, or null. */
    chunkHashes: text("chunk_hashes"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    /** Client-reported Unix seconds from the manifest. */
    clientTimestamp: integer("client_timestamp").notNull(),
    source: text("source"),
    /** Opaque client-encrypted attributes from the manifest (at most 4 KiB), returned unchanged; null when absent. */
    attributes: bytes("attributes"),
    uploadId: text("upload_id").notNull(),
    ciphertextHash: text("ciphertext_hash").notNull(),
    ciphertextSize: integer("ciphertext_size").notNull(),
    blobId: text("blob_id").notNull(),
    chunkSize: integer("chunk_size").notNull(),
    chunkCount: integer("chunk_count").notNull(),
    /** JSON array of chunk object generations, one per chunk index. */
    chunkGens: text("chunk_gens").notNull(),
    /**
     * The account that wrote the current revision (docs/protocol.md#drive-members, #api-profiles); null on rows
     * written before attribution. A rename keeps it.
     */
    uploadedBy: text("uploaded_by"),
  },
  (t) => [
    // Search and browse indexes live on the compact `search_entries` table that triggers keep in
    // step with this one (drizzle/sqlite/0002_search_index.sql, src/db/sqlite/search/repository.ts).
    primaryKey({ columns: [t.owner, t.folderHash, t.pathHash] }),
    // A folder share's blob route finds a file by its plaintext path (docs/sharing.md).
    index("files_by_relative_path").on(t.owner, t.folderHash, t.relativePath),
    // A kept version's blob is deleted only when no live row uses it (docs/versions.md).
    index("files_by_blob").on(t.blobId),
  ],
);

/**
 * Kept versions (docs/versions.md): a revision that a write replaced (`reason` `replaced`) or a
 * delete removed (`deleted`), with every column of its `files` row, kept until `expires_at`
 * (Unix seconds) while `ESYNC_VERSION_RETENTION_DAYS` is above 0. Their plaintext bytes count
 * in the owner's usage; the sweeper removes expired rows and queues their blobs for deletion
 * when nothing else references them.
 */
export const fileVersions = sqliteTable(
  "file_versions",
  {
    versionId: integer("version_id").primaryKey({ autoIncrement: true }),
    owner: text("owner").notNull(),
    folderHash: text("folder_hash").notNull(),
    pathHash: bytes("path_hash").notNull(),
    saltedHash: bytes("salted_hash").notNull(),
    sizeBytes: integer("size_bytes").notNull(),
    revisionSeq: integer("revision_seq").notNull(),
    revisionId: bytes("revision_id").notNull(),
    encryptedPath: bytes("encrypted_path").notNull(),
    fileName: text("file_name"),
    relativePath: text("relative_path"),
    storeHash: text("store_hash"),
    chunkHashes: text("chunk_hashes"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    clientTimestamp: integer("client_timestamp").notNull(),
    source: text("source"),
    attributes: bytes("attributes"),
    ciphertextHash: text("ciphertext_hash").notNull(),
    ciphertextSize: integer("ciphertext_size").notNull(),
    blobId: text("blob_id").notNull(),
    chunkSize: integer("chunk_size").notNull(),
    chunkCount: integer("chunk_count").notNull(),
    chunkGens: text("chunk_gens").notNull(),
    uploadedBy: text("uploaded_by"),
    /** `replaced` (a newer revision took its place) or `deleted` (the file was deleted). */
    reason: text("reason", { enum: ["replaced", "deleted"] }).notNull(),
    /** When it stopped being the current revision, Unix seconds. */
    keptAt: integer("kept_at").notNull(),
    /** When the sweeper removes it, Unix seconds. */
    expiresAt: integer("expires_at").notNull(),
  },
  (t) => [
    index("file_versions_by_file").on(t.owner, t.folderHash, t.pathHash, t.versionId),
    index("file_versions_deleted").on(t.owner, t.folderHash, t.versionId).where(sql`${t.reason} = 'deleted'`),
    index("file_versions_expires").on(t.expiresAt),
    index("file_versions_by_blob").on(t.blobId),
  ],
);

/** Upload sessions (docs/protocol.md#upload-sessions). `state` is `receiving`, `finalizing` (internal) or `finalized`. */
export const uploadSessions = sqliteTable(
  "upload_sessions",
  {
    sessionId: text("session_id").primaryKey(),
    owner: text("owner").notNull(),
    folderHash: text("folder_hash").notNull(),
    pathHash: bytes("path_hash").notNull(),
    /** The manifest as received (JSON text). */
    manifest: text("manifest").notNull(),
    ciphertextHash: text("ciphertext_hash").notNull(),
    ciphertextSize: integer("ciphertext_size").notNull(),
    chunkSize: integer("chunk_size").notNull(),
    chunkCount: integer("chunk_count").notNull(),
    blobId: text("blob_id").notNull(),
    state: text("state", { enum: ["receiving", "finalizing", "finalized"] }).notNull(),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    /**
     * While `finalizing`: Unix second the finalizing node's lease runs out (it renews it while it
     * hashes); null in every other state. Any node's sweeper returns a session whose lease ran out
     * to `receiving`. The value also fences the finalize that set it: its end transition requires it.
     */
    finalizingUntil: integer("finalizing_until"),
    /**
     * While `finalizing`: the process holding the lease (`src/sessions/lease-holder.ts`), so that
     * a lease of a provably dead process is taken over at once; null otherwise, or when the
     * process could not name itself (its lease then ends by expiry only).
     */
    finalizingHolder: text("finalizing_holder"),
    /**
     * The S3 multipart upload whose parts are this session's chunks (docs/design.md#storage-layout):
     * its object is the one-object blob `o<blob_id>`. Null for a session whose chunks are objects
     * of their own (disk, small chunks, or after a finalize that consumed the upload failed).
     */
    uploadId: text("upload_id"),
    /** UploadResult JSON once finalized. */
    result: text("result"),
  },
  (t) => [index("sessions_owner").on(t.owner, t.state), index("sessions_expires").on(t.expiresAt)],
);

/** Chunks received by a session: which object generation holds index `chunk_index`. */
export const sessionChunks = sqliteTable(
  "session_chunks",
  {
    sessionId: text("session_id").notNull(),
    chunkIndex: integer("chunk_index").notNull(),
    gen: text("gen").notNull(),
    size: integer("size").notNull(),
    receivedAt: integer("received_at").notNull(),
    /** ETag of the chunk's part when the session has a multipart upload; null otherwise. */
    etag: text("etag"),
  },
  (t) => [primaryKey({ columns: [t.sessionId, t.chunkIndex] })],
);

/**
 * Persisted deletion queue: object keys or key prefixes (ending in `/`) whose objects the
 * background worker deletes. Rows are inserted in the same transaction that stops referencing them.
 */
export const blobDeletions = sqliteTable(
  "blob_deletions",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** An object key, or a prefix ending in `/` meaning every object under it. */
    target: text("target").notNull(),
    /** Do not process before this Unix second. */
    notBefore: integer("not_before").notNull(),
    attempts: integer("attempts").notNull().default(0),
    lastError: text("last_error"),
    /**
     * Unix second until which a sweeper that claimed the row is deleting its objects (no other
     * sweeper claims it before then); null when unclaimed.
     */
    leasedUntil: integer("leased_until"),
    /**
     * The process that reserved this write intent (`LeaseHolders.self` string, see
     * src/sessions/lease-holder.ts), so that the intent falls due at once when that process is
     * provably dead; null for deletions, released intents, and where the holder is unknown.
     */
    holder: text("holder"),
  },
  (t) => [
    index("blob_deletions_due").on(t.notBefore),
    index("blob_deletions_holder").on(t.holder).where(sql`${t.holder} IS NOT NULL`),
  ],
);

/** Issued API tokens (docs/protocol.md#api-tokens), stored only as SHA-256 hex. */
export const apiTokens = sqliteTable(
  "api_tokens",
  {
    id: text("id").primaryKey(),
    tokenSha256: text("token_sha256").notNull(),
    owner: text("owner").notNull(),
    label: text("label"),
    createdAt: integer("created_at").notNull(),
    /** Null = never expires. */
    expiresAt: integer("expires_at"),
    revokedAt: integer("revoked_at"),
  },
  (t) => [uniqueIndex("api_tokens_sha").on(t.tokenSha256), index("api_tokens_owner").on(t.owner)],
);

/**
 * Explicit directories of a folder (docs/protocol.md#folder-entries): one row per registered directory path
 * (folder-relative, NFC, no leading or trailing `/`). Independent of file rows; `/browse` lists
 * them as empty sub-folders.
 */
export const folderEntries = sqliteTable(
  "folder_entries",
  {
    owner: text("owner").notNull(),
    folderHash: text("folder_hash").notNull(),
    relativePath: text("relative_path").notNull(),
    createdAt: integer("created_at").notNull(),
    /**
     * Opaque client-encrypted attributes of the directory (at most 512 bytes), returned unchanged;
     * null when none were sent (docs/protocol.md#folder-entry-attributes).
     */
    attributes: bytes("attributes"),
  },
  (t) => [primaryKey({ columns: [t.owner, t.folderHash, t.relativePath] })],
);

/**
 * Per-account totals of live files (plaintext bytes), kept exact by triggers on `files` in the
 * transaction of every write, replace, rename and delete (drizzle/sqlite/0010): the quota's usage and
 * `/get_user_summary` read one row instead of scanning.
 */
export const accountUsage = sqliteTable("account_usage", {
  owner: text("owner").primaryKey(),
  fileCount: integer("file_count").notNull().default(0),
  totalBytes: integer("total_bytes").notNull().default(0),
  /** First file write of the account, Unix seconds. */
  createdAt: integer("created_at").notNull(),
  /** Last change to the account's files, Unix seconds. */
  updatedAt: integer("updated_at").notNull(),
});

/** Per-account storage allowances (plaintext bytes) that override `ESYNC_DEFAULT_QUOTA_BYTES`. */
export const quotaOverrides = sqliteTable("quota_overrides", {
  owner: text("owner").primaryKey(),
  /** Allowance in plaintext bytes; null = unlimited. */
  quotaBytes: integer("quota_bytes"),
  updatedAt: integer("updated_at").notNull(),
});

/**
 * Per-folder counts and plaintext bytes of live files by summary bucket (docs/protocol.md#summaries), kept
 * exact by triggers on `files` (drizzle/sqlite/0011): `kind` `type` with the file_type category of the
 * file name's extension (`other` without a file name or a listed extension), `kind` `source` with
 * the manifest `source` (`desktop`, `console`, `mobile`, else `other`). Rows that drop to 0 stay.
 */
export const usageBuckets = sqliteTable(
  "usage_buckets",
  {
    owner: text("owner").notNull(),
    folderHash: text("folder_hash").notNull(),
    kind: text("kind", { enum: ["type", "source"] }).notNull(),
    bucket: text("bucket").notNull(),
    fileCount: integer("file_count").notNull(),
    totalBytes: integer("total_bytes").notNull(),
  },
  (t) => [primaryKey({ columns: [t.owner, t.folderHash, t.kind, t.bucket] })],
);

/**
 * Shared-drive invites (docs/drives.md): keyed by `invite_id`, the BLAKE3 hex of the invite
 * token (the token itself is never stored). `path_prefix` is set on a folder invite;
 * `revoked_at` null = not revoked; `sealed_token` is written once by the minter.
 */
export const driveInvites = sqliteTable(
  "drive_invites",
  {
    inviteId: text("invite_id").primaryKey(),
    owner: text("owner").notNull(),
    folderHash: text("folder_hash").notNull(),
    role: text("role").notNull(),
    pathPrefix: text("path_prefix"),
    mintedBy: text("minted_by").notNull(),
    expiresAt: integer("expires_at").notNull(),
    maxUses: integer("max_uses").notNull(),
    useCount: integer("use_count").notNull().default(0),
    revokedAt: integer("revoked_at"),
    sealedToken: text("sealed_token"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("drive_invites_by_drive").on(t.owner, t.folderHash, t.createdAt)],
);

/**
 * Whole-drive members (docs/drives.md): one row per (owner, folder_hash, member) with the role
 * (`reader`, `writer`, `manager`), the member's opaque sealed grant and the invite that admitted it.
 */
export const driveMembers = sqliteTable(
  "drive_members",
  {
    owner: text("owner").notNull(),
    folderHash: text("folder_hash").notNull(),
    member: text("member").notNull(),
    role: text("role").notNull(),
    grantBlob: text("grant_blob").notNull(),
    inviteId: text("invite_id"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.owner, t.folderHash, t.member] }),
    index("drive_members_by_member").on(t.member),
  ],
);

/** Folder grants (docs/drives.md): a member's access to one folder of a drive and what is under it. */
export const driveFolderGrants = sqliteTable(
  "drive_folder_grants",
  {
    owner: text("owner").notNull(),
    folderHash: text("folder_hash").notNull(),
    member: text("member").notNull(),
    pathPrefix: text("path_prefix").notNull(),
    role: text("role").notNull(),
    grantBlob: text("grant_blob").notNull(),
    inviteId: text("invite_id"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.owner, t.folderHash, t.member, t.pathPrefix] }),
    index("drive_folder_grants_by_member").on(t.member),
  ],
);

/** Published X25519 invite public keys (base64 of 32 bytes), one per account. */
export const accountInviteKeys = sqliteTable("account_invite_keys", {
  account: text("account").primaryKey(),
  pubkey: text("pubkey").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

/**
 * Frozen accounts (docs/drives.md): writes into any folder of a frozen owner are refused for
 * everyone; `frozen_until` (Unix seconds) is the end of a recorded grace window, or null.
 */
export const accountFreezes = sqliteTable("account_freezes", {
  account: text("account").primaryKey(),
  frozenUntil: integer("frozen_until"),
  createdAt: integer("created_at").notNull(),
});

/**
 * File shares (docs/sharing.md): an encrypted copy of one file under a key the server never sees.
 * `state` is `uploading` (chunks arriving) or `complete` (readable through the token). The blob's
 * objects live under `s/<share_id>/` (src/shares/share-layout.ts). Times are Unix seconds, sizes bytes.
 */
export const shares = sqliteTable(
  "shares",
  {
    shareId: text("share_id").primaryKey(),
    /** The link token, in plaintext: the owner's listing returns it. */
    token: text("token").notNull(),
    owner: text("owner").notNull(),
    state: text("state", { enum: ["uploading", "complete"] }).notNull(),
    /** Plaintext file name, shown to the owner only. */
    filename: text("filename").notNull(),
    /** Encrypted file name and its nonce, standard base64 as received. */
    filenameCt: text("filename_ct").notNull(),
    filenameNonce: text("filename_nonce").notNull(),
    mimeType: text("mime_type").notNull(),
    plaintextSize: integer("plaintext_size").notNull(),
    ciphertextSize: integer("ciphertext_size").notNull(),
    totalChunks: integer("total_chunks").notNull(),
    /** Object key of the whole blob once complete; null while uploading. */
    blobKey: text("blob_key"),
    createdAt: integer("created_at").notNull(),
    /** Last upload activity (init, a chunk, complete): idle uploads are reaped by it. */
    updatedAt: integer("updated_at").notNull(),
    /** Null = never expires. */
    expiresAt: integer("expires_at"),
    revokedAt: integer("revoked_at"),
    /** Standard base64 of the owner wrap, or null. */
    ownerWrap: text("owner_wrap"),
    /** Complete downloads the link allows (docs/sharing.md, "Download limits"); null = no limit. */
    maxDownloads: integer("max_downloads"),
    /** Complete downloads so far: only a blob answer whose every byte was handed over counts. */
    downloadCount: integer("download_count").notNull().default(0),
    /** Whether blob answers are written to `share_accesses` (always when `max_downloads` is set). */
    accessLog: integer("access_log", { mode: "boolean" }).notNull().default(false),
  },
  (t) => [uniqueIndex("shares_token").on(t.token), index("shares_owner").on(t.owner, t.state)],
);

/**
 * The owner's access log of a file share (docs/sharing.md, "Access log"): one row per blob
 * answer, written when its body ends. Rows go with their share (the reaper's `remove`).
 */
export const shareAccesses = sqliteTable(
  "share_accesses",
  {
    accessId: text("access_id").primaryKey(),
    shareId: text("share_id").notNull(),
    /** Unix seconds when the answer started. */
    at: integer("at").notNull(),
    /** Ciphertext bytes handed to the connection. */
    bytesSent: integer("bytes_sent").notNull(),
    /** True when the whole blob was sent (a counted download). */
    completed: integer("completed", { mode: "boolean" }).notNull(),
    /** The client address, only when `ESYNC_SHARE_LOG_ADDRESSES` is on; else null. */
    clientAddress: text("client_address"),
  },
  (t) => [index("share_accesses_share").on(t.shareId, t.at)],
);

/** Chunks received by an uploading file share: which object generation holds index `chunk_index`. */
export const shareChunks = sqliteTable(
  "share_chunks",
  {
    shareId: text("share_id").notNull(),
    chunkIndex: integer("chunk_index").notNull(),
    gen: text("gen").notNull(),
    size: integer("size").notNull(),
    receivedAt: integer("received_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.shareId, t.chunkIndex] })],
);

/**
 * Folder shares (docs/sharing.md): anonymous read access to one directory of a folder, live.
 * The token is stored only as its BLAKE3 hash (64 lowercase hex).
 */
export const folderShares = sqliteTable(
  "folder_shares",
  {
    tokenHash: text("token_hash").primaryKey(),
    owner: text("owner").notNull(),
    folderHash: text("folder_hash").notNull(),
    /** Directory shared, `""` = the whole folder (NFC, no leading or trailing `/`). */
    pathPrefix: text("path_prefix").notNull(),
    displayName: text("display_name").notNull(),
    mintedBy: text("minted_by").notNull(),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at"),
    revokedAt: integer("revoked_at"),
    ownerWrap: text("owner_wrap"),
  },
  (t) => [index("folder_shares_owner").on(t.owner), index("folder_shares_minter").on(t.mintedBy)],
);
