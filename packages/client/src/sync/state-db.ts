/**
 * @module client/sync/state-db
 * The sync state of one local directory: `DIR/.esync/state.sqlite` (bun:sqlite, WAL), kept
 * inside the directory so that it moves with it and two synced directories never share one.
 * `.esync/` is always excluded from sync. (`esync pull` into a directory that is not synced
 * keeps the same records under the configuration directory instead, so that a restore holds
 * only the restored files.)
 *
 * Per path it records the base of the three-way comparison: the version last seen identical
 * on both sides (kind, `salted_hash`, permission bits, the server's `revision_id` and
 * `revision_seq`) and the local fingerprint it had then (size, mtime, mode, inode), which also
 * lets a scan reuse the hash of an untouched file. It also records every directory seen (so
 * empty directories are known), each directory's modification time as last synced, and which
 * account, server and folder the directory syncs with;
 * opening it for another folder or account is refused.
 */
import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import type { EntryKind } from "./attributes.ts";
import type { DirTimeBase } from "./dir-times.ts";
import { STATE_DIR } from "./excludes.ts";
import type { Fingerprint } from "./local-tree.ts";

/** The synced version of one path: what both sides held after the last sync. */
export interface BaseEntry extends Fingerprint {
  rel: string;
  kind: EntryKind;
  /** `salted_hash`, 64 hex. */
  hash: string;
  /** Server `revision_id`, 64 hex. */
  revisionId: string;
  revisionSeq: number;
}

/** What the state database is bound to. */
export interface StateBinding {
  address: string;
  folderHash: string;
  /** The folder's label, recorded (not compared) so that a refusal can name it. */
  label?: string;
}

/** The directory was synced with another folder or account; refusing protects both. */
export class StateBindingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StateBindingError";
  }
}

/** Path of the state database of directory `root`. */
export function statePath(root: string): string {
  return join(root, STATE_DIR, "state.sqlite");
}

interface Row {
  path: string;
  kind: string;
  hash: string;
  mode: number;
  size: number;
  mtime_ms: number;
  ino: number;
  revision_id: string;
  revision_seq: number;
}

/** Open state database of one synced directory. Close it when done. */
export class SyncState {
  private readonly db: Database;

  private constructor(db: Database) {
    this.db = db;
  }

  /**
   * Opens (creating) the state of `root` for `binding`, at `path` (default `DIR/.esync/state.sqlite`).
   * @throws StateBindingError when it belongs to another folder or account.
   */
  static open(root: string, binding: StateBinding, path = statePath(root)): SyncState {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    const db = new Database(path, { create: true, strict: true });
    db.run("PRAGMA journal_mode = WAL");
    db.run("PRAGMA busy_timeout = 5000");
    db.run("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
    db.run(`CREATE TABLE IF NOT EXISTS entries (
      path TEXT PRIMARY KEY, kind TEXT NOT NULL, hash TEXT NOT NULL, mode INTEGER NOT NULL,
      size INTEGER NOT NULL, mtime_ms REAL NOT NULL, ino INTEGER NOT NULL,
      revision_id TEXT NOT NULL, revision_seq INTEGER NOT NULL)`);
    db.run("CREATE TABLE IF NOT EXISTS dirs (path TEXT PRIMARY KEY)");
    db.run(
      "CREATE TABLE IF NOT EXISTS dir_times (path TEXT PRIMARY KEY, mtime_ms REAL NOT NULL, remote_ms REAL NOT NULL)",
    );
    const state = new SyncState(db);
    for (const [key, value] of Object.entries({
      address: binding.address,
      folder_hash: binding.folderHash,
    })) {
      const have = db.query<{ value: string }, [string]>("SELECT value FROM meta WHERE key = ?").get(key);
      if (have && have.value !== value) {
        const label = db.query<{ value: string }, []>("SELECT value FROM meta WHERE key = 'label'").get();
        db.close();
        const other =
          key === "address"
            ? "another account"
            : label
              ? `folder ${JSON.stringify(label.value)}`
              : "another folder";
        const wanted = binding.label === undefined ? "" : `, not ${JSON.stringify(binding.label)}`;
        throw new StateBindingError(
          `${root} is synced with ${other}${wanted}; check the label, or sync another directory`,
        );
      }
      if (!have) db.query("INSERT INTO meta (key, value) VALUES (?, ?)").run(key, value);
    }
    if (binding.label !== undefined)
      db.query("INSERT OR IGNORE INTO meta (key, value) VALUES ('label', ?)").run(binding.label);
    return state;
  }

  /** Every base entry, by path. */
  entries(): Map<string, BaseEntry> {
    const out = new Map<string, BaseEntry>();
    for (const r of this.db.query<Row, []>("SELECT * FROM entries").all()) out.set(r.path, fromRow(r));
    return out;
  }

  get(rel: string): BaseEntry | undefined {
    const r = this.db.query<Row, [string]>("SELECT * FROM entries WHERE path = ?").get(rel);
    return r ? fromRow(r) : undefined;
  }

  /** Records `e` as the synced version of its path. */
  put(e: BaseEntry): void {
    this.db
      .query(
        `INSERT OR REPLACE INTO entries (path, kind, hash, mode, size, mtime_ms, ino, revision_id, revision_seq)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(e.rel, e.kind, e.hash, e.mode, e.size, e.mtimeMs, e.ino, e.revisionId, e.revisionSeq);
  }

  /** Forgets a path (deleted on both sides). */
  remove(rel: string): void {
    this.db.query("DELETE FROM entries WHERE path = ?").run(rel);
  }

  /** Directories recorded at the last sync. */
  dirs(): Set<string> {
    return new Set(
      this.db
        .query<{ path: string }, []>("SELECT path FROM dirs")
        .all()
        .map((r) => r.path),
    );
  }

  /** Replaces the recorded directories. */
  setDirs(dirs: Iterable<string>): void {
    this.db.transaction(() => {
      this.db.run("DELETE FROM dirs");
      const ins = this.db.query("INSERT INTO dirs (path) VALUES (?)");
      for (const d of dirs) ins.run(d);
    })();
  }

  /**
   * Each directory's modification time (Unix ms) on disk and on the server after the last sync
   * (docs/attributes.md#directory-modification-times), by path.
   */
  dirTimes(): Map<string, DirTimeBase> {
    const rows = this.db
      .query<{ path: string; mtime_ms: number; remote_ms: number }, []>("SELECT * FROM dir_times")
      .all();
    return new Map(rows.map((r) => [r.path, { local: r.mtime_ms, remote: r.remote_ms }]));
  }

  /** Replaces the recorded directory modification times (by path). */
  setDirTimes(times: ReadonlyMap<string, DirTimeBase>): void {
    this.db.transaction(() => {
      this.db.run("DELETE FROM dir_times");
      const ins = this.db.query("INSERT INTO dir_times (path, mtime_ms, remote_ms) VALUES (?, ?, ?)");
      for (const [d, t] of times) ins.run(d, t.local, t.remote);
    })();
  }

  close(): void {
    this.db.close();
  }
}

function fromRow(r: Row): BaseEntry {
  return {
    rel: r.path,
    kind: r.kind === "symlink" || r.kind === "dir" ? r.kind : "file",
    hash: r.hash,
    mode: r.mode,
    size: r.size,
    mtimeMs: r.mtime_ms,
    ino: r.ino,
    revisionId: r.revision_id,
    revisionSeq: r.revision_seq,
  };
}
