/**
 * @module cli/resolve-folder
 * Turns a folder label given on the command line into the folder on the server, for every
 * command that works on one folder (push, pull, sync, ls, restore, status). A label the server
 * does not list is a mistake unless the user asked to create it: a typo must not silently
 * register a new, empty folder, nor make a pull "succeed" with nothing.
 */
import { ApiError } from "@esync/client/api-error.ts";
import type { RemoteFolderInfo } from "@esync/client/api-types.ts";
import type { FolderKeys } from "@esync/client/keys.ts";
import { checkLabel } from "./commands/folder.ts";
import type { CommandContext } from "./context.ts";
import { CliError, EXIT } from "./output.ts";

/** A folder resolved from its label. */
export interface ResolvedFolder {
  label: string;
  /** Keys and `folderHash` derived from the label (docs/protocol.md#manifest, #client-keys). */
  keys: FolderKeys;
  /** The server's entry (docs/protocol.md#folders), or null when it was not registered (dry run with `create`). */
  entry: RemoteFolderInfo | null;
  /** True when this call registered the folder. */
  registered: boolean;
}

/** Options of `resolveFolder`. */
export interface ResolveFolderOptions {
  /** Register the folder when the server does not list it (`--create`); default false. */
  create?: boolean;
  /** With `create`: do not register, only report that it would be (`--dry-run`). */
  dryRun?: boolean;
  /** The command takes `--create` (push, sync): an unknown label's error suggests it. */
  createFlag?: boolean;
}

/**
 * Finds folder `label` among the account's folders (`/list_folders`). When it is not there:
 * with `create`, registers it with this device's name (a 409 from a concurrent registration
 * counts as found); without, throws a usage `CliError` (exit 1) that lists the known labels
 * (and names `--create` when the command has it: `createFlag`).
 * @throws CliError for an unknown label; ApiError when the server fails.
 */
export async function resolveFolder(
  ctx: CommandContext,
  label: string,
  options: ResolveFolderOptions = {},
): Promise<ResolvedFolder> {
  const keys = await ctx.identity.folderKeys(checkLabel(label));
  const { folders } = await ctx.api.listFolders(ctx.address);
  const entry = folders.find((f) => f.folder_hash === keys.folderHash);
  if (entry) return { label, keys, entry, registered: false };
  if (!options.create) throw unknownFolder(label, folders, options.createFlag === true);
  if (options.dryRun) return { label, keys, entry: null, registered: false };
  try {
    await ctx.api.registerFolder({
      ss58Address: ctx.address,
      folderHash: keys.folderHash,
      label,
      deviceName: ctx.config.device_name,
    });
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 409)) throw e;
  }
  const again = await ctx.api.listFolders(ctx.address);
  return {
    label,
    keys,
    entry: again.folders.find((f) => f.folder_hash === keys.folderHash) ?? null,
    registered: true,
  };
}

/** The error for a label the server does not list; `--create` is suggested where it exists. */
function unknownFolder(label: string, folders: RemoteFolderInfo[], createFlag: boolean): CliError {
  const known = folders.map((f) => JSON.stringify(f.label)).sort();
  const list = known.length > 0 ? `known folders: ${known.join(", ")}` : "this account has no folders yet";
  const hint = createFlag
    ? "; pass --create to register it as a new folder"
    : ` (\`esync folder add ${JSON.stringify(label)}\` registers a new one)`;
  return new CliError(`no folder "${label}" on the server (${list})${hint}`, EXIT.usage);
}
