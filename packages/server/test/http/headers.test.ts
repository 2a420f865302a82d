/**
 * The request headers controllers parse into typed values for the services: `Range` (RFC 9110
 * single range) and the multipart boundary of `Content-Type` (RFC 7578).
 */
import { describe, expect, test } from "bun:test";
import { multipartBoundary, parseRangeHeader, resolveRange } from "../../src/http/headers.ts";
import { makeTestApp } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext } from "../support/fixtures.ts";
import { authAt, expectSuccess, multipart, UPLOAD_RESULT_KEYS } from "./helpers.ts";

describe("parseRangeHeader", () => {
  test("reads a-b, a- and -n, with spaces and any case of 'bytes'", () => {
    expect(parseRangeHeader("bytes=0-99")).toEqual({ start: 0, end: 99 });
    expect(parseRangeHeader(" BYTES = 5 - ")).toEqual({ start: 5 });
    expect(parseRangeHeader("bytes=-10")).toEqual({ suffix: 10 });
  });

  test("ignores absent, malformed, multi-range and reversed values (the whole body is served)", () => {
    for (const h of [undefined, null, "", "bytes=-", "items=0-1", "bytes=0-1,3-4", "bytes=a-b", "bytes=9-3"])
      expect(parseRangeHeader(h)).toBeNull();
  });
});

describe("resolveRange", () => {
  test("gives [start, end) with the end clamped to the size", () => {
    expect(resolveRange({ start: 0, end: 99 }, 50)).toEqual([0, 50]);
    expect(resolveRange({ start: 10 }, 50)).toEqual([10, 50]);
    expect(resolveRange({ suffix: 80 }, 50)).toEqual([0, 50]);
    expect(resolveRange(null, 50)).toBeNull();
  });

  test("is unsatisfiable for a start at or past the end, an empty suffix, or an empty body", () => {
    expect(resolveRange({ start: 50 }, 50)).toBe("unsatisfiable");
    expect(resolveRange({ suffix: 0 }, 50)).toBe("unsatisfiable");
    expect(resolveRange({ suffix: 5 }, 0)).toBe("unsatisfiable");
  });
});

describe("multipartBoundary", () => {
  test("reads a plain or quoted boundary, in any case and position", () => {
    expect(multipartBoundary("multipart/form-data; boundary=abc123")).toBe("abc123");
    expect(multipartBoundary('Multipart/Form-Data; charset=utf-8; BOUNDARY="a b:c"')).toBe("a b:c");
  });

  test("is null for another type or a missing boundary", () => {
    for (const h of [
      undefined,
      null,
      "",
      "application/json",
      "multipart/mixed; boundary=x",
      "multipart/form-data",
    ])
      expect(multipartBoundary(h)).toBeNull();
  });
});

describe("POST /upload with a quoted boundary", () => {
  test("returns 200: the controller's boundary reaches the multipart parser intact", async () => {
    const t = makeTestApp();
    try {
      const u = newUser();
      const ct = randomCiphertext(3000);
      const boundary = "esync boundary:1";
      const { body } = multipart(
        [
          { name: "manifest", data: JSON.stringify(makeManifest({ owner: u.address, ciphertext: ct })) },
          { name: "ciphertext", data: ct },
        ],
        boundary,
      );
      const r = await t.json("/upload", {
        method: "POST",
        headers: {
          authorization: authAt(t, u),
          "content-type": `multipart/form-data; boundary="${boundary}"`,
        },
        body: body as BodyInit,
      });
      expectSuccess(r, UPLOAD_RESULT_KEYS);
    } finally {
      await t.close();
    }
  });
});
