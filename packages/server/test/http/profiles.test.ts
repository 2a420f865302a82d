/**
 * The API profiles (issue 15, docs/protocol.md#api-profiles): the same cases under `base` (the
 * default, the base contract) and `hcfs` (`ESYNC_API_PROFILE=hcfs`), which switches exactly three
 * rules: `/register_folder` upsert, the search `limit` cap, and `q` under 3 characters.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { fileRow } from "../search/support.ts";
import { jsonInit, makeTestApp } from "../support/app.ts";
import { newUser } from "../support/fixtures.ts";
import { authAt, expectError, expectSuccess, FOLDER } from "./helpers.ts";

for (const profile of ["base", "hcfs"] as const) {
  describe(`ESYNC_API_PROFILE=${profile}`, () => {
    const t = makeTestApp(profile === "base" ? {} : { ESYNC_API_PROFILE: profile });
    afterAll(() => t.close());
    const u = newUser();
    // Through the store, so that it runs on either metadata database.
    beforeAll(() =>
      t.store.transaction(async (tx) => {
        for (let i = 0; i < 260; i++)
          await tx.files.upsert(fileRow(u.address, { path: `docs/ab-${String(i).padStart(3, "0")}.txt` }));
      }),
    );
    const get = (path: string) => t.json(path, { headers: { authorization: authAt(t, u) } });

    test(
      profile === "base"
        ? "registering a registered folder again returns 409 conflict"
        : "registering a registered folder again returns 200 registered and keeps label and device name",
      async () => {
        const reg = (label: string, device: string) =>
          t.json(
            "/register_folder",
            jsonInit("POST", authAt(t, u), {
              ss58_address: u.address,
              folder_hash: FOLDER,
              label,
              device_name: device,
            }),
          );
        expectSuccess(await reg("first", "laptop"), ["status"]);
        const again = await reg("second", "phone");
        if (profile === "base") expectError(again, 409, "conflict");
        else expect(expectSuccess(again, ["status"])).toEqual({ status: "registered" });
        const folders = expectSuccess(await get(`/list_folders/${u.address}`), [
          "base_address",
          "folders",
        ]).folders;
        expect(folders.map((f: { label: string; device_name: string }) => [f.label, f.device_name])).toEqual([
          ["first", "laptop"],
        ]);
      },
    );

    test(
      profile === "base"
        ? "search limit 250 returns 250 rows (cap 10000)"
        : "search limit 250 is lowered to 200 (200, not an error)",
      async () => {
        const s = (await get(`/search_files/${u.address}?limit=250`)).body.Success;
        const cap = profile === "base" ? 250 : 200;
        expect({ limit: s.limit, rows: s.files.length, total: s.total_count, more: s.has_more }).toEqual({
          limit: cap,
          rows: cap,
          total: 260,
          more: cap < 260,
        });
      },
    );

    test(
      profile === "base"
        ? "a q of 2 characters matches as a substring (200)"
        : "a q shorter than 3 characters after trimming matches nothing (200, empty page)",
      async () => {
        // Browse reads q as search does.
        const browse = (await get(`/browse/${u.address}/${FOLDER}?path=docs&q=ab`)).body.Success;
        expect(browse.total_count).toBe(profile === "base" ? 260 : 0);
        const two = (await get(`/search_files/${u.address}?q=ab`)).body.Success;
        expect({ total: two.total_count, rows: two.files.length }).toEqual(
          profile === "base" ? { total: 260, rows: 25 } : { total: 0, rows: 0 },
        );
        // hcfs trims q: " ab- " is the 3-character term "ab-"; base keeps the spaces (no name has them).
        const three = (await get(`/search_files/${u.address}?q=${encodeURIComponent(" ab- ")}`)).body.Success;
        expect(three.total_count).toBe(profile === "base" ? 0 : 260);
      },
    );
  });
}
