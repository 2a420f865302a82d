/**
 * @module server/db/store
 * The metadata store contract: every repository behind one object, and all-or-nothing
 * transactions over them. Services receive a `MetadataStore`, never a driver handle; the
 * implementations live in `src/db/sqlite/` and `src/db/postgres/`, and `openMetadataStore`
 * (`src/db/open.ts`) picks one from the configuration.
 *
 * Rules for callers:
 * - A transaction contains only database work: no blob I/O, no hashing, no network inside `fn`.
 * - Inside `fn`, use only the `tx` repositories, never `store.repos` or `store.transaction`
 *   (PostgreSQL would run them outside the transaction; SQLite refuses them with
 *   `NestedUseError`, since they would wait for the transaction forever).
 * - Rules that read and then write need serialisation across nodes: take
 *   `tx.sessions.lockOwner(owner)` or read with `getForUpdate` first (see each repository).
 */
import type { ApiTokensRepository } from "../auth/api-tokens.repository.ts";
import type { DrivesRepository } from "../drives/drives.repository.ts";
import type { FilesRepository } from "../files/files.repository.ts";
import type { FolderEntriesRepository } from "../folders/folder-entries.repository.ts";
import type { FoldersRepository } from "../folders/folders.repository.ts";
import type { OpsRepository } from "../ops/ops.repository.ts";
import type { QuotaRepository } from "../quota/quota.repository.ts";
import type { SessionsRepository } from "../sessions/sessions.repository.ts";
import type { SharesRepository } from "../shares/shares.repository.ts";
import type { SummariesRepository } from "../summaries/summaries.repository.ts";
import type { VersionsRepository } from "../versions/versions.repository.ts";
import type { DeletionQueueRepository } from "../workers/deletion-queue.repository.ts";

/** Every repository of the metadata store. */
export interface Repositories {
  sessions: SessionsRepository;
  files: FilesRepository;
  folders: FoldersRepository;
  folderEntries: FolderEntriesRepository;
  quota: QuotaRepository;
  apiTokens: ApiTokensRepository;
  deletionQueue: DeletionQueueRepository;
  summaries: SummariesRepository;
  /** Shared drives: invites, members, folder grants, invite keys, frozen accounts. */
  drives: DrivesRepository;
  /** File and folder shares. */
  shares: SharesRepository;
  /** The operator tools' queries and repairs (fsck, stats). */
  ops: OpsRepository;
  /** Kept versions of replaced and deleted files (docs/versions.md). */
  versions: VersionsRepository;
}

/** The repositories of an open transaction, and nested all-or-nothing steps inside it. */
export interface Transaction extends Repositories {
  /**
   * Runs `fn` as a nested step (a SAVEPOINT): when `fn` throws, only its own writes are undone
   * and the error propagates; the enclosing transaction stays usable (batch operations report a
   * failed entry and go on with the next).
   */
  savepoint<T>(fn: (tx: Repositories) => Promise<T>): Promise<T>;
}

/** Which database implements the store. */
export type Dialect = "sqlite" | "postgres";

/** The metadata database behind the repository contract. */
export interface MetadataStore {
  readonly dialect: Dialect;
  /** Repositories outside any transaction: each call is its own statement(s), committed at once. */
  readonly repos: Repositories;
  /**
   * Runs `fn` in one transaction: everything it wrote is committed when it resolves, nothing when
   * it throws (the error propagates). SQLite: one transaction at a time in the process,
   * `BEGIN IMMEDIATE`. PostgreSQL: READ COMMITTED, serialised where the repositories say so.
   */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
  /** Resolves when the database answers a trivial query (readiness). @throws its error otherwise. */
  ping(): Promise<void>;
  /** Waits for a running transaction, then closes the connection(s). */
  close(): Promise<void>;
}
