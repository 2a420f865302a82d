/**
 * @module cli/config
 * The `esync` configuration directory: where the master mnemonic, the server URL and the
 * upload state live. The only module of the CLI that reads the environment.
 *
 * Directory (mode 0700): `--config-dir`, else `$ESYNC_CONFIG_DIR`, else
 * `$XDG_CONFIG_HOME/esync`, else `~/.config/esync`.
 *
 * | file | mode | content |
 * |---|---|---|
 * | `mnemonic` | 0600 | the BIP39 master mnemonic, one line (the only secret: back it up), or the same sealed with a passphrase (`mnemonic-seal.ts`) |
 * | `config.json` | 0600 | `{version, server_url, address, device_name, created_at}` |
 * | `uploads.json` | 0600 | sessions of interrupted pushes (`UploadStateFile`), for resume |
 * | `sync-pairs.json` | 0600 | the directory <-> folder pairs of `esync sync --all` (`sync-pairs.ts`) |
 * | `log/esync.log` | 0600 | the service's log (`--log-file` of the unit `esync service install` writes; `log.ts`) |
 * | `spill/` | 0700 | temporary files (a share's encrypted copy; removed when done or stale); `--spill-dir` / `$ESYNC_SPILL_DIR` put them elsewhere |
 *
 * The server URL in use is `--server`, else `$ESYNC_SERVER`, else `config.json`'s. Network
 * errors and 5xx are retried for `--retry-for`, else `$ESYNC_RETRY_FOR`, else 2 minutes. A
 * sealed mnemonic is opened with `$ESYNC_PASSPHRASE`, else a prompt on the terminal.
 */
import { chmod, mkdir, rename, writeFile } from "node:fs/promises";
import { homedir, hostname } from "node:os";
import { join, resolve } from "node:path";
import { DEFAULT_RETRY_FOR_MS } from "@esync/client/retry.ts";
import { isSealed, openMnemonic, sealMnemonic, WrongPassphraseError } from "./mnemonic-seal.ts";
import { CliError, EXIT, parseDuration, usageError } from "./output.ts";
import { readSecret } from "./prompt.ts";

/** Server URL used when `init` is given none. */
export const DEFAULT_SERVER_URL = "http://127.0.0.1:8080";

/** `config.json`. */
export interface CliConfigFile {
  version: 1;
  server_url: string;
  /** SS58 address of the mnemonic, for display (recomputed from the mnemonic when used). */
  address: string;
  /** Sent as `device_name` when a folder is registered. */
  device_name: string;
  /** Unix seconds. */
  created_at: number;
}

/** Options shared by every command (commander's global options). */
export interface GlobalOptions {
  configDir?: string;
  server?: string;
  json?: boolean;
  retryFor?: string;
  spillDir?: string;
  /** `-q`: print only errors (`output-options.ts`). */
  quiet?: boolean;
  /** `--log-file`: JSON log lines appended here, rotated (`log.ts`). */
  logFile?: string;
}

/** The spill directory chosen by `--spill-dir` or `$ESYNC_SPILL_DIR`, if either is set. */
export function spillDirOverride(flag?: string): string | undefined {
  const dir = flag ?? (process.env.ESYNC_SPILL_DIR || undefined);
  return dir === undefined ? undefined : resolve(dir);
}

/** How long to retry network errors and 5xx, ms: `--retry-for`, else `$ESYNC_RETRY_FOR`, else 2 min. */
export function retryForMs(flag?: string): number {
  const text = flag ?? (process.env.ESYNC_RETRY_FOR || undefined);
  return text === undefined ? DEFAULT_RETRY_FOR_MS : parseDuration(text);
}

/** Resolved paths of a configuration directory. */
export interface ConfigPaths {
  dir: string;
  mnemonic: string;
  config: string;
  uploads: string;
  spill: string;
  /** The directory <-> folder pairs (`sync-pairs.ts`). */
  pairs: string;
}

/** The configuration directory chosen by `--config-dir`, `ESYNC_CONFIG_DIR`, XDG or `~/.config/esync`. */
export function configDir(flag?: string): string {
  if (flag) return resolve(flag);
  const env = process.env.ESYNC_CONFIG_DIR;
  if (env) return resolve(env);
  const xdg = process.env.XDG_CONFIG_HOME;
  return join(xdg ? resolve(xdg) : join(homedir(), ".config"), "esync");
}

/** Where systemd looks for user units: `$XDG_CONFIG_HOME/systemd/user`, else `~/.config/systemd/user`. */
export function systemdUserUnitDir(): string {
  const xdg = process.env.XDG_CONFIG_HOME;
  return join(xdg ? resolve(xdg) : join(homedir(), ".config"), "systemd", "user");
}

/** The files of configuration directory `dir`. */
export function configPaths(dir: string): ConfigPaths {
  return {
    dir,
    mnemonic: join(dir, "mnemonic"),
    config: join(dir, "config.json"),
    uploads: join(dir, "uploads.json"),
    spill: join(dir, "spill"),
    pairs: join(dir, "sync-pairs.json"),
  };
}

/** The server URL from `--server` or `ESYNC_SERVER`, if either is set. */
export function serverOverride(flag?: string): string | undefined {
  return flag ?? (process.env.ESYNC_SERVER || undefined);
}

/** A default device name: the host name. */
export function defaultDeviceName(): string {
  return hostname();
}

/** Checks that `url` is an http(s) URL and returns it without a trailing slash. Usage error otherwise. */
export function normalizeServerUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw usageError(`not a URL: ${url}`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    throw usageError(`server URL must be http:// or https://, got ${url}`);
  return url.replace(/\/+$/, "");
}

/** Writes `text` to `path` atomically (a temporary file renamed over it), mode 0600. */
export async function writePrivate(path: string, text: string): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, text, { mode: 0o600 });
  await chmod(tmp, 0o600); // whatever the umask
  await rename(tmp, path);
}

/** Creates the directory (mode 0700) if needed. */
export async function ensureConfigDir(paths: ConfigPaths): Promise<void> {
  await mkdir(paths.dir, { recursive: true, mode: 0o700 });
}

/**
 * Writes the mnemonic file (mode 0600, atomically): the words, or sealed under `passphrase`
 * when one is given (`mnemonic-seal.ts`).
 */
export async function writeMnemonic(
  paths: ConfigPaths,
  mnemonic: string,
  passphrase?: string,
): Promise<void> {
  await ensureConfigDir(paths);
  await writePrivate(
    paths.mnemonic,
    passphrase === undefined ? `${mnemonic}\n` : sealMnemonic(mnemonic, passphrase),
  );
}

/** Writes `config.json` (mode 0600, atomically). */
export async function writeConfig(paths: ConfigPaths, config: CliConfigFile): Promise<void> {
  await ensureConfigDir(paths);
  await writePrivate(paths.config, `${JSON.stringify(config, null, 2)}\n`);
}

/** True when a mnemonic is stored in `paths`. */
export async function hasMnemonic(paths: ConfigPaths): Promise<boolean> {
  return Bun.file(paths.mnemonic).exists();
}

/** `$ESYNC_PASSPHRASE`, if set: the passphrase of a sealed mnemonic. */
export function passphraseFromEnv(): string | undefined {
  return process.env.ESYNC_PASSPHRASE || undefined;
}

/** The new passphrase for scripts: `$ESYNC_NEW_PASSPHRASE`, else `$ESYNC_PASSPHRASE`. */
export function newPassphraseFromEnv(): string | undefined {
  return process.env.ESYNC_NEW_PASSPHRASE || process.env.ESYNC_PASSPHRASE || undefined;
}

/** The mnemonic file's text, after checking its mode. Usage error when `esync init` has not been run. */
export async function readMnemonicFile(paths: ConfigPaths): Promise<string> {
  const file = Bun.file(paths.mnemonic);
  if (!(await file.exists()))
    throw usageError(`no identity in ${paths.dir}: run \`esync init\` first (or pass --config-dir)`);
  const st = await file.stat();
  if ((st.mode & 0o077) !== 0) {
    throw new CliError(
      `${paths.mnemonic} is readable by others (mode ${(st.mode & 0o777).toString(8)}): run \`chmod 600 ${paths.mnemonic}\``,
      EXIT.local,
    );
  }
  return file.text();
}

/**
 * Opens a sealed mnemonic's `text` with `$ESYNC_PASSPHRASE` or, on a terminal, a prompt.
 * Usage error (exit 1) for a wrong passphrase or when there is neither.
 */
export async function unsealMnemonic(paths: ConfigPaths, text: string): Promise<string> {
  let passphrase = passphraseFromEnv();
  if (passphrase === undefined) {
    if (!process.stdin.isTTY)
      throw usageError(
        `${paths.mnemonic} is protected by a passphrase: set ESYNC_PASSPHRASE or run on a terminal`,
      );
    passphrase = await readSecret(`passphrase for ${paths.mnemonic}: `);
  }
  try {
    return openMnemonic(text, passphrase, paths.mnemonic).trim();
  } catch (e) {
    throw new CliError((e as Error).message, e instanceof WrongPassphraseError ? EXIT.usage : EXIT.local);
  }
}

/**
 * The stored mnemonic, opened with the passphrase when it is sealed. Usage error (exit 1)
 * when `esync init` has not been run or the passphrase is wrong.
 */
export async function readMnemonic(paths: ConfigPaths): Promise<string> {
  const text = await readMnemonicFile(paths);
  return isSealed(text) ? unsealMnemonic(paths, text) : text.trim();
}

/** The stored `config.json`. Usage error (exit 1) when it is missing or unreadable. */
export async function readConfig(paths: ConfigPaths): Promise<CliConfigFile> {
  const file = Bun.file(paths.config);
  if (!(await file.exists()))
    throw usageError(`no configuration in ${paths.dir}: run \`esync init\` first (or pass --config-dir)`);
  let parsed: Partial<CliConfigFile>;
  try {
    parsed = (await file.json()) as Partial<CliConfigFile>;
  } catch {
    throw usageError(`${paths.config} is not valid JSON: fix it or run \`esync init --force\``);
  }
  if (typeof parsed.server_url !== "string")
    throw usageError(`${paths.config} has no server_url: run \`esync init --server URL --force\``);
  return {
    version: 1,
    server_url: parsed.server_url,
    address: String(parsed.address ?? ""),
    device_name: String(parsed.device_name ?? defaultDeviceName()),
    created_at: Number(parsed.created_at ?? 0),
  };
}
