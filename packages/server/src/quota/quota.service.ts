/**
 * @module server/quota/quota.service
 * Per-account storage allowances in plaintext bytes (docs/protocol.md#quota, issue 15): the default
 * `ESYNC_DEFAULT_QUOTA_BYTES` (null = unlimited) unless the account has an override. Usage is the
 * sum of `size_bytes` of the account's live files (`account_usage`, exact by triggers) plus the
 * plaintext bytes of its stored file shares (docs/sharing.md) and of its kept versions of replaced
 * and deleted files (docs/versions.md). Writes
 * are charged only their growth over the row they replace, checked inside the committing
 * transaction (with its repository, under `SessionsRepository.lockOwner`), so that two racing
 * writes cannot both slip under the limit on any node.
 */

import { fail } from "@esync/protocol/errors.ts";
import type { Clock } from "../util/clock.ts";
import type { QuotaRepository } from "./quota.repository.ts";

/** The quota standing of one account. Bytes are plaintext bytes. */
export interface QuotaInfo {
  owner: string;
  /** Plaintext bytes of the account's live files, stored file shares and kept versions. */
  usedBytes: number;
  /** Of `usedBytes`: the live files. */
  fileBytes: number;
  /** Of `usedBytes`: stored file shares (docs/sharing.md). */
  shareBytes: number;
  /** Of `usedBytes`: kept versions of replaced and deleted files (docs/versions.md). */
  versionBytes: number;
  fileCount: number;
  /** The allowance in force; null = unlimited. */
  quotaBytes: number | null;
  /** Where the allowance comes from. */
  source: "override" | "default";
}

/** Allowance rules. */
export class QuotaService {
  constructor(
    private readonly repo: QuotaRepository,
    private readonly clock: Clock,
    private readonly defaultQuotaBytes: number | null,
  ) {}

  /** The account's usage and allowance, read through `repo` (a transaction's, or the store's). */
  async info(owner: string, repo: QuotaRepository = this.repo): Promise<QuotaInfo> {
    const usage = await repo.usage(owner);
    const override = await repo.override(owner);
    const fileBytes = usage?.totalBytes ?? 0;
    const shareBytes = await repo.shareBytes(owner);
    const versionBytes = await repo.versionBytes(owner);
    return {
      owner,
      usedBytes: fileBytes + shareBytes + versionBytes,
      fileBytes,
      shareBytes,
      versionBytes,
      fileCount: usage?.fileCount ?? 0,
      quotaBytes: override ? override.quotaBytes : this.defaultQuotaBytes,
      source: override ? "override" : "default",
    };
  }

  /** Whether `growthBytes` more (negative or zero: always) fit in the account's allowance now. */
  async fits(owner: string, growthBytes: number, repo: QuotaRepository = this.repo): Promise<boolean> {
    if (growthBytes <= 0) return true;
    const override = await repo.override(owner);
    const quotaBytes = override ? override.quotaBytes : this.defaultQuotaBytes;
    if (quotaBytes === null) return true;
    const used =
      ((await repo.usage(owner))?.totalBytes ?? 0) +
      (await repo.shareBytes(owner)) +
      (await repo.versionBytes(owner));
    return used + growthBytes <= quotaBytes;
  }

  /**
   * Refuses a write that would grow the account past its allowance. Call inside the transaction
   * that commits the write, with its repository, after `lockOwner(owner)`.
   * @throws AppError `drive_quota_exceeded` (402, flat body; docs/protocol.md#quota).
   */
  async require(owner: string, growthBytes: number, repo: QuotaRepository = this.repo): Promise<void> {
    if (await this.fits(owner, growthBytes, repo)) return;
    const { usedBytes, quotaBytes } = await this.info(owner, repo);
    throw fail(
      "drive_quota_exceeded",
      `This write needs ${growthBytes} more bytes; ${usedBytes} of the allowance of ${quotaBytes} bytes are in use`,
    );
  }

  /** Sets the account's allowance override (bytes; null = unlimited). */
  setOverride(owner: string, quotaBytes: number | null): Promise<void> {
    return this.repo.setOverride(owner, quotaBytes, this.clock.now());
  }

  /** Removes the account's override (the default applies again); true when there was one. */
  clearOverride(owner: string): Promise<boolean> {
    return this.repo.clearOverride(owner);
  }
}
