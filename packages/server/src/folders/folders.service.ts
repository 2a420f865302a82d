/**
 * @module server/folders/folders.service
 * The folder registry (docs/protocol.md#folders).
 */

import { fail } from "@esync/protocol/errors.ts";
import { isDirectoryPath } from "@esync/protocol/paths.ts";
import { MAX_PATH_BATCH } from "@esync/protocol/schemas.ts";
import type { RemoteFolderInfo } from "@esync/protocol/types.ts";
import type { MetadataStore } from "../db/store.ts";
import { blobTarget } from "../storage/layout.ts";
import type { Clock } from "../util/clock.ts";
import { yieldToEventLoop } from "../util/yield.ts";
import type { FolderEntryRow } from "./folder-entries.repository.ts";
import type { FolderRow } from "./folders.repository.ts";

/** Paths read per query when a folder's whole list of directories is answered. */
const ENTRIES_PAGE = 100;

export type { RemoteFolderInfo } from "@esync/protocol/types.ts";

function toInfo(r: FolderRow, members = 0): RemoteFolderInfo {
  return {
    ...(members > 0 ? { member_count: members } : {}),
    label: r.label ?? "",
    folder_hash: r.folderHash,
    file_count: r.fileCount,
    total_bytes: r.totalBytes,
    created_at: r.createdAt ?? r.updatedAt,
    updated_at: r.updatedAt,
    device_name: r.deviceName ?? "",
  };
}

/** Folder registry rules. */
export class FoldersService {
  constructor(
    private readonly store: MetadataStore,
    private readonly clock: Clock,
    /** Seconds removed files' objects stay readable (`ESYNC_BLOB_GRACE_SECONDS`). */
    private readonly graceSeconds: number,
    private readonly opts: { upsert: boolean } = { upsert: false },
  ) {}

  /**
   * Registers `folderHash` for `owner` (docs/protocol.md#folders). Under the hcfs profile (`opts.upsert`) a
   * registered folder is left as it is (label, device name and `created_at` kept; docs/protocol.md#api-profiles).
   * @throws AppError `conflict` (409) when it is already registered (base profile).
   */
  async register(owner: string, folderHash: string, label: string, deviceName: string | null): Promise<void> {
    const now = this.clock.now();
    if (
      !(await this.store.repos.folders.register(owner, folderHash, label, deviceName, now)) &&
      !this.opts.upsert
    ) {
      throw fail("conflict", "A folder with this folder_hash is already registered for this user");
    }
  }

  /** Registered folders with counters (docs/protocol.md#folders). */
  async list(owner: string): Promise<RemoteFolderInfo[]> {
    const counts = new Map(
      (await this.store.repos.drives.memberCounts(owner)).map((c) => [c.folderHash, c.n] as const),
    );
    return (await this.store.repos.folders.listRegistered(owner)).map((r) =>
      toInfo(r, counts.get(r.folderHash)),
    );
  }

  /**
   * Unregisters a folder and removes every file in it and every kept version of its files
   * (docs/versions.md), queueing their blobs for deletion after the grace period (docs/protocol.md#folders).
   * @returns the number of files deleted.
   * @throws AppError `not_found` (404) when no folder is registered at this hash.
   */
  unregister(owner: string, folderHash: string): Promise<number> {
    return this.store.transaction(async (tx) => {
      await tx.sessions.lockOwner(owner);
      const row = await tx.folders.get(owner, folderHash);
      if (!row || row.label === null)
        throw fail("not_found", "No folder is registered at this folder_hash for this user");
      const blobIds = new Set(await tx.files.blobIdsOfFolder(owner, folderHash));
      const deleted = await tx.files.removeFolder(owner, folderHash);
      // A restored version shares its blob with the file it became: each blob is queued once.
      for (const id of await tx.versions.removeFolder(owner, folderHash)) blobIds.add(id);
      await tx.deletionQueue.enqueue([...blobIds].map(blobTarget), this.clock.now() + this.graceSeconds);
      await tx.folders.remove(owner, folderHash);
      await tx.folderEntries.removeFolder(owner, folderHash);
      // The drive goes with its folder: a folder registered again later starts without members.
      await tx.drives.removeDrive({ owner, folderHash });
      return deleted;
    });
  }

  /**
   * Every registered directory of a folder, in BINARY order, as pages of at most `ENTRIES_PAGE`
   * read by key one at a time, yielding to the event loop between pages (docs/operator-guide.md#big-answers-and-batches), so other requests run in between.
   */
  async *entryPages(owner: string, folderHash: string): AsyncGenerator<string[]> {
    for (let after: string | null = null; ; ) {
      const rows = await this.store.repos.folderEntries.list(owner, folderHash, after, ENTRIES_PAGE);
      const page = rows.map((e) => e.path);
      if (page.length > 0) yield page;
      if (page.length < ENTRIES_PAGE) return;
      after = page[page.length - 1]!;
      // A read outside a transaction completes at once on SQLite: without this, a fast reader
      // would take every page in one turn of the event loop.
      await yieldToEventLoop();
    }
  }

  /**
   * One page of a folder's registered directories with their sealed attributes
   * (docs/protocol.md#folder-entry-attributes): the first `limit` entries after path `after` (none:
   * from the start) in BINARY order, and the `after` of the next page (null on the last one).
   */
  async listEntriesPage(
    owner: string,
    folderHash: string,
    after: string | null,
    limit: number,
  ): Promise<{ entries: FolderEntryRow[]; next: string | null }> {
    const page = await this.store.repos.folderEntries.list(owner, folderHash, after, limit + 1);
    const more = page.length > limit;
    const entries = more ? page.slice(0, limit) : page;
    return { entries, next: more ? entries[entries.length - 1]!.path : null };
  }

  /**
   * Registers directory entries (docs/protocol.md#folder-entries): an idempotent batch insert. A
   * path in `attributes` (docs/protocol.md#folder-entry-attributes) gets those sealed bytes,
   * replacing the ones it had; the other entries keep theirs.
   * @returns how many of the named entries are now present (distinct paths).
   * @throws AppError `batch_too_large` (over `MAX_PATH_BATCH`), `invalid_manifest` (an invalid
   *   path, or attributes for a path the batch does not name).
   */
  async registerEntries(
    owner: string,
    folderHash: string,
    paths: readonly string[],
    attributes?: Readonly<Record<string, readonly number[]>>,
  ): Promise<number> {
    const unique = checkFolderEntryPaths(paths);
    const sealed = checkFolderEntryAttributes(unique, attributes);
    await this.store.transaction((tx) =>
      tx.folderEntries.add(owner, folderHash, unique, this.clock.now(), sealed),
    );
    return unique.length;
  }

  /**
   * Removes exactly the named directory entries (docs/protocol.md#folder-entries); files are never touched.
   * @returns how many entries were removed.
   * @throws as `registerEntries`.
   */
  async unregisterEntries(owner: string, folderHash: string, paths: readonly string[]): Promise<number> {
    return this.store.repos.folderEntries.remove(owner, folderHash, checkFolderEntryPaths(paths));
  }

  /** Label of a folder, `""` when unregistered (for search hits). */
  async labelOf(owner: string, folderHash: string): Promise<string> {
    return (await this.store.repos.folders.get(owner, folderHash))?.label ?? "";
  }
}

/**
 * The sealed attributes of a folder-entry batch (docs/protocol.md#folder-entry-attributes) by
 * path. Their size (1 to 512 bytes each) is checked by the body schema.
 * @throws AppError `invalid_manifest` for attributes of a path that `paths` does not name.
 */
export function checkFolderEntryAttributes(
  paths: readonly string[],
  attributes: Readonly<Record<string, readonly number[]>> | undefined,
): Map<string, Uint8Array> {
  const named = new Set(paths);
  const out = new Map<string, Uint8Array>();
  for (const [path, bytes] of Object.entries(attributes ?? {})) {
    if (!named.has(path))
      throw fail(
        "invalid_manifest",
        `attributes names ${JSON.stringify(path)}, which relative_paths does not`,
      );
    out.set(path, Uint8Array.from(bytes));
  }
  return out;
}

/**
 * The distinct paths of a folder-entry batch. Controllers call it before the ownership check too:
 * a malformed body is 400 before a foreign address is 403 (docs/protocol.md#open-rules).
 * @throws AppError `batch_too_large` over `MAX_PATH_BATCH` entries, `invalid_manifest` for a path
 *   that is not a valid directory path (`isDirectoryPath`, docs/protocol.md#folder-entries).
 */
export function checkFolderEntryPaths(paths: readonly string[]): string[] {
  if (paths.length > MAX_PATH_BATCH)
    throw fail(
      "batch_too_large",
      `At most ${MAX_PATH_BATCH} relative_paths per request, got ${paths.length}`,
    );
  paths.forEach((p, i) => {
    if (!isDirectoryPath(p))
      throw fail("invalid_manifest", `relative_paths[${i}] is not a valid directory path`);
  });
  return [...new Set(paths)];
}
