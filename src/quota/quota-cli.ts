#!/usr/bin/env bun
/**
 * @module quota/quota-cli
 * Admin command for storage allowances, run as `bun run quota <command>` against the database of
 * the configured `ESYNC_DATA_DIR` / `ESYNC_DB_PATH`:
 *   set <ss58> <bytes|unlimited|default>   override the allowance (plaintext bytes), or remove it
 *   show <ss58> [--json]                   usage, allowance and where it comes from
 */
import { Command, InvalidArgumentError } from "commander";
import { isSs58 } from "../auth/ss58.ts";
import { ConfigError, loadConfig } from "../config/config.ts";
import { openDb } from "../db/client.ts";
import { systemClock } from "../util/clock.ts";
import { QuotaRepository } from "./quota.repository.ts";
import { QuotaService } from "./quota.service.ts";

function service(): QuotaService {
  const config = loadConfig();
  return new QuotaService(new QuotaRepository(openDb(config.dbPath)), systemClock, config.defaultQuotaBytes);
}

function address(v: string): string {
  if (!isSs58(v)) throw new InvalidArgumentError(`not an SS58 address: ${v}`);
  return v;
}

const program = new Command("quota").description("Manage per-account storage allowances (plaintext bytes)");

program
  .command("set")
  .description("Set an account's allowance: a byte count, 'unlimited', or 'default' (remove the override)")
  .argument("<ss58>", "account address", address)
  .argument("<bytes>", "whole bytes, 'unlimited' or 'default'")
  .action((owner: string, v: string) => {
    const q = service();
    if (v === "default") q.clearOverride(owner);
    else if (v === "unlimited") q.setOverride(owner, null);
    else if (/^\d+$/.test(v) && Number.isSafeInteger(Number(v))) q.setOverride(owner, Number(v));
    else throw new InvalidArgumentError(`expected whole bytes, 'unlimited' or 'default', got "${v}"`);
    const i = q.info(owner);
    console.log(
      `${owner}: allowance ${i.quotaBytes ?? "unlimited"} (${i.source}), used ${i.usedBytes} bytes`,
    );
  });

program
  .command("show")
  .description("Show an account's usage and allowance")
  .argument("<ss58>", "account address", address)
  .option("--json", "print JSON")
  .action((owner: string, o: { json?: boolean }) => {
    const i = service().info(owner);
    if (o.json)
      console.log(
        JSON.stringify({
          owner,
          used_bytes: i.usedBytes,
          file_count: i.fileCount,
          quota_bytes: i.quotaBytes,
          source: i.source,
        }),
      );
    else
      console.log(
        `${owner}: used ${i.usedBytes} bytes in ${i.fileCount} files; allowance ${i.quotaBytes ?? "unlimited"} (${i.source})`,
      );
  });

try {
  await program.parseAsync(process.argv);
} catch (e) {
  console.error(
    e instanceof ConfigError ? `quota: configuration error: ${e.message}` : `quota: ${(e as Error).message}`,
  );
  process.exit(2);
}
