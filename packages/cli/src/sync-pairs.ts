/**
 * @module cli/sync-pairs
 * The directory <-> folder pairs that `esync sync --all` (and so the service) syncs, kept in
 * `sync-pairs.json` of the configuration directory (mode 0600):
 * `{"version": 1, "pairs": [{"dir": "/abs/path", "folder": "label", "exclude": ["*.tmp"]}]}`.
 * A pair with a joined shared drive has `"drive": "OWNER/LABEL"` instead of `"folder"`
 * (docs/drives.md, "Client"), so that a client that does not know drive pairs refuses the file
 * rather than syncing the directory into a folder of its own account.
 *
 * Rules (docs/user-guide.md, "Sync pairs"): a pair's directory must exist when it is added
 * and is stored as an absolute path; a directory is in at most one pair, and no paired
 * directory lies inside another (their files would be synced twice).
 */
import { stat } from "node:fs/promises";
import { resolve, sep } from "node:path";
import { checkLabel } from "./commands/folder.ts";
import { type ConfigPaths, ensureConfigDir, writePrivate } from "./config.ts";
import { CliError, describeError, EXIT, errorln, exitCodeOf, usageError } from "./output.ts";

/** One directory synced with one folder. */
export interface SyncPair {
  /** Absolute path of the local directory. */
  dir: string;
  /** Label of a folder of the account; absent exactly when `drive` is set. */
  folder?: string;
  /** A joined shared drive, `OWNER/LABEL` (`driveName`); absent exactly when `folder` is set. */
  drive?: string;
  /** Extra exclude patterns (gitignore syntax), added to `DIR/.esyncignore`'s. */
  exclude: string[];
}

interface PairsFile {
  version: 1;
  pairs: SyncPair[];
}

/** The configured pairs (none when the file does not exist). Usage error when it is not valid. */
export async function readPairs(paths: ConfigPaths): Promise<SyncPair[]> {
  const file = Bun.file(paths.pairs);
  if (!(await file.exists())) return [];
  let parsed: Partial<PairsFile>;
  try {
    parsed = (await file.json()) as Partial<PairsFile>;
  } catch {
    throw usageError(`${paths.pairs} is not valid JSON: fix it or remove it`);
  }
  if (!Array.isArray(parsed.pairs))
    throw usageError(`${paths.pairs} has no "pairs" list: fix it or remove it`);
  return parsed.pairs.map((p) => {
    if (typeof p?.dir !== "string" || (typeof p.folder === "string") === (typeof p.drive === "string"))
      throw usageError(`${paths.pairs}: every pair needs a "dir" string and a "folder" or a "drive" string`);
    const exclude = Array.isArray(p.exclude) ? p.exclude.map(String) : [];
    return typeof p.drive === "string"
      ? { dir: p.dir, drive: p.drive, exclude }
      : { dir: p.dir, folder: p.folder, exclude };
  });
}

/** The configured pairs; usage error (exit 1) when there is none, saying how to add one. */
export async function configuredPairs(paths: ConfigPaths): Promise<SyncPair[]> {
  const pairs = await readPairs(paths);
  if (pairs.length === 0)
    throw usageError(
      "no sync pairs configured: add one with `esync sync add DIR --folder LABEL` (or `--drive OWNER/LABEL`)",
    );
  return pairs;
}

/** Replaces the stored pairs (atomically, mode 0600). */
export async function writePairs(paths: ConfigPaths, pairs: SyncPair[]): Promise<void> {
  await ensureConfigDir(paths);
  const doc: PairsFile = { version: 1, pairs };
  await writePrivate(paths.pairs, `${JSON.stringify(doc, null, 2)}\n`);
}

/** What a pair syncs with: `folder "LABEL"` or `drive OWNER/LABEL`. */
export function pairTarget(p: Pick<SyncPair, "folder" | "drive">): string {
  return p.drive === undefined ? `folder "${p.folder}"` : `drive ${p.drive}`;
}

/** How a pair is named in messages: `DIR <-> "LABEL"` or `DIR <-> drive OWNER/LABEL`. */
export function pairName(p: SyncPair): string {
  return p.drive === undefined ? `${p.dir} <-> "${p.folder}"` : `${p.dir} <-> drive ${p.drive}`;
}

/** True when `inner` is `outer` or lies below it (both absolute). */
function within(inner: string, outer: string): boolean {
  return inner === outer || inner.startsWith(outer.endsWith(sep) ? outer : outer + sep);
}

/**
 * Adds a pair of `dir` with a folder of the account or a joined drive (`OWNER/LABEL`, as
 * `driveName` gives it) and returns it. Usage error (exit 1) when `dir` does not exist or is
 * not a directory, the label is invalid, `dir` is already paired, or it is inside (or contains)
 * a paired directory.
 */
export async function addPair(
  paths: ConfigPaths,
  dir: string,
  target: { folder: string } | { drive: string },
  exclude: string[],
): Promise<SyncPair> {
  const abs = resolve(dir);
  if ("folder" in target) checkLabel(target.folder);
  const what = pairTarget(target);
  const st = await stat(abs).catch(() => null);
  if (!st) throw usageError(`${dir}: no such directory (create it first; a pair's directory must exist)`);
  if (!st.isDirectory()) throw usageError(`${dir}: not a directory`);
  const pairs = await readPairs(paths);
  for (const p of pairs) {
    if (p.dir === abs)
      throw usageError(
        pairTarget(p) === what
          ? `${abs} is already synced with ${what}`
          : `${abs} is already synced with ${pairTarget(p)} (run \`esync sync remove ${abs}\` first)`,
      );
    if (within(abs, p.dir))
      throw usageError(`${abs} is inside ${p.dir}, which is already synced with ${pairTarget(p)}`);
    if (within(p.dir, abs))
      throw usageError(`${abs} contains ${p.dir}, which is already synced with ${pairTarget(p)}`);
  }
  const pair: SyncPair = { dir: abs, ...target, exclude };
  await writePairs(paths, [...pairs, pair]);
  return pair;
}

/**
 * Removes the pair of directory `dir`, every pair of folder `folder`, or every pair of drive
 * `drive` (`OWNER/LABEL`, or the `LABEL` alone), and returns the removed ones. Usage error when
 * nothing matches.
 */
export async function removePairs(
  paths: ConfigPaths,
  match: { dir?: string; folder?: string; drive?: string },
): Promise<SyncPair[]> {
  const abs = match.dir === undefined ? undefined : resolve(match.dir);
  const drive = match.drive;
  const hit = (p: SyncPair) =>
    (abs === undefined || p.dir === abs) &&
    (match.folder === undefined || p.folder === match.folder) &&
    (drive === undefined || p.drive === drive || (p.drive?.endsWith(`/${drive}`) ?? false));
  const pairs = await readPairs(paths);
  const removed = pairs.filter(hit);
  if (removed.length === 0) {
    const what = [
      abs,
      match.folder === undefined ? undefined : `folder "${match.folder}"`,
      drive === undefined ? undefined : `drive ${drive}`,
    ]
      .filter(Boolean)
      .join(" with ");
    throw usageError(`no sync pair for ${what} (see \`esync sync list\`)`);
  }
  await writePairs(
    paths,
    pairs.filter((p) => !hit(p)),
  );
  return removed;
}

/**
 * `esync sync --all`: runs `runPair` for every configured pair, one after the other, or all
 * at once with `watch` (one watcher each, in this process). A pair that fails is reported on
 * stderr by name and the others go on; at the end a `CliError` with the first failure's exit
 * code lists the failed pairs. A pair whose directory is missing fails (it is never created:
 * an unmounted disk must not be refilled from the server).
 */
export async function syncAll(
  pairs: SyncPair[],
  watch: boolean,
  signal: AbortSignal,
  runPair: (pair: SyncPair) => Promise<void>,
): Promise<void> {
  const failed: Array<{ pair: SyncPair; code: number }> = [];
  const one = async (pair: SyncPair) => {
    try {
      const st = await stat(pair.dir).catch(() => null);
      if (!st?.isDirectory())
        throw new CliError(
          `${pair.dir} is missing or not a directory (it is not created for a pair)`,
          EXIT.local,
        );
      await runPair(pair);
    } catch (e) {
      if (signal.aborted) return;
      errorln(`esync: ${pairName(pair)}: ${describeError(e)}`);
      failed.push({ pair, code: exitCodeOf(e) });
    }
  };
  if (watch) await Promise.all(pairs.map(one));
  else for (const pair of pairs) if (!signal.aborted) await one(pair);
  if (signal.aborted) throw new CliError("stopped", EXIT.interrupted);
  const first = failed[0];
  if (first)
    throw new CliError(
      `${failed.length} of ${pairs.length} sync pair(s) failed: ${failed.map((f) => pairName(f.pair)).join(", ")}`,
      first.code as CliError["code"],
    );
}
