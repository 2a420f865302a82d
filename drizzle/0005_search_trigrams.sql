-- Trigram counts (src/search/search.service.ts), so that the exact total of a 3-character `q`, alone
-- or with file_type, is a lookup instead of a count over every FTS hit (a common term has
-- hundreds of thousands).
--   search_trigrams  per (oid, trigram, ext): how many rows have that trigram (3 consecutive
--                    characters, as substr counts them) somewhere in `name`; ext '*' = every ext.
--                    A 3-character q is found in a name exactly when it is one of its trigrams,
--                    so the count is exact. Rows that drop to 0 stay (readers skip them).
-- The trigrams of a name are its substrings at positions 1..length-2, enumerated by json_each over
-- an array of length(name) elements (triggers cannot hold a recursive WITH); each distinct one once.
-- Kept in the transaction of every write by the triggers below, and filled for the rows already
-- there.
CREATE TABLE `search_trigrams` (
	`oid` integer NOT NULL,
	`tri` text NOT NULL,
	`ext` text NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY (`oid`, `tri`, `ext`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TRIGGER `search_trigrams_ai` AFTER INSERT ON search_entries
BEGIN
	INSERT INTO search_trigrams (oid, tri, ext, n)
	SELECT new.oid, t.tri, x.ext, 1
	FROM (SELECT DISTINCT substr(new.name, j.key + 1, 3) AS tri
			FROM json_each('[' || rtrim(replace(hex(zeroblob(length(new.name))), '00', '0,'), ',') || ']') AS j
			WHERE j.key + 3 <= length(new.name)) AS t,
		(SELECT coalesce(new.ext, '') AS ext UNION ALL SELECT '*') AS x
	WHERE new.name IS NOT NULL
	ON CONFLICT (oid, tri, ext) DO UPDATE SET n = n + excluded.n;
END;
--> statement-breakpoint
CREATE TRIGGER `search_trigrams_ad` AFTER DELETE ON search_entries
BEGIN
	INSERT INTO search_trigrams (oid, tri, ext, n)
	SELECT old.oid, t.tri, x.ext, -1
	FROM (SELECT DISTINCT substr(old.name, j.key + 1, 3) AS tri
			FROM json_each('[' || rtrim(replace(hex(zeroblob(length(old.name))), '00', '0,'), ',') || ']') AS j
			WHERE j.key + 3 <= length(old.name)) AS t,
		(SELECT coalesce(old.ext, '') AS ext UNION ALL SELECT '*') AS x
	WHERE old.name IS NOT NULL
	ON CONFLICT (oid, tri, ext) DO UPDATE SET n = n + excluded.n;
END;
--> statement-breakpoint
CREATE TRIGGER `search_trigrams_au` AFTER UPDATE OF oid, name, ext ON search_entries
BEGIN
	INSERT INTO search_trigrams (oid, tri, ext, n)
	SELECT old.oid, t.tri, x.ext, -1
	FROM (SELECT DISTINCT substr(old.name, j.key + 1, 3) AS tri
			FROM json_each('[' || rtrim(replace(hex(zeroblob(length(old.name))), '00', '0,'), ',') || ']') AS j
			WHERE j.key + 3 <= length(old.name)) AS t,
		(SELECT coalesce(old.ext, '') AS ext UNION ALL SELECT '*') AS x
	WHERE old.name IS NOT NULL
	ON CONFLICT (oid, tri, ext) DO UPDATE SET n = n + excluded.n;
	INSERT INTO search_trigrams (oid, tri, ext, n)
	SELECT new.oid, t.tri, x.ext, 1
	FROM (SELECT DISTINCT substr(new.name, j.key + 1, 3) AS tri
			FROM json_each('[' || rtrim(replace(hex(zeroblob(length(new.name))), '00', '0,'), ',') || ']') AS j
			WHERE j.key + 3 <= length(new.name)) AS t,
		(SELECT coalesce(new.ext, '') AS ext UNION ALL SELECT '*') AS x
	WHERE new.name IS NOT NULL
	ON CONFLICT (oid, tri, ext) DO UPDATE SET n = n + excluded.n;
END;
--> statement-breakpoint
INSERT INTO search_trigrams (oid, tri, ext, n)
SELECT t.oid, t.tri, CASE WHEN k.every THEN '*' ELSE t.ext END AS key_ext, count(*)
FROM (SELECT DISTINCT e.id AS id, e.oid AS oid, coalesce(e.ext, '') AS ext, substr(e.name, j.key + 1, 3) AS tri
		FROM search_entries AS e,
			json_each('[' || rtrim(replace(hex(zeroblob(length(e.name))), '00', '0,'), ',') || ']') AS j
		WHERE e.name IS NOT NULL AND j.key + 3 <= length(e.name)) AS t,
	(SELECT 0 AS every UNION ALL SELECT 1) AS k
GROUP BY t.oid, t.tri, key_ext;
