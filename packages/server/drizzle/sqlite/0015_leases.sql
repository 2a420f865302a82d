ALTER TABLE `blob_deletions` ADD `leased_until` integer;--> statement-breakpoint
ALTER TABLE `upload_sessions` ADD `finalizing_until` integer;