/**
 * @module server/admin/freeze
 * `esync-admin freeze|unfreeze` on the server's database: a frozen account's folders (its
 * drives) refuse every write, the owner's included, with 402 `drive_frozen`; reads keep working
 * (docs/drives.md, "Frozen drives").
 *   freeze <ss58> [--until <unix seconds>]   freeze (the end of a grace window is reported to clients)
 *   unfreeze <ss58>                          lift it
 */

import { isSs58 } from "@esync/protocol/ss58.ts";
import { Command, InvalidArgumentError } from "commander";
import { loadConfig } from "../config/config.ts";
import { openMetadataStore } from "../db/open.ts";
import { DrivesService } from "../drives/drives.service.ts";
import { systemClock } from "../util/clock.ts";

/** Runs `fn` on the drives service of the configured database, closing the database after. */
async function withDrives<T>(fn: (d: DrivesService) => Promise<T>): Promise<T> {
  const store = await openMetadataStore(loadConfig());
  try {
    return await fn(new DrivesService(store, systemClock));
  } finally {
    await store.close();
  }
}

function address(v: string): string {
  if (!isSs58(v)) throw new InvalidArgumentError(`not an SS58 address: ${v}`);
  return v;
}

function unixSeconds(v: string): number {
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(Number(v)))
    throw new InvalidArgumentError(`expected Unix seconds, got "${v}"`);
  return Number(v);
}

/** `esync-admin freeze` and `esync-admin unfreeze`. */
export function freezeCommands(): Command[] {
  const freeze = new Command("freeze")
    .description("Freeze an account: writes into its folders are refused (402 drive_frozen), reads work")
    .argument("<ss58>", "account address", address)
    .option("--until <unix>", "end of the grace window reported to clients (Unix seconds)", unixSeconds)
    .action(async (account: string, o: { until?: number }) => {
      await withDrives((d) => d.freeze(account, o.until ?? null));
      console.log(`${account}: frozen`);
    });
  const unfreeze = new Command("unfreeze")
    .description("Lift an account's freeze")
    .argument("<ss58>", "account address", address)
    .action(async (account: string) => {
      const lifted = await withDrives((d) => d.unfreeze(account));
      console.log(`${account}: ${lifted ? "unfrozen" : "was not frozen"}`);
    });
  return [freeze, unfreeze];
}
