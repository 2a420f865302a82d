/**
 * @module cli/drives
 * The shared drives this account joined (docs/drives.md, "Client"): `drives.json` in the
 * configuration directory (mode 0600) records each one as `{owner_ss58, folder_hash, label,
 * role, folder_mnemonic_sealed, joined_at}`. The folder mnemonic is the drive's key: it is kept
 * only sealed under a key derived from the account's mnemonic (`sealDriveKey`), and a file from
 * an older client with a plaintext `folder_mnemonic` is sealed the first time it is read. A
 * device without the record (another device of the member) opens the key from the grant blob the
 * server keeps (`GET /v1/drive-memberships`) and records it.
 *
 * `--drive OWNER/LABEL` (or `--drive LABEL` when one joined drive has that label) names a drive
 * on the folder commands; `driveContext` gives those commands a context whose `address` is the
 * owner's and whose folder keys are the drive's, so they address the owner's folder with the
 * member's own token. A 403 on a drive is explained from the member's current membership.
 */
import { ApiError } from "@esync/client/api-error.ts";
import { openGrant } from "@esync/client/drive-keys.ts";
import { folderKeysFromMnemonic } from "@esync/client/keys.ts";
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { randomBytes } from "@noble/ciphers/utils.js";
import { blake3 } from "@noble/hashes/blake3.js";
import { type ConfigPaths, writePrivate } from "./config.ts";
import type { CommandContext } from "./context.ts";
import { CliError, EXIT, usageError } from "./output.ts";

/** One joined drive. */
export interface JoinedDrive {
  owner_ss58: string;
  folder_hash: string;
  /** The owner's label at join time (`display_label`). */
  label: string;
  /** Role at join time (the server's is authoritative). */
  role: string;
  /** The owner's folder mnemonic: the drive key. */
  folder_mnemonic: string;
  /** Unix seconds. */
  joined_at: number;
}

/** Path of `drives.json` in a configuration directory. */
export function drivesPath(paths: ConfigPaths): string {
  return `${paths.dir}/drives.json`;
}

/** BLAKE3 key-derivation context of the key that seals drive keys in `drives.json`. */
export const DRIVES_FILE_CONTEXT = "esync 2026 drives.json drive-key seal v1";

/**
 * The key sealing drive keys in `drives.json`: BLAKE3 `derive_key(DRIVES_FILE_CONTEXT,
 * utf8(NFKD account mnemonic))`, 32 bytes. Whoever lacks the account's mnemonic cannot open them.
 */
export function drivesFileKey(accountMnemonic: string): Uint8Array {
  return blake3(new TextEncoder().encode(accountMnemonic.normalize("NFKD")), {
    context: new TextEncoder().encode(DRIVES_FILE_CONTEXT),
    dkLen: 32,
  });
}

/** Associated data of one sealed drive key: `utf8(owner ss58) ‖ 0x00 ‖ utf8(folder hash)`. */
function driveAad(owner: string, folderHash: string): Uint8Array {
  return new TextEncoder().encode(`${owner}\0${folderHash}`);
}

/**
 * Seals a drive key (the owner's folder mnemonic) for `drives.json`: XChaCha20-Poly1305 under
 * `drivesFileKey`, a random 24-byte nonce, the drive's `driveAad`; standard base64 of
 * `nonce ‖ ciphertext with tag`.
 */
export function sealDriveKey(
  key: Uint8Array,
  owner: string,
  folderHash: string,
  folderMnemonic: string,
): string {
  const nonce = randomBytes(24);
  const ct = xchacha20poly1305(key, nonce, driveAad(owner, folderHash)).encrypt(
    new TextEncoder().encode(folderMnemonic),
  );
  return Buffer.concat([nonce, ct]).toString("base64");
}

/**
 * Opens what `sealDriveKey` sealed.
 * @throws Error when it does not open (another account's file, or damaged).
 */
export function openDriveKey(key: Uint8Array, owner: string, folderHash: string, sealed: string): string {
  const bytes = Buffer.from(sealed, "base64");
  const pt = xchacha20poly1305(key, bytes.subarray(0, 24), driveAad(owner, folderHash)).decrypt(
    bytes.subarray(24),
  );
  return new TextDecoder().decode(pt);
}

/** One record as `drives.json` stores it (a plaintext `folder_mnemonic` only in older files). */
type StoredDrive = Omit<JoinedDrive, "folder_mnemonic"> & {
  folder_mnemonic_sealed?: string;
  folder_mnemonic?: string;
};

/**
 * The joined drives recorded in `paths` (none when the file is missing), their keys opened with
 * the account's mnemonic. A record still holding a plaintext `folder_mnemonic` (written by an
 * older client) is sealed and the file rewritten before this returns.
 * @throws CliError when the file is not JSON or a sealed key does not open with this mnemonic.
 */
export async function readDrives(paths: ConfigPaths, accountMnemonic: string): Promise<JoinedDrive[]> {
  const file = Bun.file(drivesPath(paths));
  if (!(await file.exists())) return [];
  let stored: StoredDrive[];
  try {
    const o = (await file.json()) as { drives?: StoredDrive[] };
    stored = Array.isArray(o.drives) ? o.drives : [];
  } catch {
    throw new CliError(`${drivesPath(paths)} is not valid JSON`, EXIT.local);
  }
  const key = drivesFileKey(accountMnemonic);
  let plaintext = false;
  const drives = stored.map((d): JoinedDrive => {
    const { folder_mnemonic_sealed: sealed, folder_mnemonic: plain, ...rest } = d;
    if (sealed === undefined) {
      plaintext = true;
      return { ...rest, folder_mnemonic: plain ?? "" };
    }
    try {
      return { ...rest, folder_mnemonic: openDriveKey(key, d.owner_ss58, d.folder_hash, sealed) };
    } catch {
      throw new CliError(
        `${drivesPath(paths)}: the key of drive ${driveName(d)} does not open with this account's mnemonic`,
        EXIT.local,
      );
    }
  });
  if (plaintext) await writeDrives(paths, accountMnemonic, drives);
  return drives;
}

/** Records `drives` (mode 0600, atomically), each drive key sealed with `sealDriveKey`. */
export async function writeDrives(
  paths: ConfigPaths,
  accountMnemonic: string,
  drives: JoinedDrive[],
): Promise<void> {
  const key = drivesFileKey(accountMnemonic);
  const stored: StoredDrive[] = drives.map(({ folder_mnemonic, ...rest }) => ({
    ...rest,
    folder_mnemonic_sealed: sealDriveKey(key, rest.owner_ss58, rest.folder_hash, folder_mnemonic),
  }));
  await writePrivate(drivesPath(paths), `${JSON.stringify({ version: 2, drives: stored }, null, 2)}\n`);
}

/** Adds or replaces the record of `(owner, folder_hash)`. */
export async function recordDrive(
  paths: ConfigPaths,
  accountMnemonic: string,
  drive: JoinedDrive,
): Promise<void> {
  const drives = (await readDrives(paths, accountMnemonic)).filter(
    (d) => !(d.owner_ss58 === drive.owner_ss58 && d.folder_hash === drive.folder_hash),
  );
  await writeDrives(paths, accountMnemonic, [...drives, drive]);
}

/** Forgets the record of `(owner, folderHash)`. */
export async function forgetDrive(
  paths: ConfigPaths,
  accountMnemonic: string,
  owner: string,
  folderHash: string,
): Promise<void> {
  const drives = await readDrives(paths, accountMnemonic);
  await writeDrives(
    paths,
    accountMnemonic,
    drives.filter((d) => !(d.owner_ss58 === owner && d.folder_hash === folderHash)),
  );
}

/** `OWNER/LABEL` of a drive, as `--drive` takes it. */
export function driveName(d: { owner_ss58: string; label: string }): string {
  return `${d.owner_ss58}/${d.label}`;
}

/**
 * The joined drive `spec` names: `OWNER/LABEL`, `OWNER/FOLDER_HASH` or a `LABEL` only one
 * joined drive has. A drive missing from `drives.json` but listed by `/v1/drive-memberships`
 * (joined on another device) has its grant blob opened and is recorded.
 * @throws CliError (usage) for an unknown or ambiguous name.
 */
export async function resolveDrive(ctx: CommandContext, spec: string): Promise<JoinedDrive> {
  const slash = spec.indexOf("/");
  const owner = slash > 0 ? spec.slice(0, slash) : undefined;
  const name = slash > 0 ? spec.slice(slash + 1) : spec;
  const matches = (d: { owner_ss58: string; label: string; folder_hash: string }) =>
    (owner === undefined || d.owner_ss58 === owner) && (d.label === name || d.folder_hash === name);
  const local = (await readDrives(ctx.paths, ctx.identity.mnemonic)).filter(matches);
  if (local.length === 1 && local[0]) return local[0];
  if (local.length > 1)
    throw usageError(`"${spec}" names ${local.length} joined drives: use --drive OWNER/LABEL`);
  const { memberships } = await ctx.api.memberships();
  const remote = memberships.filter((m) => matches({ ...m, label: m.display_label }));
  if (remote.length > 1)
    throw usageError(`"${spec}" names ${remote.length} joined drives: use --drive OWNER/LABEL`);
  const m = remote[0];
  if (!m) {
    const known = memberships.map((x) => driveName({ ...x, label: x.display_label }));
    throw usageError(
      `no joined drive "${spec}" (${known.length ? `your drives: ${known.join(", ")}` : "this account joined no drive"}); join one with \`esync drive join LINK\``,
    );
  }
  if (!m.grant_blob)
    throw new CliError(`drive ${spec} has no sealed grant on the server: join it again`, EXIT.local);
  const drive: JoinedDrive = {
    owner_ss58: m.owner_ss58,
    folder_hash: m.folder_hash,
    label: m.display_label,
    role: m.role,
    folder_mnemonic: await openGrant(m.grant_blob, ctx.identity.mnemonic, ctx.address),
    joined_at: Math.floor(Date.parse(m.created_at) / 1000),
  };
  await recordDrive(ctx.paths, ctx.identity.mnemonic, drive);
  return drive;
}

/**
 * A context for working in `drive`: `address` is the owner's (the path owner, manifest
 * `ss58_address` and `salted_hash` salt), folder keys of its label are the drive's, other
 * labels are refused; the token stays the member's.
 */
export function driveContext(ctx: CommandContext, drive: JoinedDrive): CommandContext {
  const keys = folderKeysFromMnemonic(drive.label, drive.folder_mnemonic, drive.folder_hash);
  const only = (label: string) => {
    if (label !== drive.label) throw usageError(`drive ${driveName(drive)} has no folder "${label}"`);
    return keys;
  };
  return {
    ...ctx,
    address: drive.owner_ss58,
    identity: { ...ctx.identity, folder: only, folderKeys: async (label) => only(label) },
  };
}

/**
 * Why the server refuses this member on `drive`, from its membership now: removed (or left), or
 * a reader trying to write. Null when neither explains it (or the membership cannot be read).
 */
export async function driveRefusal(ctx: CommandContext, drive: JoinedDrive): Promise<CliError | null> {
  let memberships: { owner_ss58: string; folder_hash: string; role: string }[];
  try {
    memberships = (await ctx.api.memberships()).memberships;
  } catch {
    return null;
  }
  const m = memberships.find((x) => x.owner_ss58 === drive.owner_ss58 && x.folder_hash === drive.folder_hash);
  const name = driveName(drive);
  if (!m)
    return new CliError(
      `403 forbidden: you are no longer a member of drive ${name} (removed by its owner or a manager, or you left); its files can no longer be read or written`,
      EXIT.server,
    );
  if (m.role === "reader")
    return new CliError(
      `403 forbidden: your role on drive ${name} is reader: uploads, deletions and renames are refused; ask its owner or a manager for writer`,
      EXIT.server,
    );
  return null;
}

/**
 * Runs `work` in drive `drive`: a 403 from the server, or a run that failed on some paths,
 * is replaced by the explanation of `driveRefusal` when there is one.
 */
export async function inDrive<T>(
  ctx: CommandContext,
  drive: JoinedDrive,
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work();
  } catch (e) {
    if ((e instanceof ApiError && e.status === 403) || (e instanceof CliError && e.code !== EXIT.usage)) {
      const why = await driveRefusal(ctx, drive);
      if (why) throw why;
    }
    throw e;
  }
}

/**
 * For a folder command given `--folder` or `--drive`: the context and label to work with, and
 * how to run the work (`inDrive` for a drive). Usage error unless exactly one is given, or for
 * `--create` with `--drive`.
 */
export async function folderTarget(
  ctx: CommandContext,
  opts: { folder?: string; drive?: string; create?: boolean },
): Promise<{ ctx: CommandContext; label: string; run: <T>(work: () => Promise<T>) => Promise<T> }> {
  if ((opts.folder === undefined) === (opts.drive === undefined))
    throw usageError("give --folder LABEL (your folder) or --drive OWNER/LABEL (a joined drive)");
  if (opts.drive !== undefined && opts.create)
    throw usageError("--create registers a folder of your own: it does not go with --drive");
  if (opts.folder !== undefined) return { ctx, label: opts.folder, run: (work) => work() };
  const drive = await resolveDrive(ctx, opts.drive as string);
  const dctx = driveContext(ctx, drive);
  return { ctx: dctx, label: drive.label, run: (work) => inDrive(ctx, drive, work) };
}
