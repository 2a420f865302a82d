/** The three summaries over HTTP (docs/protocol.md#summaries): shapes, the folder filter, errors. */
import { afterAll, expect, test } from "bun:test";
import { makeTestApp } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext } from "../support/fixtures.ts";
import { authAt, expectError, expectSuccess, FOLDER, FOLDER_B, uploadSingle } from "./helpers.ts";

const t = makeTestApp();
afterAll(() => t.close());
const u = newUser();

async function put(path: string, size: number, folderHash = FOLDER, source: string | null = null) {
  const ct = randomCiphertext(size + 48);
  const m = {
    ...makeManifest({ owner: u.address, ciphertext: ct, path, sizeBytes: size, folderHash }),
    source,
  };
  expect((await uploadSingle(t, authAt(t, u), m, ct)).status).toBe(200);
}
const get = (path: string, user = u) => t.json(path, { headers: { authorization: authAt(t, user) } });
const TYPE_KEYS = ["image", "video", "audio", "document", "pdf", "archive", "code", "other"].flatMap((k) => [
  k,
  `${k}_bytes`,
]);
const SOURCE_KEYS = ["desktop", "console", "mobile", "other"].flatMap((k) => [k, `${k}_bytes`]);

test("summaries answer 200 enveloped with every field, account-wide and per folder", async () => {
  const empty = expectSuccess(await get(`/get_user_summary/${u.address}`), [
    "ss58_address",
    "total_bytes",
    "file_count",
    "created_at",
    "updated_at",
  ]);
  expect(empty).toMatchObject({ ss58_address: u.address, total_bytes: 0, file_count: 0 });
  await put("p/cat.PNG", 100, FOLDER, "desktop");
  await put("p/notes", 10, FOLDER, "Mobile");
  await put("code/x.ts", 7, FOLDER_B, "python-sdk");
  const user = expectSuccess(await get(`/get_user_summary/${u.address}`), [
    "ss58_address",
    "total_bytes",
    "file_count",
    "created_at",
    "updated_at",
  ]);
  expect({ b: user.total_bytes, n: user.file_count }).toEqual({ b: 117, n: 3 });
  expect(user.created_at).toBeGreaterThan(0);
  const types = expectSuccess(await get(`/get_file_type_summary/${u.address}`), TYPE_KEYS);
  expect({
    image: types.image,
    image_bytes: types.image_bytes,
    code: types.code,
    other: types.other,
    other_bytes: types.other_bytes,
  }).toEqual({
    image: 1,
    image_bytes: 100,
    code: 1,
    other: 1,
    other_bytes: 10,
  });
  const sources = expectSuccess(await get(`/get_source_summary/${u.address}`), SOURCE_KEYS);
  expect(sources).toEqual({
    desktop: 1,
    desktop_bytes: 100,
    console: 0,
    console_bytes: 0,
    mobile: 1,
    mobile_bytes: 10,
    other: 1,
    other_bytes: 7,
  });
  const folderB = expectSuccess(await get(`/get_user_summary/${u.address}?folder_hash=${FOLDER_B}`), [
    "ss58_address",
    "total_bytes",
    "file_count",
    "created_at",
    "updated_at",
  ]);
  expect({ b: folderB.total_bytes, n: folderB.file_count }).toEqual({ b: 7, n: 1 });
  expect(
    expectSuccess(await get(`/get_file_type_summary/${u.address}?folder_hash=${FOLDER_B}`), TYPE_KEYS).image,
  ).toBe(0);
});

test("summaries return 403 forbidden for another account, 400 invalid_user_id and 400 invalid_parameter for a bad folder_hash", async () => {
  for (const route of ["get_user_summary", "get_file_type_summary", "get_source_summary"]) {
    expectError(await get(`/${route}/${u.address}`, newUser()), 403, "forbidden");
    expectError(await get(`/${route}/not-an-address`), 400, "invalid_user_id");
    expectError(await get(`/${route}/${u.address}?folder_hash=XY`), 400, "invalid_parameter");
    expectError(await t.json(`/${route}/${u.address}`), 401, "unauthorized");
  }
});
