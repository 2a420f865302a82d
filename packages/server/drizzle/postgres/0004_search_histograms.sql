-- Histograms of the PostgreSQL search index (src/search/postgres-index.ts), kept by a trigger on
-- files in the transaction of every write, like search_ext_counts:
--   search_hist  files per (owner, key, level, bucket, ext), ext '' for none. key 1 = size_bytes,
--                2 = created_at, 3 = updated_at. Level 1 (fine) buckets: sizes below 32 one
--                bucket each, above 32 per power of two (esync_size_bucket); times 1024 s
--                (t >> 10). Level 0 (coarse) bucket = the fine bucket >> 5 (sizes: one per power
--                of two) or >> 10 (times: 2^20 s, about 12 days).
-- A range total is the fine and coarse buckets inside the range plus an exact count of the two
-- boundary fine buckets; a deep offset in one of these sort orders starts at the fine bucket
-- that holds it. Rows that drop to 0 stay (they add nothing). A query sums up to a few thousand
-- neighbouring rows: the recount writes them in key order and half of each page is left free so
-- that the trigger's updates stay on their page (HOT), keeping neighbours on few pages.

-- The fine size bucket of s bytes: s itself below 32, else (L - 6) * 32 + (s >> (L - 6)), L the
-- bit length of s (32 buckets per power of two). Its lower bound: b < 64 ? b : m << e with
-- e = b / 32 - 1, m = b - 32 * e (PgSearchIndex computes the same in TypeScript).
CREATE FUNCTION esync_size_bucket(s bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
	SELECT CASE WHEN s < 32 THEN s
		ELSE (length(ltrim(s::bit(64)::text, '0')) - 6)::bigint * 32 + (s >> (length(ltrim(s::bit(64)::text, '0')) - 6))
	END
$$;
--> statement-breakpoint
CREATE TABLE "search_hist" (
	"owner" text COLLATE "C" NOT NULL,
	"key" smallint NOT NULL,
	"level" smallint NOT NULL,
	"bucket" bigint NOT NULL,
	"ext" text COLLATE "C" NOT NULL,
	"n" bigint NOT NULL,
	PRIMARY KEY ("owner", "key", "level", "bucket", "ext")
) WITH (fillfactor = 50);
--> statement-breakpoint
-- Adds d (1 or -1) files to the six buckets of a file (owner o, extension e, size sz, created ca,
-- updated ua), always in the same order.
CREATE FUNCTION esync_search_hist_add(o text, e text, sz bigint, ca bigint, ua bigint, d bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	fs bigint := esync_size_bucket(sz);
BEGIN
	INSERT INTO search_hist (owner, key, level, bucket, ext, n) VALUES
		(o, 1, 0, fs >> 5, e, d), (o, 1, 1, fs, e, d),
		(o, 2, 0, ca >> 20, e, d), (o, 2, 1, ca >> 10, e, d),
		(o, 3, 0, ua >> 20, e, d), (o, 3, 1, ua >> 10, e, d)
	ON CONFLICT (owner, key, level, bucket, ext) DO UPDATE SET n = search_hist.n + excluded.n;
END
$$;
--> statement-breakpoint
CREATE FUNCTION esync_search_hist() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('DELETE', 'UPDATE') THEN
		PERFORM esync_search_hist_add(OLD.owner, coalesce(OLD.ext, ''), OLD.size_bytes, OLD.created_at, OLD.updated_at, -1);
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		PERFORM esync_search_hist_add(NEW.owner, coalesce(NEW.ext, ''), NEW.size_bytes, NEW.created_at, NEW.updated_at, 1);
	END IF;
	RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "search_hist_insert_delete" AFTER INSERT OR DELETE ON "files"
	FOR EACH ROW EXECUTE FUNCTION esync_search_hist();
--> statement-breakpoint
CREATE TRIGGER "search_hist_update" AFTER UPDATE ON "files" FOR EACH ROW
	WHEN (OLD.owner IS DISTINCT FROM NEW.owner OR OLD.ext IS DISTINCT FROM NEW.ext
		OR OLD.size_bytes IS DISTINCT FROM NEW.size_bytes OR OLD.created_at IS DISTINCT FROM NEW.created_at
		OR OLD.updated_at IS DISTINCT FROM NEW.updated_at)
	EXECUTE FUNCTION esync_search_hist();
--> statement-breakpoint
-- Recomputes the histograms from files (in the caller's transaction).
CREATE FUNCTION esync_search_hist_recount() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM search_hist;
	INSERT INTO search_hist (owner, key, level, bucket, ext, n)
	SELECT f.owner, k.key, k.level, k.bucket, coalesce(f.ext, ''), count(*)
	FROM (SELECT owner, ext, esync_size_bucket(size_bytes) AS fs, created_at, updated_at FROM files) AS f
		CROSS JOIN LATERAL (VALUES
			(1::smallint, 0::smallint, f.fs >> 5), (1::smallint, 1::smallint, f.fs),
			(2::smallint, 0::smallint, f.created_at >> 20), (2::smallint, 1::smallint, f.created_at >> 10),
			(3::smallint, 0::smallint, f.updated_at >> 20), (3::smallint, 1::smallint, f.updated_at >> 10)
		) AS k(key, level, bucket)
	GROUP BY 1, 2, 3, 4, 5
	ORDER BY 1, 2, 3, 4, 5;
END
$$;
--> statement-breakpoint
-- esync_search_recount (0003) recounts the histograms too.
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
END
$$;
--> statement-breakpoint
SELECT esync_search_hist_recount();
