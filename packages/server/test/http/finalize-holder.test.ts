/**
 * The finalize lease's holder (issue 11; src/sessions/lease-holder.ts): a session left
 * `finalizing` by a process that is provably dead (this machine, this pid namespace, its pid gone
 * or reused) is taken over at once by a retried finalize, an abort or a sweep, without waiting
 * for the lease to run out; a live holder, a holder on another machine (on PostgreSQL) or no
 * holder keep the lease until it runs out. The session is put in that state through the
 * repository, as the dead or foreign process left it.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { LeaseHolders } from "../../src/sessions/lease-holder.ts";
import { blobPrefix } from "../../src/storage/layout.ts";
import { makeTestApp, type TestApp, testDatabase } from "../support/app.ts";
import { newUser, randomCiphertext } from "../support/fixtures.ts";
import {
  abort,
  expectConflict,
  expectError,
  expectSuccess,
  finalize,
  type OpenSession,
  openSession,
  putChunks,
  rowsOf,
  stateOf,
  UPLOAD_RESULT_KEYS,
} from "./helpers.ts";

const LEASE = 60;
let t: TestApp;
beforeEach(() => {
  t = makeTestApp({ ESYNC_FINALIZE_LEASE_SECONDS: String(LEASE) });
});
afterEach(() => t.close());

/** This process as the app names it. */
const self = new LeaseHolders({ localDatabase: false }).self!;

/** The holder string of process `pid` of this machine (its real start time). */
function holderOf(pid: number): string {
  const start = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[19];
  return self.replace(/:\d+:\d+$/, `:${pid}:${start}`);
}

/** A holder string of a process of this machine that ran and was SIGKILLed (a crashed server). */
async function deadHolder(): Promise<string> {
  const child = Bun.spawn(["sleep", "60"]);
  const holder = holderOf(child.pid);
  child.kill("SIGKILL");
  await child.exited;
  return holder;
}

/** A session with every chunk uploaded, left `finalizing` under `holder` (lease of LEASE s). */
async function abandoned(holder: string | null): Promise<OpenSession> {
  const u = newUser();
  const ct = randomCiphertext(3000);
  const s = await openSession(t, u, ct, { chunkSize: 1000 });
  await putChunks(t, s, ct);
  const now = t.clock.now();
  expect(await t.store.repos.sessions.beginFinalizing(s.sessionId, now + LEASE, now + 3600, holder)).toBe(
    true,
  );
  return s;
}

async function sessionRow(): Promise<Record<string, unknown>> {
  return (await rowsOf(t, "upload_sessions"))[0]!;
}

test("a retried finalize takes over the lease of a dead process of this machine at once and commits (200)", async () => {
  const s = await abandoned(await deadHolder());
  expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
  expect(await sessionRow()).toMatchObject({
    state: "finalized",
    finalizing_until: null,
    finalizing_holder: null,
  });
});

test("a finalize records this process as the lease holder while it runs", async () => {
  const u = newUser();
  const ct = randomCiphertext(2000);
  const s = await openSession(t, u, ct, { chunkSize: 1000 });
  await putChunks(t, s, ct);
  const seen: unknown[] = [];
  const sessions = t.store.repos.sessions;
  const chunks = sessions.chunks.bind(sessions);
  // Read the row from inside the finalize, after its lease was taken.
  sessions.chunks = async (id) => {
    seen.push((await sessions.get(id))?.finalizingHolder);
    return chunks(id);
  };
  expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
  expect(seen).toEqual([self]);
});

test("a live holder of this machine keeps its lease: finalize and abort get 409, the sweeper leaves it; once it is killed, finalize commits (200)", async () => {
  const child = Bun.spawn(["sleep", "60"]);
  try {
    const s = await abandoned(holderOf(child.pid));
    expect(expectConflict(await finalize(t, s.auth, s.sessionId)).message).toContain("being finalized");
    expectError(await abort(t, s.auth, s.sessionId), 409, "conflict");
    await t.sweeper.runOnce();
    expect(await sessionRow()).toMatchObject({ state: "finalizing" });
    child.kill("SIGKILL");
    await child.exited;
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
  } finally {
    child.kill("SIGKILL");
  }
});

test("this process's own live lease is never taken over (409 to a second finalize)", async () => {
  const s = await abandoned(self);
  expect(expectConflict(await finalize(t, s.auth, s.sessionId)).message).toContain("being finalized");
  await t.sweeper.runOnce();
  expect(await sessionRow()).toMatchObject({ state: "finalizing", finalizing_holder: self });
});

test("a holder in another pid namespace (another container) or with no holder keeps the lease until it runs out (409, then 200)", async () => {
  const otherNs = self.replace(/^([^:]+):\d+:/, "$1:1:");
  for (const holder of [otherNs, null]) {
    const s = await abandoned(holder);
    expectConflict(await finalize(t, s.auth, s.sessionId));
    await t.sweeper.runOnce();
    expect((await rowsOf(t, "upload_sessions")).find((r) => r.session_id === s.sessionId)).toMatchObject({
      state: "finalizing",
    });
    t.clock.advance(LEASE);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
  }
});

test(`a holder of another boot is ${testDatabase === "sqlite" ? "dead on SQLite (a local file: the machine rebooted), 200" : "another node's machine on PostgreSQL: 409 until the lease runs out"}`, async () => {
  const otherBoot = self.replace(/^[^:]+:/, "00000000-0000-4000-8000-000000000000:");
  const s = await abandoned(otherBoot);
  if (testDatabase === "sqlite") {
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
  } else {
    expectConflict(await finalize(t, s.auth, s.sessionId));
    await t.sweeper.runOnce();
    expect(await sessionRow()).toMatchObject({ state: "finalizing", finalizing_holder: otherBoot });
    t.clock.advance(LEASE);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
  }
});

test("a sweep (the start-up pass) returns a dead holder's session to receiving without waiting for the lease", async () => {
  const s = await abandoned(await deadHolder());
  await t.sweeper.runOnce();
  expect(await sessionRow()).toMatchObject({
    session_id: s.sessionId,
    state: "receiving",
    finalizing_until: null,
    finalizing_holder: null,
  });
});

test("a lease that ran out is released by the retried finalize itself, before any sweep (200)", async () => {
  const child = Bun.spawn(["sleep", "60"]);
  try {
    const s = await abandoned(holderOf(child.pid));
    t.clock.advance(LEASE);
    expectSuccess(await finalize(t, s.auth, s.sessionId), UPLOAD_RESULT_KEYS);
  } finally {
    child.kill("SIGKILL");
  }
});

test("DELETE of a session whose finalize holder is dead deletes it (200) and queues its chunk objects", async () => {
  const u = newUser();
  const ct = randomCiphertext(2000);
  const s = await openSession(t, u, ct, { chunkSize: 1000 });
  await putChunks(t, s, ct);
  const blobId = (await sessionRow()).blob_id as string;
  const now = t.clock.now();
  await t.store.repos.sessions.beginFinalizing(s.sessionId, now + LEASE, now + 3600, await deadHolder());
  expectSuccess(await abort(t, s.auth, s.sessionId), ["deleted"]);
  expect(await rowsOf(t, "upload_sessions")).toEqual([]);
  expect((await rowsOf(t, "blob_deletions")).map((r) => r.target)).toContain(blobPrefix(blobId));
  expect((await stateOf(t, u)).files).toEqual([]);
});
