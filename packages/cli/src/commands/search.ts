/**
 * @module cli/commands/search
 * `esync search [Q]`: cross-folder file search on the server (`/search_files`, docs/protocol.md#search),
 * printed as a table with human-readable sizes and ISO dates, or as the server's JSON.
 * `--folder LABEL` searches one of the account's folders; `--drive OWNER/LABEL` searches a joined
 * drive: the owner's address with the drive's `folder_hash`, which a member must name
 * (docs/drives.md, "Members on the file routes"); a refusal is explained as for the folder commands.
 */

import type { SearchFilters, SearchResult, SortColumn } from "@esync/client/api-types.ts";
import { folderHash } from "@esync/client/keys.ts";
import type { Command } from "commander";
import type { GlobalOptions } from "../config.ts";
import { loadContext } from "../context.ts";
import { inDrive, resolveDrive } from "../drives.ts";
import {
  formatDate,
  formatSize,
  parseSize,
  parseTime,
  printJson,
  println,
  table,
  usageError,
} from "../output.ts";
import { checkLabel } from "./folder.ts";

interface SearchOptions {
  folder?: string;
  drive?: string;
  type?: string;
  minSize?: string;
  maxSize?: string;
  since?: string;
  until?: string;
  sort: string;
  asc?: boolean;
  limit: string;
  offset: string;
}

const SORTS: Record<string, SortColumn> = {
  name: "file_name",
  size: "size_bytes",
  created: "created_at",
  updated: "updated_at",
};

function nonNegative(name: string, value: string, max: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > max) throw usageError(`${name} must be an integer 0..${max}`);
  return n;
}

/** The `/search_files` filters of the command-line options. */
export function searchFilters(q: string | undefined, o: SearchOptions, now = Date.now()): SearchFilters {
  const sortBy = SORTS[o.sort];
  if (!sortBy) throw usageError(`--sort must be one of ${Object.keys(SORTS).join(", ")}`);
  const filters: SearchFilters = {
    q: q === undefined || q === "" ? undefined : q,
    fileType: o.type,
    sizeMin: o.minSize === undefined ? undefined : parseSize(o.minSize),
    sizeMax: o.maxSize === undefined ? undefined : parseSize(o.maxSize),
    dateFrom: o.since === undefined ? undefined : parseTime(o.since, now),
    dateTo: o.until === undefined ? undefined : parseTime(o.until, now),
    sortBy,
    sortOrder: o.asc ? "asc" : "desc",
    limit: nonNegative("--limit", o.limit, 10000) || 25,
    offset: nonNegative("--offset", o.offset, Number.MAX_SAFE_INTEGER),
  };
  if (filters.q !== undefined && [...filters.q].length > 256)
    throw usageError("the query is over 256 characters");
  return filters;
}

/** Registers `esync search` on `program`. */
export function registerSearch(program: Command): void {
  program
    .command("search")
    .description("search files across all folders (name substring, type, size, date)")
    .argument("[query]", "case-insensitive substring of the file name")
    .option("-f, --folder <label>", "search this folder of yours only")
    .option(
      "-d, --drive <drive>",
      "search a joined shared drive, OWNER/LABEL (`esync drive join`), instead of your folders",
    )
    .option(
      "-t, --type <type>",
      "category (image, video, audio, document, pdf, archive, code) or extension (.png); comma-separated for several",
    )
    .option("--min-size <size>", "at least this size, e.g. 10MiB")
    .option("--max-size <size>", "at most this size")
    .option(
      "--since <when>",
      "created at or after: 2026-11-01, 2026-11-01T12:00:00Z, or an age like 7d / 12h",
    )
    .option("--until <when>", "created at or before (same forms)")
    .option("-s, --sort <column>", "name, size, created or updated", "created")
    .option("--asc", "ascending order (default descending)")
    .option("-l, --limit <n>", "rows to show (max 10000)", "25")
    .option("--offset <n>", "rows to skip", "0")
    .addHelpText(
      "after",
      `
Examples:
  esync search report --type pdf,document --since 30d
  esync search --min-size 100MiB --sort size
  esync search .jpg --json
  esync search plan --drive 5Grw...utQY/team`,
    )
    .action(async (query: string | undefined, opts: SearchOptions, cmd: Command) => {
      const ctx = await loadContext(cmd.optsWithGlobals<GlobalOptions>(), "read");
      if (opts.folder !== undefined && opts.drive !== undefined)
        throw usageError(
          "give --folder LABEL (your folder) or --drive OWNER/LABEL (a joined drive), not both",
        );
      const filters = searchFilters(query, opts);
      let r: SearchResult;
      if (opts.drive !== undefined) {
        const drive = await resolveDrive(ctx, opts.drive);
        r = await inDrive(ctx, drive, () =>
          ctx.api.searchFiles(drive.owner_ss58, { ...filters, folderHash: drive.folder_hash }),
        );
      } else {
        const hash = opts.folder === undefined ? undefined : folderHash(checkLabel(opts.folder));
        r = await ctx.api.searchFiles(ctx.address, { ...filters, folderHash: hash });
      }
      if (ctx.json) return printJson(r);
      if (r.files.length === 0) {
        println(
          r.total_count > 0 ? `no rows at offset ${r.offset} (${r.total_count} match)` : "no matching files",
        );
        return;
      }
      println(
        table(
          [
            { header: "SIZE", align: "right" },
            { header: "CREATED" },
            { header: "UPDATED" },
            { header: "FOLDER" },
            { header: "PATH" },
          ],
          r.files.map((f) => [
            formatSize(f.size_bytes),
            formatDate(f.created_at),
            formatDate(f.updated_at),
            f.folder_label || f.folder_hash,
            f.relative_path ?? f.file_name ?? "(no path)",
          ]),
        ),
      );
      const last = r.offset + r.files.length;
      println(
        `${r.offset + 1}-${last} of ${r.total_count}${r.has_more ? ` (next page: --offset ${last})` : ""}`,
      );
    });
}
