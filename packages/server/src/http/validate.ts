/**
 * @module server/http/validate
 * Checking request values against their TypeBox schemas the way every route does: a failure
 * becomes the contract's 400 error naming the field (`validationFailure`), path and query
 * integers are coerced from their text first (`integerParams`), and a query string can be
 * checked outside a request (`checkQuery`, used where a feature parses its own query).
 */
import { type AppError, ERRORS, type ErrorCode, fail } from "@esync/protocol/errors.ts";
import { ERROR_CODE_KEY } from "@esync/protocol/schemas.ts";
import type { Static, TObject, TSchema } from "@sinclair/typebox";
import { type TypeCheck, TypeCompiler } from "@sinclair/typebox/compiler";
import { ValidationError } from "elysia";

/** The code a failing value gets when its schema names none, by where the value is. */
const DEFAULT_CODE: Record<string, ErrorCode> = {
  body: "invalid_manifest",
  params: "invalid_parameter",
  query: "invalid_parameter",
  headers: "invalid_parameter",
};

const WHERE: Record<string, string> = {
  body: "request body",
  params: "path parameter",
  query: "query parameter",
  headers: "header",
};

function isErrorCode(v: unknown): v is ErrorCode {
  return typeof v === "string" && Object.hasOwn(ERRORS, v);
}

/**
 * Maps a failed schema validation to the protocol's error (all 400): the failing schema's
 * `x-error-code` if any, else the top-level field's, else `invalid_manifest` for bodies and
 * `invalid_parameter` for path, query and header values. The message names the field.
 */
export function validationFailure(e: ValidationError): AppError {
  const first = e.valueError as
    | { path?: string; message?: string; schema?: Record<string, unknown> }
    | undefined;
  const path = first?.path ?? "";
  const field = path.split("/").filter(Boolean);
  const root = (e.validator as { schema?: { properties?: Record<string, Record<string, unknown>> } })?.schema;
  const top = field[0] !== undefined ? root?.properties?.[field[0]] : undefined;
  const named = first?.schema?.[ERROR_CODE_KEY] ?? top?.[ERROR_CODE_KEY];
  const code = isErrorCode(named) ? named : (DEFAULT_CODE[e.type] ?? "invalid_parameter");
  const where = WHERE[e.type] ?? e.type;
  const what = field.length ? `${where} ${field.join(".")}` : where;
  return fail(code, `${what}: ${first?.message ?? "invalid value"}`);
}

type ObjectSchema = { properties: Record<string, TSchema & { type?: unknown }> };

/**
 * A transform hook that turns integer path and query parameters from text into numbers before
 * validation: query values of decimal digits (an empty value is absent; beyond 2^53 − 1 read as
 * 2^53 − 1), path values in canonical decimal (no sign or leading zeros). Anything else becomes
 * NaN, which the integer schema rejects.
 */
export function integerParams(schemas: { params?: ObjectSchema; query?: ObjectSchema }) {
  const ints = (s?: ObjectSchema) =>
    s
      ? Object.entries(s.properties)
          .filter(([, v]) => v.type === "integer")
          .map(([k]) => k)
      : [];
  const queryInts = ints(schemas.query);
  const paramInts = ints(schemas.params);
  return ({ query, params }: { query: Record<string, unknown>; params: Record<string, unknown> }) => {
    for (const k of queryInts) {
      const v = query[k];
      if (typeof v !== "string") continue;
      if (v === "") delete query[k];
      else query[k] = /^\d+$/.test(v) ? Math.min(Number(v), Number.MAX_SAFE_INTEGER) : Number.NaN;
    }
    for (const k of paramInts) {
      const v = params[k];
      if (typeof v === "string") params[k] = /^(0|[1-9]\d{0,15})$/.test(v) ? Number(v) : Number.NaN;
    }
  };
}

const compiled = new WeakMap<
  TObject,
  { check: TypeCheck<TObject>; coerce: ReturnType<typeof integerParams> }
>();

/**
 * Checks a query string against a route's query schema outside a request, as the route does
 * (integer coercion, `validationFailure`); absent values stay absent (no schema defaults).
 * @throws AppError as `validationFailure`.
 */
export function checkQuery<S extends TObject>(schema: S, qs: URLSearchParams): Static<S> {
  let c = compiled.get(schema);
  if (!c) {
    c = {
      check: TypeCompiler.Compile(schema),
      coerce: integerParams({ query: schema as unknown as ObjectSchema }),
    };
    compiled.set(schema, c);
  }
  const query: Record<string, unknown> = {};
  for (const [k, v] of qs) if (!(k in query)) query[k] = v;
  c.coerce({ query, params: {} });
  if (!c.check.Check(query)) throw validationFailure(new ValidationError("query", schema, query));
  return query as Static<S>;
}
