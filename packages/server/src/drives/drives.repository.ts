/**
 * @module server/drives/drives.repository
 * The contract of the queries on shared drives (docs/drives.md): invites, whole-drive members,
 * folder grants, published invite keys and frozen accounts. Implementations:
 * `src/db/sqlite/drives.ts`, `src/db/postgres/drives.ts`. Times are Unix seconds.
 */

/** A `drive_invites` row. */
export type InviteRow = {
  owner: string;
  createdAt: number;
  expiresAt: number;
  revokedAt: number | null;
  folderHash: string;
  inviteId: string;
  role: string;
  pathPrefix: string | null;
  mintedBy: string;
  maxUses: number;
  useCount: number;
  sealedToken: string | null;
};
/** A `drive_members` row. */
export type MemberRow = {
  owner: string;
  createdAt: number;
  folderHash: string;
  inviteId: string | null;
  role: string;
  member: string;
  grantBlob: string;
};
/** A `drive_folder_grants` row. */
export type GrantRow = {
  owner: string;
  createdAt: number;
  folderHash: string;
  inviteId: string | null;
  role: string;
  pathPrefix: string;
  member: string;
  grantBlob: string;
};
/** An `account_freezes` row. */
export type FreezeRow = {
  createdAt: number;
  account: string;
  frozenUntil: number | null;
};

/** A drive: the owner's address and the folder hash. */
export interface DriveKey {
  owner: string;
  folderHash: string;
}

/** Queries on drives. Every method returns a Promise. */
export interface DrivesRepository {
  /** Inserts a new invite. */
  insertInvite(row: InviteRow): Promise<void>;

  /** The invite with this id, or undefined. */
  invite(inviteId: string): Promise<undefined | InviteRow>;

  /**
   * The invite with this id, locked until the transaction ends (PostgreSQL `FOR UPDATE`; SQLite
   * transactions are serial), so that concurrent accepts of one invite run one after the other.
   */
  inviteForUpdate(inviteId: string): Promise<undefined | InviteRow>;

  /** Stores the sealed token of an invite that has none; false when it already has one. */
  setSealedToken(inviteId: string, sealedToken: string): Promise<boolean>;

  /** The newest `limit` invites of a drive, newest first (revoked and spent ones included). */
  listInvites(drive: DriveKey, limit: number): Promise<InviteRow[]>;

  /** Marks an unrevoked invite revoked at `now`; false when none was. */
  revokeInvite(inviteId: string, now: number): Promise<boolean>;

  /** Revokes every unrevoked invite of a drive minted by `mintedBy`; returns how many. */
  revokeInvitesMintedBy(drive: DriveKey, mintedBy: string, now: number): Promise<number>;

  /** Adds one to an invite's `use_count`. */
  countUse(inviteId: string): Promise<void>;

  /** The whole-drive membership of `member`, or undefined. */
  member(drive: DriveKey, member: string): Promise<undefined | MemberRow>;

  /** Inserts a membership. */
  insertMember(row: MemberRow): Promise<void>;

  /** The drive's members, oldest first. */
  members(drive: DriveKey): Promise<MemberRow[]>;

  /** Sets a member's role; false when there is no such member. */
  setMemberRole(drive: DriveKey, member: string, role: string): Promise<boolean>;

  /** Deletes a membership and the member's folder grants on the drive; false when neither existed. */
  removeMember(drive: DriveKey, member: string): Promise<boolean>;

  /** The folder grants `member` holds on the drive. */
  grantsOf(drive: DriveKey, member: string): Promise<GrantRow[]>;

  /** Inserts a folder grant. */
  insertGrant(row: GrantRow): Promise<void>;

  /** The drive's folder grants, oldest first. */
  grants(drive: DriveKey): Promise<GrantRow[]>;

  /** Every whole-drive membership of `member`, oldest first. */
  membershipsOf(member: string): Promise<MemberRow[]>;

  /** Every folder grant of `member`, oldest first. */
  grantsOfMember(member: string): Promise<GrantRow[]>;

  /** Whole-drive member counts of `owner`'s drives that have members. */
  memberCounts(owner: string): Promise<{ folderHash: string; n: number }[]>;

  /** Deletes every invite, membership and folder grant of a drive. */
  removeDrive(drive: DriveKey): Promise<void>;

  /** Stores (or replaces) an account's invite public key. */
  setInviteKey(account: string, pubkey: string, now: number): Promise<void>;

  /** The freeze of `account`, or undefined when it is not frozen. */
  freeze(account: string): Promise<undefined | FreezeRow>;

  /** Freezes `account` (replacing an earlier freeze). */
  setFreeze(account: string, frozenUntil: number | null, now: number): Promise<void>;

  /** Lifts a freeze; false when the account was not frozen. */
  removeFreeze(account: string): Promise<boolean>;
}
