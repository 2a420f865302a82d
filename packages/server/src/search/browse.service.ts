/**
 * @module server/search/browse.service
 * `GET /browse/{ss58}/{folder_hash}` (issue 3): one directory of a folder, as a file manager shows
 * it. The immediate sub-folders of `path` come first (alphabetical, case-insensitive), each with
 * the recursive file count and bytes under it; then the files directly in `path`, sorted as
 * search sorts (`path_hash` tiebreak; also by `extension` or `uploaded_by`, docs/protocol.md#api-profiles). One
 * offset space runs over both; `total_count` is folders plus files. `file_type`, `q` and
 * `uploaded_by` filter the files and hide the folders. Files without a
 * `relative_path` have no place in the tree and are never listed.
 *
 * Directories come from `relative_path`: everything before its last `/`, without leading or
 * trailing `/`. Folder counts are kept per directory by the index (`search_dirs`), so a folder
 * root with 300,000 files below it costs one small range read, not a scan. Registered directory
 * entries (docs/protocol.md#folder-entries) add the sub-folders no file lies under, with zero counts.
 */

import type { BrowseFolderEntry, BrowseResult } from "@esync/protocol/types.ts";
import { toRemoteFileEntry } from "../files/file-entry.ts";
import type { FolderEntriesRepository } from "../folders/folder-entries.repository.ts";
import type { BrowseQuery } from "./search.query.ts";
import type { DegradedStateLog } from "./search.service.ts";
import type { SearchIndex } from "./search-index.ts";

export type { BrowseFolderEntry, BrowseResult } from "@esync/protocol/types.ts";

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
    private readonly index: SearchIndex,
    private readonly entries: Pick<FolderEntriesRepository, "childNames">,
    /** Where a degraded index is reported (shared with search); none: not reported. */
    private readonly degraded?: DegradedStateLog,
  ) {}

  /**
   * Lists one directory of `owner`'s folder `folderHash` (the caller has checked ownership).
   * The sub-folders, the explicit directories and the file page are three reads; a write between
   * them can make one listing count a file both as moved and as not yet moved.
   */
  async browse(owner: string, folderHash: string, query: BrowseQuery): Promise<BrowseResult> {
    const { path, offset, limit } = query;
    // A folder_hash filter naming another folder than the path's lists nothing (never widens).
    const elsewhere = query.folderHash !== null && query.folderHash !== folderHash;
    const filtering = query.exts !== null || query.q !== null || query.uploader !== null;
    const prefix = path === "" ? "" : `${path}/`;
    const folders: BrowseFolderEntry[] = [];
    if (!filtering && !elsewhere) {
      for (const d of await this.index.subdirectories(owner, folderHash, path))
        folders.push({
          name: d.path.slice(prefix.length),
          file_count: d.fileCount,
          total_bytes: d.totalBytes,
        });
      // Explicit directories (docs/protocol.md#folder-entries) without files below them, once by name.
      const derived = new Set(folders.map((f) => f.name));
      for (const name of await this.entries.childNames(owner, folderHash, path))
        if (!derived.has(name)) folders.push({ name, file_count: 0, total_bytes: 0 });
      folders.sort(byName);
    }
    const pageFolders = folders.slice(offset, offset + limit);
    const fileOffset = Math.max(0, offset - folders.length);
    const fileLimit = limit - pageFolders.length;
    const page =
      elsewhere || query.nothing
        ? { total: 0, hits: [], degraded: null }
        : await this.index.directory(owner, folderHash, {
            path,
            q: query.q,
            exts: query.exts,
            uploader: query.uploader,
            sortBy: query.sortBy,
            descending: query.descending,
            offset: fileOffset,
            limit: fileLimit,
          });
    this.degraded?.saw(page.degraded);
    const files = page.hits.map(toRemoteFileEntry);
    const total = folders.length + page.total;
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
  }
}
