-- The search index is derived data: a file write never fails because of it (src/search/search-index.ts).
-- The triggers on `files` no longer RAISE(ABORT) when the id layout of src/search/partitions.ts
-- cannot take a row (an owner id of 2^24 or more; a full partition whose class's spill bucket is
-- full too): the row is left out of `search_entries` and `search_index_state` records why.
-- While that row exists the service answers through the exact plan over `files`
-- (src/search/sqlite-scan.ts); `bun run search:rebuild` rebuilds the index (renumbering owners)
-- and deletes it once every file is indexed. A file moved to another owner is re-indexed under
-- that owner instead of failing.
--   search_index_state  at most one row (id 1): why the index is incomplete, and since when
--                       (Unix seconds); absent = complete.
CREATE TABLE `search_index_state` (
	`id` integer PRIMARY KEY CHECK (`id` = 1),
	`reason` text NOT NULL,
	`since` integer NOT NULL
);
--> statement-breakpoint
DROP TRIGGER `search_files_ai`
--> statement-breakpoint
DROP TRIGGER `search_files_au`
--> statement-breakpoint
CREATE TRIGGER `search_files_ai` AFTER INSERT ON files
BEGIN
	INSERT INTO search_owners (owner) SELECT new.owner WHERE NOT EXISTS (SELECT 1 FROM search_owners WHERE owner = new.owner);
	INSERT INTO search_entries (id, oid, folder_hash, path_hash, file_name, name, ext, dir, size_bytes, created_at, updated_at)
	SELECT b.id, b.oid, new.folder_hash, new.path_hash, new.file_name, replace(new.search_name, 'ς', 'σ'), new.ext,
		CASE WHEN new.relative_path IS NULL THEN NULL ELSE trim(rtrim(new.relative_path, replace(new.relative_path, '/', '')), '/') END,
		new.size_bytes, new.created_at, new.updated_at
	FROM (SELECT a.oid, CASE WHEN a.next >> 23 = a.part THEN a.next
			ELSE (SELECT s.next FROM (SELECT coalesce((SELECT e.id + 1 FROM search_entries AS e WHERE e.id BETWEEN (a.part | 8191) << 23 AND ((a.part | 8191) << 23) | 8388607 ORDER BY e.id DESC LIMIT 1), (a.part | 8191) << 23) AS next) AS s
				WHERE s.next >> 23 = a.part | 8191) END AS id
		FROM (SELECT p.oid, p.part, coalesce((SELECT e.id + 1 FROM search_entries AS e WHERE e.id BETWEEN p.part << 23 AND (p.part << 23) | 8388607 ORDER BY e.id DESC LIMIT 1), p.part << 23) AS next
			FROM (SELECT o.id AS oid, ((o.id << 16) | (coalesce((SELECT c.class FROM search_ext_classes AS c WHERE c.ext = new.ext), 0) << 13) | CASE WHEN new.created_at < 946684800 THEN 0 ELSE min(((new.created_at - 946684800) >> 18) + 1, 8190) END) AS part
				FROM search_owners AS o WHERE o.owner = new.owner AND o.id < 16777216) AS p) AS a) AS b
	WHERE b.id IS NOT NULL;
	INSERT INTO search_index_state (id, reason, since)
	SELECT 1, CASE WHEN (SELECT id FROM search_owners WHERE owner = new.owner) >= 16777216 THEN 'search index: over 2^24 owners'
		ELSE 'search index: partition full (over 2^24 files of one owner, class and date bucket)' END, unixepoch()
	WHERE NOT EXISTS (SELECT 1 FROM search_owners AS o JOIN search_entries AS e ON e.oid = o.id
		WHERE o.owner = new.owner AND e.folder_hash = new.folder_hash AND e.path_hash = new.path_hash)
	ON CONFLICT (id) DO NOTHING;
END
--> statement-breakpoint
CREATE TRIGGER `search_files_au` AFTER UPDATE ON files
BEGIN
	INSERT INTO search_owners (owner) SELECT new.owner WHERE NOT EXISTS (SELECT 1 FROM search_owners WHERE owner = new.owner);
	DELETE FROM search_entries WHERE oid = (SELECT id FROM search_owners WHERE owner = old.owner) AND folder_hash = old.folder_hash AND path_hash = old.path_hash
		AND (old.owner <> new.owner OR id >> 23 <> (SELECT ((o.id << 16) | (coalesce((SELECT c.class FROM search_ext_classes AS c WHERE c.ext = new.ext), 0) << 13) | CASE WHEN new.created_at < 946684800 THEN 0 ELSE min(((new.created_at - 946684800) >> 18) + 1, 8190) END) FROM search_owners AS o WHERE o.owner = new.owner));
	UPDATE search_entries SET (oid, folder_hash, path_hash, file_name, name, ext, dir, size_bytes, created_at, updated_at) = (SELECT o.id, new.folder_hash, new.path_hash, new.file_name, replace(new.search_name, 'ς', 'σ'), new.ext,
		CASE WHEN new.relative_path IS NULL THEN NULL ELSE trim(rtrim(new.relative_path, replace(new.relative_path, '/', '')), '/') END,
		new.size_bytes, new.created_at, new.updated_at FROM search_owners AS o WHERE o.owner = new.owner)
	WHERE oid = (SELECT id FROM search_owners WHERE owner = old.owner) AND folder_hash = old.folder_hash AND path_hash = old.path_hash;
	INSERT INTO search_entries (id, oid, folder_hash, path_hash, file_name, name, ext, dir, size_bytes, created_at, updated_at)
	SELECT b.id, b.oid, new.folder_hash, new.path_hash, new.file_name, replace(new.search_name, 'ς', 'σ'), new.ext,
		CASE WHEN new.relative_path IS NULL THEN NULL ELSE trim(rtrim(new.relative_path, replace(new.relative_path, '/', '')), '/') END,
		new.size_bytes, new.created_at, new.updated_at
	FROM (SELECT a.oid, CASE WHEN a.next >> 23 = a.part THEN a.next
			ELSE (SELECT s.next FROM (SELECT coalesce((SELECT e.id + 1 FROM search_entries AS e WHERE e.id BETWEEN (a.part | 8191) << 23 AND ((a.part | 8191) << 23) | 8388607 ORDER BY e.id DESC LIMIT 1), (a.part | 8191) << 23) AS next) AS s
				WHERE s.next >> 23 = a.part | 8191) END AS id
		FROM (SELECT p.oid, p.part, coalesce((SELECT e.id + 1 FROM search_entries AS e WHERE e.id BETWEEN p.part << 23 AND (p.part << 23) | 8388607 ORDER BY e.id DESC LIMIT 1), p.part << 23) AS next
			FROM (SELECT o.id AS oid, ((o.id << 16) | (coalesce((SELECT c.class FROM search_ext_classes AS c WHERE c.ext = new.ext), 0) << 13) | CASE WHEN new.created_at < 946684800 THEN 0 ELSE min(((new.created_at - 946684800) >> 18) + 1, 8190) END) AS part
				FROM search_owners AS o WHERE o.owner = new.owner AND o.id < 16777216) AS p) AS a) AS b
	WHERE b.id IS NOT NULL
		AND NOT EXISTS (SELECT 1 FROM search_entries AS x WHERE x.oid = b.oid AND x.folder_hash = new.folder_hash AND x.path_hash = new.path_hash);
	INSERT INTO search_index_state (id, reason, since)
	SELECT 1, CASE WHEN (SELECT id FROM search_owners WHERE owner = new.owner) >= 16777216 THEN 'search index: over 2^24 owners'
		ELSE 'search index: partition full (over 2^24 files of one owner, class and date bucket)' END, unixepoch()
	WHERE NOT EXISTS (SELECT 1 FROM search_owners AS o JOIN search_entries AS e ON e.oid = o.id
		WHERE o.owner = new.owner AND e.folder_hash = new.folder_hash AND e.path_hash = new.path_hash)
	ON CONFLICT (id) DO NOTHING;
END
