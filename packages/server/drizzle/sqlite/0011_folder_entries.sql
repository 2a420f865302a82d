CREATE TABLE `folder_entries` (
	`owner` text NOT NULL,
	`folder_hash` text NOT NULL,
	`relative_path` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`owner`, `folder_hash`, `relative_path`)
);
