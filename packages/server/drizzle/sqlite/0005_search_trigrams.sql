-- Trigram counts (src/search/search.service.ts), so that the exact total of a 3-character `q` without
-- other filters is a lookup instead of a count over every FTS hit (a common term has hundreds of
-- thousands).
--   search_trigrams  per (oid, trigram): how many rows have that trigram (3 consecutive
--                    characters, as substr counts them) somewhere in `name`. A 3-character q is
--                    found in a name exactly when it is one of its trigrams, so the count is exact.
--                    Rows that drop to 0 stay (readers skip them).
-- The trigrams of a name are its substrings at positions 1..length-2, enumerated by json_each over
-- an array of length(name) elements (triggers cannot hold a recursive WITH); each distinct one once.
-- Per extension too would answer q + file_type as well, but doubles the upserts of every write
-- (measured: +40 µs a row written or deleted instead of +20).
-- Kept in the transaction of every write by the triggers below, and filled for the rows already
-- there.
CREATE TABLE `search_trigrams` (
	`oid` integer NOT NULL,
	`tri` text NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY (`oid`, `tri`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TRIGGER `search_trigrams_ai` AFTER INSERT ON search_entries
BEGIN
	INSERT INTO search_trigrams (oid, tri, n)
	SELECT new.oid, t.tri, 1
	FROM (SELECT DISTINCT substr(new.name, j.key + 1, 3) AS tri
		FROM json_each('[' || rtrim(replace(hex(zeroblob(length(new.name))), '00', '0,'), ',') || ']') AS j
		WHERE new.name IS NOT NULL AND j.key + 3 <= length(new.name)) AS t
	WHERE true
	ON CONFLICT (oid, tri) DO UPDATE SET n = n + excluded.n;
END;
--> statement-breakpoint
CREATE TRIGGER `search_trigrams_ad` AFTER DELETE ON search_entries
BEGIN
	INSERT INTO search_trigrams (oid, tri, n)
	SELECT old.oid, t.tri, -1
	FROM (SELECT DISTINCT substr(old.name, j.key + 1, 3) AS tri
		FROM json_each('[' || rtrim(replace(hex(zeroblob(length(old.name))), '00', '0,'), ',') || ']') AS j
		WHERE old.name IS NOT NULL AND j.key + 3 <= length(old.name)) AS t
	WHERE true
	ON CONFLICT (oid, tri) DO UPDATE SET n = n + excluded.n;
END;
--> statement-breakpoint
CREATE TRIGGER `search_trigrams_au` AFTER UPDATE OF oid, name ON search_entries
BEGIN
	INSERT INTO search_trigrams (oid, tri, n)
	SELECT old.oid, t.tri, -1
	FROM (SELECT DISTINCT substr(old.name, j.key + 1, 3) AS tri
		FROM json_each('[' || rtrim(replace(hex(zeroblob(length(old.name))), '00', '0,'), ',') || ']') AS j
		WHERE old.name IS NOT NULL AND j.key + 3 <= length(old.name)) AS t
	WHERE true
	ON CONFLICT (oid, tri) DO UPDATE SET n = n + excluded.n;
	INSERT INTO search_trigrams (oid, tri, n)
	SELECT new.oid, t.tri, 1
	FROM (SELECT DISTINCT substr(new.name, j.key + 1, 3) AS tri
		FROM json_each('[' || rtrim(replace(hex(zeroblob(length(new.name))), '00', '0,'), ',') || ']') AS j
		WHERE new.name IS NOT NULL AND j.key + 3 <= length(new.name)) AS t
	WHERE true
	ON CONFLICT (oid, tri) DO UPDATE SET n = n + excluded.n;
END;
--> statement-breakpoint
INSERT INTO search_trigrams (oid, tri, n)
SELECT t.oid, t.tri, count(*)
FROM (SELECT DISTINCT e.id AS id, e.oid AS oid, substr(e.name, j.key + 1, 3) AS tri
		FROM search_entries AS e,
			json_each('[' || rtrim(replace(hex(zeroblob(length(e.name))), '00', '0,'), ',') || ']') AS j
		WHERE e.name IS NOT NULL AND j.key + 3 <= length(e.name)) AS t
GROUP BY t.oid, t.tri;
