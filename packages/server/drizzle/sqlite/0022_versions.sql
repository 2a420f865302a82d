CREATE TABLE `file_versions` (
	`version_id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
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
	`store_hash` text,
	`chunk_hashes` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`client_timestamp` integer NOT NULL,
	`source` text,
	`attributes` blob,
	`ciphertext_hash` text NOT NULL,
	`ciphertext_size` integer NOT NULL,
	`blob_id` text NOT NULL,
	`chunk_size` integer NOT NULL,
	`chunk_count` integer NOT NULL,
	`chunk_gens` text NOT NULL,
	`uploaded_by` text,
	`reason` text NOT NULL,
	`kept_at` integer NOT NULL,
	`expires_at` integer NOT NULL
);--> statement-breakpoint
CREATE INDEX `file_versions_by_file` ON `file_versions` (`owner`,`folder_hash`,`path_hash`,`version_id`);--> statement-breakpoint
CREATE INDEX `file_versions_deleted` ON `file_versions` (`owner`,`folder_hash`,`version_id`) WHERE "file_versions"."reason" = 'deleted';--> statement-breakpoint
CREATE INDEX `file_versions_expires` ON `file_versions` (`expires_at`);--> statement-breakpoint
CREATE INDEX `file_versions_by_blob` ON `file_versions` (`blob_id`);--> statement-breakpoint
CREATE INDEX `files_by_blob` ON `files` (`blob_id`);
