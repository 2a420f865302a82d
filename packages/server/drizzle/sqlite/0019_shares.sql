CREATE TABLE `folder_shares` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`owner` text NOT NULL,
	`folder_hash` text NOT NULL,
	`path_prefix` text NOT NULL,
	`display_name` text NOT NULL,
	`minted_by` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer,
	`revoked_at` integer,
	`owner_wrap` text
);
--> statement-breakpoint
CREATE INDEX `folder_shares_owner` ON `folder_shares` (`owner`);--> statement-breakpoint
CREATE INDEX `folder_shares_minter` ON `folder_shares` (`minted_by`);--> statement-breakpoint
CREATE TABLE `share_chunks` (
	`share_id` text NOT NULL,
	`chunk_index` integer NOT NULL,
	`gen` text NOT NULL,
	`size` integer NOT NULL,
	`received_at` integer NOT NULL,
	PRIMARY KEY(`share_id`, `chunk_index`)
);
--> statement-breakpoint
CREATE TABLE `shares` (
	`share_id` text PRIMARY KEY NOT NULL,
	`token` text NOT NULL,
	`owner` text NOT NULL,
	`state` text NOT NULL,
	`filename` text NOT NULL,
	`filename_ct` text NOT NULL,
	`filename_nonce` text NOT NULL,
	`mime_type` text NOT NULL,
	`plaintext_size` integer NOT NULL,
	`ciphertext_size` integer NOT NULL,
	`total_chunks` integer NOT NULL,
	`blob_key` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`expires_at` integer,
	`revoked_at` integer,
	`owner_wrap` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `shares_token` ON `shares` (`token`);--> statement-breakpoint
CREATE INDEX `shares_owner` ON `shares` (`owner`,`state`);--> statement-breakpoint
CREATE INDEX `files_by_relative_path` ON `files` (`owner`,`folder_hash`,`relative_path`);