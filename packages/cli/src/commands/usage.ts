/**
 * @module cli/commands/usage
 * `esync quota` (the allowance and what uses it: live files, kept versions, file shares, from
 * `GET /v1/quota/{ss58}` of docs/protocol.md#quota; a server without it (no `quota_report`
 * capability) is asked the advisory `/can_upload` instead: unlimited when the largest size fits,
 * otherwise the largest size that fits, by bisection in at most 53 calls, and the allowance shown
 * is then the live files plus that room) and `esync du [--folder LABEL]` (the summaries of
 * docs/protocol.md#summaries: totals, by file type and by client family).
 */

import type { EsyncApi } from "@esync/client/api.ts";
import type { Command } from "commander";
import type { GlobalOptions } from "../config.ts";
import { loadContext } from "../context.ts";
import { formatSize, printJson, println, table } from "../output.ts";
import { resolveFolder } from "../resolve-folder.ts";

/**
 * Plaintext bytes the account can still write (null: unlimited), the largest size
 * `/can_upload` accepts, found by bisection.
 */
export async function roomLeft(api: EsyncApi, address: string): Promise<number | null> {
  const fits = async (n: number) =>
    (await api.canUpload({ ss58Address: address, folderHash: "", sizeBytes: n })).result;
  if (await fits(Number.MAX_SAFE_INTEGER)) return null;
  let lo = 0;
  let hi = Number.MAX_SAFE_INTEGER;
  while (hi - lo > 1) {
    const mid = lo + Math.floor((hi - lo) / 2);
    if (await fits(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

/**
 * What `esync quota --json` prints (plaintext bytes; null quota and free: unlimited).
 * `version_bytes` and `share_bytes` are null when the server cannot report them (no
 * `quota_report` capability); `used_bytes` is then the live files alone.
 */
export interface QuotaStanding {
  used_bytes: number;
  file_bytes: number;
  file_count: number;
  version_bytes: number | null;
  share_bytes: number | null;
  quota_bytes: number | null;
  free_bytes: number | null;
}

/** The account's standing: from `GET /v1/quota/{ss58}`, else from the summary and `roomLeft`. */
export async function quotaOf(api: EsyncApi, address: string): Promise<QuotaStanding> {
  if ((await api.capabilities()).quota_report) {
    const r = await api.quotaReport(address);
    return {
      used_bytes: r.used_bytes,
      file_bytes: r.file_bytes,
      file_count: r.file_count,
      version_bytes: r.version_bytes,
      share_bytes: r.share_bytes,
      quota_bytes: r.quota_bytes,
      free_bytes: r.free_bytes,
    };
  }
  const user = await api.userSummary(address);
  const free = await roomLeft(api, address);
  return {
    used_bytes: user.total_bytes,
    file_bytes: user.total_bytes,
    file_count: user.file_count,
    version_bytes: null,
    share_bytes: null,
    quota_bytes: free === null ? null : user.total_bytes + free,
    free_bytes: free,
  };
}

/** Registers `esync quota` and `esync du` on `program`. */
export function registerUsage(program: Command): void {
  program
    .command("quota")
    .description("storage used by the account and the room left in its allowance")
    .action(async (_opts: unknown, cmd: Command) => {
      const ctx = await loadContext(cmd.optsWithGlobals<GlobalOptions>(), "read");
      const q = await quotaOf(ctx.api, ctx.address);
      if (ctx.json) return printJson({ address: ctx.address, ...q });
      println(`used:      ${formatSize(q.used_bytes)}`);
      println(`  files:    ${formatSize(q.file_bytes)} in ${q.file_count} file(s)`);
      if (q.version_bytes !== null)
        println(`  versions: ${formatSize(q.version_bytes)} (kept versions and trash)`);
      if (q.share_bytes !== null) println(`  shares:   ${formatSize(q.share_bytes)} (file share links)`);
      println(
        q.quota_bytes === null || q.free_bytes === null
          ? "allowance: unlimited"
          : `allowance: ${formatSize(q.quota_bytes)}, ${formatSize(q.free_bytes)} (${q.free_bytes} bytes) free`,
      );
    });
  program
    .command("du")
    .description("storage used, by file type and by client family (whole account, or one folder)")
    .option("-f, --folder <label>", "only this folder")
    .action(async (opts: { folder?: string }, cmd: Command) => {
      const ctx = await loadContext(cmd.optsWithGlobals<GlobalOptions>(), "read");
      const folderHash = opts.folder ? (await resolveFolder(ctx, opts.folder)).keys.folderHash : undefined;
      const [user, types, sources] = await Promise.all([
        ctx.api.userSummary(ctx.address, folderHash),
        ctx.api.fileTypeSummary(ctx.address, folderHash),
        ctx.api.sourceSummary(ctx.address, folderHash),
      ]);
      // The bucket lists live with the wire schemas, whose framework (Elysia, TypeBox) only
      // this command needs: loaded here, not on every start of the CLI.
      const { FILE_TYPE_BUCKETS, SOURCE_BUCKETS } = await import("@esync/protocol/schemas.ts");
      const rows = <K extends string>(keys: readonly K[], s: Record<string, number>) =>
        keys.map((k) => ({ name: k, files: s[k] ?? 0, bytes: s[`${k}_bytes`] ?? 0 }));
      const byType = rows(FILE_TYPE_BUCKETS, types);
      const bySource = rows(SOURCE_BUCKETS, sources);
      if (ctx.json)
        return printJson({
          folder: opts.folder ?? null,
          total_bytes: user.total_bytes,
          file_count: user.file_count,
          by_type: byType,
          by_source: bySource,
        });
      println(
        `${opts.folder ? `folder "${opts.folder}"` : "account"}: ${formatSize(user.total_bytes)} in ${user.file_count} file(s)`,
      );
      for (const [title, list] of [
        ["type", byType],
        ["source", bySource],
      ] as const) {
        println();
        println(
          table(
            [{ header: title }, { header: "files", align: "right" }, { header: "size", align: "right" }],
            list.map((r) => [r.name, String(r.files), formatSize(r.bytes)]),
          ),
        );
      }
    });
}
