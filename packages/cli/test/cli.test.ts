/**
 * The `esync` command end to end: the real CLI process against the real server process, each
 * with temporary directories. init (new, import, 0600), folder add/list/rm, push of a tree of
 * real files of this machine and pull back byte for byte, unchanged files skipped, a changed
 * file sent as a new revision, search, rm, and the exit codes of failures.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { folderHash, identityFromMnemonic } from "@esync/client/keys.ts";
import { ciphertextSizeFor } from "@esync/protocol/framing.ts";
import { type ServerProcess, startServer } from "@esync/server/test/support/server.ts";
import { buildRealTree, expectSameTree, listTree, runCli } from "./helpers.ts";

// Real CLI processes against a real server: seconds each on a loaded machine.
setDefaultTimeout(120_000);

const MNEMONIC = `${"abandon ".repeat(11)}about`;
const work = mkdtempSync(join(tmpdir(), "esync-cli-"));
const cfg = join(work, "config");
let server: ServerProcess;

beforeAll(async () => {
  server = await startServer({ env: { ESYNC_DISK_FSYNC: "off" } });
});
afterAll(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

interface PushSummary {
  uploaded: number;
  unchanged: number;
  failed: number;
  files_scanned: number;
  bytes_sent: number;
  bytes_resumed: number;
  files: Array<{
    path: string;
    action: string;
    mode?: string;
    reason?: string;
    revision_seq?: number;
    size: number;
  }>;
}

interface PullSummary {
  downloaded: number;
  up_to_date: number;
  failed: number;
}

describe("esync init", () => {
  test("creates a 24-word mnemonic, stored with mode 0600 in a 0700 directory, and the server URL", async () => {
    const r = await runCli(cfg, ["init", "--server", server.url, "--json"]);
    expect(r.code).toBe(0);
    const out = r.json<{ created: boolean; mnemonic: string; address: string; server_ok: boolean }>();
    expect(out.created).toBe(true);
    expect(out.server_ok).toBe(true);
    expect(out.mnemonic.split(" ")).toHaveLength(24);
    expect(out.address).toBe((await identityFromMnemonic(out.mnemonic)).address);
    expect((await Bun.file(join(cfg, "mnemonic")).text()).trim()).toBe(out.mnemonic);
    expect(statSync(join(cfg, "mnemonic")).mode & 0o777).toBe(0o600);
    expect(statSync(join(cfg, "config.json")).mode & 0o777).toBe(0o600);
    expect(statSync(cfg).mode & 0o777).toBe(0o700);
    const config = (await Bun.file(join(cfg, "config.json")).json()) as { server_url: string };
    expect(config.server_url).toBe(server.url);
  });

  test("imports a mnemonic piped on stdin and derives the same account as the library", async () => {
    const dir = join(work, "imported");
    const r = await runCli(dir, ["init", "--import", "--server", server.url, "--json"], `  ${MNEMONIC}\n`);
    expect(r.code).toBe(0);
    const out = r.json<{ imported: boolean; address: string; mnemonic?: string }>();
    expect(out.imported).toBe(true);
    expect(out.mnemonic).toBeUndefined(); // an imported secret is not echoed back
    expect(out.address).toBe((await identityFromMnemonic(MNEMONIC)).address);
    expect(statSync(join(dir, "mnemonic")).mode & 0o777).toBe(0o600);
  });

  test("rejects an invalid mnemonic with exit 1 and stores nothing", async () => {
    const dir = join(work, "invalid");
    const r = await runCli(dir, ["init", "--import", "--server", server.url], "abandon abandon banana\n");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("esync: not a valid English BIP39 mnemonic");
    expect(await Bun.file(join(dir, "mnemonic")).exists()).toBe(false);
  });

  test("refuses to replace an existing mnemonic without --force (exit 1), but updates the server URL", async () => {
    const before = await Bun.file(join(cfg, "mnemonic")).text();
    const r = await runCli(cfg, ["init", "--import"], `${MNEMONIC}\n`);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("--force");
    const again = await runCli(cfg, ["init", "--server", `${server.url}/`]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("already initialised");
    expect(await Bun.file(join(cfg, "mnemonic")).text()).toBe(before);
  });

  test("a command before init exits 1 and says to run esync init", async () => {
    const r = await runCli(join(work, "never-initialised"), ["folder", "list"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^esync: no configuration in .*run `esync init` first/);
  });
});

describe("esync folder", () => {
  test("add registers a folder; adding it again reports it as already registered (exit 0)", async () => {
    const r = await runCli(cfg, ["folder", "add", "photos", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toMatchObject({ label: "photos", folder_hash: folderHash("photos"), registered: true });
    const again = await runCli(cfg, ["folder", "add", "photos"]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("already registered");
  });

  test("list shows registered folders (JSON and a table)", async () => {
    const r = await runCli(cfg, ["folder", "list", "--json"]);
    expect(r.code).toBe(0);
    const folders = r.json<Array<{ label: string; folder_hash: string; file_count: number }>>();
    expect(folders.find((f) => f.label === "photos")).toMatchObject({
      folder_hash: folderHash("photos"),
      file_count: 0,
    });
    const table = await runCli(cfg, ["folder", "list"]);
    expect(table.stdout).toMatch(/^LABEL\s+HASH\s+FILES\s+SIZE\s+UPDATED\s+DEVICE/);
    expect(table.stdout).toMatch(/photos\s+[0-9a-f]{16}\s+0\s+0 B\s+\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z/);
  });

  test("rm needs --yes (exit 1), then unregisters; a second rm is the server's 404 (exit 2)", async () => {
    const refused = await runCli(cfg, ["folder", "rm", "photos"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("--yes");
    const r = await runCli(cfg, ["folder", "rm", "photos", "--yes", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json()).toMatchObject({ label: "photos", files_deleted: 0 });
    const list = await runCli(cfg, ["folder", "list", "--json"]);
    expect(list.json<Array<{ label: string }>>().some((f) => f.label === "photos")).toBe(false);
    const again = await runCli(cfg, ["folder", "rm", "photos", "--yes"]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/^esync: http:\/\/127\.0\.0\.1:\d+: 404 not_found: /);
  });
});

describe("esync push / pull of a real directory tree", () => {
  const tree = join(work, "tree");
  let fileCount = 0;

  test("push uploads every file (the large one through a session) and registers the folder", async () => {
    buildRealTree(tree);
    fileCount = listTree(tree).size;
    expect(fileCount).toBeGreaterThan(10);
    const r = await runCli(cfg, ["push", tree, "--folder", "backup", "--create", "--json"]);
    expect(r.code).toBe(0);
    const s = r.json<PushSummary & { registered_folder: boolean }>();
    expect(s.registered_folder).toBe(true);
    expect(s).toMatchObject({ files_scanned: fileCount, uploaded: fileCount, unchanged: 0, failed: 0 });
    const large = s.files.find((f) => f.path === "large/real-over-8MiB.bin");
    expect(large).toMatchObject({ action: "uploaded", mode: "session", reason: "new" });
    expect(s.files.find((f) => f.path === "deep/er/still/empty.txt")).toMatchObject({
      size: 0,
      mode: "single",
    });
    expect(s.files.some((f) => f.path === "deep/Résumé final.json")).toBe(true);
    const total = [...listTree(tree).values()].reduce((n, p) => n + ciphertextSizeFor(statSync(p).size), 0);
    expect(s.bytes_sent).toBe(total);
  });

  test("push --json of a tree of 800 small files uploads them all, and its summary (over twice a pipe's 64 KiB) reaches stdout whole", async () => {
    const many = join(work, "many");
    for (let i = 0; i < 800; i++) {
      const p = join(many, `d${i % 30}`, `file-with-a-longish-name-${i}.txt`);
      mkdirSync(dirname(p), { recursive: true });
      writeFileSync(p, `small file ${i}\n`.repeat(1 + (i % 50)));
    }
    const r = await runCli(cfg, ["push", many, "--folder", "many", "--create", "--json"]);
    expect(r.stdout.length).toBeGreaterThan(128 * 1024);
    const s = r.json<PushSummary>();
    expect(r.code).toBe(0);
    expect(s).toMatchObject({ files_scanned: 800, uploaded: 800, failed: 0 });
    expect(s.files.every((f) => f.mode === "single")).toBe(true);
    rmSync(many, { recursive: true, force: true });
  });

  test("push to an unknown label without --create exits 1 listing the known labels, and registers nothing", async () => {
    const r = await runCli(cfg, ["push", tree, "--folder", "bakcup"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('no folder "bakcup" on the server (known folders: ');
    expect(r.stderr).toContain('"backup"');
    expect(r.stderr).toContain("--create");
    const list = await runCli(cfg, ["folder", "list", "--json"]);
    expect(list.json<Array<{ label: string }>>().some((f) => f.label === "bakcup")).toBe(false);
  });

  test("pull of an unknown label exits 1 and creates nothing", async () => {
    const dest = join(work, "never");
    const r = await runCli(cfg, ["pull", "--folder", "bakcup", dest]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('no folder "bakcup" on the server');
  });

  test("pull into a fresh directory gives back every file byte for byte", async () => {
    const dest = join(work, "restored");
    const r = await runCli(cfg, ["pull", "--folder", "backup", dest, "--json"]);
    expect(r.code).toBe(0);
    expect(r.json<PullSummary>()).toMatchObject({ downloaded: fileCount, failed: 0 });
    expect(await expectSameTree(tree, dest)).toBe(fileCount);
  });

  test("a second push sends nothing: every file is unchanged", async () => {
    const r = await runCli(cfg, ["push", tree, "--folder", "backup", "--json"]);
    expect(r.code).toBe(0);
    expect(r.json<PushSummary>()).toMatchObject({
      uploaded: 0,
      bytes_sent: 0,
      unchanged: fileCount,
      failed: 0,
    });
  });

  test("a changed file goes up as revision 2, and pull replaces only that file", async () => {
    writeFileSync(join(tree, "deep/er/still/empty.txt"), "not empty any more\n");
    const r = await runCli(cfg, ["push", tree, "--folder", "backup", "--json"]);
    expect(r.code).toBe(0);
    const s = r.json<PushSummary>();
    expect(s).toMatchObject({ uploaded: 1, unchanged: fileCount - 1 });
    expect(s.files.find((f) => f.action === "uploaded")).toMatchObject({
      path: "deep/er/still/empty.txt",
      reason: "changed",
      revision_seq: 2,
    });
    const dest = join(work, "restored");
    const pulled = await runCli(cfg, ["pull", "--folder", "backup", dest, "--json"]);
    expect(pulled.json<PullSummary>()).toMatchObject({ downloaded: 1, up_to_date: fileCount - 1, failed: 0 });
    expect(await expectSameTree(tree, dest)).toBe(fileCount);
  });

  test("ls lists one directory of the folder: subfolders with file counts, then files", async () => {
    const r = await runCli(cfg, ["ls", "deep", "--folder", "backup", "--json"]);
    expect(r.code).toBe(0);
    const out = r.json<{
      path: string;
      folders: Array<{ name: string; file_count: number }>;
      files: Array<{ relative_path: string }>;
    }>();
    expect(out.path).toBe("deep");
    const under = [...listTree(join(tree, "deep")).keys()];
    expect(out.files.map((f) => f.relative_path).sort()).toEqual(
      under
        .filter((p) => !p.includes("/"))
        .map((p) => `deep/${p}`)
        .sort(),
    );
    expect(out.folders.map((f) => f.name)).toContain("er");
    const plain = await runCli(cfg, ["ls", "/deep/", "--folder", "backup"]);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain("er/");
    expect(plain.stdout).toContain("Résumé final.json");
    const unknown = await runCli(cfg, ["ls", "--folder", "nope"]);
    expect(unknown.code).toBe(1);
  });

  test("restore writes just the files and directories named, verified, under --to", async () => {
    const dest = join(work, "partial");
    const r = await runCli(cfg, [
      "restore",
      "deep",
      "large/real-over-8MiB.bin",
      "--folder",
      "backup",
      "--to",
      dest,
      "--json",
    ]);
    expect(r.code).toBe(0);
    const want = [...listTree(tree).keys()].filter(
      (p) => p.startsWith("deep/") || p === "large/real-over-8MiB.bin",
    );
    expect(r.json<{ restored: number; failed: number }>()).toMatchObject({
      restored: want.length,
      failed: 0,
    });
    const got = listTree(dest);
    expect([...got.keys()].sort()).toEqual(want.sort());
    for (const rel of want)
      expect(
        Buffer.compare(await Bun.file(join(tree, rel)).bytes(), await Bun.file(join(dest, rel)).bytes()),
      ).toBe(0);
  });

  test("restore: a path not in the folder exits 1 writing nothing; a differing local file is kept unless --force", async () => {
    const dest = join(work, "partial");
    const missing = await runCli(cfg, [
      "restore",
      "no/such/file",
      "--folder",
      "backup",
      "--to",
      join(work, "nothing"),
    ]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('not in folder "backup": "no/such/file"');
    const rel = "large/real-over-8MiB.bin";
    writeFileSync(join(dest, rel), "edited locally\n");
    const kept = await runCli(cfg, ["restore", rel, "--folder", "backup", "--to", dest]);
    expect(kept.code).toBe(3);
    expect(kept.stdout).toContain(`kept      ${rel}`);
    expect(await Bun.file(join(dest, rel)).text()).toBe("edited locally\n");
    const forced = await runCli(cfg, ["restore", rel, "--folder", "backup", "--to", dest, "--force"]);
    expect(forced.code).toBe(0);
    expect(
      Buffer.compare(await Bun.file(join(tree, rel)).bytes(), await Bun.file(join(dest, rel)).bytes()),
    ).toBe(0);
  });

  test("plain output (stdout not a terminal) has one line per file and a summary", async () => {
    writeFileSync(join(tree, "new note.txt"), "hello\n");
    fileCount++;
    const r = await runCli(cfg, ["push", tree, "--folder", "backup"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("uploaded  new note.txt  6 B");
    expect(r.stdout).toMatch(/pushed 1 file\(s\) \(6 B\) to "backup" in .*; \d+ unchanged/);
  });

  test("search finds pushed files, as JSON and as a table with sizes and ISO dates", async () => {
    const r = await runCli(cfg, ["search", "real-over", "--json"]);
    expect(r.code).toBe(0);
    const found = r.json<{
      files: Array<{ relative_path: string; folder_label: string; size_bytes: number }>;
    }>();
    expect(found.files).toHaveLength(1);
    expect(found.files[0]).toMatchObject({
      relative_path: "large/real-over-8MiB.bin",
      folder_label: "backup",
      size_bytes: statSync(join(tree, "large/real-over-8MiB.bin")).size,
    });
    const table = await runCli(cfg, ["search", "--min-size", "8MiB", "--sort", "size"]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^\s*SIZE\s+CREATED\s+UPDATED\s+FOLDER\s+PATH/);
    expect(table.stdout).toMatch(
      /\d+(\.\d+)? MiB\s+\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z\s+\S+\s+backup\s+large\/real-over-8MiB\.bin/,
    );
    expect(table.stdout).toContain("1-1 of 1");
    const byName = async (...extra: string[]) =>
      (await runCli(cfg, ["search", "--type", ".json", "--sort", "name", "--json", ...extra]))
        .json<{ files: Array<{ file_name: string }> }>()
        .files.map((f) => f.file_name);
    const asc = await byName("--asc");
    expect(asc).toContain("Résumé final.json");
    expect(asc.length).toBeGreaterThan(1);
    expect(await byName()).toEqual([...asc].reverse());
  });

  test("search rejects a bad filter: the server's code with exit 2, a bad size with exit 1", async () => {
    const bad = await runCli(cfg, ["search", "--type", "bogus"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^esync: http:\/\/127\.0\.0\.1:\d+: 400 invalid_file_type: /);
    const usage = await runCli(cfg, ["search", "--min-size", "lots"]);
    expect(usage.code).toBe(1);
  });

  test("rm deletes one file by its path; it is gone from search and from the next pull", async () => {
    const r = await runCli(cfg, ["rm", "--folder", "backup", "new note.txt"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("deleted new note.txt");
    const search = await runCli(cfg, ["search", "new note", "--json"]);
    expect(search.json<{ total_count: number }>().total_count).toBe(0);
    const dest = join(work, "restored-after-rm");
    const pulled = await runCli(cfg, ["pull", "--folder", "backup", dest, "--json"]);
    expect(pulled.json<PullSummary>()).toMatchObject({ downloaded: fileCount - 1, failed: 0 });
    expect(listTree(dest).has("new note.txt")).toBe(false);
    const again = await runCli(cfg, ["rm", "--folder", "backup", "new note.txt"]);
    expect(again.code).toBe(2);
    expect(again.stderr.trim()).toBe("esync: new note.txt: not found");
  });
});

describe("exit codes", () => {
  test("usage errors exit 1: unknown command, missing --folder, not a directory", async () => {
    expect((await runCli(cfg, ["frobnicate"])).code).toBe(1);
    const missing = await runCli(cfg, ["push", work]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("--folder");
    expect((await runCli(cfg, ["push", join(work, "nope"), "--folder", "x"])).code).toBe(1);
  });

  test("an unreachable server fails a transfer with exit 2, one line naming its URL, then the hint that a rerun resumes", async () => {
    const r = await runCli(cfg, [
      "pull",
      "--folder",
      "backup",
      join(work, "unreachable"),
      "--server",
      "http://127.0.0.1:9",
      "--retry-for",
      "0",
    ]);
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^esync: cannot reach http:\/\/127\.0\.0\.1:9: /);
    expect(lines[1]).toBe("hint: run the same command again to resume once http://127.0.0.1:9 is back");
  });

  test("network errors are retried for --retry-for (ESYNC_RETRY_FOR) with a notice, then fail", async () => {
    const t0 = performance.now();
    const r = await runCli(cfg, ["folder", "list", "--server", "http://127.0.0.1:9", "--retry-for", "3s"]);
    const ms = performance.now() - t0;
    expect(r.code).toBe(2);
    expect(ms).toBeGreaterThan(1500);
    expect(r.stderr).toContain("retrying for up to 3s");
    expect(r.stderr).toMatch(/esync: cannot reach http:\/\/127\.0\.0\.1:9 \(retried for \d+s\): /);
  });

  test("scripts/install-cli.sh installs an esync that runs from any directory, and prints the PATH line", async () => {
    const bin = join(work, "bin");
    const install = Bun.spawnSync(["bash", join(import.meta.dir, "../../../scripts/install-cli.sh")], {
      env: { ...process.env, ESYNC_BIN_DIR: bin, PATH: `${dirname(process.execPath)}:/usr/bin:/bin` },
    });
    expect(install.exitCode).toBe(0);
    expect(install.stdout.toString()).toContain(`export PATH="${bin}:$PATH"`);
    const run = Bun.spawnSync(["esync", "--version"], { cwd: "/", env: { PATH: `${bin}:/usr/bin:/bin` } });
    expect(run.exitCode).toBe(0);
    expect(run.stdout.toString().trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  test("--help lists the commands and the exit codes", async () => {
    const r = await runCli(cfg, ["--help"]);
    expect(r.code).toBe(0);
    for (const c of [
      "init",
      "folder",
      "push",
      "pull",
      "search",
      "ls",
      "restore",
      "rm",
      "share",
      "shares",
      "unshare",
      "passphrase",
    ])
      expect(r.stdout).toContain(`  ${c}`);
    expect(r.stdout).toContain("--spill-dir");
    expect(r.stdout).toContain("Resuming large uploads:");
    expect(r.stdout).toContain("no encrypted copy is written to disk");
    expect(r.stdout).toContain("Exit codes:");
    expect(r.stdout).toContain("130");
  });
});
