ALTER TABLE `shares` ADD `max_downloads` integer;--> statement-breakpoint
ALTER TABLE `shares` ADD `download_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `shares` ADD `access_log` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE TABLE `share_accesses` (
	`access_id` text PRIMARY KEY NOT NULL,
	`share_id` text NOT NULL,
	`at` integer NOT NULL,
	`bytes_sent` integer NOT NULL,
	`completed` integer NOT NULL,
	`client_address` text
);
--> statement-breakpoint
CREATE INDEX `share_accesses_share` ON `share_accesses` (`share_id`,`at`);
