/**
 * @module server/drives/drive-access.service
 * The one place that decides what a caller may do in a folder (docs/drives.md, "Who may do
 * what"): every file route asks `DriveAccessService.require` with the addressed owner, the folder
 * and the kind of operation. The owner may do everything; a whole-drive member by its role;
 * a folder-grant holder by its role and only at or under its granted folders; anyone else gets
 * 403 `forbidden` (the same for "never a member" and "removed"). Writes into a frozen owner's
 * folders are 402 `drive_frozen` for everyone. Nothing is cached: each call reads the
 * membership rows, so a removal or a role change holds from the very next request on every node.
 */
import { fail } from "@esync/protocol/errors.ts";
import type { DrivesRepository, GrantRow } from "./drives.repository.ts";
import { rfc3339 } from "./drives.time.ts";

/** Whole-drive roles, weakest first. */
export const MEMBER_ROLES = ["reader", "writer", "manager"] as const;
/** A whole-drive member's role. */
export type MemberRole = (typeof MEMBER_ROLES)[number];

/** The rank of a role (reader 0, writer 1, manager 2); -1 for an unknown string. */
export function roleRank(role: string): number {
  return (MEMBER_ROLES as readonly string[]).indexOf(role);
}

/**
 * What is asked: `read` (list, browse, download, state), `write` (uploads, sessions, deletes,
 * renames, folder entries, can_upload), `account_read` (search and summaries of one drive),
 * `owner` (register or unregister the folder, back-fill paths: the owner only).
 */
export type DriveOp = "read" | "write" | "account_read" | "owner";

/**
 * True when `path` (a folder-relative path) is `prefix` or lies under it, segment-wise: `a/b`
 * covers `a/b` and `a/b/c`, not `a/bc`.
 */
export function covers(prefix: string, path: string): boolean {
  return path === prefix || path.startsWith(`${prefix}/`);
}

/** What the caller was admitted as. */
export class DriveAccess {
  constructor(
    /** The token's account. */
    readonly caller: string,
    /** The folder's owner (the address the request names). */
    readonly owner: string,
    /** `owner`, or the member's role, or `grant` for a folder-grant holder. */
    readonly as: "owner" | MemberRole | "grant",
    /** The granted folders of a folder-grant holder; null for the whole drive. */
    readonly prefixes: readonly string[] | null,
  ) {}

  /** True when the caller may reach `path` (null: a file without a recorded path). */
  allowsPath(path: string | null): boolean {
    if (this.prefixes === null) return true;
    return path !== null && this.prefixes.some((p) => covers(p, path));
  }

  /**
   * Refuses a path outside a folder-grant holder's folders.
   * @throws AppError `forbidden` (403).
   */
  requirePath(path: string | null): void {
    if (!this.allowsPath(path)) throw fail("forbidden", "The token's folder grant does not cover this path");
  }
}

/** Decides access to owners' folders for every route (see the module comment). */
export class DriveAccessService {
  constructor(private readonly drives: DrivesRepository) {}

  /**
   * Admits `caller` to `op` on `owner`'s folder `folderHash` (null: the account as a whole,
   * which only the owner may address), or throws.
   * @throws AppError `forbidden` (403) when the caller is neither the owner nor a member or
   *   folder-grant holder whose role allows `op`; `drive_frozen` (402, flat, with
   *   `frozen_until` when recorded) for a write into a frozen owner's folder.
   */
  async require(caller: string, owner: string, folderHash: string | null, op: DriveOp): Promise<DriveAccess> {
    let access: DriveAccess;
    if (caller === owner) access = new DriveAccess(caller, owner, "owner", null);
    else {
      if (op === "owner" || folderHash === null) throw forbidden();
      const drive = { owner, folderHash };
      const member = await this.drives.member(drive, caller);
      if (member) {
        if (op === "write" && roleRank(member.role) < roleRank("writer")) throw forbidden();
        access = new DriveAccess(caller, owner, member.role as MemberRole, null);
      } else {
        const grants = await this.drives.grantsOf(drive, caller);
        const usable = grants.filter((g) => op !== "write" || grantRole(g) === "writer");
        // A folder holder has no account-wide reads: they would reach beyond its folder.
        if (usable.length === 0 || op === "account_read") throw forbidden();
        access = new DriveAccess(
          caller,
          owner,
          "grant",
          usable.map((g) => g.pathPrefix),
        );
      }
    }
    if (op === "write") await this.requireNotFrozen(owner);
    return access;
  }

  /**
   * The folders of `owner` that `caller` may list (`/list_folders/{owner}`): null for the owner
   * (every folder), else the drives it is a member of or holds a folder grant on.
   * @throws AppError `forbidden` (403) when it has none.
   */
  async visibleFolders(caller: string, owner: string): Promise<Set<string> | null> {
    if (caller === owner) return null;
    const rows = [
      ...(await this.drives.membershipsOf(caller)),
      ...(await this.drives.grantsOfMember(caller)),
    ];
    const mine = new Set(rows.filter((r) => r.owner === owner).map((r) => r.folderHash));
    if (mine.size === 0) throw forbidden();
    return mine;
  }

  /**
   * Refuses writes into the folders of a frozen account.
   * @throws AppError `drive_frozen` (402).
   */
  async requireNotFrozen(owner: string): Promise<void> {
    const f = await this.drives.freeze(owner);
    if (!f) return;
    throw fail("drive_frozen", "The drive's owner account is limited: writes are refused, reads still work", {
      fields: f.frozenUntil === null ? {} : { frozen_until: rfc3339(f.frozenUntil) },
    });
  }
}

/** A folder grant's role: `writer`, else `reader` (a blank or unknown value reads as reader). */
export function grantRole(g: Pick<GrantRow, "role">): "reader" | "writer" {
  return g.role === "writer" ? "writer" : "reader";
}

function forbidden() {
  return fail("forbidden", "The token does not grant access to this drive");
}
