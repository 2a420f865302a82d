/**
 * @module cli/remote-folder
 * One folder's listing on the server as the tree commands (`mv`, `rm -r`, `mkdir`) need it:
 * every file row (`/get_state`, all pages) and every directory entry (`/list_folder_entries`),
 * with the sealed attributes of those that have some.
 */
import type { RemoteFileEntry } from "@esync/client/api-types.ts";
import { type FolderRef, isUnder } from "@esync/client/batch.ts";

/** Files and directory entries of a folder. */
export interface RemoteListing {
  files: RemoteFileEntry[];
  entries: string[];
  /** Sealed attributes by directory path (docs/protocol.md#folder-entry-attributes); empty without. */
  attributes: Map<string, Uint8Array>;
}

/** Reads every file and directory entry of the folder. */
export async function listRemote(f: FolderRef): Promise<RemoteListing> {
  const files: RemoteFileEntry[] = [];
  for await (const e of f.api.iterateState(f.address, f.keys.folderHash)) files.push(e);
  const { paths, attributes } = await f.api.listFolderEntriesWithAttributes(f.address, f.keys.folderHash);
  return { files, entries: paths, attributes };
}

/** What `path` names in the listing: a file, a directory (files under it or an entry), or nothing. */
export function kindAt(l: RemoteListing, path: string): "file" | "dir" | null {
  if (path === "") return "dir";
  if (l.files.some((e) => e.relative_path === path)) return "file";
  if (l.entries.some((p) => isUnder(p, path))) return "dir";
  if (l.files.some((e) => e.relative_path !== null && isUnder(e.relative_path, path))) return "dir";
  return null;
}
