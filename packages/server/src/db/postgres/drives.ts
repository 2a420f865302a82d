/**
 * @module server/db/postgres/drives
 * `DrivesRepository` on PostgreSQL (contract: `src/drives/drives.repository.ts`).
 * `inviteForUpdate` takes the invite's row lock (`FOR UPDATE`), so that concurrent accepts of
 * one invite, on any node, check and count its uses one after the other.
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
import type { PgConn } from "./conn.ts";
import {
  accountFreezes,
  accountInviteKeys,
  driveFolderGrants,
  driveInvites,
  driveMembers,
} from "./schema.ts";

const ofDrive = (t: typeof driveMembers | typeof driveFolderGrants | typeof driveInvites, d: DriveKey) =>
  and(eq(t.owner, d.owner), eq(t.folderHash, d.folderHash));

/** Drives on PostgreSQL. */
export class PgDrivesRepository implements DrivesRepository {
  constructor(private readonly db: PgConn) {}

  async insertInvite(row: InviteRow): Promise<void> {
    await this.db.insert(driveInvites).values(row);
  }

  async invite(inviteId: string): Promise<InviteRow | undefined> {
    const [row] = await this.db.select().from(driveInvites).where(eq(driveInvites.inviteId, inviteId));
    return row;
  }

  async inviteForUpdate(inviteId: string): Promise<InviteRow | undefined> {
    const [row] = await this.db
      .select()
      .from(driveInvites)
      .where(eq(driveInvites.inviteId, inviteId))
      .for("update");
    return row;
  }

  async setSealedToken(inviteId: string, sealedToken: string): Promise<boolean> {
    const rows = await this.db
      .update(driveInvites)
      .set({ sealedToken })
      .where(and(eq(driveInvites.inviteId, inviteId), isNull(driveInvites.sealedToken)))
      .returning({ id: driveInvites.inviteId });
    return rows.length > 0;
  }

  listInvites(drive: DriveKey, limit: number): Promise<InviteRow[]> {
    return this.db
      .select()
      .from(driveInvites)
      .where(ofDrive(driveInvites, drive))
      .orderBy(desc(driveInvites.createdAt), desc(driveInvites.inviteId))
      .limit(limit);
  }

  async revokeInvite(inviteId: string, now: number): Promise<boolean> {
    const rows = await this.db
      .update(driveInvites)
      .set({ revokedAt: now })
      .where(and(eq(driveInvites.inviteId, inviteId), isNull(driveInvites.revokedAt)))
      .returning({ id: driveInvites.inviteId });
    return rows.length > 0;
  }

  async revokeInvitesMintedBy(drive: DriveKey, mintedBy: string, now: number): Promise<number> {
    const rows = await this.db
      .update(driveInvites)
      .set({ revokedAt: now })
      .where(
        and(
          ofDrive(driveInvites, drive),
          eq(driveInvites.mintedBy, mintedBy),
          isNull(driveInvites.revokedAt),
        ),
      )
      .returning({ id: driveInvites.inviteId });
    return rows.length;
  }

  async countUse(inviteId: string): Promise<void> {
    await this.db
      .update(driveInvites)
      .set({ useCount: sql`${driveInvites.useCount} + 1` })
      .where(eq(driveInvites.inviteId, inviteId));
  }

  async member(drive: DriveKey, member: string): Promise<MemberRow | undefined> {
    const [row] = await this.db
      .select()
      .from(driveMembers)
      .where(and(ofDrive(driveMembers, drive), eq(driveMembers.member, member)));
    return row;
  }

  async insertMember(row: MemberRow): Promise<void> {
    await this.db.insert(driveMembers).values(row);
  }

  members(drive: DriveKey): Promise<MemberRow[]> {
    return this.db
      .select()
      .from(driveMembers)
      .where(ofDrive(driveMembers, drive))
      .orderBy(asc(driveMembers.createdAt), asc(driveMembers.member));
  }

  async setMemberRole(drive: DriveKey, member: string, role: string): Promise<boolean> {
    const rows = await this.db
      .update(driveMembers)
      .set({ role })
      .where(and(ofDrive(driveMembers, drive), eq(driveMembers.member, member)))
      .returning({ m: driveMembers.member });
    return rows.length > 0;
  }

  async removeMember(drive: DriveKey, member: string): Promise<boolean> {
    const a = await this.db
      .delete(driveMembers)
      .where(and(ofDrive(driveMembers, drive), eq(driveMembers.member, member)))
      .returning({ m: driveMembers.member });
    const b = await this.db
      .delete(driveFolderGrants)
      .where(and(ofDrive(driveFolderGrants, drive), eq(driveFolderGrants.member, member)))
      .returning({ m: driveFolderGrants.member });
    return a.length + b.length > 0;
  }

  grantsOf(drive: DriveKey, member: string): Promise<GrantRow[]> {
    return this.db
      .select()
      .from(driveFolderGrants)
      .where(and(ofDrive(driveFolderGrants, drive), eq(driveFolderGrants.member, member)))
      .orderBy(asc(driveFolderGrants.pathPrefix));
  }

  async insertGrant(row: GrantRow): Promise<void> {
    await this.db.insert(driveFolderGrants).values(row);
  }

  grants(drive: DriveKey): Promise<GrantRow[]> {
    return this.db
      .select()
      .from(driveFolderGrants)
      .where(ofDrive(driveFolderGrants, drive))
      .orderBy(asc(driveFolderGrants.createdAt), asc(driveFolderGrants.member));
  }

  membershipsOf(member: string): Promise<MemberRow[]> {
    return this.db
      .select()
      .from(driveMembers)
      .where(eq(driveMembers.member, member))
      .orderBy(asc(driveMembers.createdAt), asc(driveMembers.owner), asc(driveMembers.folderHash));
  }

  grantsOfMember(member: string): Promise<GrantRow[]> {
    return this.db
      .select()
      .from(driveFolderGrants)
      .where(eq(driveFolderGrants.member, member))
      .orderBy(
        asc(driveFolderGrants.createdAt),
        asc(driveFolderGrants.owner),
        asc(driveFolderGrants.folderHash),
      );
  }

  async memberCounts(owner: string): Promise<{ folderHash: string; n: number }[]> {
    const rows = await this.db
      .select({ folderHash: driveMembers.folderHash, n: count() })
      .from(driveMembers)
      .where(eq(driveMembers.owner, owner))
      .groupBy(driveMembers.folderHash);
    return rows.map((r) => ({ folderHash: r.folderHash, n: Number(r.n) }));
  }

  async removeDrive(drive: DriveKey): Promise<void> {
    await this.db.delete(driveInvites).where(ofDrive(driveInvites, drive));
    await this.db.delete(driveMembers).where(ofDrive(driveMembers, drive));
    await this.db.delete(driveFolderGrants).where(ofDrive(driveFolderGrants, drive));
  }

  async setInviteKey(account: string, pubkey: string, now: number): Promise<void> {
    await this.db
      .insert(accountInviteKeys)
      .values({ account, pubkey, updatedAt: now })
      .onConflictDoUpdate({ target: accountInviteKeys.account, set: { pubkey, updatedAt: now } });
  }

  async freeze(account: string): Promise<FreezeRow | undefined> {
    const [row] = await this.db.select().from(accountFreezes).where(eq(accountFreezes.account, account));
    return row;
  }

  async setFreeze(account: string, frozenUntil: number | null, now: number): Promise<void> {
    await this.db
      .insert(accountFreezes)
      .values({ account, frozenUntil, createdAt: now })
      .onConflictDoUpdate({ target: accountFreezes.account, set: { frozenUntil } });
  }

  async removeFreeze(account: string): Promise<boolean> {
    const rows = await this.db
      .delete(accountFreezes)
      .where(eq(accountFreezes.account, account))
      .returning({ a: accountFreezes.account });
    return rows.length > 0;
  }
}
