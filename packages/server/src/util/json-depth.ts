/**
 * @module server/util/json-depth
 * The nesting limit of JSON request bodies (docs/operator-guide.md#json-nesting-limit): a body
 * whose arrays and objects nest deeper than `MAX_JSON_DEPTH` is refused before it is parsed or
 * validated, by one pass over its raw bytes. Parsing and schema validation walk a value
 * recursively, so without the limit a small body (`{"a":` repeated 50,000 times is 250 KB) could
 * hold the event loop for seconds or overflow the stack.
 */

/**
 * Deepest nesting of arrays and objects accepted in a JSON request body (and a single-shot
 * upload's manifest part). No body of the contract comes near it: the deepest nest a few levels
 * (a byte array inside a manifest inside a request).
 */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * True when the JSON text in `bytes` (UTF-8) opens more than `max` arrays or objects inside each
 * other. Brackets inside strings are not counted: a string runs from a `"` to the next `"` not
 * escaped by a backslash (in UTF-8 neither byte occurs inside a multi-byte character). The text
 * need not be valid JSON: the parser judges that afterwards. One pass, no allocation.
 */
export function jsonDepthOver(bytes: Uint8Array, max: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
    } else if (b === QUOTE) inString = true;
    else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) depth--;
  }
  return false;
}
