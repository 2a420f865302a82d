CREATE TABLE `api_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`token_sha256` text NOT NULL,
	`owner` text NOT NULL,
	`label` text,
	`created_at` integer NOT NULL,
	`expires_at` integer,
	`revoked_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_tokens_sha` ON `api_tokens` (`token_sha256`);--> statement-breakpoint
CREATE INDEX `api_tokens_owner` ON `api_tokens` (`owner`);--> statement-breakpoint
CREATE TABLE `blob_deletions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`target` text NOT NULL,
	`not_before` integer NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`last_error` text
);
--> statement-breakpoint
CREATE INDEX `blob_deletions_due` ON `blob_deletions` (`not_before`);--> statement-breakpoint
CREATE TABLE `files` (
	`owner` text NOT NULL,
	`folder_hash` text NOT NULL,
	`path_hash` blob NOT NULL,
	`salted_hash` blob NOT NULL,
	`size_bytes` integer NOT NULL,
	`revision_seq` integer NOT NULL,
	`revision_id` blob NOT NULL,
	`encrypted_path` blob NOT NULL,
	`file_name` text,
	`relative_path` text,
	`search_name` text,
	`ext` text,
	`store_hash` text,
	`chunk_hashes` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`client_timestamp` integer NOT NULL,
	`source` text,
	`upload_id` text NOT NULL,
	`ciphertext_hash` text NOT NULL,
	`ciphertext_size` integer NOT NULL,
	`blob_id` text NOT NULL,
	`chunk_size` integer NOT NULL,
	`chunk_count` integer NOT NULL,
	`chunk_gens` text NOT NULL,
	PRIMARY KEY(`owner`, `folder_hash`, `path_hash`)
);
--> statement-breakpoint
CREATE INDEX `files_owner_created` ON `files` (`owner`,`created_at`,`path_hash`);--> statement-breakpoint
CREATE INDEX `files_owner_updated` ON `files` (`owner`,`updated_at`,`path_hash`);--> statement-breakpoint
CREATE INDEX `files_owner_size` ON `files` (`owner`,`size_bytes`,`path_hash`);--> statement-breakpoint
CREATE INDEX `files_owner_name` ON `files` (`owner`,`file_name`,`path_hash`);--> statement-breakpoint
CREATE INDEX `files_owner_ext` ON `files` (`owner`,`ext`);--> statement-breakpoint
CREATE TABLE `folders` (
	`owner` text NOT NULL,
	`folder_hash` text NOT NULL,
	`label` text,
	`device_name` text,
	`created_at` integer,
	`updated_at` integer NOT NULL,
	`file_count` integer DEFAULT 0 NOT NULL,
	`total_bytes` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`owner`, `folder_hash`)
);
--> statement-breakpoint
CREATE TABLE `session_chunks` (
	`session_id` text NOT NULL,
	`chunk_index` integer NOT NULL,
	`gen` text NOT NULL,
	`size` integer NOT NULL,
	`hash` text,
	`received_at` integer NOT NULL,
	PRIMARY KEY(`session_id`, `chunk_index`)
);
--> statement-breakpoint
CREATE TABLE `upload_sessions` (
	`session_id` text PRIMARY KEY NOT NULL,
	`owner` text NOT NULL,
	`folder_hash` text NOT NULL,
	`path_hash` blob NOT NULL,
	`manifest` text NOT NULL,
	`ciphertext_hash` text NOT NULL,
	`ciphertext_size` integer NOT NULL,
	`chunk_size` integer NOT NULL,
	`chunk_count` integer NOT NULL,
	`blob_id` text NOT NULL,
	`state` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`result` text
);
--> statement-breakpoint
CREATE INDEX `sessions_owner` ON `upload_sessions` (`owner`,`state`);--> statement-breakpoint
CREATE INDEX `sessions_expires` ON `upload_sessions` (`expires_at`);