/**
 * @module server/db/postgres/conn
 * What a PostgreSQL repository runs its queries on: the pool (each call its own statement,
 * committed at once) or an open transaction. Both are Drizzle `PgDatabase`s of the same schema.
 */
import type { PgDb } from "./client.ts";

/** An open Drizzle transaction on the PostgreSQL metadata database. */
export type PgTx = Parameters<Parameters<PgDb["transaction"]>[0]>[0];

/** The pool or an open transaction. */
export type PgConn = PgDb | PgTx;
