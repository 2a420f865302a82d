/**
 * @module server/search/file-types
 * The `file_type` filter of `/search_files` and `/browse` (docs/protocol.md#search, #open-rules): category
 * names, explicit extensions, comma-separated lists of either.
 */
import { fail } from "@esync/protocol/errors.ts";

/** The categories of docs/protocol.md#search and their extensions (lower-case, with the dot). */
export const FILE_TYPE_CATEGORIES: Readonly<Record<string, readonly string[]>> = {
  image: [".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".bmp", ".ico", ".tiff"],
  video: [".mp4", ".mov", ".avi", ".mkv", ".webm", ".flv", ".wmv"],
  audio: [".mp3", ".wav", ".ogg", ".flac", ".aac", ".m4a", ".wma"],
  document: [".doc", ".docx", ".xls", ".xlsx", ".ppt", ".pptx", ".txt", ".csv", ".rtf"],
  pdf: [".pdf"],
  archive: [".zip", ".rar", ".7z", ".tar", ".gz", ".bz2"],
  code: [".js", ".ts", ".py", ".rs", ".go", ".java", ".c", ".cpp", ".html", ".css", ".json"],
};

/** An explicit extension (docs/protocol.md#open-rules): a dot and 1–16 ASCII letters or digits. */
const EXPLICIT_EXTENSION = /^\.[A-Za-z0-9]{1,16}$/;

/**
 * Parses a `file_type` value into the sorted, de-duplicated set of lower-case extensions it
 * matches. Entries are separated by commas and trimmed; category names are case-insensitive.
 * A file matches when its extension (`files.ext`: the lower-cased text from the last dot of the
 * last path segment of its name, see `extensionOf`) is in the set.
 * @throws AppError `invalid_file_type` (400) for an empty entry, `other`, an unknown category or
 *   a malformed extension (`png` without the dot, `.tar.gz`, over 16 characters, non-ASCII).
 */
export function parseFileType(raw: string): string[] {
  const out = new Set<string>();
  for (const part of raw.split(",")) {
    const entry = part.trim();
    if (entry === "") throw fail("invalid_file_type", "file_type has an empty entry");
    if (entry.startsWith(".")) {
      if (!EXPLICIT_EXTENSION.test(entry)) {
        throw fail(
          "invalid_file_type",
          `file_type '${entry}' is not an extension: a dot and 1–16 letters or digits`,
        );
      }
      out.add(entry.toLowerCase());
      continue;
    }
    const name = entry.toLowerCase();
    if (name === "other") throw fail("invalid_file_type", "file_type 'other' has no extensions defined");
    const category = Object.hasOwn(FILE_TYPE_CATEGORIES, name) ? FILE_TYPE_CATEGORIES[name] : undefined;
    if (category === undefined) {
      const known = Object.keys(FILE_TYPE_CATEGORIES).join(", ");
      throw fail(
        "invalid_file_type",
        `file_type '${entry}' is unknown; use one of ${known} or an extension such as .png`,
      );
    }
    for (const ext of category) out.add(ext);
  }
  return [...out].sort();
}
