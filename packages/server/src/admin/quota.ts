/**
 * @module server/admin/quota
 * `esync-admin quota set|show` on the server's database (the quota module, `src/quota`):
 *   set <ss58> <bytes|unlimited|default>   override the allowance (plaintext bytes), or remove it
 *   show <ss58> [--json]                   usage, allowance and where it comes from
 * `bun run quota ...` is an alias of `esync-admin quota ...`.
 */

import { isSs58 } from "@esync/protocol/ss58.ts";
import { formatSize } from "@esync/protocol/units.ts";
import { Command, InvalidArgumentError } from "commander";
import { loadConfig } from "../config/config.ts";
import { openMetadataStore } from "../db/open.ts";
import { type QuotaInfo, QuotaService } from "../quota/quota.service.ts";
import { systemClock } from "../util/clock.ts";

/** Runs `fn` on the quota service of the configured database, closing the database after. */
async function withService<T>(fn: (q: QuotaService) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const store = await openMetadataStore(config);
  try {
    return await fn(new QuotaService(store.repos.quota, systemClock, config.defaultQuotaBytes));
  } finally {
    await store.close();
  }
}

function address(v: string): string {
  if (!isSs58(v)) throw new InvalidArgumentError(`not an SS58 address: ${v}`);
  return v;
}

/** The allowance argument of `quota set`: whole bytes, `unlimited` (null) or `default` (remove). */
export function parseAllowance(v: string): number | null | "default" {
  if (v === "default") return "default";
  if (v === "unlimited") return null;
  if (/^\d+$/.test(v) && Number.isSafeInteger(Number(v))) return Number(v);
  throw new InvalidArgumentError(`expected whole bytes, 'unlimited' or 'default', got "${v}"`);
}

function infoJson(i: QuotaInfo) {
  return {
    owner: i.owner,
    used_bytes: i.usedBytes,
    file_count: i.fileCount,
    quota_bytes: i.quotaBytes,
    source: i.source,
  };
}

function infoText(i: QuotaInfo): string {
  const allowance =
    i.quotaBytes === null ? "unlimited" : `${formatSize(i.quotaBytes)} (${i.quotaBytes} bytes)`;
  return `${i.owner}: used ${formatSize(i.usedBytes)} (${i.usedBytes} bytes) in ${i.fileCount} file(s); allowance ${allowance} (${i.source})`;
}

/** `esync-admin quota` with `set` and `show`. */
export function quotaCommand(): Command {
  const quota = new Command("quota").description("Per-account storage allowances (plaintext bytes)");
  quota
    .command("set")
    .description("Set an account's allowance: whole bytes, 'unlimited', or 'default' (remove the override)")
    .argument("<ss58>", "account address", address)
    .argument("<bytes>", "whole bytes, 'unlimited' or 'default'", parseAllowance)
    .option("--json", "print JSON")
    .action(async (owner: string, v: number | null | "default", _o: unknown, cmd: Command) => {
      const i = await withService(async (q) => {
        if (v === "default") await q.clearOverride(owner);
        else await q.setOverride(owner, v);
        return q.info(owner);
      });
      console.log(cmd.optsWithGlobals().json ? JSON.stringify(infoJson(i)) : infoText(i));
    });
  quota
    .command("show")
    .description("Show an account's usage and allowance")
    .argument("<ss58>", "account address", address)
    .option("--json", "print JSON")
    .action(async (owner: string, _o: unknown, cmd: Command) => {
      const i = await withService((q) => q.info(owner));
      console.log(cmd.optsWithGlobals().json ? JSON.stringify(infoJson(i)) : infoText(i));
    });
  return quota;
}
