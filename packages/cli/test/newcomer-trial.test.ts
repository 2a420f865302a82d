/**
 * The newcomer trial of issue 27, end to end: two devices (two configuration directories that
 * import one mnemonic) each run the real `esync sync DIR --folder L` against a real server,
 * through NFD and NFC names and a large file (docs/unicode-names.md), a server outage, a
 * conflict, a deletion restored from the trash and an overwrite restored from its version
 * (docs/versions.md). The large file is 64 MiB; `ESYNC_TRIAL_LARGE_BYTES` sets another size
 * (1073741824 for the 1 GiB).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ServerProcess, startServer } from "@esync/server/test/support/server.ts";
import { listTree, runCli } from "./helpers.ts";

setDefaultTimeout(900_000);

const LARGE_BYTES = Number(process.env.ESYNC_TRIAL_LARGE_BYTES ?? 64 * 1024 * 1024);
const SERVER_ENV = { ESYNC_DISK_FSYNC: "off" };
const FOLDER = "trial";
/** `étè.txt` written decomposed (NFD) on disk. */
const NFD_NAME = "e\u0301te\u0300.txt";
/** `café.txt` written composed (NFC) on disk. */
const NFC_NAME = "caf\u00e9.txt";

const work = mkdtempSync(join(tmpdir(), "esync-trial-"));
const cfgA = join(work, "config-a");
const cfgB = join(work, "config-b");
const dirA = join(work, "device-a");
const dirB = join(work, "device-b");
let server: ServerProcess;

/** Writes `bytes` bytes of varied (non-repeating, incompressible-looking) content to `path`. */
async function writeLarge(path: string, bytes: number): Promise<void> {
  const f = await open(path, "w");
  try {
    const block = new Uint8Array(4 * 1024 * 1024);
    for (let off = 0, n = 0; off < bytes; off += block.byteLength, n++) {
      crypto.getRandomValues(block.subarray(0, 65536));
      for (let i = 65536; i < block.byteLength; i += 65536) block.copyWithin(i, 0, 65536);
      block[0] = n & 0xff;
      await f.write(block.subarray(0, Math.min(block.byteLength, bytes - off)));
    }
  } finally {
    await f.close();
  }
}

/**
 * Asserts that `a` and `b` hold the same regular files, names compared in NFC (the wire form;
 * an NFD name on A arrives in NFC on B) and bytes compared exactly, leaving out each device's
 * own sync state (`.esync/`); returns the file count.
 */
async function expectSameTree(a: string, b: string): Promise<number> {
  const byNfc = (root: string) =>
    new Map(
      [...listTree(root)]
        .filter(([rel]) => !rel.startsWith(".esync/"))
        .map(([rel, abs]) => [rel.normalize("NFC"), abs] as const),
    );
  const ta = byNfc(a);
  const tb = byNfc(b);
  expect([...tb.keys()].sort()).toEqual([...ta.keys()].sort());
  for (const [rel, pa] of ta) {
    const same = Buffer.compare(readFileSync(pa), readFileSync(tb.get(rel) as string)) === 0;
    if (!same) throw new Error(`${rel} differs between the devices`);
  }
  return ta.size;
}

/** `esync sync` of one device; asserts exit 0 and returns the run. */
async function sync(cfg: string, dir: string, ...extra: string[]) {
  const r = await runCli(cfg, ["sync", dir, "--folder", FOLDER, ...extra]);
  if (r.code !== 0) throw new Error(`sync ${dir} exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
  return r;
}

beforeAll(async () => {
  // ESYNC_VERSION_RETENTION_DAYS is left unset: the server keeps versions for its default 30 days.
  server = await startServer({ env: SERVER_ENV });
  const a = await runCli(cfgA, ["init", "--server", server.url, "--json"]);
  expect(a.code).toBe(0);
  const { mnemonic, address } = a.json<{ mnemonic: string; address: string }>();
  const b = await runCli(cfgB, ["init", "--import", "--server", server.url, "--json"], `${mnemonic}\n`);
  expect(b.code).toBe(0);
  expect(b.json<{ address: string }>().address).toBe(address);
  mkdirSync(dirA, { recursive: true });
  mkdirSync(dirB, { recursive: true });
});

afterAll(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe("newcomer trial: two devices with one mnemonic", () => {
  test("1. NFD and NFC names and a large file synced from A arrive byte-identical on B", async () => {
    mkdirSync(join(dirA, "docs", "r\u00e9sum\u00e9s"), { recursive: true });
    writeFileSync(join(dirA, NFD_NAME), "written with a decomposed name\n");
    writeFileSync(join(dirA, NFC_NAME), "written with a composed name\n");
    writeFileSync(join(dirA, "docs", "r\u00e9sum\u00e9s", "cv.txt"), "nested under a composed directory\n");
    writeFileSync(join(dirA, "notes.txt"), "first notes\n");
    writeFileSync(join(dirA, "keep.txt"), "kept, then deleted, then restored\n");
    writeFileSync(join(dirA, "plan.txt"), "the old plan\n");
    await writeLarge(join(dirA, "large.bin"), LARGE_BYTES);
    expect(readdirSync(dirA)).toContain(NFD_NAME);

    const ra = await sync(cfgA, dirA, "--create");
    expect(ra.stderr).not.toContain("cannot sync");
    await sync(cfgB, dirB);

    // Names on B: NFC on the wire, so the decomposed one arrives as its NFC form.
    const namesB = [...listTree(dirB).keys()].filter((n) => !n.startsWith(".esync/")).sort();
    expect(namesB).toEqual(
      [
        NFC_NAME,
        NFD_NAME.normalize("NFC"),
        "docs/r\u00e9sum\u00e9s/cv.txt",
        "keep.txt",
        "large.bin",
        "notes.txt",
        "plan.txt",
      ].sort(),
    );
    expect(await expectSameTree(dirA, dirB)).toBe(7);
    expect(Bun.file(join(dirB, "large.bin")).size).toBe(LARGE_BYTES);
  });

  test("2. with the server down sync fails fast with a clear message; after a restart on the same data it succeeds", async () => {
    const { dataDir, port } = server;
    expect(await server.stop()).toBe(0);
    writeFileSync(join(dirA, "during-outage.txt"), "written while the server was down\n");

    const started = Date.now();
    // `sync` retries network errors for 2 minutes by default (docs/user-guide.md); a shorter
    // --retry-for keeps the trial quick and bounds the wait.
    const down = await runCli(cfgA, ["sync", dirA, "--folder", FOLDER, "--retry-for", "5s"]);
    const seconds = (Date.now() - started) / 1000;
    expect(down.code).toBe(2);
    expect(down.stderr).toContain(`esync: cannot reach ${server.url} (retried for 5s)`);
    expect(down.stderr).not.toContain("verbose: true");
    expect(seconds).toBeLessThan(30);

    server = await startServer({ env: SERVER_ENV, dataDir, port });
    await sync(cfgA, dirA);
    await sync(cfgB, dirB);
    expect(readFileSync(join(dirB, "during-outage.txt"), "utf8")).toBe("written while the server was down\n");
    await expectSameTree(dirA, dirB);
  });

  test("3. a file edited differently on both devices keeps both versions and the trees converge", async () => {
    writeFileSync(join(dirA, "notes.txt"), "edited on A\n");
    writeFileSync(join(dirB, "notes.txt"), "edited on B\n");
    await sync(cfgA, dirA);
    const rb = await sync(cfgB, dirB);
    expect(rb.stdout).toMatch(/conflict +notes\.txt/);
    await sync(cfgA, dirA);

    await expectSameTree(dirA, dirB);
    expect(readFileSync(join(dirA, "notes.txt"), "utf8")).toBe("edited on A\n");
    const copy = [...listTree(dirA).keys()].find((n) => n.startsWith("notes (conflicted copy"));
    expect(copy).toBeDefined();
    expect(readFileSync(join(dirA, copy as string), "utf8")).toBe("edited on B\n");
  });

  test("4. a deletion synced to both devices is listed in the trash and restored to both", async () => {
    const before = readFileSync(join(dirA, "keep.txt"));
    rmSync(join(dirA, "keep.txt"));
    await sync(cfgA, dirA);
    await sync(cfgB, dirB);
    expect(existsSync(join(dirB, "keep.txt"))).toBe(false);

    const trash = await runCli(cfgB, ["trash", "--folder", FOLDER]);
    expect(trash.code).toBe(0);
    expect(trash.stdout).toContain("keep.txt");
    const r = await runCli(cfgB, ["restore", "--deleted", "keep.txt", "--folder", FOLDER]);
    expect(r.code).toBe(0);

    await sync(cfgB, dirB);
    await sync(cfgA, dirA);
    expect(Buffer.compare(readFileSync(join(dirA, "keep.txt")), before)).toBe(0);
    expect(Buffer.compare(readFileSync(join(dirB, "keep.txt")), before)).toBe(0);
    await expectSameTree(dirA, dirB);
  });

  test("5. an overwrite is listed by versions and restoring the old version brings its bytes to both devices", async () => {
    const old = readFileSync(join(dirA, "plan.txt"));
    writeFileSync(join(dirA, "plan.txt"), "the new plan, which turned out wrong\n");
    await sync(cfgA, dirA);
    await sync(cfgB, dirB);
    expect(readFileSync(join(dirB, "plan.txt"), "utf8")).toBe("the new plan, which turned out wrong\n");

    const listed = await runCli(cfgA, ["versions", "plan.txt", "--folder", FOLDER, "--json"]);
    expect(listed.code).toBe(0);
    const { versions } = listed.json<{ versions: { version_id: number; entry: { size_bytes: number } }[] }>();
    const kept = versions.find((v) => v.entry.size_bytes === old.byteLength);
    if (!kept) throw new Error(`the overwritten revision is not listed:\n${listed.stdout}`);
    const r = await runCli(cfgA, [
      "restore",
      "plan.txt",
      "--folder",
      FOLDER,
      "--version",
      String(kept.version_id),
    ]);
    expect(r.code).toBe(0);

    await sync(cfgA, dirA);
    await sync(cfgB, dirB);
    expect(Buffer.compare(readFileSync(join(dirA, "plan.txt")), old)).toBe(0);
    expect(Buffer.compare(readFileSync(join(dirB, "plan.txt")), old)).toBe(0);
    await expectSameTree(dirA, dirB);
  });
});
