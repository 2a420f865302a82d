/**
 * @module http/request
 * Reading bounded JSON request bodies. Failures are `AppError`s with the code each spec section
 * names.
 */
import { type ErrorCode, fail } from "../errors/errors.ts";

/** Largest JSON body accepted on the JSON endpoints, bytes. */
export const MAX_JSON_BODY_BYTES = 1024 * 1024;

/**
 * Reads the body as JSON (at most `maxBytes`, default `MAX_JSON_BODY_BYTES`).
 * @throws AppError `code` (default `invalid_manifest`) when the body is empty or not JSON,
 *   `tooLargeCode` (default `code`) when it is over `maxBytes`.
 */
export async function readJson(
  request: Request,
  code: ErrorCode = "invalid_manifest",
  maxBytes: number = MAX_JSON_BODY_BYTES,
  tooLargeCode: ErrorCode = code,
): Promise<unknown> {
  const declared = Number(request.headers.get("content-length") ?? "NaN");
  if (declared > maxBytes) throw fail(tooLargeCode, `request body over ${maxBytes} bytes`);
  let text: string;
  try {
    const buf = await request.arrayBuffer();
    if (buf.byteLength > maxBytes) throw fail(tooLargeCode, `request body over ${maxBytes} bytes`);
    text = new TextDecoder("utf-8", { fatal: true }).decode(buf);
  } catch (e) {
    if (e instanceof Error && e.name === "AppError") throw e;
    throw fail(code, "request body is not valid UTF-8");
  }
  if (text.trim() === "") throw fail(code, "request body is empty; expected a JSON object");
  try {
    return JSON.parse(text);
  } catch {
    throw fail(code, "request body is not valid JSON");
  }
}
