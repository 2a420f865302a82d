/**
 * The contract is described once: the OpenAPI document generated from the route schemas lists
 * every route, path, query and header parameter and response status of the app, and its page
 * works offline (every asset it references is served by esync itself).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { ERRORS } from "@esync/protocol/errors.ts";
import type { TSchema } from "@sinclair/typebox";
import pkg from "../../package.json" with { type: "json" };
import { OPENAPI_PATH, OPENAPI_SCRIPT_PATH } from "../../src/http/openapi.ts";
import { makeTestApp } from "../support/app.ts";
import { checkAnswer } from "../support/contract.ts";

const t = makeTestApp({ ESYNC_OPENAPI: "1" });
afterAll(() => t.close());

type Schema = TSchema & { properties?: Record<string, Schema>; required?: string[]; type?: string };
type Route = {
  method: string;
  path: string;
  hooks: {
    detail?: { hide?: boolean };
    params?: Schema;
    query?: Schema;
    headers?: Schema;
    body?: Schema;
    response?: Record<string, Schema>;
  };
};
type Parameter = { in: string; name: string; required: boolean; schema: Record<string, unknown> };
type Operation = {
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Record<string, unknown> }> };
  responses: Record<string, { description?: string; content?: Record<string, { schema: unknown }> }>;
  security?: unknown[];
};

// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document is walked field by field
const doc: any = await (await t.fetch(`${OPENAPI_PATH}/json`)).json();

/** Routes that take no token (docs/protocol.md#sync-endpoints, #capabilities, #health-probes, the invite preview, the metrics on the public port). */
const ANONYMOUS_ROUTES = new Set([
  "/health",
  "/healthz",
  "/readyz",
  "/metrics",
  "/v1/capabilities",
  "/v1/drive-invites/:token/meta",
  // Share links, opened by anyone holding them (docs/sharing.md).
  "/v1/shares/:token/meta",
  "/v1/shares/:token/blob",
  "/v1/folder-shares/:token/meta",
  "/v1/folder-shares/:token/browse",
  "/v1/folder-shares/:token/blob",
]);
/** Routes without `{ss58}` that exist only to answer 400 for an empty address. */
const HIDDEN = new Set(["GET /search_files", "GET /browse/:ss58"]);

/** Pages for browsers, not API: the OpenAPI page itself and the recipient page of share links. */
const PAGE_PREFIXES = [OPENAPI_PATH, "/share/"];
const routes = (t.app.routes as unknown as Route[]).filter(
  (r) => !PAGE_PREFIXES.some((prefix) => r.path.startsWith(prefix)),
);
const documented = routes.filter((r) => !HIDDEN.has(`${r.method} ${r.path}`));
const openApiPath = (path: string) => path.replace(/:([^/]+)/g, "{$1}");
const operationOf = (r: Route): Operation | undefined =>
  doc.paths?.[openApiPath(r.path)]?.[r.method.toLowerCase()];

describe("the OpenAPI document", () => {
  test("is OpenAPI 3 with the package's version", () => {
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.info.version).toBe(pkg.version);
  });

  test("hides exactly the alias routes for an empty address", () => {
    const hidden = routes.filter((r) => r.hooks.detail?.hide).map((r) => `${r.method} ${r.path}`);
    expect(hidden.sort()).toEqual([...HIDDEN].sort());
  });

  test("documents every route of the app, and no operation without a route", () => {
    expect(documented.length).toBeGreaterThanOrEqual(14);
    for (const r of documented)
      expect({ route: `${r.method} ${r.path}`, documented: !!operationOf(r) }).toEqual({
        route: `${r.method} ${r.path}`,
        documented: true,
      });
    const ops = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([p, m]) =>
      Object.keys(m).map((method) => `${method.toUpperCase()} ${p}`),
    );
    const known = new Set(documented.map((r) => `${r.method} ${openApiPath(r.path)}`));
    expect(ops.filter((o) => !known.has(o))).toEqual([]);
  });

  test("documents every path, query and header parameter with its schema's type, default and bounds", () => {
    for (const r of documented) {
      const params = operationOf(r)?.parameters ?? [];
      const expectParam = (where: string, name: string, schema: Schema, required: boolean) => {
        const p = params.find((x) => x.in === where && x.name === name);
        expect({ route: r.path, where, name, found: !!p }).toEqual({
          route: r.path,
          where,
          name,
          found: true,
        });
        if (!p) return;
        expect(p.required).toBe(required);
        expect(p.schema.type).toBe(schema.type);
        for (const key of ["minimum", "maximum", "default", "pattern", "format"] as const)
          if ((schema as Record<string, unknown>)[key] !== undefined)
            expect({ route: r.path, name, key, value: p.schema[key] }).toEqual({
              route: r.path,
              name,
              key,
              value: (schema as Record<string, unknown>)[key],
            });
      };
      const pathNames = [...r.path.matchAll(/:([^/]+)/g)].map((m) => m[1] as string);
      expect(Object.keys(r.hooks.params?.properties ?? {}).sort()).toEqual(pathNames.sort());
      for (const name of pathNames)
        expectParam("path", name, r.hooks.params?.properties?.[name] as Schema, true);
      for (const where of ["query", "headers"] as const) {
        const s = r.hooks[where];
        for (const [name, schema] of Object.entries(s?.properties ?? {}))
          expectParam(
            where === "query" ? "query" : "header",
            name,
            schema,
            s?.required?.includes(name) ?? false,
          );
      }
    }
  });

  test("lists /search_files's query parameters with integer types, defaults and bounds", () => {
    const op = doc.paths["/search_files/{ss58}"].get as Operation;
    const q = Object.fromEntries(
      (op.parameters ?? []).filter((p) => p.in === "query").map((p) => [p.name, p.schema]),
    );
    expect(Object.keys(q).sort()).toEqual(
      [
        "date_from",
        "date_to",
        "file_type",
        "folder_hash",
        "limit",
        "offset",
        "q",
        "size_max",
        "size_min",
        "sort_by",
        "sort_order",
        "uploaded_by",
      ].sort(),
    );
    expect(q.limit).toMatchObject({ type: "integer", minimum: 0, default: 25 });
    expect(q.offset).toMatchObject({ type: "integer", minimum: 0, default: 0 });
    expect(q.size_min).toMatchObject({ type: "integer", minimum: 0 });
    expect(q.sort_by).toMatchObject({ type: "string", default: "created_at" });
  });

  test("documents every response status of every route, each with a description and a schema", () => {
    for (const r of documented) {
      const op = operationOf(r) as Operation;
      const statuses = Object.keys(r.hooks.response ?? {});
      // A success: 200, or the v1 family's 201 (mints) or 204 (revokes).
      expect({ route: r.path, statuses: ["200", "201", "204"].some((x) => statuses.includes(x)) }).toEqual({
        route: r.path,
        statuses: true,
      });
      for (const status of statuses) {
        const d = op.responses[status];
        const bodiless = status === "304" || status === "204" || status === "302";
        expect({ route: r.path, status, documented: !!d?.description && (bodiless || !!d?.content) }).toEqual(
          {
            route: r.path,
            status,
            documented: true,
          },
        );
        const types = Object.keys(d?.content ?? {});
        expect(types.length).toBe(bodiless ? 0 : 1);
      }
      expect(Object.keys(op.responses).sort()).toEqual(statuses.sort());
    }
  });

  test("documents the 401 of every authenticated route and the bearer scheme", () => {
    expect(doc.components.securitySchemes.bearer).toEqual({ type: "http", scheme: "bearer" });
    for (const r of documented.filter((x) => !ANONYMOUS_ROUTES.has(x.path))) {
      expect({ route: r.path, has401: "401" in (operationOf(r)?.responses ?? {}) }).toEqual({
        route: r.path,
        has401: true,
      });
      expect(operationOf(r)?.security).toEqual([{ bearer: [] }]);
    }
  });

  test("documents JSON bodies as application/json, chunks as binary and /upload as multipart", () => {
    for (const r of documented.filter((x) => x.hooks.body))
      expect(Object.keys(operationOf(r)?.requestBody?.content ?? {})).toEqual(["application/json"]);
    const chunk = doc.paths["/upload/session/{session_id}/chunk/{chunk_index}"].put as Operation;
    expect(chunk.requestBody?.content["application/octet-stream"]?.schema).toMatchObject({
      type: "string",
      format: "binary",
    });
    const upload = doc.paths["/upload"].post as Operation;
    expect(Object.keys(upload.requestBody?.content ?? {})).toEqual(["multipart/form-data"]);
    const download = doc.paths["/download/{ss58}/{folder_hash}/{file_id}"].get as Operation;
    expect(Object.keys(download.responses["206"]?.content ?? {})).toEqual(["application/octet-stream"]);
  });

  test("names only catalogue codes in x-error-code", () => {
    const codes = [...JSON.stringify(doc).matchAll(/"x-error-code":"([^"]+)"/g)].map((m) => m[1] as string);
    expect(codes.length).toBeGreaterThan(0);
    for (const c of codes) expect(Object.keys(ERRORS)).toContain(c);
  });
});

describe("the OpenAPI page", () => {
  test("serves every asset it references itself, and references nothing outside the server", async () => {
    const r = await t.fetch(OPENAPI_PATH);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("text/html");
    const html = await r.text();
    expect(html).not.toMatch(/(src|href)\s*=\s*["'](https?:)?\/\//i);
    const refs = [...html.matchAll(/(?:src|href|data-url)\s*=\s*"([^"]+)"/gi)].map((m) => m[1] as string);
    expect(refs).toContain(OPENAPI_SCRIPT_PATH);
    for (const ref of refs) {
      const url = new URL(ref, `http://127.0.0.1${OPENAPI_PATH}`);
      expect(url.host).toBe("127.0.0.1");
      const a = await t.fetch(url.pathname);
      expect({ ref, status: a.status }).toEqual({ ref, status: 200 });
      expect((await a.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    }
  });

  test("serves the browser bundle of the exactly pinned @scalar/api-reference", async () => {
    const version = (pkg.dependencies as Record<string, string>)["@scalar/api-reference"];
    expect(version).toMatch(/^\d+\.\d+\.\d+$/);
    const dir = import.meta.resolve("@scalar/api-reference/package.json").replace(/^file:\/\//, "");
    const manifest = await Bun.file(dir).json();
    expect(manifest.version).toBe(version);
    const served = await (await t.fetch(OPENAPI_SCRIPT_PATH)).arrayBuffer();
    const file = await Bun.file(dir.replace(/package\.json$/, manifest.browser)).arrayBuffer();
    expect(Buffer.from(served).equals(Buffer.from(file))).toBe(true);
  });

  test("is absent when ESYNC_OPENAPI is off", async () => {
    const off = makeTestApp();
    try {
      expect((await off.fetch(OPENAPI_PATH)).status).toBe(404);
      expect((await off.fetch(`${OPENAPI_PATH}/json`)).status).toBe(404);
      expect((await off.fetch(OPENAPI_SCRIPT_PATH)).status).toBe(404);
    } finally {
      await off.close();
    }
  });
});

describe("the answer check every in-process test request goes through", () => {
  const req = (path: string) => new Request(`http://127.0.0.1${path}`);
  const json = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

  test("accepts a documented status with a body of its schema", async () => {
    await checkAnswer(
      t.app,
      req("/upload/session/x/status"),
      json(404, { Error: { error: "not_found", message: "m" } }),
    );
  });

  test("rejects a status the route does not document", async () => {
    const answer = json(418, { Error: { error: "teapot", message: "m" } });
    await expect(checkAnswer(t.app, req("/upload/session/x/status"), answer)).rejects.toThrow(
      /not documented/,
    );
  });

  test("rejects a body its status's schema does not allow", async () => {
    const answer = json(200, { Success: { session_id: "s", state: "open" } });
    await expect(checkAnswer(t.app, req("/upload/session/x/status"), answer)).rejects.toThrow(
      /does not match/,
    );
  });

  test("rejects a non-404 answer on a path without a route", async () => {
    await expect(checkAnswer(t.app, req("/nope"), json(200, {}))).rejects.toThrow(/no route/);
  });
});
