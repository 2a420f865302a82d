/**
 * @module client/sync/planner
 * The three-way comparison of a sync pass, pure: for every path it compares the base (the
 * version both sides held after the last sync, from the state database) with the local tree
 * and the remote folder (`/get_state`) and decides what a pass does. Nothing here touches the
 * disk or the network; `planSync` is what `esync status` shows and what `runSyncPass` executes.
 *
 * Rules, per path (L = local, R = remote, B = base; "changed" = differs from B):
 * - neither changed: nothing (or `record` a new fingerprint of an untouched content);
 * - only L changed: `upload` (on R's revision) or, L deleted, `delete_remote` (a tombstone:
 *   deleted since the base);
 * - only R changed: `download` or, R deleted, `delete_local`;
 * - both changed to the same version: `record`; both deleted: `forget`;
 * - L deleted, R changed: `download` (the change wins over the deletion: nothing is lost);
 * - R deleted, L changed: `upload` as a new file;
 * - both changed differently (or both created differently): `conflict`: the local version
 *   moves to `NAME (conflicted copy from DEVICE YYYY-MM-DD).EXT` and is uploaded there, the
 *   remote one is downloaded under the name.
 * - Renames: a path deleted on one side (the other side unchanged) and a new path on that same
 *   side holding the same version are a rename: `rename_remote` (local rename, propagated) or
 *   `move_local` (remote rename, applied as a local move, no download).
 * - A remote rename of a file edited here (the base's version gone from its path and found at a
 *   new remote path, the local file changed): the edit follows the rename, `move_local` with
 *   `edited`: the file moves, then its content is uploaded on the moved revision.
 * - A file whose content and mode are unchanged but whose modification time moved (`touch`) is
 *   changed: its attributes are uploaded as a new revision (docs/attributes.md).
 */
import type { RemoteFileEntry } from "../api-types.ts";
import { bytesEqual, toHex } from "../hash.ts";
import { pathHash } from "../manifest.ts";
import { type EntryKind, openAttributes } from "./attributes.ts";
import type { LocalEntry } from "./local-tree.ts";
import type { BaseEntry } from "./state-db.ts";

/** One file of the remote folder, its attributes decrypted. */
export interface RemoteVersion {
  rel: string;
  kind: EntryKind;
  /** `salted_hash`, 64 hex. */
  hash: string;
  /** Permission bits; null when the file carries no (readable) attributes, e.g. from another client. */
  mode: number | null;
  /** Unix milliseconds; null without attributes. */
  mtimeMs: number | null;
  /** True when the attributes stay readable after a `/rename_files` move (or there are none). */
  attributesMove?: boolean;
  /** 64 hex. */
  revisionId: string;
  revisionSeq: number;
  /** The file row; for a folder entry, a stand-in with the marker path's hash and no content. */
  entry: RemoteFileEntry;
  /**
   * Set when this version is a directory entry (docs/protocol.md#folder-entries) seen as the empty-directory
   * marker path `DIR/.esync-dir`: the directory path. Such a version has no file row.
   */
  folderEntry?: string;
}

/** The remote folder as the planner sees it. */
export interface RemoteTree {
  entries: Map<string, RemoteVersion>;
  /** Entries that cannot be placed: no `relative_path`, or a path that does not hash to `path_hash`. */
  unplaceable: RemoteFileEntry[];
  /** Every registered directory entry of the folder (docs/protocol.md#folder-entries), when read. */
  dirEntries?: Set<string>;
  /**
   * Directories whose entry has readable sealed attributes, with their modification time (Unix
   * ms); set only when the server keeps them (docs/attributes.md#directory-modification-times).
   */
  dirTimes?: Map<string, number>;
}

/** Decodes `/get_state` entries with the folder key (attributes are opened, never trusted blindly). */
export function remoteTree(entries: Iterable<RemoteFileEntry>, folderKey: Uint8Array): RemoteTree {
  const out = new Map<string, RemoteVersion>();
  const unplaceable: RemoteFileEntry[] = [];
  for (const e of entries) {
    const rel = e.relative_path;
    if (rel === null || !bytesEqual(pathHash(rel), Uint8Array.from(e.path_hash))) {
      unplaceable.push(e);
      continue;
    }
    const attrs = openAttributes(
      folderKey,
      { pathHash: e.path_hash, saltedHash: e.salted_hash },
      e.attributes,
    );
    out.set(rel, {
      rel,
      kind: attrs?.type ?? "file",
      hash: toHex(e.salted_hash),
      mode: attrs?.mode ?? null,
      mtimeMs: attrs?.mtimeMs ?? null,
      attributesMove: attrs?.pathBound !== true,
      revisionId: toHex(e.revision_id),
      revisionSeq: e.revision_seq,
      entry: e,
    });
  }
  return { entries: out, unplaceable };
}

/** One step of a sync pass. `path` is the path the step writes (the new one for renames). */
export type SyncAction =
  | { op: "upload"; path: string; local: LocalEntry; remote: RemoteVersion | null; reason: "new" | "changed" }
  | {
      op: "download";
      path: string;
      remote: RemoteVersion;
      local: LocalEntry | null;
      reason: "new" | "changed";
    }
  | { op: "delete_remote"; path: string; remote: RemoteVersion }
  | { op: "delete_local"; path: string; local: LocalEntry }
  | { op: "rename_remote"; path: string; from: string; local: LocalEntry; remote: RemoteVersion }
  | {
      op: "move_local";
      path: string;
      from: string;
      local: LocalEntry;
      remote: RemoteVersion;
      /** The local file was edited since the base: after the move, it is uploaded on `remote`. */
      edited?: boolean;
    }
  | { op: "conflict"; path: string; copyPath: string; local: LocalEntry; remote: RemoteVersion }
  | { op: "record"; path: string; local: LocalEntry; remote: RemoteVersion }
  | { op: "forget"; path: string };

/** Inputs of `planSync`. */
export interface PlanInput {
  base: ReadonlyMap<string, BaseEntry>;
  local: ReadonlyMap<string, LocalEntry>;
  remote: ReadonlyMap<string, RemoteVersion>;
  /** This device's name, for conflicted copies. */
  device: string;
  /** The date written into conflicted copies' names. */
  now: Date;
}

interface Version {
  kind: EntryKind;
  hash: string;
  mode: number | null;
}

/**
 * True when two versions hold the same thing: kind, content and (for files, when both known)
 * permission bits. Empty-directory markers are equal whatever their modes.
 */
export function sameVersion(a: Version, b: Version): boolean {
  if (a.kind !== b.kind || a.hash !== b.hash) return false;
  return a.kind !== "file" || a.mode === null || b.mode === null || a.mode === b.mode;
}

function versionKey(v: Version): string {
  return `${v.kind}:${v.hash}`;
}

/**
 * True when local entry `l` differs from base `b` (same path): another version, or a regular
 * file whose modification time moved (attributes only, as `touch` does).
 */
export function changedSinceBase(l: LocalEntry, b: BaseEntry): boolean {
  if (!sameVersion(l, b)) return true;
  return l.kind === "file" && b.kind === "file" && Math.abs(l.mtimeMs - b.mtimeMs) >= 1;
}

/**
 * The name of the local copy kept on a conflict: `NAME (conflicted copy from DEVICE
 * YYYY-MM-DD).EXT` (the extension kept last so the copy opens like the original), with ` 2`,
 * ` 3`… added when that name is taken.
 */
export function conflictCopyName(
  rel: string,
  device: string,
  now: Date,
  taken: (rel: string) => boolean,
): string {
  const slash = rel.lastIndexOf("/");
  const dir = rel.slice(0, slash + 1);
  const name = rel.slice(slash + 1);
  const dot = name.lastIndexOf(".");
  const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ""];
  const day = now.toISOString().slice(0, 10);
  const dev = device.replaceAll("/", "-") || "this device";
  for (let n = 1; ; n++) {
    const candidate = `${dir}${stem} (conflicted copy from ${dev} ${day}${n > 1 ? ` ${n}` : ""})${ext}`;
    if (!taken(candidate)) return candidate;
  }
}

/** The actions of one sync pass, in execution order. Pure; see the module comment for the rules. */
export function planSync(input: PlanInput): SyncAction[] {
  const { base, local, remote } = input;
  const paths = new Set<string>([...base.keys(), ...local.keys(), ...remote.keys()]);
  const actions: SyncAction[] = [];
  const taken = new Set(paths);

  // Rename candidates: deletions on one side whose other side is unchanged, and creations on one side only.
  const localGone = new Map<string, string[]>(); // version key -> paths deleted locally, remote unchanged
  const remoteGone = new Map<string, string[]>();
  const localNew = new Map<string, string[]>(); // version key -> paths created locally only
  const remoteNew = new Map<string, string[]>();
  const remoteGoneEdited = new Map<string, string[]>(); // base version key -> paths gone remotely, edited here
  const push = (m: Map<string, string[]>, k: string, p: string) => {
    const list = m.get(k);
    if (list) list.push(p);
    else m.set(k, [p]);
  };
  for (const p of [...paths].sort()) {
    const b = base.get(p);
    const l = local.get(p);
    const r = remote.get(p);
    // Empty-directory markers all look alike: never paired as renames.
    if ((b ?? l ?? r)?.kind === "dir") continue;
    if (b && !l && r && r.revisionId === b.revisionId) push(localGone, versionKey(b), p);
    if (b && l && !r && sameVersion(l, b)) push(remoteGone, versionKey(b), p);
    if (b && l && !r && !sameVersion(l, b) && l.kind === b.kind) push(remoteGoneEdited, versionKey(b), p);
    if (!b && l && !r) push(localNew, versionKey(l), p);
    if (!b && !l && r) push(remoteNew, versionKey(r), p);
  }
  const handled = new Set<string>();
  for (const [key, gone] of localGone) {
    const created = localNew.get(key) ?? [];
    for (const from of gone) {
      const to = created.shift();
      if (to === undefined) break;
      const l = local.get(to) as LocalEntry;
      const r = remote.get(from) as RemoteVersion;
      actions.push({ op: "rename_remote", path: to, from, local: l, remote: r });
      handled.add(from).add(to);
    }
  }
  for (const [key, gone] of remoteGone) {
    const created = remoteNew.get(key) ?? [];
    for (const from of gone) {
      const to = created.shift();
      if (to === undefined) break;
      const r = remote.get(to) as RemoteVersion;
      const l = local.get(from) as LocalEntry;
      actions.push({ op: "move_local", path: to, from, local: l, remote: r });
      handled.add(from).add(to);
    }
  }
  for (const [key, gone] of remoteGoneEdited) {
    const created = remoteNew.get(key) ?? [];
    for (const from of gone) {
      const to = created.shift();
      if (to === undefined) break;
      const r = remote.get(to) as RemoteVersion;
      const l = local.get(from) as LocalEntry;
      actions.push({ op: "move_local", path: to, from, local: l, remote: r, edited: true });
      handled.add(from).add(to);
    }
  }

  for (const p of [...paths].sort()) {
    if (handled.has(p)) continue;
    const b = base.get(p);
    const l = local.get(p);
    const r = remote.get(p);
    const localChanged = b ? !l || changedSinceBase(l, b) : l !== undefined;
    const remoteChanged = b ? !r || r.revisionId !== b.revisionId : r !== undefined;
    if (!localChanged && !remoteChanged) {
      if (
        l &&
        r &&
        b &&
        (l.size !== b.size || l.mtimeMs !== b.mtimeMs || l.mode !== b.mode || l.ino !== b.ino)
      )
        actions.push({ op: "record", path: p, local: l, remote: r });
      continue;
    }
    if (localChanged && !remoteChanged) {
      if (l)
        actions.push({ op: "upload", path: p, local: l, remote: r ?? null, reason: r ? "changed" : "new" });
      else if (r) actions.push({ op: "delete_remote", path: p, remote: r });
      else actions.push({ op: "forget", path: p });
      continue;
    }
    if (!localChanged && remoteChanged) {
      if (r)
        actions.push({ op: "download", path: p, remote: r, local: l ?? null, reason: l ? "changed" : "new" });
      else if (l) actions.push({ op: "delete_local", path: p, local: l });
      else actions.push({ op: "forget", path: p });
      continue;
    }
    // Both sides changed.
    if (!l && !r) actions.push({ op: "forget", path: p });
    else if (l && r && (sameVersion(l, r) || l.kind === "dir" || r.kind === "dir"))
      actions.push({ op: "record", path: p, local: l, remote: r });
    else if (!l && r) actions.push({ op: "download", path: p, remote: r, local: null, reason: "changed" });
    else if (l && !r) actions.push({ op: "upload", path: p, local: l, remote: null, reason: "new" });
    else if (l && r) {
      const copyPath = conflictCopyName(p, input.device, input.now, (c) => taken.has(c));
      taken.add(copyPath);
      actions.push({ op: "conflict", path: p, copyPath, local: l, remote: r });
    }
  }
  const order: Record<SyncAction["op"], number> = {
    conflict: 0,
    move_local: 1,
    download: 2,
    rename_remote: 3,
    upload: 4,
    delete_remote: 5,
    delete_local: 6,
    record: 7,
    forget: 8,
  };
  return actions.sort(
    (a, b) => order[a.op] - order[b.op] || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0),
  );
}

/** True for actions that change something on either side (not `record`/`forget` bookkeeping). */
export function isChange(a: SyncAction): boolean {
  return a.op !== "record" && a.op !== "forget";
}
