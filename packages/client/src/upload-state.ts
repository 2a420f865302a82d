/**
 * @module client/upload-state
 * The small JSON file that remembers upload sessions in flight, so an upload interrupted by
 * Ctrl-C or a crash resumes from the session's `status` instead of starting over (issue 5).
 *
 * File shape: `{"version": 1, "uploads": {"<ss58>/<folder_hash>/<file_id>": PendingUpload}}`.
 * Writes are atomic (temp file + rename, mode 0600) and serialised within one instance; use
 * one `UploadStateFile` per path in a process.
 */
import { mkdir, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { WireManifest } from "@esync/protocol/manifest.ts";
import type { SealedFileRecord } from "./seal.ts";

/** A session upload that has not been finalized yet. */
export interface PendingUpload {
  sessionId: string;
  /** Local file the blob was sealed from, with its size and mtime then. */
  localPath: string;
  plaintextSize: number;
  mtimeMs: number;
  chunkSize: number;
  chunkCount: number;
  ciphertextSize: number;
  /** The spilled blob: path, base nonce and hashes, so it can be reused or reproduced. */
  sealed: SealedFileRecord;
  /** The manifest the session was opened with. */
  manifest: WireManifest;
  /** Unix seconds. */
  createdAt: number;
}

interface StateFileShape {
  version: 1;
  uploads: Record<string, PendingUpload>;
}

/** Key of an upload: `<ss58>/<folder_hash>/<file_id>`. */
export function uploadKey(ss58: string, folderHash: string, fileIdHex: string): string {
  return `${ss58}/${folderHash}/${fileIdHex}`;
}

/** Reads and writes the pending-uploads file at `path` (created on first write). */
export class UploadStateFile {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(readonly path: string) {}

  private async load(): Promise<StateFileShape> {
    const file = Bun.file(this.path);
    if (!(await file.exists())) return { version: 1, uploads: {} };
    try {
      const parsed = (await file.json()) as StateFileShape;
      if (parsed && parsed.version === 1 && typeof parsed.uploads === "object") return parsed;
    } catch {
      // A torn or foreign file is treated as empty: the worst case is re-uploading.
    }
    return { version: 1, uploads: {} };
  }

  private async save(state: StateFileShape): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true });
    const tmp = `${this.path}.${process.pid}.tmp`;
    await writeFile(tmp, JSON.stringify(state, null, 1), { mode: 0o600 });
    await rename(tmp, this.path);
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => {});
    return run;
  }

  /** The pending upload under `key`, if any. */
  get(key: string): Promise<PendingUpload | undefined> {
    return this.serial(async () => (await this.load()).uploads[key]);
  }

  /** Every pending upload by key. */
  all(): Promise<Record<string, PendingUpload>> {
    return this.serial(async () => (await this.load()).uploads);
  }

  /** Records (or replaces) the pending upload under `key`. */
  put(key: string, entry: PendingUpload): Promise<void> {
    return this.serial(async () => {
      const state = await this.load();
      state.uploads[key] = entry;
      await this.save(state);
    });
  }

  /** Forgets the upload under `key` (no error when absent). */
  delete(key: string): Promise<void> {
    return this.serial(async () => {
      const state = await this.load();
      if (!(key in state.uploads)) return;
      delete state.uploads[key];
      await this.save(state);
    });
  }
}
