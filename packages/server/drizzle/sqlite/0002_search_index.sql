-- Search and browse index (src/search). Custom migration: everything here is kept in step with
-- `files` by triggers, so the file write paths (commit, delete, unregister) need no search code and
-- stay one transaction.
--   search_owners   owner address -> small integer id (oid).
--   search_entries  one compact row per file: the columns search filters and sorts on. id =
--                   (oid << 36) + per-owner sequence, so one owner's rows are one id range; it is
--                   also the FTS rowid. Explicit INTEGER PRIMARY KEY: VACUUM keeps it.
--   search_fts      trigram FTS5 over search_entries.name (lower-cased file_name ?? relative_path).
--   search_stats    row counts per (oid, dim, ext, bucket); ext '*' = every ext, '' = none; rows
--                   that drop to 0 stay (readers skip them). dims:
--                   0 total; 1/2 size_bytes coarse/fine; 3/4 created_at; 5/6 updated_at
--                   (bucket functions: src/search/buckets.ts).
--   search_dirs     per directory of relative_path: recursive file_count and total_bytes (browse);
--                   rows that drop to 0 stay (readers skip them).
CREATE TABLE `search_owners` (
	`id` integer PRIMARY KEY,
	`owner` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `search_owners_owner` ON `search_owners` (`owner`);
--> statement-breakpoint
CREATE TABLE `search_entries` (
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
);
--> statement-breakpoint
CREATE UNIQUE INDEX `search_entries_key` ON `search_entries` (`oid`, `folder_hash`, `path_hash`);
--> statement-breakpoint
CREATE INDEX `search_by_created` ON `search_entries` (`oid`, `created_at`, `path_hash`, `ext`, `size_bytes`, `name`);
--> statement-breakpoint
CREATE INDEX `search_by_updated` ON `search_entries` (`oid`, `updated_at`, `path_hash`, `ext`, `size_bytes`, `created_at`, `name`);
--> statement-breakpoint
CREATE INDEX `search_by_size` ON `search_entries` (`oid`, `size_bytes`, `path_hash`, `ext`, `created_at`, `name`);
--> statement-breakpoint
CREATE INDEX `search_by_name` ON `search_entries` (`oid`, `file_name`, `path_hash`, `ext`, `size_bytes`, `created_at`);
--> statement-breakpoint
CREATE INDEX `search_by_ext` ON `search_entries` (`oid`, `ext`, `created_at`, `size_bytes`, `name`);
--> statement-breakpoint
CREATE INDEX `search_by_dir` ON `search_entries` (`oid`, `folder_hash`, `dir`, `created_at`, `path_hash`);
--> statement-breakpoint
CREATE VIRTUAL TABLE `search_fts` USING fts5(`name`, tokenize = 'trigram case_sensitive 1', content = '', contentless_delete = 1);
--> statement-breakpoint
CREATE TABLE `search_stats` (
	`oid` integer NOT NULL,
	`dim` integer NOT NULL,
	`ext` text NOT NULL,
	`bucket` integer NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY (`oid`, `dim`, `ext`, `bucket`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `search_dirs` (
	`oid` integer NOT NULL,
	`folder_hash` text NOT NULL,
	`path` text NOT NULL,
	`file_count` integer NOT NULL,
	`total_bytes` integer NOT NULL,
	PRIMARY KEY (`oid`, `folder_hash`, `path`)
) WITHOUT ROWID;
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
END;
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
END;
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
END;
--> statement-breakpoint
CREATE TRIGGER `search_files_ai` AFTER INSERT ON files
BEGIN
	INSERT INTO search_owners (owner) SELECT new.owner WHERE NOT EXISTS (SELECT 1 FROM search_owners WHERE owner = new.owner);
	INSERT INTO search_entries (id, oid, folder_hash, path_hash, file_name, name, ext, dir, size_bytes, created_at, updated_at)
	SELECT coalesce((SELECT e.id + 1 FROM search_entries AS e WHERE e.id < ((o.id + 1) << 36) AND e.id >= (o.id << 36) ORDER BY e.id DESC LIMIT 1), o.id << 36),
		o.id, new.folder_hash, new.path_hash, new.file_name, replace(new.search_name, 'ς', 'σ'), new.ext,
		CASE WHEN new.relative_path IS NULL THEN NULL ELSE trim(rtrim(new.relative_path, replace(new.relative_path, '/', '')), '/') END,
		new.size_bytes, new.created_at, new.updated_at
	FROM search_owners AS o WHERE o.owner = new.owner;
END;
--> statement-breakpoint
CREATE TRIGGER `search_files_ad` AFTER DELETE ON files
BEGIN
	DELETE FROM search_entries WHERE oid = (SELECT id FROM search_owners WHERE owner = old.owner) AND folder_hash = old.folder_hash AND path_hash = old.path_hash;
END;
--> statement-breakpoint
CREATE TRIGGER `search_files_au` AFTER UPDATE ON files
BEGIN
	SELECT RAISE(ABORT, 'search index: moving a file to another owner is not supported') WHERE old.owner <> new.owner;
	UPDATE search_entries SET (oid, folder_hash, path_hash, file_name, name, ext, dir, size_bytes, created_at, updated_at) = (SELECT o.id, new.folder_hash, new.path_hash, new.file_name, replace(new.search_name, 'ς', 'σ'), new.ext,
		CASE WHEN new.relative_path IS NULL THEN NULL ELSE trim(rtrim(new.relative_path, replace(new.relative_path, '/', '')), '/') END,
		new.size_bytes, new.created_at, new.updated_at FROM search_owners AS o WHERE o.owner = new.owner)
	WHERE oid = (SELECT id FROM search_owners WHERE owner = old.owner) AND folder_hash = old.folder_hash AND path_hash = old.path_hash;
END;
--> statement-breakpoint
INSERT INTO search_owners (owner) SELECT DISTINCT owner FROM files ORDER BY owner;
--> statement-breakpoint
INSERT INTO search_entries (id, oid, folder_hash, path_hash, file_name, name, ext, dir, size_bytes, created_at, updated_at)
SELECT (o.id << 36) + row_number() OVER (PARTITION BY o.id ORDER BY f.rowid) - 1,
	o.id, f.folder_hash, f.path_hash, f.file_name, replace(f.search_name, 'ς', 'σ'), f.ext,
	CASE WHEN f.relative_path IS NULL THEN NULL ELSE trim(rtrim(f.relative_path, replace(f.relative_path, '/', '')), '/') END,
	f.size_bytes, f.created_at, f.updated_at
FROM files AS f JOIN search_owners AS o ON o.owner = f.owner
ORDER BY 1;
