CREATE TABLE `account_freezes` (
	`account` text PRIMARY KEY NOT NULL,
	`frozen_until` integer,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `account_invite_keys` (
	`account` text PRIMARY KEY NOT NULL,
	`pubkey` text NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `drive_folder_grants` (
	`owner` text NOT NULL,
	`folder_hash` text NOT NULL,
	`member` text NOT NULL,
	`path_prefix` text NOT NULL,
	`role` text NOT NULL,
	`grant_blob` text NOT NULL,
	`invite_id` text,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`owner`, `folder_hash`, `member`, `path_prefix`)
);
--> statement-breakpoint
CREATE INDEX `drive_folder_grants_by_member` ON `drive_folder_grants` (`member`);--> statement-breakpoint
CREATE TABLE `drive_invites` (
	`invite_id` text PRIMARY KEY NOT NULL,
	`owner` text NOT NULL,
	`folder_hash` text NOT NULL,
	`role` text NOT NULL,
	`path_prefix` text,
	`minted_by` text NOT NULL,
	`expires_at` integer NOT NULL,
	`max_uses` integer NOT NULL,
	`use_count` integer DEFAULT 0 NOT NULL,
	`revoked_at` integer,
	`sealed_token` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `drive_invites_by_drive` ON `drive_invites` (`owner`,`folder_hash`,`created_at`);--> statement-breakpoint
CREATE TABLE `drive_members` (
	`owner` text NOT NULL,
	`folder_hash` text NOT NULL,
	`member` text NOT NULL,
	`role` text NOT NULL,
	`grant_blob` text NOT NULL,
	`invite_id` text,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`owner`, `folder_hash`, `member`)
);
--> statement-breakpoint
CREATE INDEX `drive_members_by_member` ON `drive_members` (`member`);