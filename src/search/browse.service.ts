/**
 * @module search/browse.service
 * `GET /browse/{ss58}/{folder_hash}` (issue 3): one directory of a folder, as a file manager shows
 * it. The immediate sub-folders of `path` come first (alphabetical, case-insensitive), each with
 * the recursive file count and bytes under it; then the files directly in `path`, sorted as
 * search sorts (`path_hash` tiebreak; also by `extension` or `uploaded_by`, extensions §1.7). One
 * offset space runs over both; `total_count` is folders plus files. `file_type`, `q` and
 * `uploaded_by` filter the files and hide the folders. Files without a
 * `relative_path` have no place in the tree and are never listed.
 *
 * Directories come from `relative_path`: everything before its last `/`, without leading or
 * trailing `/`. Folder counts are kept per directory by triggers (`search_dirs`), so a folder
 * root with 300,000 files below it costs one small range read, not a scan. Registered directory
 * entries (extensions §1.5) add the sub-folders no file lies under, with zero counts.
 */

import { toRemoteFileEntry } from "../files/file-entry.ts";
import type { FolderEntriesRepository } from "../folders/folder-entries.repository.ts";
import type { BrowseFolderEntry, BrowseResult } from "../wire/types.ts";
import type { BrowseQuery } from "./search.query.ts";
import type { Cond, SearchRepository } from "./search.repository.ts";

export type { BrowseFolderEntry, BrowseResult } from "../wire/types.ts";

/** Case-insensitive alphabetical order, ties broken by the exact (binary) name. */
function byName(a: BrowseFolderEntry, b: BrowseFolderEntry): number {
  const x = a.name.toLowerCase();
  const y = b.name.toLowerCase();
  if (x !== y) return x < y ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/** Directory listings of a folder. */
export class BrowseService {
  constructor(
    private readonly repo: SearchRepository,
    private readonly entries: FolderEntriesRepository,
  ) {}

  /** Lists one directory of `owner`'s folder `folderHash` (the caller has checked ownership). */
  async browse(owner: string, folderHash: string, query: BrowseQuery): Promise<BrowseResult> {
    // A folder_hash filter naming another folder than the path's lists nothing (never widens).
    const elsewhere = query.folderHash !== null && query.folderHash !== folderHash;
    const filtering = query.exts !== null || query.q !== null || query.uploader !== null;
    const entryNames =
      filtering || elsewhere ? [] : await this.entries.childNames(owner, folderHash, query.path);
    return this.repo.snapshot(() => {
      const { path, offset, limit } = query;
      const oid = elsewhere ? null : this.repo.ownerId(owner);
      const prefix = path === "" ? "" : `${path}/`;
      const folders: BrowseFolderEntry[] = [];
      if (!filtering) {
        if (oid !== null)
          for (const d of this.repo.subdirs(oid, folderHash, path))
            folders.push({
              name: d.path.slice(prefix.length),
              file_count: d.fileCount,
              total_bytes: d.totalBytes,
            });
        // Explicit directories (extensions §1.5) without files below them, once by name.
        const derived = new Set(folders.map((f) => f.name));
        for (const name of entryNames)
          if (!derived.has(name)) folders.push({ name, file_count: 0, total_bytes: 0 });
        folders.sort(byName);
      }
      const conds: Cond[] = [{ kind: "dir", folderHash, dir: path }];
      if (query.exts) conds.push({ kind: "exts", exts: query.exts });
      if (query.q !== null) conds.push({ kind: "substr", q: query.q });
      if (query.uploader !== null) conds.push({ kind: "uploader", by: query.uploader.by });
      const fileTotal = oid === null || query.nothing ? 0 : this.repo.count(oid, "dir", conds);
      const pageFolders = folders.slice(offset, offset + limit);
      const fileOffset = Math.max(0, offset - folders.length);
      const fileLimit = limit - pageFolders.length;
      const keys =
        oid === null || fileLimit === 0 || fileOffset >= fileTotal
          ? []
          : this.repo.page(oid, "dir", conds, query.sortBy, query.descending, fileOffset, fileLimit);
      const files = this.repo.hits(owner, keys).map(toRemoteFileEntry);
      const total = folders.length + fileTotal;
      return {
        ss58_address: owner,
        folder_hash: folderHash,
        path,
        folders: pageFolders,
        files,
        total_count: total,
        has_more: offset + pageFolders.length + files.length < total,
        offset,
        limit,
      };
    });
  }
}
