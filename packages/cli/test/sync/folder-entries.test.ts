/**
 * The sync engine on the product endpoints (docs/protocol.md#rename-files, #folder-entries) against a real server: a
 * directory renamed on one device is one `/rename_files` batch (no upload, the stored blobs
 * stay), empty directories travel as folder entries with no marker file on the server, and
 * marker files written by older versions are migrated to entries.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EsyncApi } from "@esync/client/api.ts";
import type { RemoteFileEntry } from "@esync/client/api-types.ts";
import { identityFromMnemonic } from "@esync/client/keys.ts";
import { pathHash } from "@esync/client/manifest.ts";
import { DIR_MARKER, openDirAttributes, sealAttributes } from "@esync/client/sync/attributes.ts";
import { runSyncPass } from "@esync/client/sync/engine.ts";
import { excludesFrom } from "@esync/client/sync/excludes.ts";
import { SyncState } from "@esync/client/sync/state-db.ts";
import { WalletTokenSource } from "@esync/client/token.ts";
import { uploadFile } from "@esync/client/uploader.ts";
import { type ServerProcess, startServer } from "@esync/server/test/support/server.ts";
import { MNEMONIC } from "./support.ts";

const work = mkdtempSync(join(tmpdir(), "esync-entries-"));
let server: ServerProcess;
const identity = await identityFromMnemonic(MNEMONIC);
/** Requests seen by the counting API, as `METHOD /path`. */
const seen: string[] = [];
let api: EsyncApi;

beforeAll(async () => {
  server = await startServer({ env: { ESYNC_DISK_FSYNC: "off" } });
  api = new EsyncApi({
    baseUrl: server.url,
    token: new WalletTokenSource(identity),
    fetch: ((input: RequestInfo | URL, init?: RequestInit) => {
      seen.push(`${init?.method ?? "GET"} ${new URL(String(input)).pathname}`);
      return fetch(input, init);
    }) as typeof fetch,
  });
});
afterAll(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

async function setup(label: string) {
  const folder = identity.folder(label);
  await api.registerFolder({ ss58Address: identity.address, folderHash: folder.folderHash, label });
  const sync = async (root: string, device: string) => {
    mkdirSync(root, { recursive: true });
    const state = SyncState.open(root, { address: identity.address, folderHash: folder.folderHash });
    try {
      return await runSyncPass({
        api,
        address: identity.address,
        folder,
        root,
        device,
        excludes: excludesFrom([]),
        state,
      });
    } finally {
      state.close();
    }
  };
  const files = async () => {
    const out: RemoteFileEntry[] = [];
    for await (const e of api.iterateState(identity.address, folder.folderHash)) out.push(e);
    return out;
  };
  const entries = async () =>
    (await api.listFolderEntries(identity.address, folder.folderHash)).relative_paths.sort();
  return { folder, sync, files, entries };
}

describe("renames", () => {
  test("a directory renamed on one device is one /rename_files call, no upload, blobs kept", async () => {
    const { sync, files } = await setup("ren");
    const a = join(work, "ren-a");
    const b = join(work, "ren-b");
    mkdirSync(join(a, "docs", "sub"), { recursive: true });
    for (const n of ["one.txt", "two.txt", "sub/three.txt"])
      writeFileSync(join(a, "docs", n), `content ${n}`);
    chmodSync(join(a, "docs", "one.txt"), 0o751);
    utimesSync(join(a, "docs", "one.txt"), 1_000_000, 1_000_000);
    await sync(a, "A");
    await sync(b, "B");
    const before = new Map(
      (await files()).map((e) => [(e.relative_path ?? "").replace(/^docs/, "papers"), e]),
    );
    renameSync(join(a, "docs"), join(a, "papers"));
    seen.length = 0;
    const report = await sync(a, "A");
    expect(report.renamed).toBe(3);
    expect(seen.filter((r) => r === "POST /rename_files")).toHaveLength(1);
    expect(seen.some((r) => r.startsWith("POST /upload"))).toBe(false);
    const after = await files();
    expect(after.map((e) => e.relative_path).sort()).toEqual([
      "papers/one.txt",
      "papers/sub/three.txt",
      "papers/two.txt",
    ]);
    for (const e of after) {
      const old = before.get(e.relative_path ?? "");
      expect(e.store_hash).toBe(old?.store_hash ?? "missing");
      expect(e.revision_seq).toBe((old?.revision_seq ?? 0) + 1);
    }
    const rb = await sync(b, "B");
    expect(rb.renamed).toBe(3);
    expect(existsSync(join(b, "docs"))).toBe(false);
    expect(readFileSync(join(b, "papers", "sub", "three.txt"), "utf8")).toBe("content sub/three.txt");
    const again = await sync(a, "A");
    expect(again.uploaded + again.downloaded + again.renamed).toBe(0);
    // A device that never saw the old paths gets the moved files' modes and mtimes (attributes
    // are bound to the content, not the path, so they survive the move).
    const fresh = join(work, "ren-fresh");
    await sync(fresh, "C");
    const st = statSync(join(fresh, "papers", "one.txt"));
    expect(st.mode & 0o7777).toBe(0o751);
    expect(Math.round(st.mtimeMs)).toBe(Math.round(statSync(join(a, "papers", "one.txt")).mtimeMs));
  });

  test("a file whose mode changed with the move is uploaded again instead (attributes resealed)", async () => {
    const { sync, files } = await setup("ren-mode");
    const a = join(work, "rm-a");
    mkdirSync(a, { recursive: true });
    writeFileSync(join(a, "run.sh"), "#!/bin/sh\n", { mode: 0o644 });
    await sync(a, "A");
    renameSync(join(a, "run.sh"), join(a, "go.sh"));
    Bun.spawnSync(["chmod", "755", join(a, "go.sh")]);
    seen.length = 0;
    await sync(a, "A");
    expect(seen).not.toContain("POST /rename_files");
    expect((await files()).map((e) => e.relative_path)).toEqual(["go.sh"]);
  });
});

describe("empty directories", () => {
  test("round-trip as folder entries with no marker file on the server, and removal propagates", async () => {
    const { sync, files, entries } = await setup("dirs");
    const a = join(work, "dirs-a");
    const b = join(work, "dirs-b");
    mkdirSync(join(a, "empty", "inner"), { recursive: true });
    mkdirSync(join(a, "lonely"), { recursive: true });
    writeFileSync(join(a, "file.txt"), "x");
    await sync(a, "A");
    expect((await files()).map((e) => e.relative_path)).toEqual(["file.txt"]);
    // Every directory has an entry (it carries the directory's modification time).
    expect(await entries()).toEqual(["empty", "empty/inner", "lonely"]);
    await sync(b, "B");
    expect(existsSync(join(b, "empty", "inner"))).toBe(true);
    expect(existsSync(join(b, "lonely"))).toBe(true);
    rmSync(join(b, "empty"), { recursive: true });
    await sync(b, "B");
    expect(await entries()).toEqual(["lonely"]);
    await sync(a, "A");
    expect(existsSync(join(a, "empty"))).toBe(false);
    expect(existsSync(join(a, "lonely"))).toBe(true);
  });

  test("a directory that gets a file keeps its entry, with its new modification time, in one pass", async () => {
    const { folder, sync, entries } = await setup("dirs-fill");
    const a = join(work, "fill-a");
    mkdirSync(join(a, "box"), { recursive: true });
    await sync(a, "A");
    expect(await entries()).toEqual(["box"]);
    writeFileSync(join(a, "box", "item.txt"), "item");
    await sync(a, "A");
    expect(await entries()).toEqual(["box"]);
    const listed = await api.listFolderEntriesWithAttributes(identity.address, folder.folderHash);
    expect(openDirAttributes(folder.key, "box", listed.attributes.get("box"))?.mtimeMs).toBe(
      statSync(join(a, "box")).mtimeMs,
    );
  });

  test("marker files of older versions are migrated: entry registered, marker file deleted", async () => {
    const { folder, sync, files, entries } = await setup("legacy");
    const empty = join(work, "empty-marker");
    writeFileSync(empty, "");
    const rel = `old/${DIR_MARKER}`;
    await uploadFile({
      api,
      ss58Address: identity.address,
      folder,
      localPath: empty,
      relativePath: rel,
      attributes: (saltedHash) =>
        sealAttributes(
          folder.key,
          { pathHash: pathHash(rel), saltedHash },
          { type: "dir", mode: 0o755, mtimeMs: 0 },
        ),
    });
    expect((await files()).map((e) => e.relative_path)).toEqual([rel]);
    const c = join(work, "legacy-c");
    await sync(c, "C");
    expect(existsSync(join(c, "old"))).toBe(true);
    expect(existsSync(join(c, "old", DIR_MARKER))).toBe(false);
    expect(await files()).toEqual([]);
    expect(await entries()).toEqual(["old"]);
    const again = await sync(c, "C");
    expect(again.uploaded + again.downloaded + again.deletedLocal + again.deletedRemote).toBe(0);
  });
});
