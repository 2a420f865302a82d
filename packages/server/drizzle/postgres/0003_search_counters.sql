-- Counters of the PostgreSQL search index (src/search/postgres-index.ts), kept by triggers on
-- files in the transaction of every write, as the SQLite index keeps search_stats and search_dirs:
--   search_ext_counts  files per (owner, ext), ext '' for none: the exact total of a search with
--                      no filter or only file_type, without counting rows;
--   search_dirs        per directory of relative_path (everything before its last '/', without
--                      leading or trailing '/', and each of its ancestors): recursive file count
--                      and plaintext bytes, for browse's sub-folder list.
-- Rows that drop to 0 stay (readers skip them). esync_search_recount() recomputes both from files
-- (this migration, PgSearchIndex.rebuild).
CREATE TABLE "search_ext_counts" (
	"owner" text COLLATE "C" NOT NULL,
	"ext" text COLLATE "C" NOT NULL,
	"n" bigint NOT NULL,
	PRIMARY KEY ("owner", "ext")
);
--> statement-breakpoint
CREATE TABLE "search_dirs" (
	"owner" text COLLATE "C" NOT NULL,
	"folder_hash" text COLLATE "C" NOT NULL,
	"path" text COLLATE "C" NOT NULL,
	"file_count" bigint NOT NULL,
	"total_bytes" bigint NOT NULL,
	PRIMARY KEY ("owner", "folder_hash", "path")
);
--> statement-breakpoint
-- Adds d (1 or -1) files of `bytes` to the directory of relative_path `rp` and its ancestors.
CREATE FUNCTION esync_search_dirs_add(o text, fh text, rp text, bytes bigint, d bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	segs text[];
BEGIN
	IF rp IS NULL THEN
		RETURN;
	END IF;
	segs := string_to_array(btrim(regexp_replace(rp, '[^/]*$', ''), '/'), '/');
	FOR i IN 1..coalesce(array_length(segs, 1), 0) LOOP
		INSERT INTO search_dirs (owner, folder_hash, path, file_count, total_bytes)
		VALUES (o, fh, array_to_string(segs[1:i], '/'), d, d * bytes)
		ON CONFLICT (owner, folder_hash, path) DO UPDATE
			SET file_count = search_dirs.file_count + excluded.file_count,
				total_bytes = search_dirs.total_bytes + excluded.total_bytes;
	END LOOP;
END
$$;
--> statement-breakpoint
CREATE FUNCTION esync_search_counts() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('DELETE', 'UPDATE') THEN
		UPDATE search_ext_counts SET n = n - 1 WHERE owner = OLD.owner AND ext = coalesce(OLD.ext, '');
		PERFORM esync_search_dirs_add(OLD.owner, OLD.folder_hash, OLD.relative_path, OLD.size_bytes, -1);
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		INSERT INTO search_ext_counts (owner, ext, n) VALUES (NEW.owner, coalesce(NEW.ext, ''), 1)
		ON CONFLICT (owner, ext) DO UPDATE SET n = search_ext_counts.n + 1;
		PERFORM esync_search_dirs_add(NEW.owner, NEW.folder_hash, NEW.relative_path, NEW.size_bytes, 1);
	END IF;
	RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "search_counts_insert_delete" AFTER INSERT OR DELETE ON "files"
	FOR EACH ROW EXECUTE FUNCTION esync_search_counts();
--> statement-breakpoint
CREATE TRIGGER "search_counts_update" AFTER UPDATE ON "files" FOR EACH ROW
	WHEN (OLD.owner IS DISTINCT FROM NEW.owner OR OLD.folder_hash IS DISTINCT FROM NEW.folder_hash
		OR OLD.ext IS DISTINCT FROM NEW.ext OR OLD.relative_path IS DISTINCT FROM NEW.relative_path
		OR OLD.size_bytes IS DISTINCT FROM NEW.size_bytes)
	EXECUTE FUNCTION esync_search_counts();
--> statement-breakpoint
-- Recomputes both counter tables from files (in the caller's transaction).
CREATE FUNCTION esync_search_recount() RETURNS void
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
END
$$;
--> statement-breakpoint
SELECT esync_search_recount();
