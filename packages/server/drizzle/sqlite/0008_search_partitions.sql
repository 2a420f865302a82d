-- Partitioned search ids and 3/4-gram counts per class (src/search/partitions.ts), so that `q` with
-- a file_type category or a date window is counted by the FTS index over the id ranges of those
-- rows instead of checking q on every row of an index range (100k-300k rows on a large account).
--   search_entries.id = ((oid << 16 | class << 13 | date bucket) << 23) + sequence:
--     class        0 other (no ext or one outside the categories), 1..7 the file_type categories of
--                  docs/protocol.md#search in FILE_TYPE_CATEGORIES order (search_ext_classes maps ext -> class);
--     date bucket  0 for created_at before 2000-01-01 (946684800), then 2^18 s (about 3 days) each
--                  from there, 8190 for everything from 2068 on; 8191 is the class's spill bucket
--                  for rows whose own bucket is full (2^23 rows), which readers check row by row.
--   An owner's rows are still one id range (oid << 39 ..), and FTS rowids are the ids. Files keep
--   their id unless an update moves them to another class or date bucket (delete + insert).
--   search_grams replaces search_trigrams: per (oid, class, gram) how many rows have that 3- or
--   4-character substring in `name`, so that the exact total of a 3- or 4-character q, alone or
--   with whole file_type categories, is a sum of at most 8 lookups.
-- The table is rebuilt (new ids) with its indexes, the FTS index refilled, and every trigger on
-- search_entries re-created as before (they are dropped with the old table), the name and gram
-- counters' update triggers now only when the name changes (a new revision rewrites every column,
-- which fired them for nothing: +90 µs a revision with 4-grams); the triggers on
-- files get the new id allocation: the next id of the row's partition, or of its class's spill
-- bucket when that partition is full.
CREATE TABLE `search_ext_classes` (
	`ext` text PRIMARY KEY,
	`class` integer NOT NULL
) WITHOUT ROWID
--> statement-breakpoint
INSERT INTO search_ext_classes (ext, class) VALUES
	('.png', 1),
	('.jpg', 1),
	('.jpeg', 1),
	('.gif', 1),
	('.webp', 1),
	('.svg', 1),
	('.bmp', 1),
	('.ico', 1),
	('.tiff', 1),
	('.mp4', 2),
	('.mov', 2),
	('.avi', 2),
	('.mkv', 2),
	('.webm', 2),
	('.flv', 2),
	('.wmv', 2),
	('.mp3', 3),
	('.wav', 3),
	('.ogg', 3),
	('.flac', 3),
	('.aac', 3),
	('.m4a', 3),
	('.wma', 3),
	('.doc', 4),
	('.docx', 4),
	('.xls', 4),
	('.xlsx', 4),
	('.ppt', 4),
	('.pptx', 4),
	('.txt', 4),
	('.csv', 4),
	('.rtf', 4),
	('.pdf', 5),
	('.zip', 6),
	('.rar', 6),
	('.7z', 6),
	('.tar', 6),
	('.gz', 6),
	('.bz2', 6),
	('.js', 7),
	('.ts', 7),
	('.py', 7),
	('.rs', 7),
	('.go', 7),
	('.java', 7),
	('.c', 7),
	('.cpp', 7),
	('.html', 7),
	('.css', 7),
	('.json', 7)
--> statement-breakpoint
DROP TRIGGER `search_files_ai`
--> statement-breakpoint
DROP TRIGGER `search_files_ad`
--> statement-breakpoint
DROP TRIGGER `search_files_au`
--> statement-breakpoint
DROP TABLE `search_trigrams`
--> statement-breakpoint
CREATE TABLE `search_entries_new` (
	`id` integer PRIMARY KEY,
	`oid` integer NOT NULL,
	`folder_hash` text NOT NULL,
	`path_hash` blob NOT NULL,
	`file_name` text,
	`name` text,
	`ext` text,
	`dir` text,
	`size_bytes` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
)
--> statement-breakpoint
INSERT INTO search_entries_new (id, oid, folder_hash, path_hash, file_name, name, ext, dir, size_bytes, created_at, updated_at)
SELECT CASE WHEN r.seq < 8388608 THEN (r.part << 23) + r.seq
		ELSE ((r.part | 8191) << 23) + row_number() OVER (PARTITION BY r.part >> 13, r.seq >= 8388608 ORDER BY r.part, r.seq) - 1 END,
	r.oid, r.folder_hash, r.path_hash, r.file_name, r.name, r.ext, r.dir, r.size_bytes, r.created_at, r.updated_at
FROM (SELECT p.*, row_number() OVER (PARTITION BY p.part ORDER BY p.id) - 1 AS seq
	FROM (SELECT e.*, ((e.oid << 16) | (coalesce((SELECT c.class FROM search_ext_classes AS c WHERE c.ext = e.ext), 0) << 13) | CASE WHEN e.created_at < 946684800 THEN 0 ELSE min(((e.created_at - 946684800) >> 18) + 1, 8190) END) AS part FROM search_entries AS e) AS p) AS r
ORDER BY 1
--> statement-breakpoint
DROP TABLE `search_entries`
--> statement-breakpoint
ALTER TABLE `search_entries_new` RENAME TO `search_entries`
--> statement-breakpoint
CREATE UNIQUE INDEX `search_entries_key` ON `search_entries` (`oid`, `folder_hash`, `path_hash`)
--> statement-breakpoint
CREATE INDEX `search_by_created` ON `search_entries` (`oid`, `created_at`, `path_hash`, `ext`, `size_bytes`, `name`)
--> statement-breakpoint
CREATE INDEX `search_by_updated` ON `search_entries` (`oid`, `updated_at`, `path_hash`, `ext`, `size_bytes`, `created_at`, `name`)
--> statement-breakpoint
CREATE INDEX `search_by_size` ON `search_entries` (`oid`, `size_bytes`, `path_hash`, `ext`, `created_at`, `name`)
--> statement-breakpoint
CREATE INDEX `search_by_name` ON `search_entries` (`oid`, `file_name`, `path_hash`, `ext`, `size_bytes`, `created_at`, `name`)
--> statement-breakpoint
CREATE INDEX `search_by_ext` ON `search_entries` (`oid`, `ext`, `created_at`, `size_bytes`, `name`)
--> statement-breakpoint
CREATE INDEX `search_by_dir` ON `search_entries` (`oid`, `folder_hash`, `dir`, `created_at`, `path_hash`)
--> statement-breakpoint
DROP TABLE `search_fts`
--> statement-breakpoint
CREATE VIRTUAL TABLE `search_fts` USING fts5(`name`, tokenize = 'trigram case_sensitive 1', content = '', contentless_delete = 1)
--> statement-breakpoint
INSERT INTO search_fts (rowid, name) SELECT id, name FROM search_entries WHERE name IS NOT NULL
--> statement-breakpoint
INSERT INTO search_fts (search_fts) VALUES ('optimize')
--> statement-breakpoint
CREATE TRIGGER `search_entries_ai` AFTER INSERT ON search_entries
BEGIN
	INSERT INTO search_fts (rowid, name) SELECT new.id, new.name WHERE new.name IS NOT NULL;
	INSERT INTO search_stats (oid, dim, ext, bucket, n)
	SELECT c.oid, c.dim, c.ext, c.bucket, sum(c.d) FROM (SELECT *, 1 AS d FROM (SELECT new.oid AS oid, d.dim AS dim, x.ext AS ext,
		CASE d.dim
			WHEN 0 THEN 0
			WHEN 1 THEN length(new.size_bytes)
			WHEN 2 THEN CASE WHEN new.size_bytes < 10 THEN 100 + new.size_bytes ELSE length(new.size_bytes) * 100 + CAST(substr(new.size_bytes, 1, 2) AS INTEGER) END
			WHEN 3 THEN new.created_at >> 18
			WHEN 4 THEN new.created_at >> 12
			WHEN 5 THEN new.updated_at >> 18
			ELSE new.updated_at >> 12
		END AS bucket
	FROM (SELECT 0 AS dim UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6) AS d,
		(SELECT coalesce(new.ext, '') AS ext UNION ALL SELECT '*') AS x)) AS c
	GROUP BY c.oid, c.dim, c.ext, c.bucket
	ON CONFLICT (oid, dim, ext, bucket) DO UPDATE SET n = n + excluded.n;
	INSERT INTO search_dirs (oid, folder_hash, path, file_count, total_bytes)
	SELECT p.oid, p.folder_hash, p.path, sum(p.d), sum(p.d * p.size_bytes) FROM (SELECT new.oid AS oid, new.folder_hash AS folder_hash, new.size_bytes AS size_bytes, x.path AS path, 1 AS d FROM (SELECT substr(new.dir, 1, (SELECT sum(length(j2.value) + 1) FROM json_each('[' || replace(json_quote(new.dir), '/', '","') || ']') AS j2 WHERE j2.key <= j.key) - 1) AS path
		FROM json_each('[' || replace(json_quote(new.dir), '/', '","') || ']') AS j WHERE new.dir <> '') AS x) AS p
	GROUP BY p.oid, p.folder_hash, p.path
	ON CONFLICT (oid, folder_hash, path) DO UPDATE SET file_count = file_count + excluded.file_count, total_bytes = total_bytes + excluded.total_bytes;
END
--> statement-breakpoint
CREATE TRIGGER `search_entries_ad` AFTER DELETE ON search_entries
BEGIN
	DELETE FROM search_fts WHERE rowid = old.id AND old.name IS NOT NULL;
	INSERT INTO search_stats (oid, dim, ext, bucket, n)
	SELECT c.oid, c.dim, c.ext, c.bucket, sum(c.d) FROM (SELECT *, -1 AS d FROM (SELECT old.oid AS oid, d.dim AS dim, x.ext AS ext,
		CASE d.dim
			WHEN 0 THEN 0
			WHEN 1 THEN length(old.size_bytes)
			WHEN 2 THEN CASE WHEN old.size_bytes < 10 THEN 100 + old.size_bytes ELSE length(old.size_bytes) * 100 + CAST(substr(old.size_bytes, 1, 2) AS INTEGER) END
			WHEN 3 THEN old.created_at >> 18
			WHEN 4 THEN old.created_at >> 12
			WHEN 5 THEN old.updated_at >> 18
			ELSE old.updated_at >> 12
		END AS bucket
	FROM (SELECT 0 AS dim UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6) AS d,
		(SELECT coalesce(old.ext, '') AS ext UNION ALL SELECT '*') AS x)) AS c
	GROUP BY c.oid, c.dim, c.ext, c.bucket
	ON CONFLICT (oid, dim, ext, bucket) DO UPDATE SET n = n + excluded.n;
	INSERT INTO search_dirs (oid, folder_hash, path, file_count, total_bytes)
	SELECT p.oid, p.folder_hash, p.path, sum(p.d), sum(p.d * p.size_bytes) FROM (SELECT old.oid AS oid, old.folder_hash AS folder_hash, old.size_bytes AS size_bytes, x.path AS path, -1 AS d FROM (SELECT substr(old.dir, 1, (SELECT sum(length(j2.value) + 1) FROM json_each('[' || replace(json_quote(old.dir), '/', '","') || ']') AS j2 WHERE j2.key <= j.key) - 1) AS path
		FROM json_each('[' || replace(json_quote(old.dir), '/', '","') || ']') AS j WHERE old.dir <> '') AS x) AS p
	GROUP BY p.oid, p.folder_hash, p.path
	ON CONFLICT (oid, folder_hash, path) DO UPDATE SET file_count = file_count + excluded.file_count, total_bytes = total_bytes + excluded.total_bytes;
END
--> statement-breakpoint
CREATE TRIGGER `search_entries_au` AFTER UPDATE ON search_entries
BEGIN
	DELETE FROM search_fts WHERE rowid = old.id AND old.name IS NOT NULL AND old.name IS NOT new.name;
	INSERT INTO search_fts (rowid, name) SELECT new.id, new.name WHERE new.name IS NOT NULL AND old.name IS NOT new.name;
	INSERT INTO search_stats (oid, dim, ext, bucket, n)
	SELECT c.oid, c.dim, c.ext, c.bucket, sum(c.d) FROM (SELECT *, -1 AS d FROM (SELECT old.oid AS oid, d.dim AS dim, x.ext AS ext,
		CASE d.dim
			WHEN 0 THEN 0
			WHEN 1 THEN length(old.size_bytes)
			WHEN 2 THEN CASE WHEN old.size_bytes < 10 THEN 100 + old.size_bytes ELSE length(old.size_bytes) * 100 + CAST(substr(old.size_bytes, 1, 2) AS INTEGER) END
			WHEN 3 THEN old.created_at >> 18
			WHEN 4 THEN old.created_at >> 12
			WHEN 5 THEN old.updated_at >> 18
			ELSE old.updated_at >> 12
		END AS bucket
	FROM (SELECT 0 AS dim UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6) AS d,
		(SELECT coalesce(old.ext, '') AS ext UNION ALL SELECT '*') AS x)
		UNION ALL SELECT *, 1 AS d FROM (SELECT new.oid AS oid, d.dim AS dim, x.ext AS ext,
		CASE d.dim
			WHEN 0 THEN 0
			WHEN 1 THEN length(new.size_bytes)
			WHEN 2 THEN CASE WHEN new.size_bytes < 10 THEN 100 + new.size_bytes ELSE length(new.size_bytes) * 100 + CAST(substr(new.size_bytes, 1, 2) AS INTEGER) END
			WHEN 3 THEN new.created_at >> 18
			WHEN 4 THEN new.created_at >> 12
			WHEN 5 THEN new.updated_at >> 18
			ELSE new.updated_at >> 12
		END AS bucket
	FROM (SELECT 0 AS dim UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6) AS d,
		(SELECT coalesce(new.ext, '') AS ext UNION ALL SELECT '*') AS x)) AS c
	GROUP BY c.oid, c.dim, c.ext, c.bucket
	ON CONFLICT (oid, dim, ext, bucket) DO UPDATE SET n = n + excluded.n;
	INSERT INTO search_dirs (oid, folder_hash, path, file_count, total_bytes)
	SELECT p.oid, p.folder_hash, p.path, sum(p.d), sum(p.d * p.size_bytes) FROM (SELECT old.oid AS oid, old.folder_hash AS folder_hash, old.size_bytes AS size_bytes, x.path AS path, -1 AS d FROM (SELECT substr(old.dir, 1, (SELECT sum(length(j2.value) + 1) FROM json_each('[' || replace(json_quote(old.dir), '/', '","') || ']') AS j2 WHERE j2.key <= j.key) - 1) AS path
		FROM json_each('[' || replace(json_quote(old.dir), '/', '","') || ']') AS j WHERE old.dir <> '') AS x
		UNION ALL SELECT new.oid AS oid, new.folder_hash AS folder_hash, new.size_bytes AS size_bytes, x.path AS path, 1 AS d FROM (SELECT substr(new.dir, 1, (SELECT sum(length(j2.value) + 1) FROM json_each('[' || replace(json_quote(new.dir), '/', '","') || ']') AS j2 WHERE j2.key <= j.key) - 1) AS path
		FROM json_each('[' || replace(json_quote(new.dir), '/', '","') || ']') AS j WHERE new.dir <> '') AS x) AS p
	GROUP BY p.oid, p.folder_hash, p.path
	ON CONFLICT (oid, folder_hash, path) DO UPDATE SET file_count = file_count + excluded.file_count, total_bytes = total_bytes + excluded.total_bytes;
END
--> statement-breakpoint
CREATE TRIGGER `search_grid_ai` AFTER INSERT ON search_entries
BEGIN
	INSERT INTO search_stats (oid, dim, ext, bucket, n)
	SELECT new.oid, 7, x.ext, (new.created_at >> 21) * 4096 + CASE WHEN new.size_bytes < 10 THEN 100 + new.size_bytes ELSE length(new.size_bytes) * 100 + CAST(substr(new.size_bytes, 1, 2) AS INTEGER) END, 1
	FROM (SELECT coalesce(new.ext, '') AS ext UNION ALL SELECT '*') AS x WHERE true
	ON CONFLICT (oid, dim, ext, bucket) DO UPDATE SET n = n + 1;
END
--> statement-breakpoint
CREATE TRIGGER `search_grid_ad` AFTER DELETE ON search_entries
BEGIN
	INSERT INTO search_stats (oid, dim, ext, bucket, n)
	SELECT old.oid, 7, x.ext, (old.created_at >> 21) * 4096 + CASE WHEN old.size_bytes < 10 THEN 100 + old.size_bytes ELSE length(old.size_bytes) * 100 + CAST(substr(old.size_bytes, 1, 2) AS INTEGER) END, -1
	FROM (SELECT coalesce(old.ext, '') AS ext UNION ALL SELECT '*') AS x WHERE true
	ON CONFLICT (oid, dim, ext, bucket) DO UPDATE SET n = n - 1;
END
--> statement-breakpoint
CREATE TRIGGER `search_grid_au` AFTER UPDATE OF oid, ext, size_bytes, created_at ON search_entries
BEGIN
	INSERT INTO search_stats (oid, dim, ext, bucket, n)
	SELECT old.oid, 7, x.ext, (old.created_at >> 21) * 4096 + CASE WHEN old.size_bytes < 10 THEN 100 + old.size_bytes ELSE length(old.size_bytes) * 100 + CAST(substr(old.size_bytes, 1, 2) AS INTEGER) END, -1
	FROM (SELECT coalesce(old.ext, '') AS ext UNION ALL SELECT '*') AS x WHERE true
	ON CONFLICT (oid, dim, ext, bucket) DO UPDATE SET n = n - 1;
	INSERT INTO search_stats (oid, dim, ext, bucket, n)
	SELECT new.oid, 7, x.ext, (new.created_at >> 21) * 4096 + CASE WHEN new.size_bytes < 10 THEN 100 + new.size_bytes ELSE length(new.size_bytes) * 100 + CAST(substr(new.size_bytes, 1, 2) AS INTEGER) END, 1
	FROM (SELECT coalesce(new.ext, '') AS ext UNION ALL SELECT '*') AS x WHERE true
	ON CONFLICT (oid, dim, ext, bucket) DO UPDATE SET n = n + 1;
END
--> statement-breakpoint
CREATE TRIGGER `search_names_ai` AFTER INSERT ON search_entries
BEGIN
	INSERT INTO search_names (oid, level, prefix, n)
	SELECT new.oid, l.level, CASE WHEN l.level = 0 THEN '' ELSE substr(new.file_name, 1, l.len) END, 1
	FROM (SELECT 0 AS level, 0 AS len UNION ALL SELECT 1, 2 UNION ALL SELECT 2, 4 UNION ALL SELECT 3, 6 UNION ALL SELECT 4, 8 UNION ALL SELECT 5, 11 UNION ALL SELECT 6, 14 UNION ALL SELECT 7, 20) AS l
	WHERE (l.level = 0) = (new.file_name IS NULL)
	ON CONFLICT (oid, level, prefix) DO UPDATE SET n = n + excluded.n;
END
--> statement-breakpoint
CREATE TRIGGER `search_names_ad` AFTER DELETE ON search_entries
BEGIN
	INSERT INTO search_names (oid, level, prefix, n)
	SELECT old.oid, l.level, CASE WHEN l.level = 0 THEN '' ELSE substr(old.file_name, 1, l.len) END, -1
	FROM (SELECT 0 AS level, 0 AS len UNION ALL SELECT 1, 2 UNION ALL SELECT 2, 4 UNION ALL SELECT 3, 6 UNION ALL SELECT 4, 8 UNION ALL SELECT 5, 11 UNION ALL SELECT 6, 14 UNION ALL SELECT 7, 20) AS l
	WHERE (l.level = 0) = (old.file_name IS NULL)
	ON CONFLICT (oid, level, prefix) DO UPDATE SET n = n + excluded.n;
END
--> statement-breakpoint
CREATE TRIGGER `search_names_au` AFTER UPDATE OF oid, file_name ON search_entries
	WHEN old.oid IS NOT new.oid OR old.file_name IS NOT new.file_name
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
END
--> statement-breakpoint
CREATE TABLE `search_grams` (
	`oid` integer NOT NULL,
	`class` integer NOT NULL,
	`gram` text NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY (`oid`, `class`, `gram`)
) WITHOUT ROWID
--> statement-breakpoint
CREATE TRIGGER `search_grams_ai` AFTER INSERT ON search_entries
BEGIN
	INSERT INTO search_grams (oid, class, gram, n)
	SELECT new.oid, (new.id >> 36) & 7, t.gram, 1
	FROM (SELECT DISTINCT substr(new.name, j.key + 1, l.len) AS gram
		FROM json_each('[' || rtrim(replace(hex(zeroblob(length(new.name))), '00', '0,'), ',') || ']') AS j,
			(SELECT 3 AS len UNION ALL SELECT 4) AS l
		WHERE new.name IS NOT NULL AND j.key + l.len <= length(new.name)) AS t
	WHERE true
	ON CONFLICT (oid, class, gram) DO UPDATE SET n = n + excluded.n;
END
--> statement-breakpoint
CREATE TRIGGER `search_grams_ad` AFTER DELETE ON search_entries
BEGIN
	INSERT INTO search_grams (oid, class, gram, n)
	SELECT old.oid, (old.id >> 36) & 7, t.gram, -1
	FROM (SELECT DISTINCT substr(old.name, j.key + 1, l.len) AS gram
		FROM json_each('[' || rtrim(replace(hex(zeroblob(length(old.name))), '00', '0,'), ',') || ']') AS j,
			(SELECT 3 AS len UNION ALL SELECT 4) AS l
		WHERE old.name IS NOT NULL AND j.key + l.len <= length(old.name)) AS t
	WHERE true
	ON CONFLICT (oid, class, gram) DO UPDATE SET n = n + excluded.n;
END
--> statement-breakpoint
CREATE TRIGGER `search_grams_au` AFTER UPDATE OF id, oid, name ON search_entries
	WHEN old.id IS NOT new.id OR old.oid IS NOT new.oid OR old.name IS NOT new.name
BEGIN
	INSERT INTO search_grams (oid, class, gram, n)
	SELECT old.oid, (old.id >> 36) & 7, t.gram, -1
	FROM (SELECT DISTINCT substr(old.name, j.key + 1, l.len) AS gram
		FROM json_each('[' || rtrim(replace(hex(zeroblob(length(old.name))), '00', '0,'), ',') || ']') AS j,
			(SELECT 3 AS len UNION ALL SELECT 4) AS l
		WHERE old.name IS NOT NULL AND j.key + l.len <= length(old.name)) AS t
	WHERE true
	ON CONFLICT (oid, class, gram) DO UPDATE SET n = n + excluded.n;
	INSERT INTO search_grams (oid, class, gram, n)
	SELECT new.oid, (new.id >> 36) & 7, t.gram, 1
	FROM (SELECT DISTINCT substr(new.name, j.key + 1, l.len) AS gram
		FROM json_each('[' || rtrim(replace(hex(zeroblob(length(new.name))), '00', '0,'), ',') || ']') AS j,
			(SELECT 3 AS len UNION ALL SELECT 4) AS l
		WHERE new.name IS NOT NULL AND j.key + l.len <= length(new.name)) AS t
	WHERE true
	ON CONFLICT (oid, class, gram) DO UPDATE SET n = n + excluded.n;
END
--> statement-breakpoint
INSERT INTO search_grams (oid, class, gram, n)
SELECT t.oid, t.class, t.gram, count(*)
FROM (SELECT DISTINCT e.id AS id, e.oid AS oid, (e.id >> 36) & 7 AS class, substr(e.name, j.key + 1, l.len) AS gram
		FROM search_entries AS e,
			json_each('[' || rtrim(replace(hex(zeroblob(length(e.name))), '00', '0,'), ',') || ']') AS j,
			(SELECT 3 AS len UNION ALL SELECT 4) AS l
		WHERE e.name IS NOT NULL AND j.key + l.len <= length(e.name)) AS t
GROUP BY t.oid, t.class, t.gram
--> statement-breakpoint
CREATE TRIGGER `search_files_ai` AFTER INSERT ON files
BEGIN
	INSERT INTO search_owners (owner) SELECT new.owner WHERE NOT EXISTS (SELECT 1 FROM search_owners WHERE owner = new.owner);
	INSERT INTO search_entries (id, oid, folder_hash, path_hash, file_name, name, ext, dir, size_bytes, created_at, updated_at)
	SELECT CASE WHEN a.next >> 23 = a.part THEN a.next
		ELSE (SELECT CASE WHEN s.next >> 23 = a.part | 8191 THEN s.next ELSE RAISE(ABORT, 'search index: partition full (over 2^24 files of one owner, class and date bucket)') END
			FROM (SELECT coalesce((SELECT e.id + 1 FROM search_entries AS e WHERE e.id BETWEEN (a.part | 8191) << 23 AND ((a.part | 8191) << 23) | 8388607 ORDER BY e.id DESC LIMIT 1), (a.part | 8191) << 23) AS next) AS s) END,
		a.oid, new.folder_hash, new.path_hash, new.file_name, replace(new.search_name, 'ς', 'σ'), new.ext,
		CASE WHEN new.relative_path IS NULL THEN NULL ELSE trim(rtrim(new.relative_path, replace(new.relative_path, '/', '')), '/') END,
		new.size_bytes, new.created_at, new.updated_at
	FROM (SELECT p.oid, p.part, coalesce((SELECT e.id + 1 FROM search_entries AS e WHERE e.id BETWEEN p.part << 23 AND (p.part << 23) | 8388607 ORDER BY e.id DESC LIMIT 1), p.part << 23) AS next
		FROM (SELECT o.id AS oid, CASE WHEN o.id < 16777216 THEN ((o.id << 16) | (coalesce((SELECT c.class FROM search_ext_classes AS c WHERE c.ext = new.ext), 0) << 13) | CASE WHEN new.created_at < 946684800 THEN 0 ELSE min(((new.created_at - 946684800) >> 18) + 1, 8190) END) ELSE RAISE(ABORT, 'search index: over 2^24 owners') END AS part
			FROM search_owners AS o WHERE o.owner = new.owner) AS p) AS a;
END
--> statement-breakpoint
CREATE TRIGGER `search_files_ad` AFTER DELETE ON files
BEGIN
	DELETE FROM search_entries WHERE oid = (SELECT id FROM search_owners WHERE owner = old.owner) AND folder_hash = old.folder_hash AND path_hash = old.path_hash;
END
--> statement-breakpoint
CREATE TRIGGER `search_files_au` AFTER UPDATE ON files
BEGIN
	SELECT RAISE(ABORT, 'search index: moving a file to another owner is not supported') WHERE old.owner <> new.owner;
	DELETE FROM search_entries WHERE oid = (SELECT id FROM search_owners WHERE owner = old.owner) AND folder_hash = old.folder_hash AND path_hash = old.path_hash
		AND id >> 23 <> (SELECT ((o.id << 16) | (coalesce((SELECT c.class FROM search_ext_classes AS c WHERE c.ext = new.ext), 0) << 13) | CASE WHEN new.created_at < 946684800 THEN 0 ELSE min(((new.created_at - 946684800) >> 18) + 1, 8190) END) FROM search_owners AS o WHERE o.owner = new.owner);
	UPDATE search_entries SET (oid, folder_hash, path_hash, file_name, name, ext, dir, size_bytes, created_at, updated_at) = (SELECT o.id, new.folder_hash, new.path_hash, new.file_name, replace(new.search_name, 'ς', 'σ'), new.ext,
		CASE WHEN new.relative_path IS NULL THEN NULL ELSE trim(rtrim(new.relative_path, replace(new.relative_path, '/', '')), '/') END,
		new.size_bytes, new.created_at, new.updated_at FROM search_owners AS o WHERE o.owner = new.owner)
	WHERE oid = (SELECT id FROM search_owners WHERE owner = old.owner) AND folder_hash = old.folder_hash AND path_hash = old.path_hash;
	INSERT INTO search_entries (id, oid, folder_hash, path_hash, file_name, name, ext, dir, size_bytes, created_at, updated_at)
	SELECT CASE WHEN a.next >> 23 = a.part THEN a.next
		ELSE (SELECT CASE WHEN s.next >> 23 = a.part | 8191 THEN s.next ELSE RAISE(ABORT, 'search index: partition full (over 2^24 files of one owner, class and date bucket)') END
			FROM (SELECT coalesce((SELECT e.id + 1 FROM search_entries AS e WHERE e.id BETWEEN (a.part | 8191) << 23 AND ((a.part | 8191) << 23) | 8388607 ORDER BY e.id DESC LIMIT 1), (a.part | 8191) << 23) AS next) AS s) END,
		a.oid, new.folder_hash, new.path_hash, new.file_name, replace(new.search_name, 'ς', 'σ'), new.ext,
		CASE WHEN new.relative_path IS NULL THEN NULL ELSE trim(rtrim(new.relative_path, replace(new.relative_path, '/', '')), '/') END,
		new.size_bytes, new.created_at, new.updated_at
	FROM (SELECT p.oid, p.part, coalesce((SELECT e.id + 1 FROM search_entries AS e WHERE e.id BETWEEN p.part << 23 AND (p.part << 23) | 8388607 ORDER BY e.id DESC LIMIT 1), p.part << 23) AS next
		FROM (SELECT o.id AS oid, CASE WHEN o.id < 16777216 THEN ((o.id << 16) | (coalesce((SELECT c.class FROM search_ext_classes AS c WHERE c.ext = new.ext), 0) << 13) | CASE WHEN new.created_at < 946684800 THEN 0 ELSE min(((new.created_at - 946684800) >> 18) + 1, 8190) END) ELSE RAISE(ABORT, 'search index: over 2^24 owners') END AS part
			FROM search_owners AS o WHERE o.owner = new.owner) AS p) AS a
	WHERE NOT EXISTS (SELECT 1 FROM search_entries AS x WHERE x.oid = a.oid AND x.folder_hash = new.folder_hash AND x.path_hash = new.path_hash);
END
