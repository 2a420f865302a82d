/**
 * The mnemonic file sealed with a passphrase: the format (`mnemonic-seal.ts`) and the CLI
 * (`esync init --passphrase`, `esync passphrase set|remove`, `ESYNC_PASSPHRASE`).
 */
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isSealed, openMnemonic, sealMnemonic, WrongPassphraseError } from "../src/mnemonic-seal.ts";
import { runCli } from "./helpers.ts";

// Real CLI processes against a real server: seconds each on a loaded machine.
setDefaultTimeout(120_000);

const MNEMONIC = `${"abandon ".repeat(11)}about`;
const FAST = { mKib: 64, t: 1, p: 1 };
const work = mkdtempSync(join(tmpdir(), "esync-pass-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("sealed mnemonic format", () => {
  test("seals with Argon2id + XChaCha20-Poly1305, records the parameters, opens with the passphrase", () => {
    const text = sealMnemonic(MNEMONIC, "correct horse", FAST);
    expect(isSealed(text)).toBe(true);
    expect(isSealed(MNEMONIC)).toBe(false);
    expect(text).not.toContain("abandon");
    const f = JSON.parse(text);
    expect(f).toMatchObject({ kdf: "argon2id", m_kib: 64, t: 1, p: 1, cipher: "xchacha20poly1305" });
    expect(f.salt).toMatch(/^[0-9a-f]{32}$/);
    expect(f.nonce).toMatch(/^[0-9a-f]{48}$/);
    expect(openMnemonic(text, "correct horse", "m")).toBe(MNEMONIC);
    expect(sealMnemonic(MNEMONIC, "correct horse", FAST)).not.toBe(text); // fresh salt and nonce
  });

  test("a wrong passphrase, or a changed parameter, fails the tag: WrongPassphraseError", () => {
    const text = sealMnemonic(MNEMONIC, "correct horse", FAST);
    expect(() => openMnemonic(text, "wrong horse", "m")).toThrow(WrongPassphraseError);
    const weakened = JSON.stringify({ ...JSON.parse(text), m_kib: 32 });
    expect(() => openMnemonic(weakened, "correct horse", "m")).toThrow(WrongPassphraseError);
  });
});

describe("esync with a passphrase", () => {
  const cfg = join(work, "config");
  const offline = ["folder", "list", "--server", "http://127.0.0.1:9", "--retry-for", "0"];

  test("init --passphrase stores the mnemonic encrypted; commands need ESYNC_PASSPHRASE (exit 1 without, or wrong)", async () => {
    const init = await runCli(cfg, ["init", "--import", "--passphrase", "--json"], `${MNEMONIC}\n`, {
      ESYNC_NEW_PASSPHRASE: "s3cret pass",
    });
    expect(init.code).toBe(0);
    expect(init.json()).toMatchObject({ passphrase: true });
    const file = readFileSync(join(cfg, "mnemonic"), "utf8");
    expect(isSealed(file)).toBe(true);
    expect(file).not.toContain("abandon");

    const none = await runCli(cfg, offline);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("protected by a passphrase: set ESYNC_PASSPHRASE");
    const wrong = await runCli(cfg, offline, undefined, { ESYNC_PASSPHRASE: "nope" });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain("wrong passphrase");
    // The right one opens it: the command goes on to the (unreachable) server.
    const right = await runCli(cfg, offline, undefined, { ESYNC_PASSPHRASE: "s3cret pass" });
    expect(right.code).toBe(2);
    expect(right.stderr).toContain("cannot reach http://127.0.0.1:9");
  }, 30_000);

  test("passphrase set changes it, passphrase remove stores the words again", async () => {
    const set = await runCli(cfg, ["passphrase", "set"], undefined, {
      ESYNC_PASSPHRASE: "s3cret pass",
      ESYNC_NEW_PASSPHRASE: "another one",
    });
    expect(set.code).toBe(0);
    const old = await runCli(cfg, offline, undefined, { ESYNC_PASSPHRASE: "s3cret pass" });
    expect(old.code).toBe(1);
    const removed = await runCli(cfg, ["passphrase", "remove"], undefined, {
      ESYNC_PASSPHRASE: "another one",
    });
    expect(removed.code).toBe(0);
    expect(readFileSync(join(cfg, "mnemonic"), "utf8").trim()).toBe(MNEMONIC);
    expect((await runCli(cfg, offline)).code).toBe(2);
  }, 30_000);

  test("a plain mnemonic file still works and is never asked a passphrase", async () => {
    const dir = join(work, "plain");
    expect((await runCli(dir, ["init", "--import"], `${MNEMONIC}\n`)).code).toBe(0);
    expect((await runCli(dir, offline)).code).toBe(2);
  }, 30_000);
});
