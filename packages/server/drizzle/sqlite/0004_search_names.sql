-- Name histogram (src/search/name-histogram.ts), so that a deep offset in file_name order starts its
-- walk near the row it needs instead of walking the name index from one end.
--   search_names  rows per (oid, level, prefix): level 0 counts the rows without file_name
--                 (prefix ''); levels 1-7 count file_name by its first 2, 4, 6, 8, 11, 14 and 20
--                 characters (small steps, so that no bucket has too many children to sum).
--                 Prefix order is the index's BINARY order, so the rows before a prefix are the
--                 sum of the buckets before it. Rows that drop to 0 stay (readers skip them).
-- Kept in the transaction of every write by the triggers below, and filled for the rows already
-- there.
CREATE TABLE `search_names` (
	`oid` integer NOT NULL,
	`level` integer NOT NULL,
	`prefix` text NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY (`oid`, `level`, `prefix`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TRIGGER `search_names_ai` AFTER INSERT ON search_entries
BEGIN
	INSERT INTO search_names (oid, level, prefix, n)
	SELECT new.oid, l.level, CASE WHEN l.level = 0 THEN '' ELSE substr(new.file_name, 1, l.len) END, 1
	FROM (SELECT 0 AS level, 0 AS len UNION ALL SELECT 1, 2 UNION ALL SELECT 2, 4 UNION ALL SELECT 3, 6 UNION ALL SELECT 4, 8 UNION ALL SELECT 5, 11 UNION ALL SELECT 6, 14 UNION ALL SELECT 7, 20) AS l
	WHERE (l.level = 0) = (new.file_name IS NULL)
	ON CONFLICT (oid, level, prefix) DO UPDATE SET n = n + excluded.n;
END;
--> statement-breakpoint
CREATE TRIGGER `search_names_ad` AFTER DELETE ON search_entries
BEGIN
	INSERT INTO search_names (oid, level, prefix, n)
	SELECT old.oid, l.level, CASE WHEN l.level = 0 THEN '' ELSE substr(old.file_name, 1, l.len) END, -1
	FROM (SELECT 0 AS level, 0 AS len UNION ALL SELECT 1, 2 UNION ALL SELECT 2, 4 UNION ALL SELECT 3, 6 UNION ALL SELECT 4, 8 UNION ALL SELECT 5, 11 UNION ALL SELECT 6, 14 UNION ALL SELECT 7, 20) AS l
	WHERE (l.level = 0) = (old.file_name IS NULL)
	ON CONFLICT (oid, level, prefix) DO UPDATE SET n = n + excluded.n;
END;
--> statement-breakpoint
CREATE TRIGGER `search_names_au` AFTER UPDATE OF oid, file_name ON search_entries
BEGIN
	INSERT INTO search_names (oid, level, prefix, n)
	SELECT old.oid, l.level, CASE WHEN l.level = 0 THEN '' ELSE substr(old.file_name, 1, l.len) END, -1
	FROM (SELECT 0 AS level, 0 AS len UNION ALL SELECT 1, 2 UNION ALL SELECT 2, 4 UNION ALL SELECT 3, 6 UNION ALL SELECT 4, 8 UNION ALL SELECT 5, 11 UNION ALL SELECT 6, 14 UNION ALL SELECT 7, 20) AS l
	WHERE (l.level = 0) = (old.file_name IS NULL)
	ON CONFLICT (oid, level, prefix) DO UPDATE SET n = n + excluded.n;
	INSERT INTO search_names (oid, level, prefix, n)
	SELECT new.oid, l.level, CASE WHEN l.level = 0 THEN '' ELSE substr(new.file_name, 1, l.len) END, 1
	FROM (SELECT 0 AS level, 0 AS len UNION ALL SELECT 1, 2 UNION ALL SELECT 2, 4 UNION ALL SELECT 3, 6 UNION ALL SELECT 4, 8 UNION ALL SELECT 5, 11 UNION ALL SELECT 6, 14 UNION ALL SELECT 7, 20) AS l
	WHERE (l.level = 0) = (new.file_name IS NULL)
	ON CONFLICT (oid, level, prefix) DO UPDATE SET n = n + excluded.n;
END;
--> statement-breakpoint
INSERT INTO search_names (oid, level, prefix, n)
SELECT e.oid, l.level, CASE WHEN l.level = 0 THEN '' ELSE substr(e.file_name, 1, l.len) END AS prefix, count(*)
FROM search_entries AS e,
	(SELECT 0 AS level, 0 AS len UNION ALL SELECT 1, 2 UNION ALL SELECT 2, 4 UNION ALL SELECT 3, 6 UNION ALL SELECT 4, 8 UNION ALL SELECT 5, 11 UNION ALL SELECT 6, 14 UNION ALL SELECT 7, 20) AS l
WHERE (l.level = 0) = (e.file_name IS NULL)
GROUP BY e.oid, l.level, prefix;
