/**
 * @module server/shares/shares.repository
 * The contract of the queries on file shares (`shares`, `share_chunks`) and
 * folder shares (`folder_shares`); the model is in docs/sharing.md. Implementations:
 * `src/db/sqlite/shares.ts`, `src/db/postgres/shares.ts`. Times are Unix seconds, sizes bytes.
 */

/** A `shares` row. */
export type ShareRow = {
  owner: string;
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
  updatedAt: number;
  ciphertextSize: number;
  state: "uploading" | "complete";
  shareId: string;
  token: string;
  filename: string;
  filenameCt: string;
  filenameNonce: string;
  mimeType: string;
  plaintextSize: number;
  totalChunks: number;
  blobKey: string | null;
  ownerWrap: string | null;
  /** Complete downloads the link allows (docs/sharing.md, "Download limits"); null = no limit. */
  maxDownloads: number | null;
  /** Complete downloads so far. */
  downloadCount: number;
  /** Whether blob answers are written to the access log. */
  accessLog: boolean;
};
/** A `share_chunks` row. */
export type ShareChunkRow = {
  chunkIndex: number;
  gen: string;
  size: number;
  receivedAt: number;
  shareId: string;
};
/** A `share_accesses` row: one blob answer of a file share (docs/sharing.md, "Access log"). */
export type ShareAccessRow = {
  accessId: string;
  shareId: string;
  at: number;
  bytesSent: number;
  completed: boolean;
  clientAddress: string | null;
};
/** A `folder_shares` row. */
export type FolderShareRow = {
  owner: string;
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
  folderHash: string;
  pathPrefix: string;
  mintedBy: string;
  ownerWrap: string | null;
  tokenHash: string;
  displayName: string;
};

/** Columns of a file share that change after its mint. */
export type ShareUpdate = Partial<
  Pick<ShareRow, "state" | "blobKey" | "updatedAt" | "expiresAt" | "revokedAt" | "ownerWrap">
>;

/** Columns of a folder share that change after its mint. */
export type FolderShareUpdate = Partial<Pick<FolderShareRow, "expiresAt" | "revokedAt">>;

/** Queries on file and folder shares. Every method returns a Promise. */
export interface SharesRepository {
  /** Inserts a new file share. */
  insert(row: ShareRow): Promise<void>;

  /** The file share whose link token is `token`, or undefined. */
  byToken(token: string): Promise<ShareRow | undefined>;

  /**
   * The file share `shareId`, locked until the transaction ends on PostgreSQL (`FOR UPDATE`);
   * SQLite's single writer serialises the transaction anyway.
   */
  getForUpdate(shareId: string): Promise<ShareRow | undefined>;

  /** `owner`'s complete file shares that are neither revoked nor expired at `now`, newest first. */
  listActive(owner: string, now: number): Promise<ShareRow[]>;

  /** Sets columns of the file share `shareId`. */
  update(shareId: string, set: ShareUpdate): Promise<void>;

  /** Stores `wrap` on `owner`'s file share `token`; false when there is no such share of `owner`. */
  setOwnerWrap(owner: string, token: string, wrap: string): Promise<boolean>;

  /** Chunk `index` of the share, or undefined. */
  chunk(shareId: string, index: number): Promise<ShareChunkRow | undefined>;

  /** Every received chunk of the share, by index. */
  chunks(shareId: string): Promise<ShareChunkRow[]>;

  /** Inserts or replaces the chunk row at `(share_id, chunk_index)`. */
  putChunk(row: ShareChunkRow): Promise<void>;

  /** Deletes every chunk row of the share. */
  removeChunks(shareId: string): Promise<void>;

  /** Deletes the file share, its chunk rows and its access log. */
  remove(shareId: string): Promise<void>;

  /**
   * Counts one complete download of the share in one statement: adds 1 to `download_count` unless
   * `max_downloads` is set and already reached. Parallel callers therefore never exceed the limit.
   * @returns true when the download was counted, false when the limit was reached (or no row).
   */
  claimDownload(shareId: string): Promise<boolean>;

  /** Inserts one access-log row. */
  insertAccess(row: ShareAccessRow): Promise<void>;

  /** The share's access-log rows, newest first, at most `limit`. */
  accesses(shareId: string, limit: number): Promise<ShareAccessRow[]>;

  /**
   * Up to `limit` file shares the reaper collects at `now`: revoked ones, expired ones, and
   * uploads with no activity since `idleBefore`.
   */
  reapable(now: number, idleBefore: number, limit: number): Promise<ShareRow[]>;

  /** Inserts a new folder share. */
  insertFolderShare(row: FolderShareRow): Promise<void>;

  /** The folder share whose token hashes to `tokenHash`, or undefined. */
  folderShare(tokenHash: string): Promise<FolderShareRow | undefined>;

  /** Folder shares `caller` owns or minted (dead ones too, until reaped), newest first. */
  folderSharesOf(caller: string): Promise<FolderShareRow[]>;

  /** Sets columns of one folder share. */
  updateFolderShare(tokenHash: string, set: FolderShareUpdate): Promise<void>;

  /** Stores `wrap` on the folder share `tokenHash` minted by `mintedBy`; false when there is none. */
  setFolderOwnerWrap(mintedBy: string, tokenHash: string, wrap: string): Promise<boolean>;

  /** Deletes the folder shares revoked or expired at `now`; returns how many. */
  reapFolderShares(now: number): Promise<number>;

  /** The id of every file share row (whose objects are therefore referenced), for fsck. */
  ids(): Promise<string[]>;
}
