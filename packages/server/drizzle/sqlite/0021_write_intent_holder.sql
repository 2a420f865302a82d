ALTER TABLE `blob_deletions` ADD `holder` text;--> statement-breakpoint
CREATE INDEX `blob_deletions_holder` ON `blob_deletions` (`holder`) WHERE "blob_deletions"."holder" IS NOT NULL;