/**
 * @module server/drives/drives.service
 * Shared drives (docs/drives.md): minting, sealing, listing and revoking invites; the anonymous
 * preview; accepting (one transaction: validity, membership or folder grant, use count);
 * memberships, members, removal, role changes and the account invite key. Wire shapes are built
 * here from the rows; the controller only moves them over HTTP. Errors are `AppError`s of the
 * v1 family (flat bodies).
 */

import { blake3Hex } from "@esync/protocol/blake3.ts";
import { fail } from "@esync/protocol/errors.ts";
import { randomToken } from "@esync/protocol/ids.ts";
import { isDirectoryPath } from "@esync/protocol/paths.ts";
import type * as S from "@esync/protocol/schemas.ts";
import type { Static } from "@sinclair/typebox";
import type { MetadataStore, Repositories } from "../db/store.ts";
import type { Clock } from "../util/clock.ts";
import { covers, grantRole, type MemberRole, roleRank } from "./drive-access.service.ts";
import type { DriveKey, GrantRow, InviteRow, MemberRow } from "./drives.repository.ts";
import { rfc3339 } from "./drives.time.ts";

/** Default invite lifetime, seconds (7 days). */
export const DEFAULT_INVITE_SECONDS = 604_800;
/** Longest invite lifetime, seconds (100 years). */
export const MAX_INVITE_SECONDS = 3_153_600_000;
/** Longest manager invite lifetime, seconds (24 hours). */
export const MAX_MANAGER_INVITE_SECONDS = 86_400;
/** Longest folder invite lifetime, seconds (30 days). */
export const MAX_FOLDER_INVITE_SECONDS = 2_592_000;
/** Default and largest `max_uses` of reader and writer invites. */
export const MAX_INVITE_USES = 50;
/** Rows of an invite listing. */
export const INVITE_LISTING_ROWS = 500;

/** Standard base64 with padding, non-empty. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** An invite token: one base64url segment. */
const TOKEN = /^[A-Za-z0-9_-]{1,256}$/;
/** An invite id: 64 lowercase hex characters. */
const INVITE_ID = /^[0-9a-f]{64}$/;

function badRequest(message: string) {
  return fail("bad_request", message);
}
function notFound(message: string) {
  return fail("not_found", message);
}

/** True when `s` is non-empty standard padded base64. */
export function isBase64(s: string): boolean {
  return s.length > 0 && BASE64.test(s);
}

/** The mint request of `POST /v1/drive-invites`. */
export type MintInput = Static<typeof S.MintInviteBody>;

/** True when an accept of `inv` would be admitted now (not revoked, expired or used up). */
function isValid(inv: InviteRow, now: number): boolean {
  return inv.revokedAt === null && inv.expiresAt > now && inv.useCount < inv.maxUses;
}

/** Shared drives: invites and membership. */
export class DrivesService {
  constructor(
    private readonly store: MetadataStore,
    private readonly clock: Clock,
  ) {}

  private get repos(): Repositories {
    return this.store.repos;
  }

  /** The owner's label of a registered folder, or undefined when the folder is not registered. */
  private async label(drive: DriveKey, repos: Repositories = this.repos): Promise<string | undefined> {
    const row = await repos.folders.get(drive.owner, drive.folderHash);
    return row?.label ?? undefined;
  }

  /**
   * How `caller` may manage the drive: `owner`, `manager`, or null (a reader, a writer, a folder
   * holder or a stranger).
   */
  private async managerOf(caller: string, drive: DriveKey): Promise<"owner" | "manager" | null> {
    if (caller === drive.owner) return "owner";
    const m = await this.repos.drives.member(drive, caller);
    return m?.role === "manager" ? "manager" : null;
  }

  /**
   * Mints an invite (docs/drives.md, "Invites"). The caller is the owner (`owner_ss58` absent
   * or the caller) or a manager of the drive.
   * @throws AppError `bad_request` (400) for a role, lifetime, use count or folder that breaks
   *   the caps; `not_found` (404) when the folder is not registered or the caller does not manage it.
   */
  async mint(caller: string, b: MintInput): Promise<Static<typeof S.InviteMinted>> {
    const role = b.role ?? "writer";
    if (roleRank(role) < 0) throw badRequest(`unknown role '${role}': expected reader, writer or manager`);
    const folder = b.path_prefix ?? null;
    let uses: number;
    let seconds: number;
    if (b.expires_in_secs !== undefined && b.expires_in_secs !== null && b.expires_in_secs < 1)
      throw badRequest("expires_in_secs must be at least 1");
    if (b.max_uses !== undefined && b.max_uses !== null && b.max_uses < 1)
      throw badRequest("max_uses must be at least 1");
    if (folder !== null) {
      if (role === "manager") throw badRequest("a folder invite is a reader or writer invite");
      if ((b.max_uses ?? 1) !== 1) throw badRequest("a folder invite is single-use");
      seconds = b.expires_in_secs ?? DEFAULT_INVITE_SECONDS;
      if (seconds > MAX_FOLDER_INVITE_SECONDS)
        throw badRequest("expires_in_secs exceeds the folder invite maximum of 30 days");
      if (!isDirectoryPath(folder)) throw badRequest("path_prefix is not a valid folder path");
      uses = 1;
    } else if (role === "manager") {
      if ((b.max_uses ?? 1) !== 1) throw badRequest("a manager invite is single-use");
      seconds = b.expires_in_secs ?? MAX_MANAGER_INVITE_SECONDS;
      if (seconds > MAX_MANAGER_INVITE_SECONDS)
        throw badRequest("expires_in_secs exceeds the manager invite maximum of 24 hours");
      uses = 1;
    } else {
      uses = b.max_uses ?? MAX_INVITE_USES;
      if (uses > MAX_INVITE_USES) throw badRequest(`max_uses exceeds the maximum of ${MAX_INVITE_USES}`);
      seconds = b.expires_in_secs ?? DEFAULT_INVITE_SECONDS;
      if (seconds > MAX_INVITE_SECONDS)
        throw badRequest(`expires_in_secs exceeds the maximum of ${MAX_INVITE_SECONDS} (100 years)`);
    }
    const drive = { owner: b.owner_ss58 ?? caller, folderHash: b.folder_hash };
    if ((await this.label(drive)) === undefined || (await this.managerOf(caller, drive)) === null)
      throw notFound("No such drive, or the caller is not its owner or a manager");
    const token = randomToken(32);
    const inviteId = blake3Hex(Buffer.from(token, "utf8"));
    const now = this.clock.now();
    await this.repos.drives.insertInvite({
      inviteId,
      owner: drive.owner,
      folderHash: drive.folderHash,
      role,
      pathPrefix: folder,
      mintedBy: caller,
      expiresAt: now + seconds,
      maxUses: uses,
      useCount: 0,
      revokedAt: null,
      sealedToken: null,
      createdAt: now,
    });
    return { invite_token: token, invite_id: inviteId, ...(folder === null ? {} : { path_prefix: folder }) };
  }

  /**
   * Parks the sealed token of an invite, once, for its minter.
   * @throws AppError `bad_request` (400: malformed id or base64), `not_found` (404: no such
   *   invite on this drive), `forbidden` (403: not the minter), `conflict` (409: already stored).
   */
  async sealToken(caller: string, drive: DriveKey, inviteId: string, sealed: string): Promise<void> {
    if (!INVITE_ID.test(inviteId)) throw badRequest("invite_id must be 64 lowercase hex characters");
    if (!isBase64(sealed)) throw badRequest("sealed_token must be standard base64");
    const inv = await this.repos.drives.invite(inviteId);
    if (!inv || inv.owner !== drive.owner || inv.folderHash !== drive.folderHash)
      throw notFound("No such invite on this drive");
    if (inv.mintedBy !== caller)
      throw fail("forbidden", "Only the invite's minter may store its sealed token");
    if (!(await this.repos.drives.setSealedToken(inviteId, sealed)))
      throw fail("conflict", "The invite's sealed token is already stored");
  }

  /**
   * The drive's invites, newest first, for its owner or a manager (`sealed_token` only for the
   * owner and the minter).
   * @throws AppError `not_found` (404) for anyone else or an unknown drive.
   */
  async listInvites(caller: string, drive: DriveKey): Promise<Static<typeof S.DriveInvites>> {
    const as = await this.managerOf(caller, drive);
    if (as === null || (await this.label(drive)) === undefined)
      throw notFound("No such drive, or the caller is not its owner or a manager");
    const rows = await this.repos.drives.listInvites(drive, INVITE_LISTING_ROWS + 1);
    const now = this.clock.now();
    return {
      invites: rows.slice(0, INVITE_LISTING_ROWS).map((r) => ({
        invite_id: r.inviteId,
        ...(r.sealedToken !== null && (as === "owner" || r.mintedBy === caller)
          ? { sealed_token: r.sealedToken }
          : {}),
        role: r.role,
        minted_by: r.mintedBy,
        expires_at: rfc3339(r.expiresAt),
        max_uses: r.maxUses,
        use_count: r.useCount,
        revoked: r.revokedAt !== null,
        valid: isValid(r, now),
        created_at: rfc3339(r.createdAt),
        ...(r.pathPrefix === null ? {} : { path_prefix: r.pathPrefix }),
      })),
      truncated: rows.length > INVITE_LISTING_ROWS,
    };
  }

  /**
   * Revokes an invite of the drive (its members keep their access).
   * @throws AppError `not_found` (404) for a malformed, unknown, other drive's or revoked id, or
   *   a caller who does not manage the drive.
   */
  async revokeInvite(caller: string, drive: DriveKey, inviteId: string): Promise<void> {
    const missing = () => notFound("No such invite");
    if (!INVITE_ID.test(inviteId) || (await this.managerOf(caller, drive)) === null) throw missing();
    const inv = await this.repos.drives.invite(inviteId);
    if (!inv || inv.owner !== drive.owner || inv.folderHash !== drive.folderHash) throw missing();
    if (!(await this.repos.drives.revokeInvite(inviteId, this.clock.now()))) throw missing();
  }

  /**
   * The anonymous preview of an invite.
   * @throws AppError `not_found` (404) for an unknown or malformed token.
   */
  async meta(token: string): Promise<Static<typeof S.InviteMeta>> {
    const inv = TOKEN.test(token) ? await this.repos.drives.invite(blake3Hex(Buffer.from(token))) : undefined;
    if (!inv) throw notFound("No such invite");
    const drive = { owner: inv.owner, folderHash: inv.folderHash };
    return {
      owner_ss58: inv.owner,
      folder_hash: inv.folderHash,
      display_label: (await this.label(drive)) ?? inv.folderHash,
      expires_at: rfc3339(inv.expiresAt),
      role: inv.role,
      valid: isValid(inv, this.clock.now()),
      ...(inv.pathPrefix === null ? {} : { path_prefix: inv.pathPrefix }),
    };
  }

  /**
   * Joins the drive through an invite, in one transaction that locks the invite: the validity
   * check, the membership (or folder grant) with its grant blob, and the use count. An existing
   * member succeeds without a use; the owner gets `already_owner` and nothing is created.
   * @throws AppError `bad_request` (400: grant blob not base64), `not_found` (404),
   *   `gone` (410: revoked, expired or used up), `already_member` / `overlapping_folder_grant`
   *   (409, folder invites).
   */
  async accept(caller: string, token: string, grantBlob: string): Promise<Static<typeof S.AcceptResult>> {
    if (!isBase64(grantBlob)) throw badRequest("grant_blob must be standard padded base64");
    if (!TOKEN.test(token)) throw notFound("No such invite");
    const inviteId = blake3Hex(Buffer.from(token));
    return this.store.transaction(async (tx) => {
      const inv = await tx.drives.inviteForUpdate(inviteId);
      if (!inv) throw notFound("No such invite");
      const drive = { owner: inv.owner, folderHash: inv.folderHash };
      const base = { owner_ss58: inv.owner, folder_hash: inv.folderHash };
      const folder = inv.pathPrefix === null ? {} : { path_prefix: inv.pathPrefix };
      if (caller === inv.owner) return { ...base, role: inv.role, already_owner: true as const, ...folder };
      const now = this.clock.now();
      if (!isValid(inv, now)) throw fail("gone", "The invite is revoked, expired or used up");
      const member = await tx.drives.member(drive, caller);
      if (inv.pathPrefix === null) {
        if (member) return { ...base, role: member.role };
        await tx.drives.insertMember({
          ...drive,
          member: caller,
          role: inv.role,
          grantBlob,
          inviteId,
          createdAt: now,
        });
      } else {
        if (member) throw fail("already_member", "The account already has the whole drive");
        const prefix = inv.pathPrefix;
        const held = await tx.drives.grantsOf(drive, caller);
        if (held.some((g) => covers(g.pathPrefix, prefix) || covers(prefix, g.pathPrefix)))
          throw fail(
            "overlapping_folder_grant",
            "The account already holds a folder grant on this folder, inside it or around it",
          );
        await tx.drives.insertGrant({
          ...drive,
          member: caller,
          pathPrefix: prefix,
          role: inv.role,
          grantBlob,
          inviteId,
          createdAt: now,
        });
      }
      await tx.drives.countUse(inviteId);
      return { ...base, role: inv.role, ...folder };
    });
  }

  /** The drives and folder grants of `caller`, with their sealed grants. Never 403. */
  async memberships(caller: string): Promise<Static<typeof S.Memberships>> {
    const [members, grants] = await Promise.all([
      this.repos.drives.membershipsOf(caller),
      this.repos.drives.grantsOfMember(caller),
    ]);
    const counts = new Map<string, Map<string, number>>();
    const frozen = new Map<string, { frozen?: true; frozen_until?: string }>();
    for (const owner of new Set([...members, ...grants].map((r) => r.owner))) {
      counts.set(
        owner,
        new Map((await this.repos.drives.memberCounts(owner)).map((c) => [c.folderHash, c.n])),
      );
      const f = await this.repos.drives.freeze(owner);
      frozen.set(
        owner,
        f
          ? { frozen: true, ...(f.frozenUntil === null ? {} : { frozen_until: rfc3339(f.frozenUntil) }) }
          : {},
      );
    }
    const common = async (r: MemberRow | GrantRow) => ({
      owner_ss58: r.owner,
      folder_hash: r.folderHash,
      display_label: (await this.label(r)) ?? r.folderHash,
      grant_blob: r.grantBlob,
      created_at: rfc3339(r.createdAt),
    });
    const memberships: Static<typeof S.Membership>[] = [];
    for (const m of members) {
      const n = counts.get(m.owner)?.get(m.folderHash) ?? 0;
      memberships.push({
        ...(await common(m)),
        role: m.role as MemberRole,
        ...(n > 0 ? { member_count: n } : {}),
        ...frozen.get(m.owner),
      });
    }
    const folderGrants: Static<typeof S.FolderGrant>[] = [];
    for (const g of grants)
      folderGrants.push({
        ...(await common(g)),
        path_prefix: g.pathPrefix,
        role: grantRole(g),
        ...frozen.get(g.owner),
      });
    return { memberships, folder_grants: folderGrants };
  }

  /**
   * The drive's members and folder holders, for the owner or any whole-drive member.
   * @throws AppError `not_found` (404: no such drive), `forbidden` (403: anyone else).
   */
  async members(caller: string, drive: DriveKey): Promise<Static<typeof S.DriveMembers>> {
    if ((await this.label(drive)) === undefined) throw notFound("No such drive");
    if (caller !== drive.owner && !(await this.repos.drives.member(drive, caller)))
      throw fail("forbidden", "The caller is neither the drive's owner nor a member");
    const [members, grants] = await Promise.all([
      this.repos.drives.members(drive),
      this.repos.drives.grants(drive),
    ]);
    return {
      members: members.map(memberOut),
      folder_grants: grants.map((g) => ({
        member_ss58: g.member,
        path_prefix: g.pathPrefix,
        role: grantRole(g),
        created_at: rfc3339(g.createdAt),
      })),
    };
  }

  /**
   * Removes a member (owner or manager), or lets a member leave (`target` = the caller): the
   * membership, its grant blob and its folder grants on the drive go at once. Without an
   * explicit owner, a caller leaving is taken off every drive of that folder hash it belongs to.
   * @throws AppError `forbidden` (403: a reader, writer or stranger removing someone else),
   *   `not_found` (404: the target is not a member, or is the owner).
   */
  async removeMember(
    caller: string,
    owner: string | null,
    folderHash: string,
    target: string,
  ): Promise<void> {
    const gone = () => notFound("The account is not a member of this drive");
    if (owner === null && target === caller) {
      const mine = [
        ...(await this.repos.drives.membershipsOf(caller)),
        ...(await this.repos.drives.grantsOfMember(caller)),
      ].filter((r) => r.folderHash === folderHash);
      if (mine.length === 0) throw gone();
      for (const r of mine) await this.repos.drives.removeMember(r, caller);
      return;
    }
    const drive = { owner: owner ?? caller, folderHash };
    if (target === drive.owner) throw gone();
    if (target !== caller && (await this.managerOf(caller, drive)) === null)
      throw fail("forbidden", "Only the drive's owner or a manager may remove other members");
    if (!(await this.repos.drives.removeMember(drive, target))) throw gone();
  }

  /**
   * Changes a whole-drive member's role (owner or manager). Lowering it also revokes the invite
   * that admitted the member when that invite grants more; demoting a manager also revokes the
   * invites it minted.
   * @throws AppError `bad_request` (400: unknown role, own role), `forbidden` (403: a reader,
   *   writer or stranger), `not_found` (404: the target is the owner or not a member).
   */
  async changeRole(
    caller: string,
    drive: DriveKey,
    target: string,
    role: string,
  ): Promise<Static<typeof S.DriveMember>> {
    if (roleRank(role) < 0) throw badRequest(`unknown role '${role}': expected reader, writer or manager`);
    if (target === caller) throw badRequest("a caller cannot change their own role");
    if (target === drive.owner) throw notFound("The owner has no role");
    if ((await this.managerOf(caller, drive)) === null)
      throw fail("forbidden", "Only the drive's owner or a manager may change roles");
    return this.store.transaction(async (tx) => {
      const m = await tx.drives.member(drive, target);
      if (!m) throw notFound("The account is not a member of this drive");
      const now = this.clock.now();
      await tx.drives.setMemberRole(drive, target, role);
      if (roleRank(role) < roleRank(m.role)) {
        if (m.inviteId !== null) {
          const inv = await tx.drives.invite(m.inviteId);
          if (inv && roleRank(inv.role) > roleRank(role)) await tx.drives.revokeInvite(m.inviteId, now);
        }
        if (m.role === "manager") await tx.drives.revokeInvitesMintedBy(drive, target, now);
      }
      return memberOut({ ...m, role });
    });
  }

  /**
   * Publishes the caller's X25519 invite public key (idempotent).
   * @throws AppError `bad_request` (400) unless `pubkey` is base64 of 32 bytes.
   */
  async publishInviteKey(caller: string, pubkey: string): Promise<void> {
    if (!isBase64(pubkey) || Buffer.from(pubkey, "base64").length !== 32)
      throw badRequest("pubkey must be standard base64 of 32 bytes");
    await this.repos.drives.setInviteKey(caller, pubkey, this.clock.now());
  }

  /**
   * Freezes an account (operator tool): writes into its folders are refused for everyone until
   * `unfreeze`. `until`: the end of a grace window to report (Unix seconds), or null.
   */
  freeze(account: string, until: number | null): Promise<void> {
    return this.repos.drives.setFreeze(account, until, this.clock.now());
  }

  /** Lifts a freeze; false when the account was not frozen. */
  unfreeze(account: string): Promise<boolean> {
    return this.repos.drives.removeFreeze(account);
  }
}

/** A member row on the wire. */
function memberOut(m: MemberRow): Static<typeof S.DriveMember> {
  return { member_ss58: m.member, role: m.role as MemberRole, created_at: rfc3339(m.createdAt) };
}
