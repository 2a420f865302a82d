/**
 * @module cli/commands/share
 * `esync share`, `esync shares` and `esync unshare` (docs/sharing.md, "Command line"):
 *
 * - `esync share FILE [--folder LABEL]`: a file share. A local file is shared as it is; otherwise
 *   FILE is a file of the folder LABEL on the server, downloaded and verified first. The file is
 *   encrypted under a fresh key and uploaded as its own copy; the link carries the key.
 * - `esync share --folder LABEL [PATH]`: a folder share of the directory PATH (default the whole
 *   folder): the link carries the folder's key and shows its live contents.
 * - `esync shares`: both kinds, with expiry and the link where the owner wrap opens;
 *   `esync shares --accesses REF`: one file share's download count and access log.
 * - `esync unshare TOKEN|URL|TOKEN_HASH`: revokes.
 *
 * Links point at `--public-url`, else `$ESYNC_PUBLIC_URL`, else the server URL.
 */
import { statSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { ApiError } from "@esync/client/api-error.ts";
import { downloadFile } from "@esync/client/downloader.ts";
import { normalizeRelativePath } from "@esync/client/manifest.ts";
import { checkSharePassword, parseShareLink, ShareLinkError } from "@esync/client/share-crypto.ts";
import type { ShareAccessLog, ShareTtl } from "@esync/client/share-types.ts";
import {
  type CreatedShare,
  createFileShare,
  createFolderShare,
  listShares,
  revokeShareRef,
  SHARE_TTLS,
  type ShareOwner,
} from "@esync/client/shares.ts";
import type { Command } from "commander";
import { type GlobalOptions, normalizeServerUrl } from "../config.ts";
import { type CommandContext, loadContext } from "../context.ts";
import { CliError, EXIT, formatSize, printJson, println, table, usageError } from "../output.ts";
import { readSecret } from "../prompt.ts";
import { kindAt, listRemote } from "../remote-folder.ts";
import { checkLabel } from "./folder.ts";

/** Options of `esync share`. */
interface ShareOptions {
  folder?: string;
  ttl: string;
  password?: boolean;
  name?: string;
  publicUrl?: string;
  maxDownloads?: string;
  accessLog?: boolean;
}

/** Checks `--max-downloads`: an integer from 1 to 1,000,000. */
export function parseMaxDownloads(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < 1 || n > 1_000_000)
    throw usageError(`--max-downloads must be an integer from 1 to 1000000, got "${text}"`);
  return n;
}

/** The origin of links: `--public-url`, else `$ESYNC_PUBLIC_URL`, else the server URL. */
export function publicUrlOf(flag: string | undefined, serverUrl: string): string {
  const url = flag ?? (process.env.ESYNC_PUBLIC_URL || undefined);
  return url === undefined ? serverUrl : normalizeServerUrl(url);
}

/** Checks `--ttl` against the server's closed set. */
export function parseTtl(text: string): ShareTtl {
  if (!(SHARE_TTLS as readonly string[]).includes(text))
    throw usageError(`--ttl must be one of ${SHARE_TTLS.join(", ")}, got "${text}"`);
  return text as ShareTtl;
}

/** A share password: asked twice on a terminal, else the first line of stdin. */
async function askPassword(): Promise<string> {
  const first = await readSecret("share password (8+ characters): ");
  try {
    checkSharePassword(first);
  } catch (e) {
    throw usageError((e as Error).message);
  }
  if (process.stdin.isTTY && (await readSecret("repeat password: ")) !== first)
    throw usageError("the passwords differ; nothing was shared");
  return first;
}

function isLocalFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function printCreated(ctx: CommandContext, kind: "file" | "folder", s: CreatedShare, extra: object): void {
  if (ctx.json) {
    printJson({ kind, ...extra, ...s });
    return;
  }
  println(s.link);
  if (!s.ownerWrapStored)
    println("note: this server keeps no owner wraps; keep the link, `esync shares` cannot show it again");
}

/** A file of the folder on the server, downloaded and verified into a private temporary file. */
async function fetchRemoteFile(ctx: CommandContext, label: string, rel: string): Promise<string> {
  const keys = await ctx.identity.folderKeys(label);
  const listing = await listRemote({ api: ctx.api, address: ctx.address, keys });
  const entry = listing.files.find((e) => e.relative_path === rel);
  if (!entry)
    throw new CliError(
      kindAt(listing, rel) === null
        ? `${rel}: no such file or directory in "${label}"`
        : `${rel} is a directory`,
      EXIT.server,
    );
  const dest = join(ctx.paths.spill, `share-${crypto.randomUUID()}.plain`);
  await downloadFile({
    api: ctx.api,
    ss58Address: ctx.address,
    folder: keys,
    entry,
    destPath: dest,
    signal: ctx.signal,
  });
  return dest;
}

/** Registers `esync share`, `esync shares` and `esync unshare` on `program`. */
export function registerShare(program: Command): void {
  program
    .command("share")
    .description("share a file (its own encrypted copy) or a directory of a folder (live) by link")
    .argument("[path]", "a local file, a file of --folder, or a directory of --folder (default: all of it)")
    .option("-f, --folder <label>", "folder label (required unless PATH is a local file)")
    .option("--ttl <ttl>", `how long the link works: ${SHARE_TTLS.join(", ")}`, "24h")
    .option("--password", "protect the link with a password (asked for; piped: the first line of stdin)")
    .option("--name <name>", "name the recipient sees (default: the file's or directory's name)")
    .option("--public-url <url>", "origin of the link (default $ESYNC_PUBLIC_URL or the server URL)")
    .option("--max-downloads <n>", "file shares: the link stops after N complete downloads (esync servers)")
    .option(
      "--access-log",
      "file shares: keep a log of downloads, shown by `esync shares --accesses` (esync servers)",
    )
    .addHelpText(
      "after",
      `
The key travels only in the link's #k= part (or, with --password, its
Argon2id-wrapped form in #p=); the server never sees it. Anyone holding the
link can download until it expires or you run \`esync unshare\`.

Examples:
  esync share ./report.pdf --ttl 7d
  esync share reports/2026/q1.pdf --folder documents --password
  esync share --folder photos holidays/2026 --ttl 30d`,
    )
    .action(async (path: string | undefined, opts: ShareOptions, cmd: Command) => {
      const ttl = parseTtl(opts.ttl);
      const maxDownloads = opts.maxDownloads === undefined ? undefined : parseMaxDownloads(opts.maxDownloads);
      const local = path !== undefined && isLocalFile(path);
      if (!local && opts.folder === undefined)
        throw usageError(
          path === undefined
            ? "nothing to share: give a local FILE, or --folder LABEL [PATH]"
            : `${path} is not a local file; give --folder LABEL to share a file or directory of a folder`,
        );
      let rel = "";
      if (!local && path !== undefined) {
        try {
          rel = path.replace(/\/+$/, "") === "" ? "" : normalizeRelativePath(path.replace(/\/+$/, ""));
        } catch (e) {
          throw usageError((e as Error).message);
        }
      }
      const ctx = await loadContext(cmd.optsWithGlobals<GlobalOptions>());
      const owner: ShareOwner = {
        api: ctx.api,
        identity: ctx.identity,
        publicUrl: publicUrlOf(opts.publicUrl, ctx.serverUrl),
      };
      const label = opts.folder === undefined ? undefined : checkLabel(opts.folder);
      let kind: "file" | "dir" = "file";
      if (!local && label !== undefined) {
        const keys = await ctx.identity.folderKeys(label);
        kind =
          rel === ""
            ? "dir"
            : (kindAt(await listRemote({ api: ctx.api, address: ctx.address, keys }), rel) ?? "file");
      }
      if (kind === "dir" && (maxDownloads !== undefined || opts.accessLog))
        throw usageError("--max-downloads and --access-log apply to file shares only");
      if (maxDownloads !== undefined || opts.accessLog) {
        const caps = await ctx.api.capabilities();
        if (maxDownloads !== undefined && !caps.share_max_downloads)
          throw new CliError(
            "this server does not support --max-downloads (capability share_max_downloads)",
            EXIT.server,
          );
        if (opts.accessLog && !caps.share_access_log)
          throw new CliError(
            "this server does not support --access-log (capability share_access_log)",
            EXIT.server,
          );
      }
      const password = opts.password ? await askPassword() : undefined;
      if (kind === "dir" && label !== undefined) {
        const s = await createFolderShare(owner, label, {
          pathPrefix: rel,
          displayName: opts.name,
          ttl,
          password,
        });
        return printCreated(ctx, "folder", s, { folder: label, path_prefix: rel });
      }
      const source = local ? (path as string) : await fetchRemoteFile(ctx, label as string, rel);
      try {
        const s = await createFileShare(owner, source, {
          ttl,
          password,
          maxDownloads,
          accessLog: opts.accessLog,
          name: opts.name ?? (local ? undefined : rel.split("/").pop()),
          spillPath: join(ctx.paths.spill, `share-${crypto.randomUUID()}.blob`),
          signal: ctx.signal,
        });
        printCreated(ctx, "file", s, { source: local ? path : `${label}:${rel}` });
      } finally {
        if (!local) await rm(source, { force: true });
      }
    });

  program
    .command("shares")
    .description("list your file and folder shares with their expiry and links")
    .option("--public-url <url>", "origin of the links (default $ESYNC_PUBLIC_URL or the server URL)")
    .option("--accesses <ref>", "show one file share's download count and access log (a link or a token)")
    .action(async (opts: { publicUrl?: string; accesses?: string }, cmd: Command) => {
      const ctx = await loadContext(cmd.optsWithGlobals<GlobalOptions>());
      if (opts.accesses !== undefined) return showAccesses(ctx, opts.accesses);
      const { files, folders } = await listShares({
        api: ctx.api,
        identity: ctx.identity,
        publicUrl: publicUrlOf(opts.publicUrl, ctx.serverUrl),
      });
      if (ctx.json) return printJson({ files, folders });
      if (files.length === 0 && folders.length === 0)
        return println("no shares (make one with `esync share FILE` or `esync share --folder LABEL`)");
      const expiry = (e: string | null) => (e === null ? "never" : e.replace(/\.\d+Z$/, "Z"));
      const rows = [
        ...files.map((f) => [
          "file",
          f.filename,
          formatSize(f.plaintext_size),
          expiry(f.expires_at),
          f.max_downloads !== undefined
            ? `${f.download_count ?? 0}/${f.max_downloads} downloads`
            : f.access_log
              ? `active, ${f.download_count ?? 0} downloads`
              : "active",
          f.link ?? f.share_token,
        ]),
        ...folders.map((f) => [
          "folder",
          `${f.display_name} (${f.path_prefix === "" ? "/" : f.path_prefix})`,
          "",
          expiry(f.expires_at),
          f.state,
          f.link ?? f.token_hash,
        ]),
      ];
      println(
        table(
          [
            { header: "KIND" },
            { header: "NAME" },
            { header: "SIZE", align: "right" },
            { header: "EXPIRES" },
            { header: "STATE" },
            { header: "LINK (or token / token hash)" },
          ],
          rows,
        ),
      );
    });

  program
    .command("unshare")
    .description("revoke a share: its link stops working at once")
    .argument("<ref>", "the link, the token, or a folder share's 64-hex token hash (from `esync shares`)")
    // A token is base64url and may begin with "-": taken as the ref, not as an unknown option.
    .allowUnknownOption()
    .action(async (ref: string, _opts: unknown, cmd: Command) => {
      const ctx = await loadContext(cmd.optsWithGlobals<GlobalOptions>());
      let out: Awaited<ReturnType<typeof revokeShareRef>>;
      try {
        out = await revokeShareRef(ctx.api, ref);
      } catch (e) {
        if (e instanceof ShareLinkError) throw usageError(e.message);
        if (e instanceof ApiError && e.status === 404)
          throw new CliError("no such share of yours (unknown, or already revoked)", EXIT.server);
        throw e;
      }
      if (ctx.json) printJson({ revoked: true, ...out });
      else println(`revoked the ${out.kind} share`);
    });
}

/** `esync shares --accesses REF`: a file share's counters and access log, newest first. */
async function showAccesses(ctx: CommandContext, ref: string): Promise<void> {
  let token = ref;
  if (/^[a-z]+:\/\//i.test(ref)) {
    let parsed: ReturnType<typeof parseShareLink>;
    try {
      parsed = parseShareLink(ref);
    } catch (e) {
      throw usageError((e as Error).message);
    }
    if (parsed.folder) throw usageError("folder shares keep no access log");
    token = parsed.token;
  }
  let log: ShareAccessLog;
  try {
    log = await ctx.api.shareAccesses(token);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404)
      throw new CliError(
        "no such file share of yours (unknown, revoked, or the server keeps no log)",
        EXIT.server,
      );
    throw e;
  }
  if (ctx.json) return printJson(log);
  println(
    log.max_downloads === null
      ? `${log.download_count} complete downloads`
      : `${log.download_count} of ${log.max_downloads} downloads used`,
  );
  if (log.accesses.length === 0) return println("no downloads logged");
  const withAddress = log.accesses.some((a) => a.client_address !== undefined);
  println(
    table(
      [
        { header: "TIME (UTC)" },
        { header: "BYTES SENT", align: "right" },
        { header: "COMPLETE" },
        ...(withAddress ? [{ header: "CLIENT" }] : []),
      ],
      log.accesses.map((a) => [
        new Date(a.at * 1000).toISOString().replace(/\.\d+Z$/, "Z"),
        String(a.bytes_sent),
        a.completed ? "yes" : "no",
        ...(withAddress ? [a.client_address ?? ""] : []),
      ]),
    ),
  );
  if (log.truncated) println("(older rows not shown)");
}
