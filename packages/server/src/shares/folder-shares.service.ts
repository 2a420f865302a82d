/**
 * @module server/shares/folder-shares.service
 * Folder shares (docs/sharing.md): anonymous read access to the live contents of one directory
 * (`path_prefix`) of a folder. Nothing is copied: a recipient browses the folder's plaintext
 * paths and sizes under the prefix and downloads the stored ciphertext. The token is kept only as
 * its BLAKE3 hash. Every path a recipient sends is checked like an upload path (no `.` or `..`
 * segment, no leading `/`, no backslash or control character: `packages/protocol/src/paths.ts`) and then
 * appended to the prefix, so nothing above the prefix can be named; lookups compare bytes (no
 * normalisation), so a sibling that shares the prefix as a string (`docs2` beside `docs`) or an
 * NFD spelling of another directory is a different path.
 */

import { fail } from "@esync/protocol/errors.ts";
import { isDirectoryPath, isUploadPath, lastSegment } from "@esync/protocol/paths.ts";
import {
  FOLDER_BROWSE_DEFAULT_LIMIT,
  FOLDER_BROWSE_MAX_LIMIT,
  type FolderOwnerWrapsBody,
  type FolderShareBody,
  type FolderSharePage,
  type FolderShareSummary,
} from "@esync/protocol/schemas.ts";
import type { Static } from "@sinclair/typebox";
import type { MetadataStore } from "../db/store.ts";
import type { FileRow } from "../files/file-entry.ts";
import type { SearchIndex } from "../search/search-index.ts";
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../util/log.ts";
import { expiryOf, isTokenShaped, newShareToken, rfc3339, type ShareTtl, tokenHash } from "./share-rules.ts";
import type { FolderShareRow } from "./shares.repository.ts";

/** A folder share readable anonymously. */
export type LiveFolderShare = FolderShareRow;

/** Rules of folder shares. */
export class FolderSharesService {
  constructor(
    private readonly store: MetadataStore,
    private readonly clock: Clock,
    private readonly index: SearchIndex,
    private readonly log: Logger,
  ) {}

  /**
   * `POST /v1/folder-shares`: a link to `path_prefix` of `caller`'s registered folder.
   * @throws AppError `bad_request` (empty `display_name`, invalid prefix), `folder_not_found`
   *   (no such registered folder of the caller, or `owner_ss58` naming another account).
   */
  async mint(
    caller: string,
    body: Static<typeof FolderShareBody>,
  ): Promise<{ share_token: string; expires_at: string | null }> {
    const displayName = body.display_name.trim();
    if (displayName === "") throw fail("bad_request", "display_name must not be empty");
    if (body.path_prefix !== "" && !isDirectoryPath(body.path_prefix))
      throw fail("bad_request", 'path_prefix must be "" or a folder-relative directory path in NFC');
    // Members of shared drives do not exist on this server: only the owner mints.
    if (body.owner_ss58 !== undefined && body.owner_ss58 !== caller)
      throw fail("folder_not_found", "No such folder, or no right to share it");
    const folder = await this.store.repos.folders.get(caller, body.folder_hash);
    if (!folder || folder.createdAt === null)
      throw fail("folder_not_found", "No such folder, or no right to share it");
    const token = newShareToken();
    const now = this.clock.now();
    const row: FolderShareRow = {
      tokenHash: tokenHash(token),
      owner: caller,
      folderHash: body.folder_hash,
      pathPrefix: body.path_prefix,
      displayName,
      mintedBy: caller,
      createdAt: now,
      expiresAt: expiryOf(body.ttl as ShareTtl | undefined, now),
      revokedAt: null,
      ownerWrap: null,
    };
    await this.store.repos.shares.insertFolderShare(row);
    return { share_token: token, expires_at: rfc3339(row.expiresAt) };
  }

  /** `GET /v1/folder-shares`: the folder shares `caller` owns or minted, dead ones included until reaped. */
  async list(caller: string): Promise<Static<typeof FolderShareSummary>[]> {
    return (await this.store.repos.shares.folderSharesOf(caller)).map((r) => ({
      token_hash: r.tokenHash,
      folder_hash: r.folderHash,
      path_prefix: r.pathPrefix,
      display_name: r.displayName,
      created_at: rfc3339(r.createdAt) as string,
      expires_at: rfc3339(r.expiresAt),
      revoked_at: rfc3339(r.revokedAt),
      owner_wrap: r.mintedBy === caller ? r.ownerWrap : null,
      owner_ss58: r.owner,
      minted_by_ss58: r.mintedBy,
      source: "drive" as const,
    }));
  }

  /** The token hash a path's `token` names, or null for a string no token can be. */
  hashOfToken(token: string): string | null {
    return isTokenShaped(token) ? tokenHash(token) : null;
  }

  /** The folder share `hash` when `caller` may manage it (the folder's owner or the minter). */
  private async controlled(caller: string, hash: string | null): Promise<FolderShareRow | undefined> {
    if (hash === null) return undefined;
    const row = await this.store.repos.shares.folderShare(hash);
    return row && (row.owner === caller || row.mintedBy === caller) ? row : undefined;
  }

  /**
   * PATCH by token or hash: `expires_at` = now + `ttl`.
   * @throws AppError `not_found` (unknown, not the caller's, revoked or already expired).
   */
  async setTtl(caller: string, hash: string | null, ttl: ShareTtl): Promise<{ expires_at: string | null }> {
    const row = await this.controlled(caller, hash);
    const now = this.clock.now();
    if (!row || row.revokedAt !== null || (row.expiresAt !== null && row.expiresAt <= now))
      throw fail("not_found", "No such folder share");
    const expiresAt = expiryOf(ttl, now);
    await this.store.repos.shares.updateFolderShare(row.tokenHash, { expiresAt });
    return { expires_at: rfc3339(expiresAt) };
  }

  /**
   * DELETE by token or hash: revokes the share now (it stays listed until reaped).
   * @returns false for an unknown, foreign or already revoked share (answered 404 without a body).
   */
  async revoke(caller: string, hash: string | null): Promise<boolean> {
    const row = await this.controlled(caller, hash);
    if (!row || row.revokedAt !== null) return false;
    await this.store.repos.shares.updateFolderShare(row.tokenHash, { revokedAt: this.clock.now() });
    return true;
  }

  /** `PUT /v1/folder-shares/owner-wraps`: stores wraps on shares `caller` minted; returns how many. */
  async putOwnerWraps(caller: string, wraps: Static<typeof FolderOwnerWrapsBody>["wraps"]): Promise<number> {
    let applied = 0;
    for (const w of wraps)
      if (await this.store.repos.shares.setFolderOwnerWrap(caller, w.token_hash, w.wrap)) applied++;
    return applied;
  }

  /**
   * The folder share `token` as an anonymous reader may see it.
   * @throws AppError `not_found` (unknown or revoked), `gone` (410: expired).
   */
  async readable(token: string): Promise<LiveFolderShare> {
    const hash = this.hashOfToken(token);
    const row = hash === null ? undefined : await this.store.repos.shares.folderShare(hash);
    if (!row || row.revokedAt !== null) throw fail("not_found", "No such folder share");
    if (row.expiresAt !== null && row.expiresAt <= this.clock.now())
      throw fail("gone", "This link has expired");
    return row;
  }

  /**
   * The folder path of `path` (relative to the share's prefix): the prefix, then `path`.
   * @throws AppError `bad_request` for a path that is not a relative path (`..`, `.`, leading `/`,
   *   backslash, control characters).
   */
  private fullPath(share: FolderShareRow, path: string): string {
    if (path === "") return share.pathPrefix;
    if (!isUploadPath(path)) throw fail("bad_request", "path must be a relative path inside the share");
    return share.pathPrefix === "" ? path : `${share.pathPrefix}/${path}`;
  }

  /**
   * `GET /v1/folder-shares/{token}/browse`: one directory under the share, its sub-directories
   * (first page only, recursive counts) and a page of its files, by name.
   * @throws AppError `not_found` (also for a directory that does not exist), `gone`, `bad_request`.
   */
  async browse(
    token: string,
    path: string,
    offset: number,
    requestedLimit: number | undefined,
  ): Promise<Static<typeof FolderSharePage>> {
    const share = await this.readable(token);
    const full = this.fullPath(share, path);
    const limit = Math.min(requestedLimit ?? FOLDER_BROWSE_DEFAULT_LIMIT, FOLDER_BROWSE_MAX_LIMIT);
    const dirPrefix = full === "" ? "" : `${full}/`;
    const subdirs = await this.index.subdirectories(share.owner, share.folderHash, full);
    const directories = subdirs.map((d) => ({
      name: d.path.slice(dirPrefix.length),
      file_count: d.fileCount,
      total_bytes: d.totalBytes,
      created_at: null,
    }));
    const named = new Set(directories.map((d) => d.name));
    for (const name of await this.store.repos.folderEntries.childNames(share.owner, share.folderHash, full))
      if (!named.has(name)) directories.push({ name, file_count: 0, total_bytes: 0, created_at: null });
    directories.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const page = await this.index.directory(share.owner, share.folderHash, {
      path: full,
      q: null,
      exts: null,
      uploader: null,
      sortBy: "file_name",
      descending: false,
      offset,
      limit,
    });
    if (path !== "" && directories.length === 0 && page.total === 0 && !(await this.isEntry(share, full)))
      throw fail("not_found", "No such directory in this share");
    const shareRoot = share.pathPrefix === "" ? 0 : share.pathPrefix.length + 1;
    const files = page.hits.map((h) => ({
      name: lastSegment(h.relativePath ?? ""),
      path: (h.relativePath ?? "").slice(shareRoot),
      size_bytes: h.sizeBytes,
      uploaded_at: rfc3339(h.updatedAt) as string,
    }));
    const dirs = offset > 0 ? [] : directories;
    return {
      directories: dirs,
      files,
      total_count: dirs.length + files.length,
      has_more: offset + files.length < page.total,
      offset,
      limit,
    };
  }

  /** True when `full` is a registered directory entry of the share's folder (an empty directory). */
  private async isEntry(share: FolderShareRow, full: string): Promise<boolean> {
    const slash = full.lastIndexOf("/");
    const parent = slash < 0 ? "" : full.slice(0, slash);
    const names = await this.store.repos.folderEntries.childNames(share.owner, share.folderHash, parent);
    return names.includes(full.slice(slash + 1));
  }

  /**
   * The file at `path` under the share, for `blob`.
   * @throws AppError `bad_request` (missing or escaping path), `not_found`, `gone`.
   */
  async file(token: string, path: string | undefined): Promise<FileRow> {
    const share = await this.readable(token);
    if (path === undefined || path === "") throw fail("bad_request", "path is required");
    const full = this.fullPath(share, path);
    const row = await this.store.repos.files.byRelativePath(share.owner, share.folderHash, full);
    if (!row) throw fail("not_found", "No such file in this share");
    return row;
  }

  /** Deletes revoked and expired folder shares (a reaper pass); returns how many. */
  async reap(): Promise<number> {
    const n = await this.store.repos.shares.reapFolderShares(this.clock.now());
    if (n > 0) this.log.info("folder_share.reaped", { count: n });
    return n;
  }
}
