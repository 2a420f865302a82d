/**
 * @module cli/spill
 * The spill directory: temporary files (a share's encrypted copy). Uploads no longer spill (they
 * encrypt each chunk from the file as it is sent, docs/framing.md), but blobs
 * (`esync-<id>-<random>.blob`) left by older versions, which `uploads.json` may still name, and
 * other files left behind (a crash, a session abandoned for good) are removed here:
 *
 * - a blob that `uploads.json` does not reference, older than `ORPHAN_AGE_MS` (1 hour: a push
 *   running in another process records its blob long before that);
 * - any blob older than `STALE_AGE_MS` (24 hours, the server's default session TTL,
 *   `ESYNC_SESSION_TTL_SECONDS`): its session has likely expired, and a resume re-encrypts
 *   from the saved nonce anyway, which reproduces the same bytes.
 */
import { readdir, rm, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { UploadStateFile } from "@esync/client/upload-state.ts";

/** Age after which a blob that no upload references is removed, ms. */
export const ORPHAN_AGE_MS = 3_600_000;
/** Age after which any blob is removed, ms (the server's default session TTL). */
export const STALE_AGE_MS = 86_400_000;

/** What `cleanSpillDir` removed. */
export interface SpillCleanup {
  removed: string[];
  bytes: number;
}

/**
 * Removes stale spill files from `dir` (see the module note); `uploadsPath` is `uploads.json`.
 * Never throws: a directory that does not exist or cannot be read is left alone.
 */
export async function cleanSpillDir(
  dir: string,
  uploadsPath: string,
  now = Date.now(),
): Promise<SpillCleanup> {
  const out: SpillCleanup = { removed: [], bytes: 0 };
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => n.startsWith("esync-") && n.endsWith(".blob"));
  } catch {
    return out;
  }
  if (names.length === 0) return out;
  const referenced = new Set(
    Object.values(await new UploadStateFile(uploadsPath).all().catch(() => ({}))).map((p) =>
      resolve(p.sealed.spillPath ?? ""),
    ),
  );
  for (const name of names) {
    const path = join(dir, name);
    const st = await stat(path).catch(() => null);
    if (!st?.isFile()) continue;
    const age = now - st.mtimeMs;
    if (age > STALE_AGE_MS || (age > ORPHAN_AGE_MS && !referenced.has(resolve(path)))) {
      await rm(path, { force: true }).catch(() => {});
      out.removed.push(path);
      out.bytes += st.size;
    }
  }
  return out;
}
