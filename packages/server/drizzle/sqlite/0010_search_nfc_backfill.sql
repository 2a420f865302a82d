-- Search keys are NFC before case folding (src/files/file-entry.ts searchNameOf). Rows written
-- before that may hold NFD names; only names with a non-ASCII character can differ. Their rowids
-- are queued here and src/search/nfc-backfill.ts rewrites them at start-up, in batches.
CREATE TABLE `search_nfc_backfill` (`file_rowid` integer PRIMARY KEY NOT NULL);
--> statement-breakpoint
INSERT INTO `search_nfc_backfill` (`file_rowid`) SELECT rowid FROM `files` WHERE `search_name` GLOB '*[^ -~]*';
