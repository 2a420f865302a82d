/**
 * Text PostgreSQL cannot store: U+0000 in a client's text value (a folder label, a device name,
 * a manifest field) is the client's 400 invalid_manifest on PostgreSQL, inside and outside a
 * transaction, and nothing is written; SQLite stores such text as it is.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { AppError } from "@esync/protocol/errors.ts";
import { openPgMetadataStore, type PgMetadataStore } from "../../src/db/postgres/store.ts";
import { PG_SETUP_TIMEOUT_MS, type PgTestDatabase, pgTestDatabase } from "../support/pg-server.ts";
import { fileRow } from "./repositories.conformance.ts";

let database: PgTestDatabase;
let store: PgMetadataStore;
beforeAll(async () => {
  database = await pgTestDatabase("text");
  store = await openPgMetadataStore(database.url);
}, PG_SETUP_TIMEOUT_MS);
afterAll(async () => {
  await store?.close();
  await database?.drop();
});

test("a label with U+0000 is refused as invalid_manifest (400) outside a transaction, storing nothing", async () => {
  const e = await store.repos.folders.register("o", "f1", "a\u0000b", null, 1).catch((x: unknown) => x);
  expect(e).toBeInstanceOf(AppError);
  expect((e as AppError).code).toBe("invalid_manifest");
  expect((e as AppError).status).toBe(400);
  expect(await store.repos.folders.get("o", "f1")).toBeUndefined();
});

test("a manifest source with U+0000 inside a commit transaction is invalid_manifest and rolls back the transaction", async () => {
  const e = await store
    .transaction(async (tx) => {
      await tx.folders.applyFileChange("o", "f2", 1, 10, 1);
      await tx.files.upsert(fileRow([1], { owner: "o", folderHash: "f2", source: "desk\u0000top" }));
    })
    .catch((x: unknown) => x);
  expect((e as AppError).code).toBe("invalid_manifest");
  expect(await store.repos.folders.get("o", "f2")).toBeUndefined();
  expect(await store.repos.quota.usage("o")).toBeUndefined();
});
