/**
 * @module server/db/sqlite/search/nfc-backfill
 * Rewrites the search keys of files stored before names were normalised to NFC (migration 0010
 * queues their rowids in `search_nfc_backfill`). Each row's `search_name` is recomputed with
 * `searchNameOf` and updated when it differs; the files triggers carry the change into the search
 * index. Runs at start-up after the migrations; a no-op once the queue is empty.
 */
import type { Database } from "bun:sqlite";
import { extensionOf, searchNameOf } from "../../../files/file-entry.ts";

interface QueuedRow {
  file_rowid: number;
  file_name: string | null;
  relative_path: string | null;
  search_name: string | null;
}

/**
 * Processes the NFC backfill queue, `batch` rows per transaction.
 * @returns how many search names changed.
 */
export function backfillNfcSearchNames(sqlite: Database, batch = 1000): number {
  const next = sqlite.query<QueuedRow, [number]>(
    `SELECT q.file_rowid, f.file_name, f.relative_path, f.search_name
       FROM search_nfc_backfill AS q LEFT JOIN files AS f ON f.rowid = q.file_rowid
      ORDER BY q.file_rowid LIMIT ?`,
  );
  const update = sqlite.query("UPDATE files SET search_name = ?, ext = ? WHERE rowid = ?");
  const done = sqlite.query("DELETE FROM search_nfc_backfill WHERE file_rowid = ?");
  let changed = 0;
  const step = sqlite.transaction(() => {
    const rows = next.all(batch);
    for (const r of rows) {
      const name = searchNameOf(r.file_name, r.relative_path);
      if (r.search_name !== null && name !== r.search_name) {
        update.run(name, extensionOf(name), r.file_rowid);
        changed++;
      }
      done.run(r.file_rowid);
    }
    return rows.length;
  });
  while (step() === batch) {}
  return changed;
}
