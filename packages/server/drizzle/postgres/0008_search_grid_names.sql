-- Two more counters of the PostgreSQL search index, kept by triggers on files in the transaction of
-- every write (like search_hist, 0004) and recounted by esync_search_recount():
--   search_grid   files per (owner, time level tl, size level sl, size bucket sb, created bucket tb,
--                 ext), ext '' for none, at 3 x 2 resolutions. Size buckets as search_hist's: sl 0 the
--                 fine bucket (esync_size_bucket, 32 per power of two), sl 1 the power of two (>> 5).
--                 Created buckets: tl 0 1,024 s (created_at >> 10), tl 1 32,768 s (>> 15), tl 2
--                 2^20 s (>> 20, about 12 days). The total of a size range with a date range is the
--                 cells of the largest buckets that fit in both ranges, plus the edges counted in
--                 the b-trees: the parts of the first and last 1,024 s buckets in the date range
--                 (files_by_created) and of the first and last fine size buckets in the size range
--                 (files_by_size) (src/search/postgres-grid.ts).
--   search_names  fences over each owner's named files in (file_name, path_hash, folder_hash) order,
--                 the order of files_by_file_name: n counts the files from the fence (inclusive) up
--                 to the next fence. Every owner with named files has the empty fence ('', '', ''),
--                 below every name. The recount puts a fence every 1,000 files; a write that brings
--                 an interval past 4,000 files (the setting esync.search_names_max, if set: tests
--                 lower it) splits it at its middle file. A page at a deep offset in name order
--                 starts at the fence before it (src/search/postgres-names.ts).
-- Rows that drop to 0 stay (they add nothing).
CREATE TABLE "search_grid" (
	"owner" text COLLATE "C" NOT NULL,
	"tl" smallint NOT NULL,
	"sl" smallint NOT NULL,
	"sb" bigint NOT NULL,
	"tb" bigint NOT NULL,
	"ext" text COLLATE "C" NOT NULL,
	"n" bigint NOT NULL,
	PRIMARY KEY ("owner", "tl", "sl", "sb", "tb", "ext")
) WITH (fillfactor = 50);
--> statement-breakpoint
-- Adds d (1 or -1) files to the six cells of a file (owner o, extension e, size sz, created ca).
CREATE FUNCTION esync_search_grid_add(o text, e text, sz bigint, ca bigint, d bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	fs bigint := esync_size_bucket(sz);
BEGIN
	INSERT INTO search_grid (owner, tl, sl, sb, tb, ext, n) VALUES
		(o, 0, 0, fs, ca >> 10, e, d), (o, 0, 1, fs >> 5, ca >> 10, e, d),
		(o, 1, 0, fs, ca >> 15, e, d), (o, 1, 1, fs >> 5, ca >> 15, e, d),
		(o, 2, 0, fs, ca >> 20, e, d), (o, 2, 1, fs >> 5, ca >> 20, e, d)
	ON CONFLICT (owner, tl, sl, sb, tb, ext) DO UPDATE SET n = search_grid.n + excluded.n;
END
$$;
--> statement-breakpoint
CREATE FUNCTION esync_search_grid() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('DELETE', 'UPDATE') THEN
		PERFORM esync_search_grid_add(OLD.owner, coalesce(OLD.ext, ''), OLD.size_bytes, OLD.created_at, -1);
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		PERFORM esync_search_grid_add(NEW.owner, coalesce(NEW.ext, ''), NEW.size_bytes, NEW.created_at, 1);
	END IF;
	RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "search_grid_insert_delete" AFTER INSERT OR DELETE ON "files"
	FOR EACH ROW EXECUTE FUNCTION esync_search_grid();
--> statement-breakpoint
CREATE TRIGGER "search_grid_update" AFTER UPDATE ON "files" FOR EACH ROW
	WHEN (OLD.owner IS DISTINCT FROM NEW.owner OR OLD.ext IS DISTINCT FROM NEW.ext
		OR OLD.size_bytes IS DISTINCT FROM NEW.size_bytes OR OLD.created_at IS DISTINCT FROM NEW.created_at)
	EXECUTE FUNCTION esync_search_grid();
--> statement-breakpoint
-- Recomputes the grid from files (in the caller's transaction), written in key order.
CREATE FUNCTION esync_search_grid_recount() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM search_grid;
	INSERT INTO search_grid (owner, tl, sl, sb, tb, ext, n)
	SELECT f.owner, k.tl, k.sl, k.sb, k.tb, f.e, count(*)
	FROM (SELECT owner, coalesce(ext, '') AS e, esync_size_bucket(size_bytes) AS fs, created_at AS ca FROM files) AS f
		CROSS JOIN LATERAL (VALUES
			(0::smallint, 0::smallint, f.fs, f.ca >> 10), (0::smallint, 1::smallint, f.fs >> 5, f.ca >> 10),
			(1::smallint, 0::smallint, f.fs, f.ca >> 15), (1::smallint, 1::smallint, f.fs >> 5, f.ca >> 15),
			(2::smallint, 0::smallint, f.fs, f.ca >> 20), (2::smallint, 1::smallint, f.fs >> 5, f.ca >> 20)
		) AS k(tl, sl, sb, tb)
	GROUP BY 1, 2, 3, 4, 5, 6
	ORDER BY 1, 2, 3, 4, 5, 6;
END
$$;
--> statement-breakpoint
CREATE TABLE "search_names" (
	"owner" text COLLATE "C" NOT NULL,
	"file_name" text COLLATE "C" NOT NULL,
	"path_hash" bytea NOT NULL,
	"folder_hash" text COLLATE "C" NOT NULL,
	"n" bigint NOT NULL,
	PRIMARY KEY ("owner", "file_name", "path_hash", "folder_hash")
);
--> statement-breakpoint
-- Adds d (1 or -1) files to the interval holding the named file (o, nm, ph, fh), then splits the
-- interval at its middle file when it holds more than 4,000 (or esync.search_names_max).
CREATE FUNCTION esync_search_names_add(o text, nm text, ph bytea, fh text, d bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	k search_names;
	again search_names;
	nxt search_names;
	cnt bigint;
	half bigint;
	m record;
	-- At least 2, so that the middle file lies strictly after the fence.
	most bigint := greatest(coalesce(nullif(current_setting('esync.search_names_max', true), '')::bigint, 4000), 2);
BEGIN
	LOOP
		-- The fence at or below the file's key (in statements of this function, whose plans
		-- PL/pgSQL keeps), or the empty one for an owner without fences yet.
		SELECT * INTO k FROM search_names AS s
		WHERE s.owner = o AND (s.file_name, s.path_hash, s.folder_hash) <= (nm COLLATE "C", ph, fh COLLATE "C")
		ORDER BY s.file_name DESC, s.path_hash DESC, s.folder_hash DESC LIMIT 1;
		IF NOT FOUND THEN
			k := ROW(o, '', ''::bytea, '', 0)::search_names;
		END IF;
		INSERT INTO search_names AS s (owner, file_name, path_hash, folder_hash, n)
		VALUES (o, k.file_name, k.path_hash, k.folder_hash, d)
		ON CONFLICT (owner, file_name, path_hash, folder_hash) DO UPDATE SET n = s.n + excluded.n
		RETURNING s.n INTO cnt;
		-- The interval's row is locked now, so no split of it is under way; one that committed
		-- since the lookup above may have put a fence between it and the file: then move there.
		SELECT * INTO again FROM search_names AS s
		WHERE s.owner = o AND (s.file_name, s.path_hash, s.folder_hash) <= (nm COLLATE "C", ph, fh COLLATE "C")
		ORDER BY s.file_name DESC, s.path_hash DESC, s.folder_hash DESC LIMIT 1;
		EXIT WHEN again.file_name = k.file_name AND again.path_hash = k.path_hash
			AND again.folder_hash = k.folder_hash;
		UPDATE search_names AS s SET n = s.n - d WHERE s.owner = o AND s.file_name = k.file_name
			AND s.path_hash = k.path_hash AND s.folder_hash = k.folder_hash;
	END LOOP;
	IF cnt <= most THEN
		RETURN;
	END IF;
	half := cnt / 2;
	SELECT * INTO nxt FROM search_names AS s
	WHERE s.owner = o AND (s.file_name, s.path_hash, s.folder_hash) > (k.file_name, k.path_hash, k.folder_hash)
	ORDER BY s.file_name, s.path_hash, s.folder_hash LIMIT 1;
	SELECT f.file_name, f.path_hash, f.folder_hash INTO m FROM files AS f
	WHERE f.owner = o AND (f.file_name, f.path_hash, f.folder_hash) >= (k.file_name, k.path_hash, k.folder_hash)
		AND (nxt.owner IS NULL OR (f.file_name, f.path_hash, f.folder_hash) < (nxt.file_name, nxt.path_hash, nxt.folder_hash))
	ORDER BY f.file_name NULLS FIRST, f.path_hash, f.folder_hash OFFSET half LIMIT 1;
	IF FOUND THEN
		INSERT INTO search_names (owner, file_name, path_hash, folder_hash, n)
		VALUES (o, m.file_name, m.path_hash, m.folder_hash, cnt - half);
		UPDATE search_names AS s SET n = half WHERE s.owner = o AND s.file_name = k.file_name
			AND s.path_hash = k.path_hash AND s.folder_hash = k.folder_hash;
	END IF;
END
$$;
--> statement-breakpoint
CREATE FUNCTION esync_search_names() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('DELETE', 'UPDATE') AND OLD.file_name IS NOT NULL THEN
		PERFORM esync_search_names_add(OLD.owner, OLD.file_name, OLD.path_hash, OLD.folder_hash, -1);
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.file_name IS NOT NULL THEN
		PERFORM esync_search_names_add(NEW.owner, NEW.file_name, NEW.path_hash, NEW.folder_hash, 1);
	END IF;
	RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "search_names_insert_delete" AFTER INSERT OR DELETE ON "files"
	FOR EACH ROW EXECUTE FUNCTION esync_search_names();
--> statement-breakpoint
CREATE TRIGGER "search_names_update" AFTER UPDATE ON "files" FOR EACH ROW
	WHEN (OLD.owner IS DISTINCT FROM NEW.owner OR OLD.file_name IS DISTINCT FROM NEW.file_name
		OR OLD.path_hash IS DISTINCT FROM NEW.path_hash OR OLD.folder_hash IS DISTINCT FROM NEW.folder_hash)
	EXECUTE FUNCTION esync_search_names();
--> statement-breakpoint
-- Recomputes the fences from files (in the caller's transaction): the empty fence, then one every
-- 1,000 named files of each owner.
CREATE FUNCTION esync_search_names_recount() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM search_names;
	INSERT INTO search_names (owner, file_name, path_hash, folder_hash, n)
	SELECT owner, CASE WHEN g = 0 THEN '' ELSE file_name END, CASE WHEN g = 0 THEN ''::bytea ELSE path_hash END,
		CASE WHEN g = 0 THEN '' ELSE folder_hash END, n
	FROM (
		SELECT owner, file_name, path_hash, folder_hash, g, count(*) OVER (PARTITION BY owner, g) AS n,
			row_number() OVER (PARTITION BY owner, g ORDER BY file_name, path_hash, folder_hash) AS i
		FROM (SELECT owner, file_name, path_hash, folder_hash,
				(row_number() OVER (PARTITION BY owner ORDER BY file_name, path_hash, folder_hash) - 1) / 1000 AS g
			FROM files WHERE file_name IS NOT NULL) AS r
	) AS s
	WHERE i = 1
	ORDER BY 1, 2, 3, 4;
END
$$;
--> statement-breakpoint
-- esync_search_recount (0003, 0004, 0005) recounts the grid and the name fences too.
CREATE OR REPLACE FUNCTION esync_search_recount() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM search_ext_counts;
	DELETE FROM search_dirs;
	INSERT INTO search_ext_counts (owner, ext, n)
	SELECT owner, coalesce(ext, ''), count(*) FROM files GROUP BY 1, 2;
	INSERT INTO search_dirs (owner, folder_hash, path, file_count, total_bytes)
	SELECT f.owner, f.folder_hash, array_to_string(f.segs[1:i], '/'), count(*), sum(f.size_bytes)
	FROM (SELECT owner, folder_hash, size_bytes,
			string_to_array(btrim(regexp_replace(relative_path, '[^/]*$', ''), '/'), '/') AS segs
		FROM files WHERE relative_path IS NOT NULL) AS f
		CROSS JOIN LATERAL generate_series(1, coalesce(array_length(f.segs, 1), 0)) AS i
	GROUP BY 1, 2, 3;
	PERFORM esync_search_hist_recount();
	PERFORM esync_search_grams_recount();
	PERFORM esync_search_grid_recount();
	PERFORM esync_search_names_recount();
END
$$;
--> statement-breakpoint
SELECT esync_search_grid_recount();
--> statement-breakpoint
SELECT esync_search_names_recount();
--> statement-breakpoint
ANALYZE search_grid, search_names;
