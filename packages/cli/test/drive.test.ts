/**
 * `esync drive` end to end: two accounts (two configuration directories, two mnemonics) share
 * a folder through the real CLI against a real server (docs/drives.md, "Client"): invite,
 * join, both sync edits to the same folder, a writer lowered to reader is refused its next
 * upload, a removed member is refused its next read; a member searches the drive and syncs
 * it as a configured pair (`search --drive`, `sync add --drive`, `sync --all`). With
 * `ESYNC_TEST_DATABASE=postgres` (and `ESYNC_TEST_STORAGE=s3`) it runs on two nodes sharing one database and bucket: the owner on
 * node A, the member on node B, so that every membership change must hold across nodes.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { testDatabase } from "@esync/server/test/support/pg-server.ts";
import {
  type ServerProcess,
  type SharedStores,
  sharedStores,
  startServer,
} from "@esync/server/test/support/server.ts";
import { runCli } from "./helpers.ts";

setDefaultTimeout(300_000);
const work = mkdtempSync(join(tmpdir(), "esync-drive-"));
const ownerCfg = join(work, "owner");
const memberCfg = join(work, "member");
const ownerDir = join(work, "owner-team");
const memberDir = join(work, "member-team");
let server: ServerProcess;
/** The member's node: a second server on the same database and bucket on PostgreSQL, else `server`. */
let memberServer: ServerProcess;
let stores: SharedStores | undefined;
let ownerAddr = "";
let memberAddr = "";

beforeAll(async () => {
  if (testDatabase === "postgres") {
    stores = await sharedStores("drive-cli");
    server = await startServer({ env: { ESYNC_DISK_FSYNC: "off" }, testStores: stores });
    memberServer = await startServer({ env: { ESYNC_DISK_FSYNC: "off" }, testStores: stores });
    expect(memberServer.port).not.toBe(server.port);
  } else {
    server = await startServer({ env: { ESYNC_DISK_FSYNC: "off" }, testStores: true });
    memberServer = server;
  }
  const a = await runCli(ownerCfg, ["init", "--server", server.url, "--json"]);
  const b = await runCli(memberCfg, ["init", "--server", memberServer.url, "--json"]);
  expect(a.code).toBe(0);
  expect(b.code).toBe(0);
  ownerAddr = String(a.json().address);
  memberAddr = String(b.json().address);
  mkdirSync(ownerDir);
  writeFileSync(join(ownerDir, "plan.txt"), "owner's plan");
  expect((await runCli(ownerCfg, ["sync", ownerDir, "--folder", "team", "--create"])).code).toBe(0);
});
afterAll(async () => {
  if (memberServer && memberServer !== server) await memberServer.stop();
  await server?.stop();
  await stores?.remove();
  rmSync(work, { recursive: true, force: true });
});

test("invite, join and two accounts syncing edits to the same folder", async () => {
  expect(memberAddr).not.toBe(ownerAddr);
  const inv = await runCli(ownerCfg, [
    "drive",
    "invite",
    "--folder",
    "team",
    "--role",
    "writer",
    "--uses",
    "2",
    "--expires",
    "7d",
    "--json",
  ]);
  expect(inv.code).toBe(0);
  const { link, sealed } = inv.json<{ link: string; sealed: boolean }>();
  expect(link).toMatch(/\/invite\/[A-Za-z0-9_-]{43}#k=[A-Za-z0-9_-]{43}$/);
  expect(sealed).toBe(true);

  const join1 = await runCli(memberCfg, ["drive", "join", link, "--json"]);
  expect(join1.code).toBe(0);
  expect(join1.json()).toMatchObject({ owner_ss58: ownerAddr, role: "writer", drive: `${ownerAddr}/team` });
  expect(statSync(join(memberCfg, "drives.json")).mode & 0o777).toBe(0o600);

  // The member pulls the owner's file with the drive key, edits it and adds one.
  const drive = `${ownerAddr}/team`;
  expect((await runCli(memberCfg, ["sync", memberDir, "--drive", drive, "--create-dir"])).code).toBe(0);
  expect(readFileSync(join(memberDir, "plan.txt"), "utf8")).toBe("owner's plan");
  writeFileSync(join(memberDir, "plan.txt"), "member's edit");
  writeFileSync(join(memberDir, "notes.txt"), "member's notes");
  const up = await runCli(memberCfg, ["sync", memberDir, "--drive", drive]);
  expect(up.code).toBe(0);

  // The owner sees both, answers with an edit, and the member sees that.
  expect((await runCli(ownerCfg, ["sync", ownerDir, "--folder", "team"])).code).toBe(0);
  expect(readFileSync(join(ownerDir, "plan.txt"), "utf8")).toBe("member's edit");
  expect(readFileSync(join(ownerDir, "notes.txt"), "utf8")).toBe("member's notes");
  writeFileSync(join(ownerDir, "notes.txt"), "owner's reply");
  expect((await runCli(ownerCfg, ["sync", ownerDir, "--folder", "team"])).code).toBe(0);
  expect((await runCli(memberCfg, ["sync", memberDir, "--drive", "team"])).code).toBe(0);
  expect(readFileSync(join(memberDir, "notes.txt"), "utf8")).toBe("owner's reply");

  const ls = await runCli(memberCfg, ["ls", "--drive", drive, "--json"]);
  expect(
    ls
      .json<{ files: { file_name: string }[] }>()
      .files.map((f) => f.file_name)
      .sort(),
  ).toEqual(["notes.txt", "plan.txt"]);
  // Another device of the member (same mnemonic, no drives.json) opens the grant blob kept by the server.
  const device2 = join(work, "member-device2");
  mkdirSync(device2, { mode: 0o700 });
  for (const f of ["mnemonic", "config.json"]) {
    writeFileSync(join(device2, f), readFileSync(join(memberCfg, f)), { mode: 0o600 });
  }
  const ls2 = await runCli(device2, ["ls", "--drive", drive, "--json"]);
  expect(ls2.code).toBe(0);
  expect(JSON.parse(readFileSync(join(device2, "drives.json"), "utf8")).drives).toEqual([
    expect.objectContaining({ owner_ss58: ownerAddr, label: "team" }),
  ]);
  const members = await runCli(ownerCfg, ["drive", "members", "--folder", "team", "--json"]);
  expect(members.json<{ members: { member_ss58: string; role: string }[] }>().members).toEqual([
    expect.objectContaining({ member_ss58: memberAddr, role: "writer" }),
  ]);
  const invites = await runCli(ownerCfg, ["drive", "invites", "--folder", "team", "--json"]);
  expect(
    invites.json<{ invites: { use_count: number; sealed_token?: string }[] }>().invites[0],
  ).toMatchObject({
    use_count: 1,
    sealed_token: expect.any(String),
  });
});

test("a writer member runs mkdir, mv, rm, restore and status in the owner's folder with --drive; drives.json holds no plaintext key", async () => {
  const drive = `${ownerAddr}/team`;
  expect(readFileSync(join(memberCfg, "drives.json"), "utf8")).not.toContain('folder_mnemonic"');
  expect((await runCli(memberCfg, ["mkdir", "--drive", drive, "shared/new"])).code).toBe(0);
  expect((await runCli(memberCfg, ["mv", "--drive", drive, "notes.txt", "shared/notes.txt"])).code).toBe(0);
  const ls = await runCli(ownerCfg, ["ls", "shared", "--folder", "team", "--json"]);
  expect(ls.code).toBe(0);
  expect(ls.json<{ files: { file_name: string }[] }>().files.map((f) => f.file_name)).toEqual(["notes.txt"]);
  expect((await runCli(memberCfg, ["rm", "--drive", drive, "shared/notes.txt"])).code).toBe(0);
  const after = await runCli(ownerCfg, ["ls", "shared", "--folder", "team", "--json"]);
  expect(after.json<{ files: unknown[] }>().files).toEqual([]);
  expect((await runCli(memberCfg, ["rm", "shared/x", "--folder", "team", "--drive", drive])).code).toBe(1);
  const st = await runCli(memberCfg, ["status", memberDir, "--drive", drive, "--json"]);
  expect(st.code).toBe(0);
  expect(st.json<{ folder: string }>().folder).toBe("team");
  const restoreDir = join(work, "member-restore");
  const restored = await runCli(memberCfg, ["restore", "plan.txt", "--drive", drive, "--to", restoreDir]);
  expect(restored.code).toBe(0);
  expect(readFileSync(join(restoreDir, "plan.txt"), "utf8")).toBe("member's edit");
  // Put the file back where the next tests expect it.
  writeFileSync(join(ownerDir, "notes.txt"), "owner's reply");
  expect((await runCli(ownerCfg, ["sync", ownerDir, "--folder", "team"])).code).toBe(0);
});

test("a member searches the owner's drive folder with search --drive and finds the owner's file", async () => {
  const drive = `${ownerAddr}/team`;
  const found = await runCli(memberCfg, ["search", "plan", "--drive", drive, "--json"]);
  expect(found.code).toBe(0);
  const r = found.json<{ files: { file_name: string; folder_hash: string }[]; total_count: number }>();
  expect(r.files.map((f) => f.file_name)).toEqual(["plan.txt"]);
  const table = await runCli(memberCfg, ["search", "plan", "--drive", "team"]);
  expect(table.code).toBe(0);
  expect(table.stdout).toContain("plan.txt");
  // Without --drive the member searches its own account, which has no such file.
  const own = await runCli(memberCfg, ["search", "plan", "--json"]);
  expect(own.json<{ files: unknown[] }>().files).toEqual([]);
  // The owner can narrow to the folder with --folder.
  const owner = await runCli(ownerCfg, ["search", "plan", "--folder", "team", "--json"]);
  expect(owner.json<{ files: { folder_hash: string }[] }>().files.map((f) => f.folder_hash)).toEqual(
    r.files.map((f) => f.folder_hash),
  );
  const none = await runCli(ownerCfg, ["search", "plan", "--folder", "elsewhere", "--json"]);
  expect(none.json<{ files: unknown[] }>().files).toEqual([]);
});

test("search with both --drive and --folder is refused with exit code 1", async () => {
  const both = await runCli(memberCfg, [
    "search",
    "plan",
    "--drive",
    `${ownerAddr}/team`,
    "--folder",
    "team",
  ]);
  expect(both.code).toBe(1);
  expect(both.stderr).toContain(
    "give --folder LABEL (your folder) or --drive OWNER/LABEL (a joined drive), not both",
  );
});

test("a stranger's search --drive names no joined drive and is refused with exit code 1", async () => {
  const strangerCfg = join(work, "stranger");
  expect((await runCli(strangerCfg, ["init", "--server", server.url])).code).toBe(0);
  const r = await runCli(strangerCfg, ["search", "plan", "--drive", `${ownerAddr}/team`]);
  expect(r.code).toBe(1);
  expect(r.stderr).toContain(`no joined drive "${ownerAddr}/team" (this account joined no drive)`);
});

test("sync add --drive stores a drive pair, sync list shows it, and sync --all uploads into the owner's folder", async () => {
  const drive = `${ownerAddr}/team`;
  const pairDir = join(work, "member-pair");
  mkdirSync(pairDir);
  writeFileSync(join(pairDir, "from-pair.txt"), "synced by the pair");
  const added = await runCli(memberCfg, ["sync", "add", pairDir, "--drive", "team", "--json"]);
  expect(added.code).toBe(0);
  expect(added.json()).toEqual({ added: { dir: pairDir, drive, exclude: [] } });
  // Stored without "folder", so a client that knows no drive pairs refuses the file.
  expect(JSON.parse(readFileSync(join(memberCfg, "sync-pairs.json"), "utf8")).pairs).toEqual([
    { dir: pairDir, drive, exclude: [] },
  ]);
  const list = await runCli(memberCfg, ["sync", "list"]);
  expect(list.code).toBe(0);
  expect(list.stdout).toContain(`drive ${drive}`);
  const all = await runCli(memberCfg, ["sync", "--all"]);
  expect(all.code).toBe(0);
  expect(readFileSync(join(pairDir, "plan.txt"), "utf8")).toBe("member's edit");
  expect((await runCli(ownerCfg, ["sync", ownerDir, "--folder", "team"])).code).toBe(0);
  expect(readFileSync(join(ownerDir, "from-pair.txt"), "utf8")).toBe("synced by the pair");
  const owned = await runCli(ownerCfg, ["ls", "--folder", "team", "--json"]);
  expect(owned.json<{ files: { file_name: string }[] }>().files.map((f) => f.file_name)).toContain(
    "from-pair.txt",
  );
});

test("sync add with both --drive and --folder, or a drive not joined, is refused with exit code 1", async () => {
  const dir = join(work, "member-pair");
  const both = await runCli(memberCfg, [
    "sync",
    "add",
    dir,
    "--drive",
    `${ownerAddr}/team`,
    "--folder",
    "team",
  ]);
  expect(both.code).toBe(1);
  expect(both.stderr).toContain("give --folder LABEL (your folder) or --drive OWNER/LABEL (a joined drive)");
  const unknown = await runCli(memberCfg, ["sync", "add", memberDir, "--drive", `${ownerAddr}/elsewhere`]);
  expect(unknown.code).toBe(1);
  expect(unknown.stderr).toContain(`no joined drive "${ownerAddr}/elsewhere"`);
});

test("a writer lowered to reader gets its next upload refused with a clear message, and still reads", async () => {
  const drive = `${ownerAddr}/team`;
  const role = await runCli(ownerCfg, ["drive", "role", memberAddr, "reader", "--folder", "team"]);
  expect(role.code).toBe(0);
  writeFileSync(join(memberDir, "new.txt"), "refused");
  const push = await runCli(memberCfg, ["push", memberDir, "--drive", drive]);
  expect(push.code).toBe(2);
  expect(push.stderr).toContain(
    `your role on drive ${drive} is reader: uploads, deletions and renames are refused`,
  );
  const sync = await runCli(memberCfg, ["sync", memberDir, "--drive", drive]);
  expect(sync.code).toBe(2);
  expect(sync.stderr).toContain("is reader");
  expect((await runCli(memberCfg, ["ls", "--drive", drive])).code).toBe(0);
});

test("a removed member's next read is refused 403 with a clear message", async () => {
  const drive = `${ownerAddr}/team`;
  expect((await runCli(ownerCfg, ["drive", "remove", memberAddr, "--folder", "team"])).code).toBe(0);
  const ls = await runCli(memberCfg, ["ls", "--drive", drive]);
  expect(ls.code).toBe(2);
  expect(ls.stderr).toContain(`403 forbidden: you are no longer a member of drive ${drive}`);
  const pull = await runCli(memberCfg, ["pull", "--drive", drive, join(work, "pulled")]);
  expect(pull.code).toBe(2);
  expect(pull.stderr).toContain("no longer a member");
  const search = await runCli(memberCfg, ["search", "plan", "--drive", drive]);
  expect(search.code).toBe(2);
  expect(search.stderr).toContain(`403 forbidden: you are no longer a member of drive ${drive}`);
  // The drive pair fails by name with the same explanation; `sync remove --drive` forgets it.
  const all = await runCli(memberCfg, ["sync", "--all"]);
  expect(all.code).toBe(2);
  expect(all.stderr).toContain(
    `<-> drive ${drive}: 403 forbidden: you are no longer a member of drive ${drive}`,
  );
  const removed = await runCli(memberCfg, ["sync", "remove", "--drive", "team", "--json"]);
  expect(removed.code).toBe(0);
  expect(removed.json<{ removed: { drive: string }[] }>().removed.map((p) => p.drive)).toEqual([drive]);
});

test("revoke ends an invite and leave forgets the drive", async () => {
  const inv = await runCli(ownerCfg, ["drive", "invite", "--folder", "team", "--role", "reader", "--json"]);
  const { link } = inv.json<{ link: string }>();
  const id = (await runCli(ownerCfg, ["drive", "invites", "--folder", "team", "--json"])).json<{
    invites: { invite_id: string }[];
  }>().invites[0]?.invite_id as string;
  expect((await runCli(ownerCfg, ["drive", "revoke", id, "--folder", "team"])).code).toBe(0);
  const refused = await runCli(memberCfg, ["drive", "join", link]);
  expect(refused.code).toBe(2);
  expect(refused.stderr).toContain("410 gone");
  const again = await runCli(ownerCfg, ["drive", "invite", "--folder", "team", "--role", "reader", "--json"]);
  expect((await runCli(memberCfg, ["drive", "join", again.json<{ link: string }>().link])).code).toBe(0);
  const left = await runCli(memberCfg, ["drive", "leave", "--drive", `${ownerAddr}/team`]);
  expect(left.code).toBe(0);
  expect(JSON.parse(readFileSync(join(memberCfg, "drives.json"), "utf8")).drives).toEqual([]);
  const members = await runCli(ownerCfg, ["drive", "members", "--folder", "team", "--json"]);
  expect(members.json<{ members: unknown[] }>().members).toEqual([]);
});
