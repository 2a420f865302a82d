/**
 * @module server/db/sqlite/store
 * The `MetadataStore` on SQLite (bun:sqlite through Drizzle).
 *
 * bun:sqlite runs every statement synchronously, while a transaction's function is async (it
 * awaits the repositories between statements). So that no other request's statement ever lands
 * inside an open transaction, every store on the same database file in this process shares one
 * async gate: `transaction` takes it, runs `BEGIN IMMEDIATE`, awaits `fn`, then `COMMIT` (or
 * `ROLLBACK`) and gives it back; a repository call outside a transaction runs at once when the
 * gate is free and waits for it otherwise. Sharing the gate per file also means two stores on one
 * file in one process (two "nodes" in a test) never make SQLite's busy handler block the event
 * loop while the other holds the write lock. A transaction's function that calls the store itself
 * instead of its `tx` repositories gets `NestedUseError` (it would otherwise wait for itself).
 *
 * Reads do not wait for a transaction: while the gate is held, a repository call runs first on a
 * second, read-only connection to the file, which (WAL) sees the last committed state; only a
 * call that turns out to write (`SQLITE_READONLY` from that connection, nothing changed) waits
 * for the gate. So a long batch (1000 renames in one transaction) holds back other writes, as it
 * must to stay all-or-nothing, but not `get_state`, listings or token look-ups
 * (docs/operator-guide.md#big-answers-and-batches).
 */
import type { Database } from "bun:sqlite";
import { AsyncLocalStorage } from "node:async_hooks";
import { realpathSync } from "node:fs";
import { causes } from "@esync/protocol/errors.ts";
import type { Logger } from "../../util/log.ts";
import { type Db, openDb, openReader } from "../client.ts";
import type { MetadataStore, Repositories, Transaction } from "../store.ts";
import { SqliteApiTokensRepository } from "./api-tokens.ts";
import { SqliteDeletionQueueRepository } from "./deletion-queue.ts";
import { SqliteDrivesRepository } from "./drives.ts";
import { SqliteFilesRepository } from "./files.ts";
import { SqliteFolderEntriesRepository } from "./folder-entries.ts";
import { SqliteFoldersRepository } from "./folders.ts";
import { SqliteOpsRepository } from "./ops.ts";
import { SqliteQuotaRepository } from "./quota.ts";
import { foldPendingSearchCounters, foldSearchCountersIfDue } from "./search/counters.ts";
import { SqliteSessionsRepository } from "./sessions.ts";
import { SqliteSharesRepository } from "./shares.ts";
import { SqliteSummariesRepository } from "./summaries.ts";
import { SqliteVersionsRepository } from "./versions.ts";

/** A first-come, first-served async mutex. */
class Gate {
  /** The token of the transaction whose function (and what it awaits) is running. */
  readonly context = new AsyncLocalStorage<object>();
  /** The token of the transaction that holds the gate now, if one does. */
  owner: object | null = null;
  private held = false;

  /** True when called from the function of the transaction holding the gate. */
  get calledByOwner(): boolean {
    return this.owner !== null && this.context.getStore() === this.owner;
  }
  private readonly waiting: (() => void)[] = [];

  /** True when nobody holds the gate. */
  get free(): boolean {
    return !this.held;
  }

  /** Resolves once the caller holds the gate. */
  acquire(): Promise<void> {
    if (!this.held) {
      this.held = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Hands the gate to the next waiter, or frees it. */
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.held = false;
  }

  /** Runs `fn` holding the gate. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await fn();
    } finally {
      this.release();
    }
  }
}

/** The gate of each database file opened in this process (by real path). */
const gates = new Map<string, Gate>();

/** The process-wide gate of the database at `path` (a fresh one for `:memory:`). */
function gateFor(path: string): Gate {
  if (path === ":memory:" || path === "") return new Gate();
  const key = realpathSync(path);
  let gate = gates.get(key);
  if (!gate) {
    gate = new Gate();
    gates.set(key, gate);
  }
  return gate;
}

/** Every repository on one Drizzle handle. */
function repositoriesOn(db: Db): Repositories {
  return {
    sessions: new SqliteSessionsRepository(db),
    files: new SqliteFilesRepository(db),
    folders: new SqliteFoldersRepository(db),
    folderEntries: new SqliteFolderEntriesRepository(db),
    quota: new SqliteQuotaRepository(db),
    apiTokens: new SqliteApiTokensRepository(db),
    deletionQueue: new SqliteDeletionQueueRepository(db),
    summaries: new SqliteSummariesRepository(db),
    drives: new SqliteDrivesRepository(db),
    shares: new SqliteSharesRepository(db),
    ops: new SqliteOpsRepository(db),
    versions: new SqliteVersionsRepository(db),
  };
}

/** True for the error of a write attempted on the read-only connection. */
function isReadOnlyRefusal(e: unknown): boolean {
  for (const x of causes(e)) if (x.code === "SQLITE_READONLY") return true;
  return false;
}

/**
 * `repo` with every method gated: it runs at once when the gate is free (the statements are
 * synchronous, so they complete before anyone else runs); while a transaction holds the gate it
 * runs on `reader` (the same repository on the read-only connection) when there is one, and only
 * when that refuses a write, once the gate is free.
 */
function gated<T extends object>(repo: T, gate: Gate, reader?: T): T {
  const out: Record<string, unknown> = {};
  const proto = Object.getPrototypeOf(repo) as Record<string, unknown>;
  for (const name of Object.getOwnPropertyNames(proto)) {
    const method = proto[name];
    if (name === "constructor" || typeof method !== "function") continue;
    const call = (method as (...a: unknown[]) => Promise<unknown>).bind(repo);
    const read = reader && (method as (...a: unknown[]) => Promise<unknown>).bind(reader);
    out[name] = async (...args: unknown[]) => {
      if (gate.free) return call(...args);
      if (gate.calledByOwner) throw new NestedUseError(`repos.${name}`);
      if (read) {
        try {
          return await read(...args);
        } catch (e) {
          if (!isReadOnlyRefusal(e)) throw e;
        }
      }
      return gate.run(() => call(...args));
    };
  }
  return out as T;
}

/**
 * A transaction's function used the store itself (`store.repos`, `store.transaction`) instead of
 * its `tx` repositories: on SQLite that would wait for the transaction forever; on PostgreSQL it
 * would run outside the transaction.
 */
export class NestedUseError extends Error {
  constructor(what: string) {
    super(`${what} called inside a transaction of the same database; use the transaction's repositories`);
    this.name = "NestedUseError";
  }
}

/** The metadata store on one SQLite database. */
export class SqliteMetadataStore implements MetadataStore {
  readonly dialect = "sqlite" as const;
  readonly repos: Repositories;
  private readonly tx: Transaction;
  private readonly gate: Gate;
  private readonly sqlite: Database;
  /** The read-only connection (none for `:memory:`, which no second connection can see). */
  private readonly reader: Database | null;
  private readonly statements;
  private savepoints = 0;
  private closed = false;

  /**
   * @param db an open, migrated database (`openDb`).
   * @param path the database file (`:memory:` for a private in-memory database): stores on the
   *   same file in this process share one gate.
   */
  constructor(
    /** The Drizzle handle, for the SQLite search index and for tests that inspect rows directly. */
    readonly db: Db,
    path: string,
  ) {
    this.sqlite = db.$client;
    this.gate = gateFor(path);
    const raw = repositoriesOn(db);
    const readerDb = path === ":memory:" || path === "" ? null : openReader(path);
    this.reader = readerDb?.$client ?? null;
    const readers = readerDb ? repositoriesOn(readerDb) : null;
    this.repos = Object.fromEntries(
      Object.entries(raw).map(([k, r]) => [
        k,
        gated(r as object, this.gate, readers?.[k as keyof Repositories] as object | undefined),
      ]),
    ) as unknown as Repositories;
    this.tx = { ...raw, savepoint: (fn) => this.savepoint(raw, fn) };
    this.statements = {
      begin: this.sqlite.prepare("BEGIN IMMEDIATE"),
      commit: this.sqlite.prepare("COMMIT"),
      rollback: this.sqlite.prepare("ROLLBACK"),
    };
  }

  /**
   * Runs the synchronous statements of `fn` outside any transaction of this store: at once when
   * the gate is free, else once it is (as every repository method runs). The search index reads
   * through it.
   */
  read<T>(fn: () => T): Promise<T> {
    return this.gate.free ? Promise.resolve(fn()) : this.gate.run(async () => fn());
  }

  async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    if (this.gate.calledByOwner) throw new NestedUseError("transaction");
    await this.gate.acquire();
    const token = {};
    this.gate.owner = token;
    try {
      this.statements.begin.run();
      try {
        const result = await this.gate.context.run(token, () => fn(this.tx));
        foldSearchCountersIfDue(this.sqlite);
        this.statements.commit.run();
        return result;
      } catch (e) {
        if (this.sqlite.inTransaction) this.statements.rollback.run();
        throw e;
      }
    } finally {
      this.gate.owner = null;
      this.gate.release();
    }
  }

  /** A SAVEPOINT inside the running transaction (`Transaction.savepoint`). */
  private async savepoint<T>(repos: Repositories, fn: (tx: Repositories) => Promise<T>): Promise<T> {
    const name = `sp${++this.savepoints}`;
    // `query` keeps each statement prepared (bun:sqlite caches it by its text): a group commit
    // runs these once per file.
    this.sqlite.query(`SAVEPOINT ${name}`).run();
    try {
      const result = await fn(repos);
      this.sqlite.query(`RELEASE ${name}`).run();
      return result;
    } catch (e) {
      this.sqlite.query(`ROLLBACK TO ${name}`).run();
      this.sqlite.query(`RELEASE ${name}`).run();
      throw e;
    } finally {
      this.savepoints--;
    }
  }

  async ping(): Promise<void> {
    this.sqlite.query("SELECT 1").get();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.reader?.close();
    if (this.gate.free) this.sqlite.close();
    else await this.gate.run(async () => this.sqlite.close());
  }
}

/**
 * Opens (creating and migrating if needed) the SQLite database at `path` (`:memory:` for tests)
 * as a `MetadataStore`, and folds the search counters' log a previous process left
 * (`src/db/sqlite/search/counters.ts`; a failed fold is left to the search index's readers).
 * @throws as `openDb`.
 */
export function openSqliteStore(path: string, log?: Logger): SqliteMetadataStore {
  const db = openDb(path, log);
  try {
    const folded = foldPendingSearchCounters(db.$client);
    if (folded > 0) log?.info("search.counters_folded", { rows: folded });
  } catch (e) {
    log?.warn("search.counters_fold_failed", { error: String((e as Error)?.message ?? e) });
  }
  return new SqliteMetadataStore(db, path);
}

/** The SQLite handle of `store` when it is the SQLite store, else null (SQLite-only tools). */
export function sqliteDb(store: MetadataStore): Db | null {
  return store instanceof SqliteMetadataStore ? store.db : null;
}
