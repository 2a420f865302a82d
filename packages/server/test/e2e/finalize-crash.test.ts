/**
 * A server killed mid-finalize does not block the session until the finalize lease runs out
 * (issue 11): the real server process (`bun run src/main.ts`) hashes a 96 MiB session (restarted
 * after the upload, so that it reads every chunk back: the full BLAKE3 pass), is SIGKILLed while
 * the session is `finalizing` under its lease (the test holds the session's row meanwhile, so the
 * finalize cannot end first), and restarted on the same data; the client's retried finalize
 * commits (200) while the dead process's lease (the default 60 s) has not run out, and the file
 * downloads byte-identical. Once on the embedded default (SQLite file + local disk; SQLite + S3 in
 * the S3 pass), once with the metadata in PostgreSQL.
 */
import { Database } from "bun:sqlite";
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import { SQL } from "bun";
import {
  download,
  expectSuccess,
  finalize,
  openSession,
  putAllChunks,
  UPLOAD_RESULT_KEYS,
} from "../multinode/support.ts";
import { newUser, randomCiphertext } from "../support/fixtures.ts";
import { type PgTestDatabase, pgTestDatabase } from "../support/pg-server.ts";
import { SETUP_TIMEOUT_MS, storageEnv, type TestStorageEnv, testStorage } from "../support/s3-server.ts";
import { type ServerProcess, startServer } from "../support/server.ts";
import { tempDir } from "../support/tmp.ts";

const MiB = 1024 * 1024;
const CHUNK = 16 * MiB;

/** The session columns the test watches. */
interface LeaseRow {
  state: string;
  finalizing_until: number | null;
  finalizing_holder: string | null;
}

/** Read access to the server's metadata database, and a way to hold one session row. */
interface Probe {
  row(sid: string): Promise<LeaseRow | undefined>;
  /** Locks the session row (no writer can change it) until the returned function is called. */
  hold(sid: string): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

function sqliteProbe(path: string): Probe {
  const db = new Database(path);
  db.exec("PRAGMA busy_timeout = 10000");
  const q = db.query<LeaseRow, [string]>(
    "SELECT state, finalizing_until, finalizing_holder FROM upload_sessions WHERE session_id = ?",
  );
  return {
    async row(sid) {
      return q.get(sid) ?? undefined;
    },
    async hold() {
      db.exec("BEGIN IMMEDIATE"); // the write lock: the finalize's commit waits behind it
      return async () => void db.exec("ROLLBACK");
    },
    async close() {
      db.close();
    },
  };
}

function pgProbe(url: string): Probe {
  const sql = new SQL(url, { max: 2 });
  return {
    async row(sid) {
      const rows =
        (await sql`SELECT state, finalizing_until, finalizing_holder FROM upload_sessions WHERE session_id = ${sid}`) as LeaseRow[];
      const r = rows[0];
      return r && { ...r, finalizing_until: r.finalizing_until === null ? null : Number(r.finalizing_until) };
    },
    async hold(sid) {
      const conn = await sql.reserve();
      await conn`BEGIN`;
      await conn`SELECT 1 FROM upload_sessions WHERE session_id = ${sid} FOR UPDATE`;
      return async () => {
        await conn`ROLLBACK`;
        conn.release();
      };
    },
    close: () => sql.close(),
  };
}

const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const s of servers) if (s.proc.exitCode === null) await s.kill();
});

/**
 * Runs the scenario on a data directory and `env`, reading the database through the probe
 * `openProbe` makes once the first server created the database.
 */
async function killMidFinalize(
  env: Record<string, string>,
  dataDir: string,
  openProbe: () => Probe,
): Promise<void> {
  const start = async () => {
    const s = await startServer({ dataDir, env });
    servers.push(s);
    return s;
  };
  const user = newUser();
  const ct = randomCiphertext(96 * MiB + 4321);
  const uploader = await start();
  const probe = openProbe();
  try {
    const s = await openSession(uploader.url, user, { path: "crash/big.bin", chunkSize: CHUNK, ct });
    await putAllChunks([uploader.url], user, s, ct);
    expect(await uploader.stop()).toBe(0);

    // A fresh process has no running hash: its finalize reads all 96 MiB back.
    const finalizer = await start();
    let answered = false;
    const cut = finalize(finalizer.url, user, s.sid).then(
      (r) => {
        answered = true;
        return r;
      },
      () => null,
    );
    for (const deadline = Date.now() + 60_000; (await probe.row(s.sid))?.state !== "finalizing"; ) {
      if (answered)
        throw new Error(`the finalize ended before the test saw it running: ${JSON.stringify(await cut)}`);
      if (Date.now() > deadline) throw new Error("the session never became finalizing");
      await Bun.sleep(1);
    }
    const release = await probe.hold(s.sid);
    const row = await probe.row(s.sid);
    await finalizer.kill();
    await release();
    expect(await cut).toBeNull(); // the connection died with the process
    expect(row).toMatchObject({ state: "finalizing" });
    expect(row?.finalizing_holder).toContain(`:${finalizer.pid}:`);
    const leaseEnds = row!.finalizing_until!;
    expect(leaseEnds).toBeGreaterThan(Date.now() / 1000 + 30);

    const restarted = await start();
    const retried = await finalize(restarted.url, user, s.sid);
    expectSuccess(retried, UPLOAD_RESULT_KEYS);
    // Committed while the dead process's lease still ran: nothing waited for it to expire.
    expect(Date.now() / 1000).toBeLessThan(leaseEnds);
    const got = await download(restarted.url, user, s.manifest);
    expect(got.status).toBe(200);
    expect(blake3Hex(got.body)).toBe(blake3Hex(ct));
    expect(await restarted.stop()).toBe(0);
  } finally {
    await probe.close();
  }
}

describe("a server SIGKILLed mid-finalize and restarted", () => {
  // The blobs on the test storage: the local disk (pass 1), or a bucket of the real S3 server
  // (the S3 pass). The database is named by each test.
  let storage: TestStorageEnv | null = null;
  let pg: PgTestDatabase | null = null;
  afterEach(async () => {
    await storage?.remove();
    await pg?.drop();
    storage = null;
    pg = null;
  });

  test(
    `SQLite + ${testStorage}: the retried finalize commits (200) long before the 60 s lease runs out`,
    async () => {
      storage = await storageEnv("crash");
      const dataDir = tempDir("esync-crash-");
      const { ESYNC_DATABASE_URL: _, ...env } = storage.env;
      await killMidFinalize(env, dataDir, () => sqliteProbe(join(dataDir, "esync.sqlite")));
    },
    SETUP_TIMEOUT_MS,
  );

  test(
    `PostgreSQL + ${testStorage}: the retried finalize commits (200) long before the 60 s lease runs out`,
    async () => {
      storage = await storageEnv("crash");
      pg = await pgTestDatabase("crash");
      const url = pg.url;
      await killMidFinalize({ ...storage.env, ESYNC_DATABASE_URL: url }, tempDir("esync-crash-"), () =>
        pgProbe(url),
      );
    },
    SETUP_TIMEOUT_MS,
  );
});
