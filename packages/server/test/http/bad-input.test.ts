/**
 * Hostile and malformed input: unknown routes, garbage JSON, wrong types, huge numbers, unknown
 * and path-traversal session ids. Each gets its 4xx in the error envelope and nothing stored
 * (database rows, blob and spool files) changes. Also `/health`.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { MAX_JSON_DEPTH } from "../../src/util/json-depth.ts";
import { jsonInit, makeTestApp, type TestApp } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext, type TestUser } from "../support/fixtures.ts";
import {
  abort,
  authAt,
  createSessionRaw,
  expectError,
  FOLDER,
  finalize,
  type OpenSession,
  openSession,
  putChunk,
  putChunks,
  snapshot,
  status,
  uploadParts,
  uploadSingle,
} from "./helpers.ts";

let t: TestApp;
let u: TestUser;
let live: OpenSession;
let ct: Buffer;

beforeEach(async () => {
  t = makeTestApp();
  u = newUser();
  ct = randomCiphertext(2000);
  // Something stored, so that "nothing changed" is checked against a non-empty state.
  live = await openSession(t, u, ct, { chunkSize: 1000 });
  await putChunks(t, live, ct, [0]);
});
afterEach(() => t.close());

describe("GET /health", () => {
  test("returns 200 {status: healthy, version, capabilities} without authentication", async () => {
    const r = await t.json("/health");
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(["capabilities", "status", "version"]);
    expect(r.body.status).toBe("healthy");
    expect(typeof r.body.version).toBe("string");
    expect(Array.isArray(r.body.capabilities)).toBe(true);
    expect(r.body.capabilities.every((c: unknown) => typeof c === "string")).toBe(true);
    expect(r.body.capabilities).toEqual(
      expect.arrayContaining(["upload", "upload_session", "get_state", "delete", "download"]),
    );
  });
});

describe("unknown routes", () => {
  for (const [method, path] of [
    ["GET", "/"],
    ["GET", "/nope"],
    ["POST", "/upload/session/abc/chunk"],
    ["GET", "/upload/session"],
    ["PATCH", "/register_folder"],
    ["GET", "/list_folders"],
    ["GET", "/get_state/only-one-segment"],
    ["PUT", "/upload/session/abc/chunk/0/extra"],
  ] as const) {
    test(`returns 404 not_found in the error envelope for ${method} ${path}`, async () => {
      const before = await snapshot(t);
      const r = await t.json(path, { method, headers: { authorization: authAt(t, u) } });
      expectError(r, 404, "not_found");
      expect(await snapshot(t)).toEqual(before);
    });
  }
});

describe("routes not mounted in the /v1/ space (docs/protocol.md#response-families, rule 2): 404 with an empty body", () => {
  for (const [method, path] of [
    ["GET", "/v1"],
    ["GET", "/v1/"],
    ["GET", "/v1/shares/abc/unknown"],
    ["POST", "/v1/folder-shares/uploads"],
    ["PUT", "/v1/drives/0123456789abcdef/grants/abc"],
    ["GET", "/v1/folder-shares/abc/unknown"],
    ["DELETE", "/v1/folder-shares/by-hash/abc/extra"],
    ["POST", "/v1/drive-invites/email"],
    ["GET", "/v1/drives/0123456789abcdef"],
    ["POST", "/v1/capabilities"],
    ["HEAD", "/v1/drives/0123456789abcdef"],
  ] as const) {
    for (const auth of [true, false]) {
      test(`${method} ${path} ${auth ? "with" : "without"} a token`, async () => {
        const before = await snapshot(t);
        const r = await t.fetch(path, { method, headers: auth ? { authorization: authAt(t, u) } : {} });
        expect(r.status).toBe(404);
        expect(await r.text()).toBe("");
        expect(r.headers.get("content-type")).toBeNull();
        expect(await snapshot(t)).toEqual(before);
      });
    }
  }

  test("a mounted /v1 route still answers (GET /v1/capabilities: 200 JSON)", async () => {
    const r = await t.json("/v1/capabilities");
    expect(r.status).toBe(200);
    expect(typeof r.body).toBe("object");
  });

  test("a missing object under /v1 is not a missing route: paths that only look alike keep the envelope", async () => {
    const r = await t.json("/v1x/shares", { headers: { authorization: authAt(t, u) } });
    expectError(r, 404, "not_found");
  });
});

describe("garbage and wrongly typed JSON bodies: 400 invalid_manifest, nothing stored", () => {
  const bodies: [string, string | Uint8Array][] = [
    ["truncated JSON", '{"manifest": {"ss58_address": '],
    ["a JSON null", "null"],
    ["a JSON number", "42"],
    ["a JSON string", '"manifest"'],
    ["binary that is not UTF-8", new Uint8Array([0xff, 0xfe, 0x7b, 0x7d])],
    ["whitespace only", "   \n "],
    [
      "a number too large for any integer (1e309)",
      '{"manifest": {}, "chunk_count": 1e309, "chunk_size": 1, "ciphertext_size": 1}',
    ],
    ["deeply nested arrays", `{"manifest": ${"[".repeat(5000)}${"]".repeat(5000)}}`],
    ["objects nested 50,000 deep", `{"manifest": ${'{"a":'.repeat(50_000)}1${"}".repeat(50_000)}}`],
    ["arrays nested 50,000 deep", `{"manifest": ${"[".repeat(50_000)}1${"]".repeat(50_000)}}`],
    ["an empty top-level array", "[]"],
    ["a top-level array of numbers", "[1, 2]"],
    ["a top-level array holding the right object", `[{"entries": [], "file_ids": [], "renames": []}]`],
  ];
  for (const [what, body] of bodies) {
    for (const [method, route] of [
      ["POST", "/upload/session"],
      ["POST", "/register_folder"],
      ["DELETE", "/unregister_folder"],
      ["POST", "/delete_files"],
      ["POST", "/rename_files"],
      ["POST", "/register_folder_entries"],
      ["DELETE", "/unregister_folder_entries"],
      ["POST", "/register_relative_paths/{ss58}/{folder_hash}"],
    ] as const) {
      test(`${method} ${route} with ${what} returns 400 invalid_manifest`, async () => {
        const before = await snapshot(t);
        const path = route.replace("{ss58}", u.address).replace("{folder_hash}", FOLDER);
        const r = await t.json(path, {
          method,
          headers: { authorization: authAt(t, u), "content-type": "application/json" },
          body: body as BodyInit,
        });
        expectError(r, 400, "invalid_manifest");
        expect(await snapshot(t)).toEqual(before);
      });
    }
  }

  test("a body nested one level past the JSON nesting limit returns 400 invalid_manifest naming the limit", async () => {
    const deep = `${"[".repeat(MAX_JSON_DEPTH)}${"]".repeat(MAX_JSON_DEPTH)}`;
    const r = await t.json("/rename_files", {
      method: "POST",
      headers: { authorization: authAt(t, u), "content-type": "application/json" },
      body: `{"renames": ${deep}}`,
    });
    expectError(r, 400, "invalid_manifest");
    expect(r.body.Error.message).toContain(`deeper than ${MAX_JSON_DEPTH} levels`);
  });

  test("a single-shot upload whose manifest part nests 50,000 deep returns 400 invalid_manifest", async () => {
    const before = await snapshot(t);
    const r = await uploadParts(t, authAt(t, u), [
      {
        name: "manifest",
        data: `${'{"a":'.repeat(50_000)}1${"}".repeat(50_000)}`,
        contentType: "application/json",
      },
      { name: "ciphertext", data: new Uint8Array(64), contentType: "application/octet-stream" },
    ]);
    expectError(r, 400, "invalid_manifest");
    expect(r.body.Error.message).toContain(`deeper than ${MAX_JSON_DEPTH} levels`);
    expect(await snapshot(t)).toEqual(before);
  });

  test("a session body with every layout field of the wrong type returns 400 invalid_manifest", async () => {
    const before = await snapshot(t);
    const r = await createSessionRaw(t, authAt(t, u), {
      manifest: "not an object",
      chunk_count: [1],
      chunk_size: { n: 1 },
      ciphertext_size: true,
    });
    expectError(r, 400, "invalid_manifest");
    expect(await snapshot(t)).toEqual(before);
  });

  test("a register body with an over-long label returns 400 invalid_manifest", async () => {
    const before = await snapshot(t);
    const r = await t.json(
      "/register_folder",
      jsonInit("POST", authAt(t, u), {
        ss58_address: u.address,
        folder_hash: FOLDER,
        label: "x".repeat(100_000),
      }),
    );
    expectError(r, 400, "invalid_manifest");
    expect(await snapshot(t)).toEqual(before);
  });
});

describe("U+0000 in stored text: 400 invalid_manifest on every database, nothing stored", () => {
  test("a folder label or device name", async () => {
    const before = await snapshot(t);
    for (const body of [{ label: "a\u0000b" }, { label: "ok", device_name: "laptop\u0000" }]) {
      const r = await t.json(
        "/register_folder",
        jsonInit("POST", authAt(t, u), { ss58_address: u.address, folder_hash: FOLDER, ...body }),
      );
      expectError(r, 400, "invalid_manifest");
    }
    expect(await snapshot(t)).toEqual(before);
  });

  test("a manifest's file_name or source", async () => {
    const before = await snapshot(t);
    const c = randomCiphertext(100);
    for (const extra of [{ relative_path: null, file_name: "a\u0000.txt" }, { source: "cli\u0000" }]) {
      const m = { ...makeManifest({ owner: u.address, ciphertext: c, path: "nul/a.txt" }), ...extra };
      expectError(await uploadSingle(t, authAt(t, u), m, c), 400, "invalid_manifest");
    }
    expect(await snapshot(t)).toEqual(before);
  });
});

describe("unknown and path-traversal session ids: 404 not_found, nothing stored", () => {
  const ids = [
    "does-not-exist",
    "..%2F..%2F..%2Fetc%2Fpasswd",
    "..%2F..%2Fblobs",
    "%2E%2E",
    "%00",
    "x".repeat(5000),
    "'%20OR%201%3D1%20--",
    encodeURIComponent("../../esync.sqlite"),
    "%ff",
    "%C3%28",
    "a%ffb",
  ];
  for (const id of ids) {
    const shown = id.length > 40 ? `${id.slice(0, 20)}…(${id.length} chars)` : id;
    test(`status, chunk, finalize and delete of session '${shown}' return 404 not_found`, async () => {
      const before = await snapshot(t);
      const auth = authAt(t, u);
      expectError(await status(t, auth, id), 404, "not_found");
      expectError(await putChunk(t, auth, id, 0, ct.subarray(0, 1000)), 404, "not_found");
      expectError(await finalize(t, auth, id), 404, "not_found");
      expectError(await abort(t, auth, id), 404, "not_found");
      expect(await snapshot(t)).toEqual(before);
    });
  }

  test("a chunk of the right length sent to a traversal id next to a live session's blob writes no file", async () => {
    const before = await snapshot(t);
    const r = await putChunk(t, authAt(t, u), `${live.sessionId}%2F..`, 1, ct.subarray(1000));
    expect(r.status).toBe(404);
    expect(await snapshot(t)).toEqual(before);
  });
});

describe("path parameters of file endpoints: 400, nothing stored", () => {
  for (const [what, path, code] of [
    ["a traversal address", `/get_state/..%2F..%2F/${FOLDER}`, "invalid_user_id"],
    ["a traversal folder_hash", "/get_state/ADDR/..%2F..%2Fblobs", "invalid_parameter"],
    [
      "a traversal file_id on download",
      `/download/ADDR/${FOLDER}/..%2F..%2Fesync.sqlite`,
      "invalid_parameter",
    ],
    ["a traversal file_id on delete", `/delete/ADDR/${FOLDER}/..%2F..%2Fesync.sqlite`, "invalid_parameter"],
    ["a backslash address", `/get_state/a%5Cb/${FOLDER}`, "invalid_user_id"],
  ] as const) {
    test(`returns 400 ${code} for ${what}`, async () => {
      const before = await snapshot(t);
      const method = path.startsWith("/delete") ? "DELETE" : "GET";
      const r = await t.json(path.replace("ADDR", u.address), {
        method,
        headers: { authorization: authAt(t, u) },
      });
      expectError(r, 400, code);
      expect(await snapshot(t)).toEqual(before);
    });
  }
});

describe("the live session survives all of the above", () => {
  test("a session used alongside rejected requests still finalizes (200)", async () => {
    await putChunk(t, authAt(t, u), "..%2F", 1, ct.subarray(1000));
    await createSessionRaw(t, authAt(t, u), "{oops");
    await putChunks(t, live, ct, [1]);
    expect((await finalize(t, live.auth, live.sessionId)).status).toBe(200);
  });
});
