-- Gram counters of the PostgreSQL search index (src/search/postgres-index.ts), kept by a trigger on
-- files in the transaction of every write:
--   search_grams  per (owner, gram): the files whose folded search name
--                 (replace(search_name, 'ς', 'σ'), as q is matched) contains the 3- or
--                 4-character string gram (characters, not bytes). The exact total of a q of 3 or
--                 4 characters with no other filter, without reading the matching rows.
-- Rows that drop to 0 stay (readers take 0 for a missing gram).
CREATE TABLE "search_grams" (
	"owner" text COLLATE "C" NOT NULL,
	"gram" text COLLATE "C" NOT NULL,
	"n" bigint NOT NULL,
	PRIMARY KEY ("owner", "gram")
);
--> statement-breakpoint
-- Adds d (1 or -1) to every distinct 3- and 4-character gram of the folded name nm, in gram order
-- (writers of one owner lock the rows in the same order).
CREATE FUNCTION esync_search_grams_add(o text, nm text, d bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	IF nm IS NULL OR length(nm) < 3 THEN
		RETURN;
	END IF;
	INSERT INTO search_grams (owner, gram, n)
	SELECT o, s.g, d FROM (
		SELECT DISTINCT substr(nm, i, k.l) AS g
		FROM generate_series(1, length(nm) - 2) AS i, (VALUES (3), (4)) AS k(l)
		WHERE i + k.l - 1 <= length(nm)
	) AS s
	ORDER BY s.g
	ON CONFLICT (owner, gram) DO UPDATE SET n = search_grams.n + excluded.n;
END
$$;
--> statement-breakpoint
CREATE FUNCTION esync_search_grams() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('DELETE', 'UPDATE') THEN
		PERFORM esync_search_grams_add(OLD.owner, replace(OLD.search_name, 'ς', 'σ'), -1);
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		PERFORM esync_search_grams_add(NEW.owner, replace(NEW.search_name, 'ς', 'σ'), 1);
	END IF;
	RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "search_grams_insert_delete" AFTER INSERT OR DELETE ON "files"
	FOR EACH ROW EXECUTE FUNCTION esync_search_grams();
--> statement-breakpoint
CREATE TRIGGER "search_grams_update" AFTER UPDATE ON "files" FOR EACH ROW
	WHEN (OLD.owner IS DISTINCT FROM NEW.owner OR OLD.search_name IS DISTINCT FROM NEW.search_name)
	EXECUTE FUNCTION esync_search_grams();
--> statement-breakpoint
-- Recomputes the gram counters from files (in the caller's transaction).
CREATE FUNCTION esync_search_grams_recount() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM search_grams;
	INSERT INTO search_grams (owner, gram, n)
	SELECT f.owner, s.g, count(*)
	FROM (SELECT owner, replace(search_name, 'ς', 'σ') AS nm FROM files WHERE length(search_name) >= 3) AS f
		CROSS JOIN LATERAL (
			SELECT DISTINCT substr(f.nm, i, k.l) AS g
			FROM generate_series(1, length(f.nm) - 2) AS i, (VALUES (3), (4)) AS k(l)
			WHERE i + k.l - 1 <= length(f.nm)
		) AS s
	GROUP BY 1, 2
	ORDER BY 1, 2;
END
$$;
--> statement-breakpoint
-- esync_search_recount (0003, 0004) recounts the gram counters too.
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
END
$$;
--> statement-breakpoint
SELECT esync_search_grams_recount();
