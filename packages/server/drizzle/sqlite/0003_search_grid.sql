-- Two-dimensional histogram of size × creation time (src/search/buckets.ts `GRID`), so that a search
-- with both a size range and a date range counts its matches from whole cells and scans only the
-- thin edges its bounds cut, instead of a whole index range.
--   search_stats dim 7: bucket = (created_at >> 21) * 4096 + size fine bucket (dim 2's number),
--   i.e. date-major cells of about 24 days by 1/90 of a decade of size, per (oid, ext) and '*'.
-- Kept in the transaction of every write by the triggers below (next to those of 0002), and
-- filled for the rows already there.
CREATE TRIGGER `search_grid_ai` AFTER INSERT ON search_entries
BEGIN
	INSERT INTO search_stats (oid, dim, ext, bucket, n)
	SELECT new.oid, 7, x.ext, (new.created_at >> 21) * 4096 + CASE WHEN new.size_bytes < 10 THEN 100 + new.size_bytes ELSE length(new.size_bytes) * 100 + CAST(substr(new.size_bytes, 1, 2) AS INTEGER) END, 1
	FROM (SELECT coalesce(new.ext, '') AS ext UNION ALL SELECT '*') AS x WHERE true
	ON CONFLICT (oid, dim, ext, bucket) DO UPDATE SET n = n + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `search_grid_ad` AFTER DELETE ON search_entries
BEGIN
	INSERT INTO search_stats (oid, dim, ext, bucket, n)
	SELECT old.oid, 7, x.ext, (old.created_at >> 21) * 4096 + CASE WHEN old.size_bytes < 10 THEN 100 + old.size_bytes ELSE length(old.size_bytes) * 100 + CAST(substr(old.size_bytes, 1, 2) AS INTEGER) END, -1
	FROM (SELECT coalesce(old.ext, '') AS ext UNION ALL SELECT '*') AS x WHERE true
	ON CONFLICT (oid, dim, ext, bucket) DO UPDATE SET n = n - 1;
END;
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
END;
--> statement-breakpoint
INSERT INTO search_stats (oid, dim, ext, bucket, n)
SELECT c.oid, 7, c.ext, c.bucket, count(*) FROM (
	SELECT e.oid AS oid, coalesce(e.ext, '') AS ext, (e.created_at >> 21) * 4096 + CASE WHEN e.size_bytes < 10 THEN 100 + e.size_bytes ELSE length(e.size_bytes) * 100 + CAST(substr(e.size_bytes, 1, 2) AS INTEGER) END AS bucket
	FROM search_entries AS e
	UNION ALL
	SELECT e.oid, '*', (e.created_at >> 21) * 4096 + CASE WHEN e.size_bytes < 10 THEN 100 + e.size_bytes ELSE length(e.size_bytes) * 100 + CAST(substr(e.size_bytes, 1, 2) AS INTEGER) END
	FROM search_entries AS e) AS c
GROUP BY c.oid, c.ext, c.bucket;
