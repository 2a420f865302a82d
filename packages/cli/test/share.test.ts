/**
 * `esync share`, `esync shares` and `esync unshare` (docs/sharing.md), run as the real CLI
 * against a real server: the link opens with nothing but the anonymous routes and the key in
 * its fragment, password links need the password, chunked shares above 8 MiB, files of a
 * folder on the server, folder shares, a second device with the same mnemonic listing working
 * links, and revocation by URL, token and token hash.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decryptBytes } from "@esync/client/frame.ts";
import { deriveFolderKeysAsync } from "@esync/client/keys.ts";
import { decryptFileName, fromBase64, parseShareLink, unwrapShareKey } from "@esync/client/share-crypto.ts";
import { type ServerProcess, startServer } from "@esync/server/test/support/server.ts";
import { realFileOver8MiB, runCli } from "./helpers.ts";

setDefaultTimeout(180_000);
const work = mkdtempSync(join(tmpdir(), "esync-share-"));
const cfg = join(work, "config");
const cfg2 = join(work, "config2");
let server: ServerProcess;
let mnemonic: string;

beforeAll(async () => {
  server = await startServer({ env: { ESYNC_DISK_FSYNC: "off" }, testStores: "share-cli" });
  const init = await runCli(cfg, ["init", "--server", server.url, "--json"]);
  expect(init.code).toBe(0);
  mnemonic = init.json<{ mnemonic: string }>().mnemonic;
  expect(
    (await runCli(cfg2, ["init", "--import", "--server", server.url, "--json"], `${mnemonic}\n`)).code,
  ).toBe(0);
  writeFileSync(join(work, "hello.txt"), "hello, recipient\n");
  const tree = join(work, "tree");
  for (const [p, body] of [
    ["docs/a.txt", "alpha"],
    ["docs/sub/b.txt", "beta"],
    ["other.txt", "other"],
  ] as const) {
    const full = join(tree, p);
    await Bun.write(full, body);
  }
  expect((await runCli(cfg, ["push", tree, "--folder", "share-src", "--create", "--json"])).code).toBe(0);
});
afterAll(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** Opens a file link as a recipient would: anonymous meta and blob, the key from the fragment. */
async function openFileLink(link: string, password?: string): Promise<{ name: string; bytes: Uint8Array }> {
  const parsed = parseShareLink(link);
  expect(parsed.folder).toBe(false);
  const secret = parsed.secret as NonNullable<typeof parsed.secret>;
  const key = secret.password ? await unwrapShareKey(password ?? "", secret.material) : secret.material;
  const meta = (await (await fetch(`${server.url}/v1/shares/${parsed.token}/meta`)).json()) as {
    filename_ct: string;
    filename_nonce: string;
    plaintext_size: number;
  };
  const blob = new Uint8Array(
    await (await fetch(`${server.url}/v1/shares/${parsed.token}/blob`)).arrayBuffer(),
  );
  return {
    name: decryptFileName(fromBase64(meta.filename_ct), fromBase64(meta.filename_nonce), key),
    bytes: await decryptBytes(key, blob, { expectedPlaintextSize: meta.plaintext_size }),
  };
}

describe("esync share (file)", () => {
  test("a local file gives a #k= link on the server's origin that opens anonymously to the same bytes", async () => {
    const r = await runCli(cfg, ["share", join(work, "hello.txt"), "--ttl", "7d"]);
    expect(r.code).toBe(0);
    const link = r.stdout.trim();
    expect(link).toMatch(new RegExp(`^${server.url}/share/[A-Za-z0-9_-]+#k=[A-Za-z0-9_-]{43}$`));
    const got = await openFileLink(link);
    expect(got.name).toBe("hello.txt");
    expect(new TextDecoder().decode(got.bytes)).toBe("hello, recipient\n");
  });

  test("--password (piped) gives a 119-character #p= link that only the password opens; --json reports it", async () => {
    const big = realFileOver8MiB();
    const r = await runCli(cfg, ["share", big, "--password", "--json"], "a good password\n");
    expect(r.code).toBe(0);
    const out = r.json<{ kind: string; link: string; share_token: string; expires_at: string }>();
    expect(out.kind).toBe("file");
    expect(out.link.split("#p=")[1]).toHaveLength(119);
    const got = await openFileLink(out.link, "a good password");
    expect(Buffer.compare(Buffer.from(got.bytes), readFileSync(big))).toBe(0);
    expect(openFileLink(out.link, "not the password")).rejects.toThrow();
  });

  test("a file of a folder on the server is shared as its own copy", async () => {
    const r = await runCli(cfg, ["share", "docs/sub/b.txt", "--folder", "share-src", "--json"]);
    expect(r.code).toBe(0);
    const got = await openFileLink(r.json<{ link: string }>().link);
    expect(got.name).toBe("b.txt");
    expect(new TextDecoder().decode(got.bytes)).toBe("beta");
  });

  test("a short password, an unknown --ttl and a missing file are usage errors (exit 1)", async () => {
    expect((await runCli(cfg, ["share", join(work, "hello.txt"), "--password"], "short\n")).code).toBe(1);
    const ttl = await runCli(cfg, ["share", join(work, "hello.txt"), "--ttl", "3d"]);
    expect(ttl.code).toBe(1);
    expect(ttl.stderr).toContain("--ttl must be one of 24h, 7d, 30d, never");
    expect((await runCli(cfg, ["share", join(work, "missing.txt")])).code).toBe(1);
  });
});

describe("esync share --max-downloads / --access-log and esync shares --accesses", () => {
  test("--max-downloads 1 gives a link that opens once, then answers 410 download_limit; --accesses shows the log", async () => {
    const r = await runCli(cfg, ["share", join(work, "hello.txt"), "--max-downloads", "1", "--json"]);
    expect(r.code).toBe(0);
    const { link, share_token: token } = r.json<{ link: string; share_token: string }>();
    const got = await openFileLink(link);
    expect(new TextDecoder().decode(got.bytes)).toBe("hello, recipient\n");
    const again = await fetch(`${server.url}/v1/shares/${token}/meta`);
    expect(again.status).toBe(410);
    expect(((await again.json()) as { reason: string }).reason).toBe("download_limit");
    const log = await runCli(cfg, ["shares", "--accesses", link, "--json"]);
    expect(log.code).toBe(0);
    const body = log.json<{ max_downloads: number; download_count: number; accesses: unknown[] }>();
    expect(body.max_downloads).toBe(1);
    expect(body.download_count).toBe(1);
    expect(body.accesses).toEqual([
      { at: expect.any(Number), bytes_sent: expect.any(Number), completed: true },
    ]);
    const text = await runCli(cfg, ["shares", "--accesses", token]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain("1 of 1 downloads used");
    const listed = await runCli(cfg, ["shares"]);
    expect(listed.stdout).toContain("1/1 downloads");
  });

  test("--access-log keeps a log without a limit; a bad --max-downloads is a usage error; folder shares refuse both", async () => {
    const r = await runCli(cfg, ["share", join(work, "hello.txt"), "--access-log", "--json"]);
    expect(r.code).toBe(0);
    const { link, share_token: token } = r.json<{ link: string; share_token: string }>();
    await openFileLink(link);
    await openFileLink(link);
    const log = await runCli(cfg, ["shares", "--accesses", token, "--json"]);
    expect(log.json<{ max_downloads: null; download_count: number }>()).toMatchObject({
      max_downloads: null,
      download_count: 2,
    });
    for (const bad of ["0", "1.5", "x"])
      expect((await runCli(cfg, ["share", join(work, "hello.txt"), "--max-downloads", bad])).code).toBe(1);
    expect((await runCli(cfg, ["share", "--folder", "share-src", "docs", "--max-downloads", "2"])).code).toBe(
      1,
    );
    expect((await runCli(cfg, ["shares", "--accesses", "A".repeat(43)])).code).toBe(2);
  });
});

describe("esync share --folder (folder share)", () => {
  test("shares a directory: the link carries the folder key and browses only under it", async () => {
    const r = await runCli(cfg, ["share", "--folder", "share-src", "docs", "--json"]);
    expect(r.code).toBe(0);
    const out = r.json<{ kind: string; link: string }>();
    expect(out.kind).toBe("folder");
    const parsed = parseShareLink(out.link);
    expect(parsed.folder).toBe(true);
    const folderKey = (await deriveFolderKeysAsync(mnemonic, "share-src")).key;
    expect(parsed.secret?.material).toEqual(folderKey);
    const page = (await (await fetch(`${server.url}/v1/folder-shares/${parsed.token}/browse`)).json()) as {
      directories: { name: string }[];
      files: { name: string }[];
    };
    expect(page.files.map((f) => f.name)).toEqual(["a.txt"]);
    expect(page.directories.map((d) => d.name)).toEqual(["sub"]);
  });
});

describe("esync shares and esync unshare", () => {
  test("another device with the same mnemonic lists every share with a working link", async () => {
    const mine = (await runCli(cfg, ["shares", "--json"])).json<{
      files: { link: string }[];
      folders: { link: string }[];
    }>();
    const other = await runCli(cfg2, ["shares", "--json"]);
    expect(other.code).toBe(0);
    const theirs = other.json<{
      files: { link: string | null }[];
      folders: { link: string | null; state: string }[];
    }>();
    expect(theirs.files.length).toBeGreaterThanOrEqual(3);
    expect(theirs.files.map((f) => f.link).sort()).toEqual(mine.files.map((f) => f.link).sort());
    expect(theirs.folders.every((f) => f.link !== null && f.state === "active")).toBe(true);
    const human = await runCli(cfg2, ["shares"]);
    expect(human.stdout).toContain("hello.txt");
    expect(human.stdout).toContain("EXPIRES");
    expect(human.stdout).toContain("folder");
  });

  test("a token that begins with '-' is taken as the share, not as an option (base64url tokens do)", async () => {
    const r = await runCli(cfg, ["unshare", "-RYWwrWE4WTj7GvxoxuB8dudwZuHMt55LfQEabr0f_U"]);
    expect({ code: r.code, stderr: r.stderr.trim() }).toEqual({
      code: 2,
      stderr: "esync: no such share of yours (unknown, or already revoked)",
    });
  });

  test("unshare by URL, by token and by token hash revokes; the link then answers 404; twice is exit 2", async () => {
    const a = (await runCli(cfg, ["share", join(work, "hello.txt"), "--json"])).json<{
      link: string;
      share_token: string;
    }>();
    const b = (await runCli(cfg, ["share", join(work, "hello.txt"), "--json"])).json<{
      share_token: string;
    }>();
    const f = (await runCli(cfg, ["share", "--folder", "share-src", "--json"])).json<{ link: string }>();
    expect((await runCli(cfg, ["unshare", a.link])).code).toBe(0);
    expect((await fetch(`${server.url}/v1/shares/${a.share_token}/meta`)).status).toBe(404);
    expect((await runCli(cfg, ["unshare", b.share_token, "--json"])).json()).toMatchObject({
      kind: "file",
      revoked: true,
    });
    expect((await fetch(`${server.url}/v1/shares/${b.share_token}/meta`)).status).toBe(404);
    const fToken = parseShareLink(f.link).token;
    const listed = (await runCli(cfg, ["shares", "--json"])).json<{
      folders: { token: string; token_hash: string }[];
    }>();
    const hash = listed.folders.find((x) => x.token === fToken)?.token_hash as string;
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect((await runCli(cfg, ["unshare", hash])).code).toBe(0);
    expect((await fetch(`${server.url}/v1/folder-shares/${fToken}/meta`)).status).toBe(404);
    const again = await runCli(cfg, ["unshare", a.link]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("no such share");
    expect((await runCli(cfg, ["unshare", "not a token!"])).code).toBe(1);
  });
});
