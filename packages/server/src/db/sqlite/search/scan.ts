/**
 * @module server/db/sqlite/search/scan
 * The exact plan of the SQLite search index: searches, directory listings and sub-directory
 * counts answered from the `files` rows alone, without any index table. It is what a degraded
 * index (`SearchIndexHealth`) answers with: slower (a scan of the owner's rows and a sort), but
 * exact, since `files` is the source the index derives from.
 *
 * The expressions mirror what the triggers store in `search_entries`: `name` is `search_name`
 * with ς read as σ, `dir` is `relative_path` up to its last `/` without leading or trailing `/`.
 */
import type { SQLQueryBindings } from "bun:sqlite";
import { directoryFilter, type RowFilter, searchFilter } from "../../../search/row-filter.ts";
import type { SearchQuery } from "../../../search/search.query.ts";
import type { DirectoryQuery, DirRow, OrderKey } from "../../../search/search-index.ts";
import type { Db } from "../../client.ts";
import type { PageKey } from "./repository.ts";

/** `search_entries.dir` of a `files` row. */
const DIR_SQL = "trim(rtrim(relative_path, replace(relative_path, '/', '')), '/')";

const ORDER_SQL: Record<OrderKey, string> = {
  file_name: "file_name",
  size_bytes: "size_bytes",
  created_at: "created_at",
  updated_at: "updated_at",
  extension: "ext",
  uploaded_by: "uploaded_by",
};

/** Queries over `files` that need no index table. */
export class SqliteScan {
  constructor(private readonly db: Db) {}

  private get sql() {
    return this.db.$client;
  }

  private where(owner: string, f: RowFilter): { sql: string; params: SQLQueryBindings[] } {
    const where = ["owner = ?"];
    const params: SQLQueryBindings[] = [owner];
    if (f.folderHash !== null) {
      where.push("folder_hash = ?");
      params.push(f.folderHash);
    }
    if (f.dir !== null) {
      where.push("relative_path IS NOT NULL", `${DIR_SQL} = ?`);
      params.push(f.dir);
    }
    if (f.q !== null) {
      where.push("instr(replace(search_name, 'ς', 'σ'), ?) > 0");
      params.push(f.q);
    }
    if (f.exts !== null) {
      where.push(`ext IN (${f.exts.map(() => "?").join(", ")})`);
      params.push(...f.exts);
    }
    if (f.size) {
      where.push("size_bytes BETWEEN ? AND ?");
      params.push(...f.size);
    }
    if (f.created) {
      where.push("created_at BETWEEN ? AND ?");
      params.push(...f.created);
    }
    if (f.uploader !== null) {
      where.push("uploaded_by IS ?");
      params.push(f.uploader.by);
    }
    return { sql: where.join(" AND "), params };
  }

  /** Exact total and page keys of the files of `owner` that pass `f`, in `sortBy`, `path_hash` order. */
  private run(
    owner: string,
    f: RowFilter,
    page: { sortBy: OrderKey; descending: boolean; offset: number; limit: number },
  ): { total: number; keys: PageKey[] } {
    const w = this.where(owner, f);
    const total =
      this.sql
        .query<{ n: number }, SQLQueryBindings[]>(`SELECT count(*) AS n FROM files WHERE ${w.sql}`)
        .get(...w.params)?.n ?? 0;
    if (page.offset >= total || page.limit === 0) return { total, keys: [] };
    const dir = page.descending ? "DESC" : "ASC";
    const keys = this.sql
      .query<{ folder_hash: string; path_hash: Uint8Array }, SQLQueryBindings[]>(
        `SELECT folder_hash, path_hash FROM files WHERE ${w.sql}
         ORDER BY ${ORDER_SQL[page.sortBy]} ${dir}, path_hash ${dir} LIMIT ? OFFSET ?`,
      )
      .all(...w.params, page.limit, page.offset)
      .map((r) => ({ folderHash: r.folder_hash, pathHash: r.path_hash }));
    return { total, keys };
  }

  /** A search (docs/protocol.md#search) over `files`. */
  search(owner: string, q: SearchQuery): { total: number; keys: PageKey[] } {
    return this.run(owner, searchFilter(q), q);
  }

  /** The files directly in one directory of a folder (browse) over `files`. */
  directory(owner: string, folderHash: string, q: DirectoryQuery): { total: number; keys: PageKey[] } {
    return this.run(owner, directoryFilter(folderHash, q), q);
  }

  /** The immediate sub-directories of `path` in a folder, with recursive counts, from `files`. */
  subdirectories(owner: string, folderHash: string, path: string): DirRow[] {
    const rows = this.sql
      .query<{ dir: string; n: number; bytes: number }, [string, string]>(
        `SELECT ${DIR_SQL} AS dir, count(*) AS n, sum(size_bytes) AS bytes FROM files
         WHERE owner = ? AND folder_hash = ? AND relative_path IS NOT NULL GROUP BY 1`,
      )
      .all(owner, folderHash);
    return childDirs(rows, path);
  }
}

/**
 * The immediate sub-directories of `path` (`""` = root) with recursive counts, from the file
 * count and bytes of each directory (`dir` as `search_entries.dir`).
 */
function childDirs(rows: readonly { dir: string; n: number; bytes: number }[], path: string): DirRow[] {
  const prefix = path === "" ? "" : `${path}/`;
  const out = new Map<string, DirRow>();
  for (const r of rows) {
    if (r.dir === "" || !r.dir.startsWith(prefix) || r.dir.length === prefix.length) continue;
    const rest = r.dir.slice(prefix.length);
    const slash = rest.indexOf("/");
    const child = `${prefix}${slash < 0 ? rest : rest.slice(0, slash)}`;
    const d = out.get(child) ?? { path: child, fileCount: 0, totalBytes: 0 };
    d.fileCount += r.n;
    d.totalBytes += r.bytes;
    out.set(child, d);
  }
  return [...out.values()];
}
