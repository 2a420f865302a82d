CREATE TABLE `account_usage` (
	`owner` text PRIMARY KEY NOT NULL,
	`file_count` integer DEFAULT 0 NOT NULL,
	`total_bytes` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `quota_overrides` (
	`owner` text PRIMARY KEY NOT NULL,
	`quota_bytes` integer,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
-- Per-account totals kept by triggers on files, so that every write path (commit, rename,
-- delete, batch delete, unregister) updates them in its own transaction. A delete has no clock
-- value in the row: it stamps updated_at with the database's unixepoch().
INSERT INTO account_usage (owner, file_count, total_bytes, created_at, updated_at)
SELECT owner, count(*), sum(size_bytes), min(created_at), max(updated_at) FROM files GROUP BY owner;
--> statement-breakpoint
CREATE TRIGGER `account_usage_ai` AFTER INSERT ON files
BEGIN
	INSERT INTO account_usage (owner, file_count, total_bytes, created_at, updated_at)
	VALUES (new.owner, 1, new.size_bytes, new.updated_at, new.updated_at)
	ON CONFLICT (owner) DO UPDATE SET file_count = file_count + 1, total_bytes = total_bytes + excluded.total_bytes,
		updated_at = max(updated_at, excluded.updated_at);
END;
--> statement-breakpoint
CREATE TRIGGER `account_usage_ad` AFTER DELETE ON files
BEGIN
	UPDATE account_usage SET file_count = file_count - 1, total_bytes = total_bytes - old.size_bytes,
		updated_at = max(updated_at, unixepoch()) WHERE owner = old.owner;
END;
--> statement-breakpoint
CREATE TRIGGER `account_usage_au` AFTER UPDATE ON files
BEGIN
	UPDATE account_usage SET total_bytes = total_bytes - old.size_bytes + new.size_bytes,
		updated_at = max(updated_at, new.updated_at) WHERE owner = new.owner;
END;
