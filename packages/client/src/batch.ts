/**
 * @module client/batch
 * Whole-tree operations of a folder on top of the batch endpoints (docs/protocol.md#delete-files, #rename-files, #folder-entries), split into the server's batch limits: deleting many files, moving a file or a whole
 * directory (files re-keyed by signed `/rename_files` batches, directory entries registered at
 * the new prefix and unregistered at the old one), and registering directory entries.
 */
import type { EsyncApi } from "./api.ts";
import type { RemoteFileEntry, RenameEntry } from "./api-types.ts";
import { toHex } from "./hash.ts";
import type { FolderKeys } from "./keys.ts";
import { pathHash } from "./manifest.ts";
import { openDirAttributes, sealDirAttributes } from "./sync/attributes.ts";

/** Ids per `/delete_files` call (docs/protocol.md#delete-files). */
export const DELETE_BATCH = 1000;
/** Entries per `/rename_files` call (docs/protocol.md#rename-files: 1000). */
export const RENAME_BATCH = 1000;
/** Paths per `/register_folder_entries` or `/unregister_folder_entries` call (docs/protocol.md#folder-entries). */
export const FOLDER_ENTRY_BATCH = 500;

/** The folder an operation works on. */
export interface FolderRef {
  api: EsyncApi;
  address: string;
  keys: Pick<FolderKeys, "folderHash" | "signingKey" | "sign">;
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Every directory that contains `rel` (`a/b/c.txt` → `a`, `a/b`). */
export function parentDirs(rel: string): string[] {
  const parts = rel.split("/");
  return parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join("/"));
}

/**
 * Deletes files by 64-hex `file_id` in `/delete_files` batches of 1000. Returns the ids
 * handled (status `deleted` or `already_deleted`) and the per-id errors.
 * @throws ApiError when a whole batch is refused (earlier batches stay deleted).
 */
export async function deleteMany(
  f: FolderRef,
  fileIds: readonly string[],
): Promise<{
  deleted: Array<{ file_id: string; status: string }>;
  errors: Array<{ file_id: string; error: string }>;
}> {
  const deleted: Array<{ file_id: string; status: string }> = [];
  const errors: Array<{ file_id: string; error: string }> = [];
  for (const batch of chunks(fileIds, DELETE_BATCH)) {
    const r = await f.api.deleteFiles({
      ss58Address: f.address,
      folderHash: f.keys.folderHash,
      fileIds: batch,
    });
    deleted.push(...(r.deleted ?? []));
    errors.push(...r.errors);
  }
  return { deleted, errors };
}

/** One planned move of a file row: its current entry and its new path. */
export interface FileMove {
  entry: Pick<RemoteFileEntry, "path_hash" | "revision_id">;
  /** New path inside the folder (normalised). */
  to: string;
}

/** The outcome of one move. */
export interface MoveOutcome {
  to: string;
  oldFileId: string;
  /** Set on success. */
  revisionId?: number[];
  revisionSeq?: number;
  /** Set on failure: `not_found`, `target_exists`, `revision_mismatch`, `database_error`. */
  reason?: string;
}

/**
 * Moves file rows with signed `/rename_files` batches of 1000, each entry checked against the
 * entry's `revision_id`. Returns one outcome per move, in order.
 * @throws ApiError when a whole batch is refused (400 for a bad signature, 401, 403, 5xx).
 */
export async function renameMany(f: FolderRef, moves: readonly FileMove[]): Promise<MoveOutcome[]> {
  const out: MoveOutcome[] = [];
  for (const batch of chunks(moves, RENAME_BATCH)) {
    const renames: RenameEntry[] = batch.map((m) => ({
      oldPathHash: Uint8Array.from(m.entry.path_hash),
      newPathHash: pathHash(m.to),
      baseRevisionId: Uint8Array.from(m.entry.revision_id),
      newFileName: m.to.split("/").at(-1) ?? null,
      newRelativePath: m.to,
    }));
    const r = await f.api.renameFiles({
      ss58Address: f.address,
      folderHash: f.keys.folderHash,
      renames,
      signer: f.keys,
    });
    const ok = new Map(r.successes.map((s) => [toHex(s.old_path_hash), s]));
    const bad = new Map(r.failures.map((x) => [toHex(x.old_path_hash), x.reason]));
    for (const m of batch) {
      const id = toHex(m.entry.path_hash);
      const s = ok.get(id);
      out.push(
        s
          ? { to: m.to, oldFileId: id, revisionId: s.new_revision_id, revisionSeq: s.new_revision_seq }
          : { to: m.to, oldFileId: id, reason: bad.get(id) ?? "not_found" },
      );
    }
  }
  return out;
}

/**
 * Registers directory entries in batches of 500 (idempotent); a path in `attributes` gets those
 * sealed bytes (docs/protocol.md#folder-entry-attributes; the server must have the capability).
 */
export async function registerEntries(
  f: FolderRef,
  paths: readonly string[],
  attributes?: ReadonlyMap<string, Uint8Array>,
): Promise<void> {
  for (const batch of chunks([...new Set(paths)], FOLDER_ENTRY_BATCH))
    await f.api.registerFolderEntries({
      ss58Address: f.address,
      folderHash: f.keys.folderHash,
      relativePaths: batch,
      ...(attributes
        ? {
            attributes: new Map(
              batch.flatMap((p) => {
                const a = attributes.get(p);
                return a ? [[p, a] as const] : [];
              }),
            ),
          }
        : {}),
    });
}

/** Unregisters directory entries in batches of 500; returns how many were removed. */
export async function unregisterEntries(f: FolderRef, paths: readonly string[]): Promise<number> {
  let removed = 0;
  for (const batch of chunks([...new Set(paths)], FOLDER_ENTRY_BATCH))
    removed += (
      await f.api.unregisterFolderEntries({
        ss58Address: f.address,
        folderHash: f.keys.folderHash,
        relativePaths: batch,
      })
    ).count;
  return removed;
}

/** `path` moved from under `from` to under `to` (`from` itself maps to `to`). */
export function rebase(path: string, from: string, to: string): string {
  return path === from ? to : `${to}${path.slice(from.length)}`;
}

/** True when `path` is `dir` or lies under it. */
export function isUnder(path: string, dir: string): boolean {
  return dir === "" || path === dir || path.startsWith(`${dir}/`);
}

/** The result of `moveTree`. */
export interface TreeMove {
  /** Files moved, or failed with a reason. */
  files: MoveOutcome[];
  /** Directory entries registered at the new prefix. */
  entriesMoved: number;
}

/**
 * The sealed attributes of a folder's directory entries (`listFolderEntriesWithAttributes`) and
 * the folder key (32 bytes) they are sealed under, for `moveTree` to carry them to new paths.
 */
export interface EntryAttributes {
  folderKey: Uint8Array;
  sealed: ReadonlyMap<string, Uint8Array>;
}

/**
 * Moves the directory `from` (every file under it, and every directory entry at or under it)
 * to `to` (docs/protocol.md#rename-files last rule): files in rename batches, then the entries registered at
 * the new prefix (with `to` itself and its parents) and unregistered at the old one. Entries of
 * a directory whose files did not all move stay at the old prefix too. With `attributes`, each
 * moved entry keeps its modification time: its attributes are bound to its path
 * (docs/attributes.md#directory-modification-times), so they are opened at the old path and
 * sealed again for the new one; attributes that do not open are left behind.
 */
export async function moveTree(
  f: FolderRef,
  from: string,
  to: string,
  files: ReadonlyArray<Pick<RemoteFileEntry, "path_hash" | "revision_id" | "relative_path">>,
  entries: readonly string[],
  attributes?: EntryAttributes,
): Promise<TreeMove> {
  const moves = files
    .filter((e) => e.relative_path !== null && isUnder(e.relative_path, from))
    .map((e) => ({ entry: e, to: rebase(e.relative_path ?? "", from, to) }));
  const outcomes = await renameMany(f, moves);
  const stuck = new Set<string>();
  moves.forEach((m, i) => {
    if (outcomes[i]?.reason) for (const d of parentDirs(m.entry.relative_path ?? "")) stuck.add(d);
  });
  const oldEntries = entries.filter((p) => isUnder(p, from));
  const newEntries = [...oldEntries.map((p) => rebase(p, from, to)), to, ...parentDirs(to)];
  const moved = new Map<string, Uint8Array>();
  if (attributes)
    for (const p of oldEntries) {
      const times = openDirAttributes(attributes.folderKey, p, attributes.sealed.get(p));
      const next = rebase(p, from, to);
      if (times) moved.set(next, sealDirAttributes(attributes.folderKey, next, times));
    }
  await registerEntries(f, newEntries, moved.size > 0 ? moved : undefined);
  await unregisterEntries(
    f,
    oldEntries.filter((p) => !stuck.has(p)),
  );
  return { files: outcomes, entriesMoved: oldEntries.length };
}
