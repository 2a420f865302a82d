/**
 * `drives.json` (docs/drives.md, "Where a member keeps the key"): drive keys are stored only
 * sealed under a key derived from the account's mnemonic, a plaintext file of an older client is
 * sealed on its first read, and another account's mnemonic cannot open the keys.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { configPaths } from "../src/config.ts";
import { drivesPath, type JoinedDrive, readDrives, recordDrive } from "../src/drives.ts";
import { CliError } from "../src/output.ts";

const dir = mkdtempSync(join(tmpdir(), "esync-drives-file-"));
for (const d of ["a", "b", "c"]) mkdirSync(join(dir, d), { mode: 0o700 });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ACCOUNT = "legal winner thank year wave sausage worth useful legal winner thank yellow";
const OTHER = "letter advice cage absurd amount doctor acoustic avoid letter advice cage above";
const FOLDER_MNEMONIC =
  "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about";
const drive: JoinedDrive = {
  owner_ss58: "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY",
  folder_hash: "a".repeat(64),
  label: "team",
  role: "writer",
  folder_mnemonic: FOLDER_MNEMONIC,
  joined_at: 1_800_000_000,
};

test("recordDrive stores the drive key only sealed (mode 0600) and readDrives opens it with the account's mnemonic", async () => {
  const paths = configPaths(join(dir, "a"));
  await recordDrive(paths, ACCOUNT, drive);
  const text = readFileSync(drivesPath(paths), "utf8");
  expect(text).not.toContain("abandon");
  expect(text).not.toContain('folder_mnemonic"');
  expect(JSON.parse(text).drives[0].folder_mnemonic_sealed).toMatch(/^[A-Za-z0-9+/]+=*$/);
  expect(statSync(drivesPath(paths)).mode & 0o777).toBe(0o600);
  expect(await readDrives(paths, ACCOUNT)).toEqual([drive]);
});

test("another account's mnemonic cannot open the sealed key (a local error, exit 3)", async () => {
  const paths = configPaths(join(dir, "a"));
  const err = await readDrives(paths, OTHER).catch((e) => e);
  expect(err).toBeInstanceOf(CliError);
  expect((err as CliError).message).toContain("does not open with this account's mnemonic");
});

test("a sealed key moved to another drive's record does not open (the drive is the associated data)", async () => {
  const paths = configPaths(join(dir, "b"));
  await recordDrive(paths, ACCOUNT, drive);
  const o = JSON.parse(readFileSync(drivesPath(paths), "utf8"));
  o.drives[0].folder_hash = "b".repeat(64);
  writeFileSync(drivesPath(paths), JSON.stringify(o));
  expect(await readDrives(paths, ACCOUNT).catch((e) => e)).toBeInstanceOf(CliError);
});

test("a plaintext drives.json of an older client is sealed on its first read, keeping every record", async () => {
  const paths = configPaths(join(dir, "c"));
  await recordDrive(paths, ACCOUNT, drive);
  writeFileSync(drivesPath(paths), JSON.stringify({ version: 1, drives: [drive] }), { mode: 0o600 });
  expect(readFileSync(drivesPath(paths), "utf8")).toContain("abandon");
  expect(await readDrives(paths, ACCOUNT)).toEqual([drive]);
  const after = readFileSync(drivesPath(paths), "utf8");
  expect(after).not.toContain("abandon");
  expect(JSON.parse(after).version).toBe(2);
  expect(await readDrives(paths, ACCOUNT)).toEqual([drive]);
});
