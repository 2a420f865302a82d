/**
 * Attribute changes and renames across two devices of one account (the sync engine in-process
 * against a real server): a `touch` (modification time only) propagates, and a directory
 * renamed on one device while the other edits a file inside it ends with the edit at the new
 * path (docs/attributes.md).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
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
import { ApiError } from "@esync/client/api-error.ts";
import { type ServerProcess, startServer } from "@esync/server/test/support/server.ts";
import { makeDevice } from "./support.ts";

const work = mkdtempSync(join(tmpdir(), "esync-attr-sync-"));
let server: ServerProcess;

beforeAll(async () => {
  server = await startServer({ env: { ESYNC_DISK_FSYNC: "off" } });
});
afterAll(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe("attribute changes", () => {
  test("a touch (modification time only) is uploaded and lands on the other device", async () => {
    const a = await makeDevice("a", join(work, "touch-a"), server.url, "touch");
    const b = await makeDevice("b", join(work, "touch-b"), server.url, "touch");
    mkdirSync(a.root, { recursive: true });
    mkdirSync(b.root, { recursive: true });
    writeFileSync(join(a.root, "f.txt"), "same content");
    await a.sync();
    await b.sync();
    utimesSync(join(a.root, "f.txt"), 981_173_106, 981_173_106); // 2001-02-03
    const up = await a.sync();
    expect(up.uploaded).toBe(1);
    const down = await b.sync();
    expect(down.downloaded).toBe(1);
    expect(Math.round(statSync(join(b.root, "f.txt")).mtimeMs)).toBe(981_173_106_000);
    expect(readFileSync(join(b.root, "f.txt"), "utf8")).toBe("same content");
    // Settled: nothing more to do on either side.
    expect((await a.sync()).uploaded + (await b.sync()).uploaded).toBe(0);
  }, 60_000);
});

describe("directory times on a server without the capability", () => {
  test("a server without folder_entry_attributes: sync works, directory times are skipped, no attributes sent", async () => {
    const a = await makeDevice("a", join(work, "nocap-a"), server.url, "nocap");
    const b = await makeDevice("b", join(work, "nocap-b"), server.url, "nocap");
    for (const d of [a, b]) {
      const capabilities = d.api.capabilities.bind(d.api);
      d.api.capabilities = async () => ({ ...(await capabilities()), folder_entry_attributes: false });
    }
    const sent: unknown[] = [];
    const register = a.api.registerFolderEntries.bind(a.api);
    a.api.registerFolderEntries = (input) => {
      sent.push(input.attributes);
      return register(input);
    };
    mkdirSync(join(a.root, "d"), { recursive: true });
    mkdirSync(join(a.root, "empty"), { recursive: true });
    mkdirSync(b.root, { recursive: true });
    writeFileSync(join(a.root, "d", "f.txt"), "f");
    utimesSync(join(a.root, "d"), 981_173_106, 981_173_106);
    const ra = await a.sync();
    expect(ra.failures).toEqual([]);
    const rb = await b.sync();
    expect({ failures: rb.failures, downloaded: rb.downloaded }).toEqual({ failures: [], downloaded: 2 });
    expect(readFileSync(join(b.root, "d", "f.txt"), "utf8")).toBe("f");
    expect(Math.round(statSync(join(b.root, "d")).mtimeMs / 1000)).not.toBe(981_173_106);
    // Only the empty directory was registered, as before the extension, and without attributes.
    expect(sent).toEqual([undefined]);
  }, 60_000);
});

describe("directory times for a reader", () => {
  test("entries refused 403 (a reader of a shared drive): the pass ends without a failure, its times kept", async () => {
    const a = await makeDevice("a", join(work, "reader-a"), server.url, "reader");
    const b = await makeDevice("b", join(work, "reader-b"), server.url, "reader");
    // A writes without directory times, so B has times of its own to send.
    const capabilities = a.api.capabilities.bind(a.api);
    a.api.capabilities = async () => ({ ...(await capabilities()), folder_entry_attributes: false });
    mkdirSync(join(a.root, "d"), { recursive: true });
    mkdirSync(b.root, { recursive: true });
    writeFileSync(join(a.root, "d", "f.txt"), "f");
    await a.sync();
    let refused = 0;
    b.api.registerFolderEntries = async () => {
      refused++;
      throw new ApiError(403, "forbidden", "your role is reader");
    };
    const rb = await b.sync();
    expect({ failures: rb.failures, downloaded: rb.downloaded, refused }).toEqual({
      failures: [],
      downloaded: 1,
      refused: 1,
    });
    expect(readFileSync(join(b.root, "d", "f.txt"), "utf8")).toBe("f");
  }, 60_000);
});

describe("a rename against an edit", () => {
  test("a directory renamed on A while B edits a file inside it: the edit follows the rename", async () => {
    const a = await makeDevice("a", join(work, "mv-a"), server.url, "mv");
    const b = await makeDevice("b", join(work, "mv-b"), server.url, "mv");
    mkdirSync(join(a.root, "d"), { recursive: true });
    mkdirSync(b.root, { recursive: true });
    writeFileSync(join(a.root, "d", "x.txt"), "original x");
    writeFileSync(join(a.root, "d", "y.txt"), "original y");
    await a.sync();
    await b.sync();

    renameSync(join(a.root, "d"), join(a.root, "e"));
    expect((await a.sync()).renamed).toBe(2);
    writeFileSync(join(b.root, "d", "x.txt"), "edited on B");
    const rb = await b.sync();
    expect(rb.failures).toEqual([]);
    expect(existsSync(join(b.root, "d"))).toBe(false);
    expect(readFileSync(join(b.root, "e", "x.txt"), "utf8")).toBe("edited on B");
    expect(readFileSync(join(b.root, "e", "y.txt"), "utf8")).toBe("original y");

    await a.sync();
    expect(existsSync(join(a.root, "d"))).toBe(false);
    expect(readFileSync(join(a.root, "e", "x.txt"), "utf8")).toBe("edited on B");
  }, 60_000);
});
