/**
 * The SQLite search index of a store (`searchIndexOf`) reads through the store's gate: a search
 * that arrives while a write transaction is open waits for its commit, and never reads inside it.
 */
import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import { searchIndexOf } from "../../src/db/open.ts";
import { openSqliteStore } from "../../src/db/sqlite/store.ts";
import { parseSearchQuery } from "../../src/search/search.query.ts";
import { tempDir } from "../support/tmp.ts";
import { fileRow } from "./support.ts";

const store = openSqliteStore(join(tempDir("esync-search-gate-"), "esync.sqlite"));
afterAll(() => store.close());

test("a search during an open write transaction waits for the commit and sees the committed rows", async () => {
  const index = searchIndexOf(store);
  expect(index.kind).toBe("sqlite");
  const owner = "gate-owner";
  const order: string[] = [];
  let searchStarted: () => void = () => {};
  const started = new Promise<void>((resolve) => {
    searchStarted = resolve;
  });
  const write = store.transaction(async (tx) => {
    await tx.files.upsert(fileRow(owner, { path: "a/first.txt" }));
    searchStarted();
    // Let the search run while this transaction is open.
    await Bun.sleep(50);
    await tx.files.upsert(fileRow(owner, { path: "a/second.txt" }));
    order.push("commit");
  });
  await started;
  const search = index.search(owner, parseSearchQuery(new URLSearchParams("q=.txt"))).then((page) => {
    order.push("search");
    return page;
  });
  await write;
  const page = await search;
  expect(order).toEqual(["commit", "search"]);
  expect(page.total).toBe(2);
});
