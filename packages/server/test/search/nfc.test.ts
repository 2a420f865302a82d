/**
 * Search normalises names and `q` to NFC before case folding (issue 10 defect 10): an NFC query
 * finds an NFD name (what macOS writes) and the other way round; rows stored before this rule
 * (NFD search keys) are rewritten by the start-up backfill that migration 0010 queues.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { MIGRATIONS_DIR } from "../../src/db/client.ts";
import { backfillNfcSearchNames } from "../../src/db/sqlite/search/nfc-backfill.ts";
import { authAt, uploadSingle } from "../http/helpers.ts";
import { makeTestApp, type TestApp } from "../support/app.ts";
import { makeManifest, newUser, randomCiphertext, type TestUser } from "../support/fixtures.ts";
import { search } from "./support.ts";

let t: TestApp;
beforeEach(() => {
  t = makeTestApp();
});
afterEach(() => t.close());

const NFD = "Cafe\u0301 menu.txt";
const NFC = "Caf\u00e9 menu.txt";

async function upload(u: TestUser, name: string) {
  const ct = randomCiphertext(200);
  const m = makeManifest({ owner: u.address, ciphertext: ct, path: `docs/${name}`, fileName: name });
  expect((await uploadSingle(t, authAt(t, u), m, ct)).status).toBe(200);
}

async function hits(u: TestUser, q: string): Promise<string[]> {
  const r = await search(t, u, `q=${encodeURIComponent(q)}`);
  expect(r.status).toBe(200);
  return r.body.Success.files.map((f: { file_name: string }) => f.file_name);
}

describe("NFC in search", () => {
  test("an NFC q (café, CAFÉ) finds a file whose name was written in NFD", async () => {
    const u = newUser();
    await upload(u, NFD);
    expect(await hits(u, "café")).toEqual([NFD]);
    expect(await hits(u, "CAFÉ")).toEqual([NFD]);
    expect(await hits(u, "fé m")).toEqual([NFD]);
  });

  test("an NFD q finds a file whose name was written in NFC", async () => {
    const u = newUser();
    await upload(u, NFC);
    expect(await hits(u, "cafe\u0301")).toEqual([NFC]);
  });

  test("rows stored with an NFD search key before the rule are found after the start-up backfill", async () => {
    const u = newUser();
    await upload(u, NFD);
    const db = t.db.$client;
    // What an older server stored: the lower-cased name without NFC.
    db.query("UPDATE files SET search_name = ?").run(NFD.toLowerCase());
    expect(await hits(u, "café")).toEqual([]);
    // Migration 0010's queue, filled by its own statement.
    const sql = readFileSync(join(MIGRATIONS_DIR, "0010_search_nfc_backfill.sql"), "utf8");
    const insert = sql.split("--> statement-breakpoint").at(-1) as string;
    db.exec(insert);
    expect(db.query("SELECT count(*) AS n FROM search_nfc_backfill").get()).toEqual({ n: 1 });
    expect(backfillNfcSearchNames(db)).toBe(1);
    expect(db.query("SELECT count(*) AS n FROM search_nfc_backfill").get()).toEqual({ n: 0 });
    expect(await hits(u, "café")).toEqual([NFD]);
    expect(backfillNfcSearchNames(db)).toBe(0);
  });
});
