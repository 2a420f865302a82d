/**
 * Reading the query strings of /search_files and /browse: every rule of docs/protocol.md#search and
 * docs/protocol.md#open-rules about parameters, as pure functions (the HTTP tests check the same codes end to end).
 */
import { describe, expect, test } from "bun:test";
import { AppError } from "@esync/protocol/errors.ts";
import { profileRules } from "../../src/config/profile.ts";
import { FILE_TYPE_CATEGORIES, parseFileType } from "../../src/search/file-types.ts";
import { foldCase, parseBrowseQuery, parseSearchQuery } from "../../src/search/search.query.ts";

const parse = (qs: string) => parseSearchQuery(new URLSearchParams(qs));
const parseBrowse = (qs: string) => parseBrowseQuery(new URLSearchParams(qs));

/** The error code `fn` throws. */
function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof AppError) return e.code;
    throw e;
  }
  return "no error";
}

describe("file_type", () => {
  test("each category means exactly the extensions of docs/protocol.md#search", () => {
    expect(parseFileType("image")).toEqual([
      ".bmp",
      ".gif",
      ".ico",
      ".jpeg",
      ".jpg",
      ".png",
      ".svg",
      ".tiff",
      ".webp",
    ]);
    expect(parseFileType("pdf")).toEqual([".pdf"]);
    for (const [name, exts] of Object.entries(FILE_TYPE_CATEGORIES))
      expect(parseFileType(name)).toEqual([...exts].sort());
    expect(Object.keys(FILE_TYPE_CATEGORIES).sort()).toEqual([
      "archive",
      "audio",
      "code",
      "document",
      "image",
      "pdf",
      "video",
    ]);
  });

  test("an explicit extension is lower-cased, and a comma list matches any entry (deduplicated)", () => {
    expect(parseFileType(".PNG")).toEqual([".png"]);
    expect(parseFileType("image,.pdf")).toEqual(parseFileType("image").concat(".pdf").sort());
    expect(parseFileType(" pdf , .PDF ")).toEqual([".pdf"]);
    expect(parseFileType("IMAGE")).toEqual(parseFileType("image"));
    expect(parseFileType(".a1b2c3d4e5f6g7h8")).toEqual([".a1b2c3d4e5f6g7h8"]);
  });

  test("other, unknown names and malformed extensions are 400 invalid_file_type", () => {
    for (const bad of [
      "other",
      "Other",
      "png",
      "images",
      ".tar.gz",
      ".",
      ".p-g",
      ".a1b2c3d4e5f6g7h8i",
      ".pñg",
      "image,",
      ",pdf",
      "image,,pdf",
      "image,other",
      "__proto__",
      "constructor",
    ]) {
      expect({ bad, code: codeOf(() => parseFileType(bad)) }).toEqual({ bad, code: "invalid_file_type" });
    }
  });
});

describe("search query string", () => {
  test("defaults: no filters, created_at desc, offset 0, limit 25", () => {
    expect(parse("")).toEqual({
      q: null,
      exts: null,
      sizeMin: null,
      sizeMax: null,
      dateFrom: null,
      dateTo: null,
      uploader: null,
      folderHash: null,
      nothing: false,
      sortBy: "created_at",
      descending: true,
      offset: 0,
      limit: 25,
    });
  });

  test("limit 0 means the default, and limit is capped at 10000", () => {
    expect(parse("limit=0").limit).toBe(25);
    expect(parse("limit=10000").limit).toBe(10000);
    expect(parse("limit=10001").limit).toBe(10000);
    expect(parse("limit=99999999999999999999").limit).toBe(10000);
    expect(parse("limit=7&offset=9")).toMatchObject({ limit: 7, offset: 9 });
  });

  test("numeric parameters that are not non-negative integers are 400 invalid_parameter", () => {
    for (const name of ["size_min", "size_max", "date_from", "date_to", "offset", "limit"]) {
      for (const bad of ["-1", "1.5", "abc", "1e3", "+3", " 4", "0x10", "１"]) {
        expect({ name, bad, code: codeOf(() => parse(`${name}=${encodeURIComponent(bad)}`)) }).toEqual({
          name,
          bad,
          code: "invalid_parameter",
        });
      }
    }
  });

  test("empty numeric values are absent, huge ones saturate at 2^53 - 1", () => {
    expect(parse("size_min=&date_to=")).toMatchObject({ sizeMin: null, dateTo: null });
    expect(parse("size_max=123456789012345678901234567890").sizeMax).toBe(Number.MAX_SAFE_INTEGER);
  });

  test("sort_by falls back to created_at and sort_order (case-insensitive) to desc", () => {
    expect(parse("sort_by=file_name&sort_order=asc")).toMatchObject({
      sortBy: "file_name",
      descending: false,
    });
    expect(parse("sort_by=size_bytes&sort_order=ASC")).toMatchObject({
      sortBy: "size_bytes",
      descending: false,
    });
    expect(parse("sort_by=updated_at&sort_order=Desc")).toMatchObject({
      sortBy: "updated_at",
      descending: true,
    });
    expect(parse("sort_by=name&sort_order=up")).toMatchObject({ sortBy: "created_at", descending: true });
    expect(parse("sort_by=FILE_NAME")).toMatchObject({ sortBy: "created_at" });
  });

  test("q counts characters: 256 are accepted, 257 are 400 q_too_long, astral characters count once", () => {
    expect(parse(`q=${"a".repeat(256)}`).q).toBe("a".repeat(256));
    expect(codeOf(() => parse(`q=${"a".repeat(257)}`))).toBe("q_too_long");
    expect(parse(`q=${encodeURIComponent("😀".repeat(256))}`).q).toBe("😀".repeat(256));
    expect(codeOf(() => parse(`q=${encodeURIComponent("😀".repeat(257))}`))).toBe("q_too_long");
  });

  test("q is case-folded (Unicode), with % and _ kept literally; empty q is no filter", () => {
    expect(parse(`q=${encodeURIComponent("ÄBC%_")}`).q).toBe("äbc%_");
    expect(parse("q=").q).toBeNull();
    expect(foldCase("ΟΔΟΣ")).toBe("οδοσ");
    expect(foldCase("ς")).toBe("σ");
  });

  test("hcfs profile: q is trimmed and a term under 3 characters matches nothing, whitespace only included", () => {
    const hcfs = (qs: string) => parseSearchQuery(new URLSearchParams(qs), profileRules("hcfs"));
    for (const q of [" ", "   ", "ab", " ab ", "😀a"])
      expect({ q, nothing: hcfs(`q=${encodeURIComponent(q)}`).nothing }).toEqual({ q, nothing: true });
    expect(hcfs(`q=${encodeURIComponent("  abc  ")}`)).toMatchObject({ q: "abc", nothing: false });
    expect(hcfs("q=")).toMatchObject({ q: null, nothing: false });
    expect(hcfs("")).toMatchObject({ q: null, nothing: false });
    expect(parse("q=%20")).toMatchObject({ q: " ", nothing: false });
  });

  test("U+0000 in a text parameter is 400 invalid_parameter (no stored name holds it), on search and browse", () => {
    for (const qs of ["q=a%00b", "q=%00%00%00", "uploaded_by=%00", "file_type=pdf%00"])
      expect({ qs, code: codeOf(() => parse(qs)) }).toEqual({ qs, code: "invalid_parameter" });
    for (const qs of ["path=%00", "path=a%00", "q=%00", "uploaded_by=%00"])
      expect({ qs, code: codeOf(() => parseBrowse(qs)) }).toEqual({ qs, code: "invalid_parameter" });
  });

  test("file_type is parsed; empty is no filter; an invalid one is 400 invalid_file_type", () => {
    expect(parse("file_type=pdf,.PNG").exts).toEqual([".pdf", ".png"]);
    expect(parse("file_type=").exts).toBeNull();
    expect(codeOf(() => parse("file_type=other"))).toBe("invalid_file_type");
  });
});

describe("browse query string", () => {
  test("path loses leading and trailing slashes; default limit 50, capped at 200", () => {
    expect(parseBrowse("")).toMatchObject({
      path: "",
      limit: 50,
      offset: 0,
      sortBy: "created_at",
      descending: true,
    });
    expect(parseBrowse("path=/docs/2024/").path).toBe("docs/2024");
    expect(parseBrowse("path=/").path).toBe("");
    expect(parseBrowse("limit=201").limit).toBe(200);
    expect(parseBrowse("limit=0").limit).toBe(50);
  });

  test("sort_order is used only with sort_by (docs/protocol.md#api-profiles): alone it leaves the default order", () => {
    expect(parseBrowse("sort_order=asc")).toMatchObject({ sortBy: "created_at", descending: true });
    expect(parseBrowse("sort_by=&sort_order=asc")).toMatchObject({ sortBy: "created_at", descending: true });
    expect(parseBrowse("sort_by=file_name&sort_order=asc")).toMatchObject({
      sortBy: "file_name",
      descending: false,
    });
    expect(parseBrowse("sort_by=nope&sort_order=asc")).toMatchObject({
      sortBy: "created_at",
      descending: false,
    });
  });

  test("a path containing .. or a backslash is 400 invalid_parameter", () => {
    for (const bad of ["..", "a/../b", "a..b", "../", "a\\b", "\\"]) {
      expect({ bad, code: codeOf(() => parseBrowse(`path=${encodeURIComponent(bad)}`)) }).toEqual({
        bad,
        code: "invalid_parameter",
      });
    }
  });

  test("file_type and q are checked as in search", () => {
    expect(codeOf(() => parseBrowse("file_type=other"))).toBe("invalid_file_type");
    expect(codeOf(() => parseBrowse(`q=${"x".repeat(257)}`))).toBe("q_too_long");
    expect(codeOf(() => parseBrowse("offset=-1"))).toBe("invalid_parameter");
  });
});
