/**
 * @module cli/commands/drive
 * `esync drive invite|join|members|role|remove|invites|revoke|leave`: shared drives from the
 * command line (docs/drives.md, "Client"). The owner (or a manager) mints an invite link whose
 * fragment carries the drive key; the joining account seals that key into its grant blob at
 * accept and records the drive in `drives.json` (`../drives.ts`); then `--drive OWNER/LABEL`
 * on sync, push, pull and ls works in the owner's folder.
 */

import { ApiError } from "@esync/client/api-error.ts";
import {
  driveKey,
  folderKeysFromDriveKey,
  inviteLink,
  parseInviteLink,
  sealGrant,
  sealInviteToken,
} from "@esync/client/drive-keys.ts";
import { type FolderKeys, folderKeysFromMnemonic } from "@esync/client/keys.ts";
import type { Command } from "commander";
import type { GlobalOptions } from "../config.ts";
import { type CommandContext, loadContext } from "../context.ts";
import { driveName, forgetDrive, recordDrive, resolveDrive } from "../drives.ts";
import { CliError, EXIT, eprintln, printJson, println, table, usageError } from "../output.ts";
import { resolveFolder } from "../resolve-folder.ts";
import { checkLabel } from "./folder.ts";

const ROLES = ["reader", "writer", "manager"] as const;

/** A drive a management command works on: the caller's own folder or a joined drive. */
interface DriveTarget {
  owner: string;
  /** `?owner=` for the management routes: set when the caller is not the owner. */
  ownerQuery: string | undefined;
  label: string;
  keys: FolderKeys;
}

interface TargetOptions {
  folder?: string;
  drive?: string;
}

async function driveTarget(ctx: CommandContext, opts: TargetOptions): Promise<DriveTarget> {
  if ((opts.folder === undefined) === (opts.drive === undefined))
    throw usageError("give --folder LABEL (your folder) or --drive OWNER/LABEL (a joined drive)");
  if (opts.folder !== undefined) {
    const { keys, label } = await resolveFolder(ctx, checkLabel(opts.folder));
    return { owner: ctx.address, ownerQuery: undefined, label, keys };
  }
  const d = await resolveDrive(ctx, opts.drive as string);
  return {
    owner: d.owner_ss58,
    ownerQuery: d.owner_ss58,
    label: d.label,
    keys: folderKeysFromMnemonic(d.label, d.folder_mnemonic, d.folder_hash),
  };
}

/** Seconds of `7d`, `12h`, `30m`, `90s` or plain seconds. Usage error otherwise. */
export function parseLifetime(text: string): number {
  const m = /^\s*(\d+)\s*([smhd])?\s*$/i.exec(text);
  if (!m?.[1]) throw usageError(`not a lifetime: ${JSON.stringify(text)} (try 7d, 24h, 30m)`);
  const unit = { s: 1, m: 60, h: 3600, d: 86400 }[(m[2] ?? "s").toLowerCase() as "s"];
  const secs = Number(m[1]) * unit;
  if (secs <= 0) throw usageError("--expires must be above 0");
  return secs;
}

function checkRole(role: string): (typeof ROLES)[number] {
  if (!(ROLES as readonly string[]).includes(role))
    throw usageError(`unknown role "${role}": use reader, writer or manager`);
  return role as (typeof ROLES)[number];
}

function targetOptions(cmd: Command): Command {
  return cmd
    .option("-f, --folder <label>", "your own folder (you are the drive's owner)")
    .option("-d, --drive <drive>", "a drive you joined, OWNER/LABEL (you manage it)");
}

/** Registers `esync drive ...` on `program`. */
export function registerDrive(program: Command): void {
  const drive = program
    .command("drive")
    .description("shared drives: invite accounts into a folder, join one, manage members")
    .addHelpText(
      "after",
      `
A shared drive is one of your folders that other accounts work in with their
own keys. The invite link's #k= part is the drive key: anyone holding the link
can read the folder until the invite is used up, expires or is revoked, so send
it over a private channel. A member uses --drive OWNER/LABEL where an owner uses
--folder LABEL: esync sync ~/Team --drive OWNER/team.

Examples:
  esync drive invite --folder team --role writer --uses 3 --expires 7d
  esync drive join 'http://server/invite/TOKEN#k=KEY'
  esync drive members --folder team
  esync drive role 5FHneW46... reader --folder team
  esync drive remove 5FHneW46... --folder team
  esync drive leave --drive 5Grw.../team`,
    );

  targetOptions(
    drive
      .command("invite")
      .description("mint an invite link (printed once; its #k= part is the drive key)")
      .option("--role <role>", "reader, writer or manager", "writer")
      .option("--uses <n>", "how many accounts may join with it (reader/writer: at most 50; manager: 1)")
      .option("--expires <lifetime>", "lifetime, e.g. 7d, 24h (default 7d; manager at most 24h)")
      .option("--path <dir>", "invite to one directory of the drive only (reader or writer, single-use)"),
  ).action(
    async (
      opts: TargetOptions & { role: string; uses?: string; expires?: string; path?: string },
      cmd: Command,
    ) => {
      const ctx = await loadContext(cmd.optsWithGlobals<GlobalOptions>());
      const role = checkRole(opts.role);
      const uses = opts.uses === undefined ? undefined : Number(opts.uses);
      if (uses !== undefined && !(Number.isInteger(uses) && uses >= 1))
        throw usageError("--uses must be a whole number of at least 1");
      const t = await driveTarget(ctx, opts);
      const minted = await ctx.api.mintInvite({
        folder_hash: t.keys.folderHash,
        role,
        max_uses: uses,
        expires_in_secs: opts.expires === undefined ? undefined : parseLifetime(opts.expires),
        owner_ss58: t.ownerQuery,
        path_prefix: opts.path,
      });
      const key = driveKey(t.keys);
      const link = inviteLink(ctx.serverUrl, minted.invite_token, key);
      let parked = true;
      try {
        await ctx.api.sealInviteToken(
          t.keys.folderHash,
          minted.invite_id,
          sealInviteToken(key, minted.invite_token),
          t.ownerQuery,
        );
      } catch (e) {
        // The invite stands without it: only rebuilding the link on another device needs it.
        parked = false;
        eprintln(
          `esync: warning: the invite works, but its sealed copy was not stored: ${(e as Error).message}`,
        );
      }
      if (ctx.json)
        return printJson({
          link,
          invite_id: minted.invite_id,
          role,
          path_prefix: minted.path_prefix,
          sealed: parked,
        });
      println(link);
      if (process.stderr.isTTY)
        eprintln(
          `invite ${minted.invite_id.slice(0, 12)} (${role}) for "${t.label}": the #k= part is the drive key`,
        );
    },
  );

  drive
    .command("join")
    .description("join a drive with an invite link (the drive is then --drive OWNER/LABEL)")
    .argument("<link>", "the invite link, including its #k= part")
    .action(async (link: string, _opts: unknown, cmd: Command) => {
      const ctx = await loadContext(cmd.optsWithGlobals<GlobalOptions>());
      const { token, key } = (() => {
        try {
          return parseInviteLink(link);
        } catch (e) {
          throw usageError((e as Error).message);
        }
      })();
      const meta = await ctx.api.inviteMeta(token);
      if (!meta.valid)
        throw new CliError("410 gone: this invite was revoked, has expired or is used up", EXIT.server);
      const keys = folderKeysFromDriveKey(meta.display_label, meta.folder_hash, key);
      const grant = await sealGrant(keys.mnemonic, ctx.identity.mnemonic, ctx.address);
      const r = await ctx.api.acceptInvite(token, grant);
      const name = driveName({ owner_ss58: r.owner_ss58, label: meta.display_label });
      if (r.already_owner) {
        if (ctx.json) return printJson({ drive: name, already_owner: true });
        return println(`you own "${meta.display_label}": use --folder ${meta.display_label}`);
      }
      await recordDrive(ctx.paths, ctx.identity.mnemonic, {
        owner_ss58: r.owner_ss58,
        folder_hash: r.folder_hash,
        label: meta.display_label,
        role: r.role,
        folder_mnemonic: keys.mnemonic,
        joined_at: Math.floor(Date.now() / 1000),
      });
      if (ctx.json)
        return printJson({ drive: name, owner_ss58: r.owner_ss58, folder_hash: r.folder_hash, role: r.role });
      println(`joined "${meta.display_label}" as ${r.role}: esync sync DIR --drive ${name}`);
    });

  targetOptions(drive.command("members").description("list the drive's members and their roles")).action(
    async (opts: TargetOptions, cmd: Command) => {
      const ctx = await loadContext(cmd.optsWithGlobals<GlobalOptions>());
      const t = await driveTarget(ctx, opts);
      const r = await ctx.api.driveMembers(t.keys.folderHash, t.ownerQuery);
      if (ctx.json) return printJson({ owner_ss58: t.owner, ...r });
      const rows = [
        [t.owner, "owner", ""],
        ...r.members.map((m) => [m.member_ss58, m.role, m.created_at]),
        ...(r.folder_grants ?? []).map((g) => [
          g.member_ss58,
          `${g.role} of ${g.path_prefix}/`,
          g.created_at,
        ]),
      ];
      println(table([{ header: "MEMBER" }, { header: "ROLE" }, { header: "JOINED" }], rows));
    },
  );

  targetOptions(
    drive
      .command("role")
      .description("change a member's role (owner or manager)")
      .argument("<member>", "the member's SS58 address")
      .argument("<role>", "reader, writer or manager"),
  ).action(async (member: string, role: string, opts: TargetOptions, cmd: Command) => {
    const ctx = await loadContext(cmd.optsWithGlobals<GlobalOptions>());
    const t = await driveTarget(ctx, opts);
    const r = await ctx.api.changeMemberRole(t.keys.folderHash, member, checkRole(role), t.ownerQuery);
    if (ctx.json) return printJson(r);
    println(`${member} is now ${r.role} of "${t.label}" (from its next request)`);
  });

  targetOptions(
    drive
      .command("remove")
      .description("remove a member (owner or manager); it keeps what it already downloaded")
      .argument("<member>", "the member's SS58 address"),
  ).action(async (member: string, opts: TargetOptions, cmd: Command) => {
    const ctx = await loadContext(cmd.optsWithGlobals<GlobalOptions>());
    const t = await driveTarget(ctx, opts);
    await ctx.api.removeMember(t.keys.folderHash, member, t.ownerQuery);
    if (ctx.json) return printJson({ removed: member, folder_hash: t.keys.folderHash });
    println(`removed ${member} from "${t.label}"`);
  });

  targetOptions(drive.command("invites").description("list the drive's invites (owner or manager)")).action(
    async (opts: TargetOptions, cmd: Command) => {
      const ctx = await loadContext(cmd.optsWithGlobals<GlobalOptions>());
      const t = await driveTarget(ctx, opts);
      const r = await ctx.api.listInvites(t.keys.folderHash, t.ownerQuery);
      if (ctx.json) return printJson(r);
      const state = (i: (typeof r.invites)[number]) =>
        i.revoked ? "revoked" : i.valid ? "valid" : i.use_count >= i.max_uses ? "used up" : "expired";
      println(
        table(
          [
            { header: "INVITE" },
            { header: "ROLE" },
            { header: "USES", align: "right" },
            { header: "STATE" },
            { header: "EXPIRES" },
          ],
          r.invites.map((i) => [
            i.invite_id,
            i.path_prefix ? `${i.role} of ${i.path_prefix}/` : i.role,
            `${i.use_count}/${i.max_uses}`,
            state(i),
            i.expires_at,
          ]),
        ),
      );
    },
  );

  targetOptions(
    drive
      .command("revoke")
      .description("revoke an invite (members who joined with it stay)")
      .argument("<invite>", "the invite id (64 hex, from `esync drive invites`)"),
  ).action(async (invite: string, opts: TargetOptions, cmd: Command) => {
    const ctx = await loadContext(cmd.optsWithGlobals<GlobalOptions>());
    const t = await driveTarget(ctx, opts);
    await ctx.api.revokeInvite(t.keys.folderHash, invite, t.ownerQuery);
    if (ctx.json) return printJson({ revoked: invite });
    println(`revoked invite ${invite.slice(0, 12)} of "${t.label}"`);
  });

  drive
    .command("leave")
    .description("leave a drive you joined (forgets its key on this device)")
    .requiredOption("-d, --drive <drive>", "the drive, OWNER/LABEL")
    .action(async (opts: { drive: string }, cmd: Command) => {
      const ctx = await loadContext(cmd.optsWithGlobals<GlobalOptions>());
      const d = await resolveDrive(ctx, opts.drive);
      try {
        await ctx.api.removeMember(d.folder_hash, ctx.address, d.owner_ss58);
      } catch (e) {
        // Already removed: leaving still forgets it here.
        if (!(e instanceof ApiError && (e.status === 404 || e.status === 403))) throw e;
      }
      await forgetDrive(ctx.paths, ctx.identity.mnemonic, d.owner_ss58, d.folder_hash);
      if (ctx.json) return printJson({ left: driveName(d) });
      println(`left "${d.label}" of ${d.owner_ss58}`);
    });
}
