-- The search index's counters (search_stats histograms and grid, search_dirs, search_names,
-- search_grams) and its FTS index are no longer updated row by row: the triggers of
-- search_entries append each change to search_delta (d = +1 with the new entry, -1 with the old
-- one; k = what the change touches: 1 histograms, 2 directories, 4 grid, 8 names, 16 grams and
-- the FTS index), in the transaction of the file write, and src/search/sqlite-counters.ts folds
-- the log into them in set-based statements. Index plus log are exact after every commit.
CREATE TABLE `search_delta` (
	`k` integer NOT NULL,
	`d` integer NOT NULL,
	`id` integer NOT NULL,
	`oid` integer NOT NULL,
	`folder_hash` text NOT NULL,
	`file_name` text,
	`name` text,
	`ext` text,
	`dir` text,
	`size_bytes` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
DROP TRIGGER `search_grams_ai`;
--> statement-breakpoint
DROP TRIGGER `search_grams_au`;
--> statement-breakpoint
DROP TRIGGER `search_grams_ad`;
--> statement-breakpoint
DROP TRIGGER `search_names_ai`;
--> statement-breakpoint
DROP TRIGGER `search_names_au`;
--> statement-breakpoint
DROP TRIGGER `search_names_ad`;
--> statement-breakpoint
DROP TRIGGER `search_grid_ai`;
--> statement-breakpoint
DROP TRIGGER `search_grid_au`;
--> statement-breakpoint
DROP TRIGGER `search_grid_ad`;
--> statement-breakpoint
DROP TRIGGER `search_entries_ai`;
--> statement-breakpoint
DROP TRIGGER `search_entries_au`;
--> statement-breakpoint
DROP TRIGGER `search_entries_ad`;
--> statement-breakpoint
CREATE TRIGGER `search_entries_ai` AFTER INSERT ON search_entries
BEGIN
	INSERT INTO search_delta (k, d, id, oid, folder_hash, file_name, name, ext, dir, size_bytes, created_at, updated_at)
	VALUES (31, 1, new.id, new.oid, new.folder_hash, new.file_name, new.name, new.ext, new.dir, new.size_bytes, new.created_at, new.updated_at);
END;
--> statement-breakpoint
CREATE TRIGGER `search_entries_ad` AFTER DELETE ON search_entries
BEGIN
	INSERT INTO search_delta (k, d, id, oid, folder_hash, file_name, name, ext, dir, size_bytes, created_at, updated_at)
	VALUES (31, -1, old.id, old.oid, old.folder_hash, old.file_name, old.name, old.ext, old.dir, old.size_bytes, old.created_at, old.updated_at);
END;
--> statement-breakpoint
CREATE TRIGGER `search_entries_au` AFTER UPDATE ON search_entries
BEGIN
	INSERT INTO search_delta (k, d, id, oid, folder_hash, file_name, name, ext, dir, size_bytes, created_at, updated_at)
	SELECT c.k, s.d, s.id, s.oid, s.folder_hash, s.file_name, s.name, s.ext, s.dir, s.size_bytes, s.created_at, s.updated_at
	FROM (SELECT
		CASE WHEN old.oid IS NOT new.oid OR old.ext IS NOT new.ext OR old.size_bytes IS NOT new.size_bytes
			OR old.created_at IS NOT new.created_at OR old.updated_at IS NOT new.updated_at THEN 1 ELSE 0 END
		| CASE WHEN old.oid IS NOT new.oid OR old.folder_hash IS NOT new.folder_hash OR old.dir IS NOT new.dir
			OR old.size_bytes IS NOT new.size_bytes THEN 2 ELSE 0 END
		| CASE WHEN old.oid IS NOT new.oid OR old.ext IS NOT new.ext OR old.size_bytes IS NOT new.size_bytes
			OR old.created_at IS NOT new.created_at THEN 4 ELSE 0 END
		| CASE WHEN old.oid IS NOT new.oid OR old.file_name IS NOT new.file_name THEN 8 ELSE 0 END
		| CASE WHEN old.id IS NOT new.id OR old.oid IS NOT new.oid OR old.name IS NOT new.name THEN 16 ELSE 0 END AS k) AS c,
		(SELECT -1 AS d, old.id AS id, old.oid AS oid, old.folder_hash AS folder_hash, old.file_name AS file_name, old.name AS name,
			old.ext AS ext, old.dir AS dir, old.size_bytes AS size_bytes, old.created_at AS created_at, old.updated_at AS updated_at
		UNION ALL SELECT 1, new.id, new.oid, new.folder_hash, new.file_name, new.name, new.ext, new.dir, new.size_bytes, new.created_at, new.updated_at) AS s
	WHERE c.k <> 0;
END;
