/**
 * The shared-drive keys (docs/drives.md, "Client"): invite link and id, sealed token, grant
 * blob, and folder keys rebuilt from the drive key.
 */
import { expect, test } from "bun:test";
import { blake3Hex } from "@esync/protocol/blake3.ts";
import {
  DriveKeyError,
  driveKey,
  folderKeysFromDriveKey,
  inviteIdOf,
  inviteLink,
  openGrant,
  openInviteToken,
  parseInviteLink,
  sealGrant,
  sealInviteToken,
} from "../src/drive-keys.ts";
import { identityFromMnemonic } from "../src/index.ts";

const owner = await identityFromMnemonic(`${"abandon ".repeat(11)}about`);
const member = await identityFromMnemonic(
  "legal winner thank year wave sausage worth useful legal winner thank yellow",
);
const team = owner.folder("team");
const token = "A".repeat(43);

test("the link's fragment is the folder mnemonic's entropy, base64url without padding, and rebuilds the folder keys", () => {
  const key = driveKey(team);
  expect(key.byteLength).toBe(32);
  const link = inviteLink("http://h:1/", token, key);
  expect(link).toBe(`http://h:1/invite/${token}#k=${Buffer.from(key).toString("base64url")}`);
  expect(link).not.toContain("=" + "=");
  const parsed = parseInviteLink(link);
  expect(parsed.token).toBe(token);
  const keys = folderKeysFromDriveKey("team", team.folderHash, parsed.key);
  expect(Buffer.from(keys.key)).toEqual(Buffer.from(team.key));
  expect(Buffer.from(keys.signingKey)).toEqual(Buffer.from(team.signingKey));
  expect(() => parseInviteLink("http://h:1/invite/abc")).toThrow(DriveKeyError);
  expect(() => parseInviteLink(`${link.slice(0, -4)}`)).toThrow(DriveKeyError);
});

test("the sealed token opens with the drive key and its invite id only, and its JSON is {v,nonce,ciphertext}", () => {
  const key = driveKey(team);
  const sealed = sealInviteToken(key, token);
  const json = Buffer.from(sealed, "base64").toString("utf8");
  expect(json).toMatch(/^\{"v":1,"nonce":"[A-Za-z0-9+/=]+","ciphertext":"[A-Za-z0-9+/=]+"\}$/);
  expect(inviteIdOf(token)).toBe(blake3Hex(token));
  expect(openInviteToken(key, inviteIdOf(token), sealed)).toBe(token);
  expect(() => openInviteToken(key, inviteIdOf("other"), sealed)).toThrow(DriveKeyError);
  expect(() => openInviteToken(driveKey(owner.folder("x")), inviteIdOf(token), sealed)).toThrow(
    DriveKeyError,
  );
});

test("a grant blob opens to the owner's folder mnemonic for its member only", async () => {
  const blob = await sealGrant(team.mnemonic, member.mnemonic, member.address);
  const o = JSON.parse(Buffer.from(blob, "base64").toString("utf8"));
  expect(o.kdf).toEqual({ algorithm: "argon2id", memory_kib: 131072, time_cost: 3, parallelism: 1 });
  expect(Buffer.from(o.aad, "base64").toString()).toBe(member.address);
  expect(Buffer.from(o.salt, "base64").byteLength).toBe(16);
  expect(await openGrant(blob, member.mnemonic, member.address)).toBe(team.mnemonic);
  await expect(openGrant(blob, owner.mnemonic, owner.address)).rejects.toThrow(DriveKeyError);
}, 120_000);
