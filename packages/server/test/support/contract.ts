/**
 * Checks answers of the in-process app against the contract: every response must have a status
 * its route documents (`response` of the route in `packages/protocol/src/schemas.ts` terms), and a JSON body
 * that validates against that status's schema. `makeTestApp` runs every request through
 * `checkAnswer`, so the HTTP tests prove the documented schemas on every answer they get.
 */

import { ErrorEnvelope } from "@esync/protocol/schemas.ts";
import type { TSchema } from "@sinclair/typebox";
import { type TypeCheck, TypeCompiler } from "@sinclair/typebox/compiler";
import type { AnyElysia } from "elysia";
import { inV1Space } from "../../src/http/envelope.ts";

type Route = { method: string; path: string; hooks: { response?: Record<string, TSchema> } };

/** A route's path pattern (`/a/:b`) as a regex on a raw pathname. */
function patternOf(path: string): RegExp {
  const body = path
    .split("/")
    .map((seg) => (seg.startsWith(":") ? "[^/]+" : seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${body}$`);
}

const routeCache = new WeakMap<AnyElysia, { route: Route; re: RegExp }[]>();

function routesOf(app: AnyElysia) {
  let r = routeCache.get(app);
  if (!r) {
    r = (app.routes as unknown as Route[]).map((route) => ({ route, re: patternOf(route.path) }));
    routeCache.set(app, r);
  }
  return r;
}

/** The route `app` answers `method path` with, or undefined (a 404 "No route"). */
export function routeFor(app: AnyElysia, method: string, pathname: string): Route | undefined {
  const m =
    method === "HEAD" && !routesOf(app).some(({ route, re }) => route.method === "HEAD" && re.test(pathname))
      ? "GET"
      : method;
  // Elysia matches a path with or without one trailing slash.
  if (pathname.length > 1 && pathname.endsWith("/")) pathname = pathname.slice(0, -1);
  return routesOf(app).find(({ route, re }) => route.method === m && re.test(pathname))?.route;
}

const checkers = new WeakMap<TSchema, TypeCheck<TSchema>>();

/** `schema` compiled once. */
function checkerOf(schema: TSchema): TypeCheck<TSchema> {
  let c = checkers.get(schema);
  if (!c) {
    c = TypeCompiler.Compile(schema);
    checkers.set(schema, c);
  }
  return c;
}

/** The first validation errors of `value` against `schema`, as text. */
function errorsOf(schema: TSchema, value: unknown): string {
  return [...checkerOf(schema).Errors(value)]
    .slice(0, 3)
    .map((e) => `${e.path || "/"}: ${e.message}`)
    .join("; ");
}

/**
 * Throws when `response` (the answer of `app` to `request`) breaks the documented contract: a
 * status the route does not document, or a JSON body its schema rejects; with no route, anything
 * but a 404 with the error envelope (or, in the `/v1/` space, with an empty body). Routes without
 * response schemas (the OpenAPI page itself) are not checked.
 */
export async function checkAnswer(app: AnyElysia, request: Request, response: Response): Promise<void> {
  const pathname = new URL(request.url).pathname;
  const route = routeFor(app, request.method, pathname);
  const where = `${request.method} ${pathname} → ${response.status}`;
  let schema: TSchema | undefined;
  if (!route) {
    if (response.status !== 404) throw new Error(`contract: ${where} has no route but is not 404`);
    if (inV1Space(pathname)) {
      // Not mounted (docs/protocol.md#response-families rule 2): no body at all.
      const text = await response.clone().text();
      if (text !== "" || response.headers.has("content-type"))
        throw new Error(
          `contract: ${where}: an unmounted /v1 route must have an empty body, got '${text.slice(0, 80)}'`,
        );
      return;
    }
    schema = ErrorEnvelope;
  } else {
    const documented = route.hooks.response;
    if (!documented) return;
    schema = documented[String(response.status)];
    if (!schema) throw new Error(`contract: ${where}: status not documented for ${route.path}`);
  }
  const type = response.headers.get("content-type") ?? "";
  if (request.method === "HEAD") return; // no body: the status was checked above
  if (!type.includes("application/json")) {
    if (schema.type === "object") throw new Error(`contract: ${where}: expected JSON, got '${type}'`);
    return;
  }
  const text = await response.clone().text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`contract: ${where}: body is not JSON: ${text.slice(0, 200)}`);
  }
  if (!checkerOf(schema).Check(body))
    throw new Error(`contract: ${where}: body does not match its schema: ${errorsOf(schema, body)}`);
}
