/**
 * The manifest's optional `attributes` (esync extension, docs/user-guide.md#file-attributes): stored and
 * returned unchanged by `/get_state`, absent for files written without it, bounded to 4 KiB.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { makeTestApp, type TestApp } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext } from "../support/fixtures.ts";
import {
  authAt,
  ENTRY_KEYS,
  expectError,
  expectSuccess,
  snapshot,
  stateOf,
  UPLOAD_RESULT_KEYS,
  uploadSingle,
  uploadViaSession,
} from "./helpers.ts";

let t: TestApp;
beforeEach(() => {
  t = makeTestApp();
});
afterEach(() => t.close());

describe("manifest attributes", () => {
  test("single-shot upload stores attributes and get_state returns them byte for byte", async () => {
    const user = newUser();
    const ct = randomCiphertext(100);
    const attributes = Array.from(randomCiphertext(300));
    const m = { ...makeManifest({ owner: user.address, ciphertext: ct, path: "bin/tool" }), attributes };
    expectSuccess(await uploadSingle(t, authAt(t, user), m, ct), UPLOAD_RESULT_KEYS);
    const state = await stateOf(t, user);
    expect(state.files).toHaveLength(1);
    expect(Object.keys(state.files[0]).sort()).toEqual([...ENTRY_KEYS, "uploaded_by", "attributes"].sort());
    expect(state.files[0].attributes).toEqual(attributes);
  });

  test("a session upload carries attributes through finalize, and a revision without them clears them", async () => {
    const user = newUser();
    const ct = randomCiphertext(5000);
    const attributes = [1, 2, 3, 4];
    const { result } = await uploadViaSession(t, user, ct, { attributes });
    const state = await stateOf(t, user);
    expect(state.files[0].attributes).toEqual(attributes);
    const ct2 = randomCiphertext(64);
    const m2 = makeManifest({
      owner: user.address,
      ciphertext: ct2,
      revisionSeq: 2,
      baseRevisionId: result.revision_id,
    });
    expectSuccess(await uploadSingle(t, authAt(t, user), m2, ct2), UPLOAD_RESULT_KEYS);
    const after = await stateOf(t, user);
    expect(Object.keys(after.files[0]).sort()).toEqual([...ENTRY_KEYS, "uploaded_by"].sort());
  });

  test("a file uploaded without attributes has exactly the spec's entry fields", async () => {
    const user = newUser();
    const ct = randomCiphertext(100);
    const m = makeManifest({ owner: user.address, ciphertext: ct });
    expectSuccess(await uploadSingle(t, authAt(t, user), m, ct), UPLOAD_RESULT_KEYS);
    const state = await stateOf(t, user);
    expect(Object.keys(state.files[0]).sort()).toEqual([...ENTRY_KEYS, "uploaded_by"].sort());
  });

  test("returns 400 invalid_manifest for attributes over 4096 bytes and stores nothing", async () => {
    const user = newUser();
    const ct = randomCiphertext(100);
    const before = await snapshot(t);
    const m = {
      ...makeManifest({ owner: user.address, ciphertext: ct }),
      attributes: new Array(4097).fill(7),
    };
    const r = await uploadSingle(t, authAt(t, user), m, ct);
    expectError(r, 400, "invalid_manifest");
    expect(r.body.Error.message).toContain("attributes");
    expect(await snapshot(t)).toEqual(before);
  });

  test("returns 400 invalid_manifest for attributes that are not a byte array", async () => {
    const user = newUser();
    const ct = randomCiphertext(100);
    for (const bad of ["AQID", [1, 256], []]) {
      const m = { ...makeManifest({ owner: user.address, ciphertext: ct }), attributes: bad };
      expectError(await uploadSingle(t, authAt(t, user), m, ct), 400, "invalid_manifest");
    }
  });
});
