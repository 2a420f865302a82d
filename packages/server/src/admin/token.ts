#!/usr/bin/env bun
import { isSs58 } from "@esync/protocol/ss58.ts";
/**
 * @module server/admin/token
 * Admin command for issued API tokens (docs/protocol.md#api-tokens), `esync-admin token <command>` (see
 * src/admin/esync-admin.ts; `bun run token <command>` runs this file alone), against the database
 * of the configured `ESYNC_DATA_DIR` / `ESYNC_DB_PATH`:
 *   create --owner <ss58> [--label L] [--expires-in 30d]   prints the token once
 *   list [--owner <ss58>] [--json]
 *   revoke <id>
 */
import { Command, InvalidArgumentError } from "commander";
import { AuthService } from "../auth/auth.service.ts";
import { ConfigError, loadConfig } from "../config/config.ts";
import { openMetadataStore } from "../db/open.ts";
import { systemClock } from "../util/clock.ts";

/**
 * Parses `90`, `90s`, `15m`, `12h`, `30d` into seconds (at least 1: a zero lifetime would issue a
 * token that is already expired).
 * @throws InvalidArgumentError for another shape or a zero duration.
 */
export function parseDuration(v: string): number {
  const m = /^(\d+)([smhd]?)$/.exec(v.trim());
  if (!m) throw new InvalidArgumentError("expected a duration like 3600, 15m, 12h or 30d");
  const mult = { "": 1, s: 1, m: 60, h: 3600, d: 86400 }[m[2] as "" | "s" | "m" | "h" | "d"];
  const seconds = Number(m[1]) * mult;
  if (!Number.isSafeInteger(seconds) || seconds < 1)
    throw new InvalidArgumentError(
      "the lifetime must be at least 1 second (omit --expires-in for no expiry)",
    );
  return seconds;
}

/** Runs `fn` on the token service of the configured database, closing the database after. */
async function withService<T>(fn: (auth: AuthService) => Promise<T>): Promise<T> {
  const store = await openMetadataStore(loadConfig());
  try {
    return await fn(new AuthService(store.repos.apiTokens, systemClock, false));
  } finally {
    await store.close();
  }
}

const iso = (t: number | null) => (t === null ? "-" : new Date(t * 1000).toISOString());

/** JSON output asked for on the command or on a parent (`esync-admin --json token list`). */
function wantsJson(cmd: Command): boolean {
  return Boolean(cmd.optsWithGlobals().json);
}

/**
 * The `token` command and its subcommands. Failures are thrown (a revoked or unknown id is an
 * `Error`); the caller prints them and chooses the exit code.
 */
export function tokenCommand(): Command {
  const program = new Command("token").description(
    "Manage esync API tokens (stored hashed in the esync database)",
  );

  program
    .command("create")
    .description("Issue a token for an SS58 address; the token is printed once and never stored")
    .requiredOption("--owner <ss58>", "address the token resolves to")
    .option("--label <label>", "free-form note, e.g. the device")
    .option(
      "--expires-in <duration>",
      "lifetime: seconds, or 15m / 12h / 30d (default: never)",
      parseDuration,
    )
    .option("--json", "print JSON")
    .action(async (o: { owner: string; label?: string; expiresIn?: number }, cmd: Command) => {
      if (!isSs58(o.owner)) throw new InvalidArgumentError(`--owner is not an SS58 address: ${o.owner}`);
      const t = await withService((auth) => auth.issue(o.owner, o.label ?? null, o.expiresIn ?? null));
      if (wantsJson(cmd))
        console.log(
          JSON.stringify({
            id: t.id,
            token: t.token,
            owner: t.owner,
            label: t.label,
            expires_at: t.expiresAt,
          }),
        );
      else
        console.log(
          `id:      ${t.id}\nowner:   ${t.owner}\nexpires: ${iso(t.expiresAt)}\ntoken:   ${t.token}\n(store the token now: it cannot be shown again)`,
        );
    });

  program
    .command("list")
    .description("List issued tokens (never the token strings)")
    .option("--owner <ss58>", "only tokens of this address")
    .option("--json", "print JSON")
    .action(async (o: { owner?: string }, cmd: Command) => {
      const rows = await withService((auth) => auth.list(o.owner));
      if (wantsJson(cmd)) {
        console.log(
          JSON.stringify(
            rows.map((r) => ({
              id: r.id,
              owner: r.owner,
              label: r.label,
              created_at: r.createdAt,
              expires_at: r.expiresAt,
              revoked_at: r.revokedAt,
            })),
          ),
        );
        return;
      }
      if (rows.length === 0) return console.log("no tokens");
      console.table(
        rows.map((r) => ({
          id: r.id,
          owner: r.owner,
          label: r.label ?? "",
          created: iso(r.createdAt),
          expires: iso(r.expiresAt),
          revoked: iso(r.revokedAt),
        })),
      );
    });

  program
    .command("revoke")
    .description("Revoke a token by id; requests with it get 401 from then on")
    .argument("<id>", "token id from `token list`")
    .option("--json", "print JSON")
    .action(async (id: string, _o: unknown, cmd: Command) => {
      if (!(await withService((auth) => auth.revoke(id)))) throw new Error(`no active token with id ${id}`);
      if (wantsJson(cmd)) console.log(JSON.stringify({ id, revoked: true }));
      else console.log(`revoked ${id}`);
    });
  return program;
}

if (import.meta.main) {
  try {
    await tokenCommand().parseAsync(process.argv);
  } catch (e) {
    console.error(
      e instanceof ConfigError
        ? `token: configuration error: ${e.message}`
        : `token: ${(e as Error).message}`,
    );
    process.exit(2);
  }
}
