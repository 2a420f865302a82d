/**
 * @module server/db/postgres/store
 * The `MetadataStore` on PostgreSQL: the repositories of `src/db/postgres/` on the pool, and
 * transactions as Drizzle transactions at READ COMMITTED (docs/design.md#transactions-and-locks). Rules that read and then
 * write serialise through the repositories' locks (`sessions.lockOwner`, `getForUpdate`).
 *
 * A transaction that loses a race the database detects is run again from the start, up to
 * `TRANSACTION_ATTEMPTS` times: a deadlock (40P01), a serialization failure (40001), or a unique
 * violation (23505: a row another transaction committed after this one read its absence). The
 * new attempt reads the committed row and reaches the outcome SQLite reaches by running the two
 * transactions one after the other (a conflict, a refusal), instead of a 500. Transactions hold
 * only database work (src/db/store.ts), so running one again repeats nothing else.
 */

import { causes, fail } from "@esync/protocol/errors.ts";
import { sql } from "drizzle-orm";
import type { Logger } from "../../util/log.ts";
import type { MetadataStore, Repositories, Transaction } from "../store.ts";
import { PgApiTokensRepository } from "./api-tokens.ts";
import { openPostgres, type PgDb, type PgOptions } from "./client.ts";
import type { PgConn } from "./conn.ts";
import { PgDeletionQueueRepository } from "./deletion-queue.ts";
import { PgDrivesRepository } from "./drives.ts";
import { PgFilesRepository } from "./files.ts";
import { PgFolderEntriesRepository } from "./folder-entries.ts";
import { PgFoldersRepository } from "./folders.ts";
import { PgOpsRepository } from "./ops.ts";
import { PgQuotaRepository } from "./quota.ts";
import { PgSessionsRepository } from "./sessions.ts";
import { PgSharesRepository } from "./shares.ts";
import { PgSummariesRepository } from "./summaries.ts";
import { PgVersionsRepository } from "./versions.ts";

/** Attempts of a transaction that keeps losing detected races (see the module comment). */
export const TRANSACTION_ATTEMPTS = 3;

/** SQLSTATEs after which a transaction is run again. */
const RETRYABLE = new Set(["40P01", "40001", "23505"]);

/**
 * The SQLSTATE of a PostgreSQL error as the driver reports it (Bun.SQL: `errno`), looking
 * through Drizzle's `DrizzleQueryError` (`cause`); undefined for other errors.
 */
export function sqlState(e: unknown): string | undefined {
  for (const x of causes(e))
    for (const v of [x.errno, x.code]) if (typeof v === "string" && /^[0-9A-Z]{5}$/.test(v)) return v;
  return undefined;
}

/** True for a unique violation (SQLSTATE 23505). */
export function isUniqueViolation(e: unknown): boolean {
  return sqlState(e) === "23505";
}

/** SQLSTATEs of text PostgreSQL cannot store (U+0000 in a text value). */
const UNSTORABLE_TEXT = new Set(["22021", "22P05"]);

/** True when `e` (or a cause) is PostgreSQL refusing a b-tree entry over its size limit. */
function isIndexRowTooLarge(e: unknown): boolean {
  if (sqlState(e) !== "54000") return false;
  for (const x of causes(e))
    if (typeof x.message === "string" && x.message.includes("index row size")) return true;
  return false;
}

/**
 * `e`, or the client error it stands for. Both come from the request, so they are the
 * client's 400 `invalid_manifest`, not a 500 database error that a client would retry forever:
 * - text with U+0000, which PostgreSQL cannot store (SQLite can): labels, device names,
 *   manifest fields;
 * - a file name or path too long for a b-tree entry (2,704 bytes with the owner, folder and
 *   path hash: about 2,500 bytes of directory plus file name in UTF-8), which SQLite has no
 *   limit for. docs/operator-guide.md#limits.
 */
function translated(e: unknown): unknown {
  const state = sqlState(e);
  if (state !== undefined && UNSTORABLE_TEXT.has(state))
    return fail("invalid_manifest", "text values must not contain the character U+0000");
  if (isIndexRowTooLarge(e))
    return fail(
      "invalid_manifest",
      "the file name or path is too long for this server's PostgreSQL indexes (at most about 2,500 bytes of directory plus file name in UTF-8)",
    );
  return e;
}

/** `repo` with every method's rejection passed through `translated`. */
function translating<R extends object>(repo: R): R {
  return new Proxy(repo, {
    get(target, key, receiver) {
      const v = Reflect.get(target, key, receiver);
      if (typeof v !== "function") return v;
      return async (...args: unknown[]) => {
        try {
          return await v.apply(target, args);
        } catch (e) {
          throw translated(e);
        }
      };
    },
  });
}

/** Every repository on `db` (the pool or one transaction). */
function reposOn(db: PgConn): Repositories {
  const repos = {
    sessions: new PgSessionsRepository(db),
    files: new PgFilesRepository(db),
    folders: new PgFoldersRepository(db),
    folderEntries: new PgFolderEntriesRepository(db),
    quota: new PgQuotaRepository(db),
    apiTokens: new PgApiTokensRepository(db),
    deletionQueue: new PgDeletionQueueRepository(db),
    summaries: new PgSummariesRepository(db),
    drives: new PgDrivesRepository(db),
    shares: new PgSharesRepository(db),
    ops: new PgOpsRepository(db),
    versions: new PgVersionsRepository(db),
  };
  return Object.fromEntries(
    Object.entries(repos).map(([k, r]) => [k, translating(r)]),
  ) as unknown as Repositories;
}

/** The repositories of transaction `tx`, and savepoints inside it. */
function transactionOn(tx: PgConn): Transaction {
  return {
    ...reposOn(tx),
    savepoint: (fn) => tx.transaction((sp) => fn(reposOn(sp))),
  };
}

/** The metadata store on PostgreSQL. */
export class PgMetadataStore implements MetadataStore {
  readonly dialect = "postgres" as const;
  readonly repos: Repositories;
  private readonly running = new Set<Promise<unknown>>();

  /** `db`: an open handle (`openPostgres`); the store owns it and closes it in `close`. */
  constructor(
    readonly db: PgDb,
    private readonly log?: Logger,
  ) {
    this.repos = reposOn(db);
  }

  async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const run = this.db.transaction((tx) => fn(transactionOn(tx)));
      this.running.add(run);
      try {
        return await run;
      } catch (e) {
        const state = sqlState(e);
        if (attempt >= TRANSACTION_ATTEMPTS || state === undefined || !RETRYABLE.has(state)) throw e;
        this.log?.debug("db.transaction_retry", { sqlstate: state, attempt });
      } finally {
        this.running.delete(run);
      }
    }
  }

  async ping(): Promise<void> {
    await this.db.execute(sql`SELECT 1`);
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.running]);
    await this.db.$client.close();
  }
}

/**
 * Connects to PostgreSQL at `url`, migrates (one node at a time, `openPostgres`) and returns the
 * store. @throws when the server cannot be reached or a migration fails.
 */
export async function openPgMetadataStore(
  url: string,
  log?: Logger,
  opts?: PgOptions,
): Promise<PgMetadataStore> {
  return new PgMetadataStore(await openPostgres(url, log, opts), log);
}

/** The PostgreSQL handle of `store` when it is the PostgreSQL store, else null (the PostgreSQL search index). */
export function pgDb(store: MetadataStore): PgDb | null {
  return store instanceof PgMetadataStore ? store.db : null;
}
