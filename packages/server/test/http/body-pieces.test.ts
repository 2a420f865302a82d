/** A guarded request body (src/http/body.ts) tells the store it may free each piece once written. */
import { expect, test } from "bun:test";
import { fail } from "@esync/protocol/errors.ts";
import { guardedBody } from "../../src/http/body.ts";
import { piecesOwned } from "../../src/util/release.ts";

test("a guarded request body is marked as handing its pieces to the reader alone, and passes every byte", async () => {
  const req = new Request("http://localhost/x", { method: "PUT", body: new Uint8Array(5000).fill(7) });
  const body = guardedBody(req, { limit: 5000, tooLarge: () => fail("payload_too_large", "too large") });
  expect(piecesOwned(body)).toBe(true);
  const bytes = new Uint8Array(await new Response(body).arrayBuffer());
  expect(bytes.byteLength).toBe(5000);
  expect(bytes.every((b) => b === 7)).toBe(true);
});
