-- The name sort index gets `name` too, as the other sort indexes have it, so that a walk in
-- file_name order checks q in the index instead of looking each row up in the table (a common
-- term whose matches sit far down the name order cost a lookup per row walked).
DROP INDEX `search_by_name`;
--> statement-breakpoint
CREATE INDEX `search_by_name` ON `search_entries` (`oid`, `file_name`, `path_hash`, `ext`, `size_bytes`, `created_at`, `name`);
