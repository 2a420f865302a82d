/**
 * @module cli/context
 * What a command that talks to the server needs, built once from the global options: the
 * configuration directory, the identity of the stored mnemonic, an `EsyncApi` that signs
 * `sig1.` tokens with it and retries outages, and the Ctrl-C signal. Stale spill files are
 * removed on the way (`spill.ts`).
 */
import { EsyncApi } from "@esync/client/api.ts";
import type { ApiError } from "@esync/client/api-error.ts";
import { type Identity, identityFromMnemonic } from "@esync/client/keys.ts";
import { WalletTokenSource } from "@esync/client/token.ts";
import {
  type CliConfigFile,
  type ConfigPaths,
  configDir,
  configPaths,
  type GlobalOptions,
  normalizeServerUrl,
  readConfig,
  readMnemonic,
  retryForMs,
  serverOverride,
  spillDirOverride,
} from "./config.ts";
import { describeError, formatDuration, InterruptedError, notice, setCommandKind } from "./output.ts";
import { cleanSpillDir } from "./spill.ts";

/**
 * Tells the user on stderr, at most every 15 s, that requests are being retried (the error
 * names the server) and for how long at most; through `notice`, so that it is printed above a
 * progress display, not over it.
 */
export function retryNotice(forMs: number): (e: ApiError) => void {
  let last = 0;
  return (e) => {
    const now = Date.now();
    if (now - last < 15_000) return;
    last = now;
    notice(`esync: ${describeError(e)}; retrying for up to ${formatDuration(forMs)}`);
  };
}

/** Everything a command needs to act for the configured account. */
export interface CommandContext {
  paths: ConfigPaths;
  config: CliConfigFile;
  identity: Identity;
  /** The account's SS58 address. */
  address: string;
  serverUrl: string;
  /** Signs `sig1.` tokens for the account (for a second `EsyncApi`, e.g. a throttled one). */
  tokens: WalletTokenSource;
  /** Retries of network errors and 5xx (`--retry-for`), for a second `EsyncApi`. */
  retry: { forMs: number };
  api: EsyncApi;
  json: boolean;
  /** Aborted on the first Ctrl-C (SIGINT) or SIGTERM. */
  signal: AbortSignal;
}

let interrupt: AbortController | null = null;

/**
 * The signal aborted by the first SIGINT/SIGTERM; a second one exits at once with 130.
 * Commands pass it down so uploads stop cleanly and keep their session for a resume.
 */
export function interruptSignal(): AbortSignal {
  if (!interrupt) {
    const controller = new AbortController();
    interrupt = controller;
    const onSignal = () => {
      if (controller.signal.aborted) process.exit(130);
      controller.abort(new InterruptedError());
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  }
  return interrupt.signal;
}

/**
 * What a command does with the server, which decides how patient it is with an outage:
 * - `read` (folder list, ls, search, quota, du, status): someone waits at a prompt; a dead
 *   server fails within `READ_RETRY_FOR_MS` of retries (unless `--retry-for` or
 *   `ESYNC_RETRY_FOR` says otherwise), each request within `READ_TIMEOUT_MS`, with no retry
 *   notice and no resume hint.
 * - `transfer` (push, pull, sync, restore): retries for `--retry-for` (default 2 min) with a
 *   notice, and ends with the hint that running it again resumes.
 * - `write` (the others): retries like a transfer, without the resume hint.
 */
export type CommandKind = "read" | "transfer" | "write";

/** Retry budget of a `read` command when none is configured: 1 s. */
export const READ_RETRY_FOR_MS = 1_000;
/** Time a `read` command's request may take before it fails: 10 s. */
export const READ_TIMEOUT_MS = 10_000;

/**
 * Loads configuration, mnemonic and identity for a command of `kind` (default `write`); usage
 * error (exit 1) when `esync init` was not run.
 */
export async function loadContext(opts: GlobalOptions, kind: CommandKind = "write"): Promise<CommandContext> {
  setCommandKind(kind);
  const paths = configPaths(configDir(opts.configDir));
  paths.spill = spillDirOverride(opts.spillDir) ?? paths.spill;
  await cleanSpillDir(paths.spill, paths.uploads);
  const config = await readConfig(paths);
  const mnemonic = await readMnemonic(paths);
  const identity = await identityFromMnemonic(mnemonic);
  const serverUrl = normalizeServerUrl(serverOverride(opts.server) ?? config.server_url);
  const tokens = new WalletTokenSource(identity);
  const configured = opts.retryFor !== undefined || !!process.env.ESYNC_RETRY_FOR;
  const read = kind === "read";
  const retry = { forMs: read && !configured ? READ_RETRY_FOR_MS : retryForMs(opts.retryFor) };
  const api = new EsyncApi({
    baseUrl: serverUrl,
    token: tokens,
    retry,
    timeoutMs: read && !configured ? READ_TIMEOUT_MS : undefined,
    onRetry: read && !configured ? undefined : retryNotice(retry.forMs),
  });
  return {
    paths,
    config,
    identity,
    address: identity.address,
    serverUrl,
    tokens,
    retry,
    api,
    json: opts.json === true,
    signal: interruptSignal(),
  };
}
