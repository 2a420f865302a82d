/**
 * @module server/http/request
 * Reading bounded JSON request bodies. Failures are `AppError`s with the code each docs/protocol.md section
 * names.
 */
import { AppError, type ErrorCode, fail } from "@esync/protocol/errors.ts";
import { jsonDepthOver, MAX_JSON_DEPTH } from "../util/json-depth.ts";
import { guardedBody } from "./body.ts";

/** Largest JSON body accepted on the JSON endpoints, bytes. */
export const MAX_JSON_BODY_BYTES = 1024 * 1024;

/**
 * Reads the body as a JSON object (at most `maxBytes`, default `MAX_JSON_BODY_BYTES`, enforced
 * while it streams, under the body idle timeout of `src/http/body.ts`): every JSON body of the
 * contract is an object, and a top-level array, string, number, boolean or null is refused here,
 * before any schema could read it another way.
 * @throws AppError `tooLargeCode` (default 413 `payload_too_large`) when the body is over the
 *   limit (declared or sent: reading stops at the first piece past it); `request_timeout` (408)
 *   when it arrives too slowly; `code` (default `invalid_manifest`) when it is empty, not UTF-8
 *   JSON, not a JSON object, or nests arrays and objects deeper than `MAX_JSON_DEPTH` (checked
 *   on the raw bytes, before parsing: src/util/json-depth.ts).
 */
export async function readJson(
  request: Request,
  code: ErrorCode = "invalid_manifest",
  maxBytes: number = MAX_JSON_BODY_BYTES,
  tooLargeCode: ErrorCode = "payload_too_large",
): Promise<unknown> {
  const tooLarge = () => fail(tooLargeCode, `request body over ${maxBytes} bytes`);
  const declared = Number(request.headers.get("content-length") ?? "NaN");
  if (declared > maxBytes) throw tooLarge();
  const pieces: Uint8Array[] = [];
  let total = 0;
  try {
    for await (const piece of guardedBody(request, { limit: maxBytes, tooLarge })) {
      pieces.push(piece);
      total += piece.byteLength;
    }
  } catch (e) {
    if (e instanceof AppError) throw e;
    throw fail(code, "request body ended early (connection closed)");
  }
  const bytes = Buffer.concat(pieces, total);
  if (jsonDepthOver(bytes))
    throw fail(code, `request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw fail(code, "request body is not valid UTF-8");
  }
  if (text.trim() === "") throw fail(code, "request body is empty; expected a JSON object");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw fail(code, "request body is not valid JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw fail(code, "request body must be a JSON object");
  return value;
}
