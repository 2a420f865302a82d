/**
 * @module server/db/sqlite/drives
 * `DrivesRepository` on SQLite (contract: `src/drives/drives.repository.ts`). Transactions are
 * serial on SQLite (`BEGIN IMMEDIATE` under the store's gate), so `inviteForUpdate` is a read.
 */
import { and, asc, count, desc, eq, isNull, sql } from "drizzle-orm";
import type {
  DriveKey,
  DrivesRepository,
  FreezeRow,
  GrantRow,
  InviteRow,
  MemberRow,
} from "../../drives/drives.repository.ts";
import { changes, type Db } from "../client.ts";
import {
  accountFreezes,
  accountInviteKeys,
  driveFolderGrants,
  driveInvites,
  driveMembers,
} from "./schema.ts";

const ofDrive = (t: typeof driveMembers | typeof driveFolderGrants | typeof driveInvites, d: DriveKey) =>
  and(eq(t.owner, d.owner), eq(t.folderHash, d.folderHash));

/** Drives on SQLite. */
export class SqliteDrivesRepository implements DrivesRepository {
  constructor(private readonly db: Db) {}

  async insertInvite(row: InviteRow): Promise<void> {
    this.db.insert(driveInvites).values(row).run();
  }

  async invite(inviteId: string): Promise<InviteRow | undefined> {
    return this.db.select().from(driveInvites).where(eq(driveInvites.inviteId, inviteId)).get();
  }

  async inviteForUpdate(inviteId: string): Promise<InviteRow | undefined> {
    return this.invite(inviteId);
  }

  async setSealedToken(inviteId: string, sealedToken: string): Promise<boolean> {
    const r = this.db
      .update(driveInvites)
      .set({ sealedToken })
      .where(and(eq(driveInvites.inviteId, inviteId), isNull(driveInvites.sealedToken)))
      .run();
    return changes(r) > 0;
  }

  async listInvites(drive: DriveKey, limit: number): Promise<InviteRow[]> {
    return this.db
      .select()
      .from(driveInvites)
      .where(ofDrive(driveInvites, drive))
      .orderBy(desc(driveInvites.createdAt), desc(driveInvites.inviteId))
      .limit(limit)
      .all();
  }

  async revokeInvite(inviteId: string, now: number): Promise<boolean> {
    const r = this.db
      .update(driveInvites)
      .set({ revokedAt: now })
      .where(and(eq(driveInvites.inviteId, inviteId), isNull(driveInvites.revokedAt)))
      .run();
    return changes(r) > 0;
  }

  async revokeInvitesMintedBy(drive: DriveKey, mintedBy: string, now: number): Promise<number> {
    const r = this.db
      .update(driveInvites)
      .set({ revokedAt: now })
      .where(
        and(
          ofDrive(driveInvites, drive),
          eq(driveInvites.mintedBy, mintedBy),
          isNull(driveInvites.revokedAt),
        ),
      )
      .run();
    return changes(r);
  }

  async countUse(inviteId: string): Promise<void> {
    this.db
      .update(driveInvites)
      .set({ useCount: sql`${driveInvites.useCount} + 1` })
      .where(eq(driveInvites.inviteId, inviteId))
      .run();
  }

  async member(drive: DriveKey, member: string): Promise<MemberRow | undefined> {
    return this.db
      .select()
      .from(driveMembers)
      .where(and(ofDrive(driveMembers, drive), eq(driveMembers.member, member)))
      .get();
  }

  async insertMember(row: MemberRow): Promise<void> {
    this.db.insert(driveMembers).values(row).run();
  }

  async members(drive: DriveKey): Promise<MemberRow[]> {
    return this.db
      .select()
      .from(driveMembers)
      .where(ofDrive(driveMembers, drive))
      .orderBy(asc(driveMembers.createdAt), asc(driveMembers.member))
      .all();
  }

  async setMemberRole(drive: DriveKey, member: string, role: string): Promise<boolean> {
    const r = this.db
      .update(driveMembers)
      .set({ role })
      .where(and(ofDrive(driveMembers, drive), eq(driveMembers.member, member)))
      .run();
    return changes(r) > 0;
  }

  async removeMember(drive: DriveKey, member: string): Promise<boolean> {
    const a = this.db
      .delete(driveMembers)
      .where(and(ofDrive(driveMembers, drive), eq(driveMembers.member, member)))
      .run();
    const b = this.db
      .delete(driveFolderGrants)
      .where(and(ofDrive(driveFolderGrants, drive), eq(driveFolderGrants.member, member)))
      .run();
    return changes(a) + changes(b) > 0;
  }

  async grantsOf(drive: DriveKey, member: string): Promise<GrantRow[]> {
    return this.db
      .select()
      .from(driveFolderGrants)
      .where(and(ofDrive(driveFolderGrants, drive), eq(driveFolderGrants.member, member)))
      .orderBy(asc(driveFolderGrants.pathPrefix))
      .all();
  }

  async insertGrant(row: GrantRow): Promise<void> {
    this.db.insert(driveFolderGrants).values(row).run();
  }

  async grants(drive: DriveKey): Promise<GrantRow[]> {
    return this.db
      .select()
      .from(driveFolderGrants)
      .where(ofDrive(driveFolderGrants, drive))
      .orderBy(asc(driveFolderGrants.createdAt), asc(driveFolderGrants.member))
      .all();
  }

  async membershipsOf(member: string): Promise<MemberRow[]> {
    return this.db
      .select()
      .from(driveMembers)
      .where(eq(driveMembers.member, member))
      .orderBy(asc(driveMembers.createdAt), asc(driveMembers.owner), asc(driveMembers.folderHash))
      .all();
  }

  async grantsOfMember(member: string): Promise<GrantRow[]> {
    return this.db
      .select()
      .from(driveFolderGrants)
      .where(eq(driveFolderGrants.member, member))
      .orderBy(
        asc(driveFolderGrants.createdAt),
        asc(driveFolderGrants.owner),
        asc(driveFolderGrants.folderHash),
      )
      .all();
  }

  async memberCounts(owner: string): Promise<{ folderHash: string; n: number }[]> {
    return this.db
      .select({ folderHash: driveMembers.folderHash, n: count() })
      .from(driveMembers)
      .where(eq(driveMembers.owner, owner))
      .groupBy(driveMembers.folderHash)
      .all();
  }

  async removeDrive(drive: DriveKey): Promise<void> {
    this.db.delete(driveInvites).where(ofDrive(driveInvites, drive)).run();
    this.db.delete(driveMembers).where(ofDrive(driveMembers, drive)).run();
    this.db.delete(driveFolderGrants).where(ofDrive(driveFolderGrants, drive)).run();
  }

  async setInviteKey(account: string, pubkey: string, now: number): Promise<void> {
    this.db
      .insert(accountInviteKeys)
      .values({ account, pubkey, updatedAt: now })
      .onConflictDoUpdate({ target: accountInviteKeys.account, set: { pubkey, updatedAt: now } })
      .run();
  }

  async freeze(account: string): Promise<FreezeRow | undefined> {
    return this.db.select().from(accountFreezes).where(eq(accountFreezes.account, account)).get();
  }

  async setFreeze(account: string, frozenUntil: number | null, now: number): Promise<void> {
    this.db
      .insert(accountFreezes)
      .values({ account, frozenUntil, createdAt: now })
      .onConflictDoUpdate({ target: accountFreezes.account, set: { frozenUntil } })
      .run();
  }

  async removeFreeze(account: string): Promise<boolean> {
    return changes(this.db.delete(accountFreezes).where(eq(accountFreezes.account, account)).run()) > 0;
  }
}
