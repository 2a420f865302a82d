-- Suffix index of the PostgreSQL search (src/search/postgres-suffixes.ts), kept by a trigger on files
-- in the transaction of every write:
--   search_owners    a small integer per owner (the leading key of search_suffixes);
--   search_files     a bigint per file (owner, folder_hash, path_hash): the file of a suffix row;
--   search_suffixes  one row per distinct suffix of the folded name replace(search_name, 'ς', 'σ')
--                    (the string q is matched against) that starts at a position with 3 or more
--                    characters left, cut to its first 16 characters; next_lcp is the length of the
--                    common prefix with the next suffix of the same file in C order (0 for its
--                    last). The suffixes of one file that start with a term t are neighbours in that
--                    order, so exactly one of them (the last) has next_lcp < length(t): counting
--                    rows with suffix ^@ t and next_lcp < length(t) counts each matching file once.
--                    ext and created_at ride in the index for file_type, date ranges and pages in
--                    creation order without reading files.
-- search_grams gains ext (the files of one gram per extension): the total of a q of 3 or 4
-- characters with file_type.
-- esync_search_recount() (0003, 0004, 0005, 0008) recomputes both, and this migration fills them.
CREATE TABLE "search_owners" (
	"owner" text COLLATE "C" PRIMARY KEY,
	"id" integer GENERATED ALWAYS AS IDENTITY UNIQUE
);
--> statement-breakpoint
CREATE TABLE "search_files" (
	"id" bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	"owner" text COLLATE "C" NOT NULL,
	"folder_hash" text COLLATE "C" NOT NULL,
	"path_hash" bytea NOT NULL,
	UNIQUE ("owner", "folder_hash", "path_hash")
);
--> statement-breakpoint
CREATE TABLE "search_suffixes" (
	"owner_id" integer NOT NULL,
	"suffix" text COLLATE "C" NOT NULL,
	"file_id" bigint NOT NULL,
	"next_lcp" smallint NOT NULL,
	"ext" text COLLATE "C",
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
-- Length of the common prefix of a and b, in characters.
CREATE FUNCTION esync_common_prefix(a text, b text) RETURNS integer
IMMUTABLE STRICT PARALLEL SAFE LANGUAGE plpgsql AS $$
DECLARE
	n integer := least(length(a), length(b));
BEGIN
	FOR i IN 1..n LOOP
		IF substr(a, i, 1) <> substr(b, i, 1) THEN
			RETURN i - 1;
		END IF;
	END LOOP;
	RETURN n;
END
$$;
--> statement-breakpoint
-- The distinct suffixes of the folded name nm (positions with 3 or more characters left, cut to
-- 16 characters) in C order, each with next_lcp (see above). None when nm is NULL or shorter than 3.
CREATE FUNCTION esync_search_suffixes(nm text) RETURNS TABLE (suffix text, next_lcp smallint)
IMMUTABLE PARALLEL SAFE LANGUAGE sql AS $$
	SELECT d.s, coalesce(esync_common_prefix(d.s, lead(d.s) OVER (ORDER BY d.s COLLATE "C")), 0)::smallint
	FROM (SELECT DISTINCT left(substr(nm, i), 16) AS s FROM generate_series(1, length(nm) - 2) AS i) AS d
$$;
--> statement-breakpoint
CREATE FUNCTION esync_search_suffixes_sync() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
	o integer;
	fid bigint;
	sfx text;
BEGIN
	IF TG_OP IN ('DELETE', 'UPDATE') THEN
		SELECT id INTO fid FROM search_files
		WHERE owner = OLD.owner AND folder_hash = OLD.folder_hash AND path_hash = OLD.path_hash;
		IF fid IS NOT NULL THEN
			SELECT id INTO o FROM search_owners WHERE owner = OLD.owner;
			-- One probe of the whole key per suffix of the old name (never a scan of the owner's rows).
			FOR sfx IN SELECT s.suffix FROM esync_search_suffixes(replace(OLD.search_name, 'ς', 'σ')) AS s LOOP
				DELETE FROM search_suffixes WHERE owner_id = o AND suffix = sfx AND file_id = fid;
			END LOOP;
			IF TG_OP = 'DELETE' OR OLD.owner IS DISTINCT FROM NEW.owner
				OR OLD.folder_hash IS DISTINCT FROM NEW.folder_hash OR OLD.path_hash IS DISTINCT FROM NEW.path_hash THEN
				DELETE FROM search_files WHERE id = fid;
				fid := NULL;
			END IF;
		END IF;
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		SELECT id INTO o FROM search_owners WHERE owner = NEW.owner;
		IF o IS NULL THEN
			INSERT INTO search_owners (owner) VALUES (NEW.owner) ON CONFLICT (owner) DO NOTHING;
			SELECT id INTO o FROM search_owners WHERE owner = NEW.owner;
		END IF;
		IF fid IS NULL THEN
			-- A row left by writes the trigger did not see (triggers disabled) is taken over.
			INSERT INTO search_files (owner, folder_hash, path_hash)
			VALUES (NEW.owner, NEW.folder_hash, NEW.path_hash)
			ON CONFLICT (owner, folder_hash, path_hash) DO UPDATE SET owner = excluded.owner
			RETURNING id INTO fid;
		END IF;
		INSERT INTO search_suffixes (owner_id, suffix, file_id, next_lcp, ext, created_at)
		SELECT o, s.suffix, fid, s.next_lcp, NEW.ext, NEW.created_at
		FROM esync_search_suffixes(replace(NEW.search_name, 'ς', 'σ')) AS s;
	END IF;
	RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "search_suffixes_insert_delete" AFTER INSERT OR DELETE ON "files"
	FOR EACH ROW EXECUTE FUNCTION esync_search_suffixes_sync();
--> statement-breakpoint
CREATE TRIGGER "search_suffixes_update" AFTER UPDATE ON "files" FOR EACH ROW
	WHEN (OLD.owner IS DISTINCT FROM NEW.owner OR OLD.folder_hash IS DISTINCT FROM NEW.folder_hash
		OR OLD.path_hash IS DISTINCT FROM NEW.path_hash OR OLD.search_name IS DISTINCT FROM NEW.search_name
		OR OLD.ext IS DISTINCT FROM NEW.ext OR OLD.created_at IS DISTINCT FROM NEW.created_at)
	EXECUTE FUNCTION esync_search_suffixes_sync();
--> statement-breakpoint
-- TRUNCATE files fires no row trigger: the suffix tables are emptied with it. When the same
-- statement truncates them too, they are in use (and already empty): DELETE then finds nothing.
CREATE FUNCTION esync_search_suffixes_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	BEGIN
		TRUNCATE search_suffixes, search_files;
	EXCEPTION WHEN object_in_use THEN
		DELETE FROM search_suffixes;
		DELETE FROM search_files;
	END;
	RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "search_suffixes_truncate" AFTER TRUNCATE ON "files"
	FOR EACH STATEMENT EXECUTE FUNCTION esync_search_suffixes_truncate();
--> statement-breakpoint
-- Recomputes the three suffix tables from files (in the caller's transaction), the suffix rows in
-- key order so that neighbouring index entries sit on neighbouring heap pages.
CREATE FUNCTION esync_search_suffixes_recount() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	TRUNCATE search_suffixes, search_files, search_owners RESTART IDENTITY;
	INSERT INTO search_owners (owner) SELECT DISTINCT owner FROM files ORDER BY 1;
	INSERT INTO search_files (owner, folder_hash, path_hash)
	SELECT owner, folder_hash, path_hash FROM files ORDER BY 1, 2, 3;
	INSERT INTO search_suffixes (owner_id, suffix, file_id, next_lcp, ext, created_at)
	SELECT o.id, s.suffix, sf.id, s.next_lcp, f.ext, f.created_at
	FROM files AS f
		JOIN search_owners AS o ON o.owner = f.owner
		JOIN search_files AS sf
			ON sf.owner = f.owner AND sf.folder_hash = f.folder_hash AND sf.path_hash = f.path_hash
		CROSS JOIN LATERAL esync_search_suffixes(replace(f.search_name, 'ς', 'σ')) AS s
	WHERE length(f.search_name) >= 3
	ORDER BY 1, 2, 3;
END
$$;
--> statement-breakpoint
ALTER TABLE "search_grams" ADD COLUMN "ext" text COLLATE "C" NOT NULL DEFAULT '';
--> statement-breakpoint
ALTER TABLE "search_grams" DROP CONSTRAINT "search_grams_pkey";
--> statement-breakpoint
ALTER TABLE "search_grams" ADD PRIMARY KEY ("owner", "gram", "ext");
--> statement-breakpoint
DROP TRIGGER "search_grams_insert_delete" ON "files";
--> statement-breakpoint
DROP TRIGGER "search_grams_update" ON "files";
--> statement-breakpoint
DROP FUNCTION esync_search_grams();
--> statement-breakpoint
DROP FUNCTION esync_search_grams_add(text, text, bigint);
--> statement-breakpoint
-- Adds d (1 or -1) to every distinct 3- and 4-character gram of the folded name nm under the
-- extension e ('' for none), in gram order (writers of one owner lock the rows in the same order).
CREATE FUNCTION esync_search_grams_add(o text, nm text, e text, d bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	IF nm IS NULL OR length(nm) < 3 THEN
		RETURN;
	END IF;
	INSERT INTO search_grams (owner, gram, ext, n)
	SELECT o, s.g, coalesce(e, ''), d FROM (
		SELECT DISTINCT substr(nm, i, k.l) AS g
		FROM generate_series(1, length(nm) - 2) AS i, (VALUES (3), (4)) AS k(l)
		WHERE i + k.l - 1 <= length(nm)
	) AS s
	ORDER BY s.g
	ON CONFLICT (owner, gram, ext) DO UPDATE SET n = search_grams.n + excluded.n;
END
$$;
--> statement-breakpoint
CREATE FUNCTION esync_search_grams() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('DELETE', 'UPDATE') THEN
		PERFORM esync_search_grams_add(OLD.owner, replace(OLD.search_name, 'ς', 'σ'), OLD.ext, -1);
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		PERFORM esync_search_grams_add(NEW.owner, replace(NEW.search_name, 'ς', 'σ'), NEW.ext, 1);
	END IF;
	RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "search_grams_insert_delete" AFTER INSERT OR DELETE ON "files"
	FOR EACH ROW EXECUTE FUNCTION esync_search_grams();
--> statement-breakpoint
CREATE TRIGGER "search_grams_update" AFTER UPDATE ON "files" FOR EACH ROW
	WHEN (OLD.owner IS DISTINCT FROM NEW.owner OR OLD.search_name IS DISTINCT FROM NEW.search_name
		OR OLD.ext IS DISTINCT FROM NEW.ext)
	EXECUTE FUNCTION esync_search_grams();
--> statement-breakpoint
-- Recomputes the gram counters from files (in the caller's transaction).
CREATE OR REPLACE FUNCTION esync_search_grams_recount() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM search_grams;
	INSERT INTO search_grams (owner, gram, ext, n)
	SELECT f.owner, s.g, f.e, count(*)
	FROM (SELECT owner, coalesce(ext, '') AS e, replace(search_name, 'ς', 'σ') AS nm
		FROM files WHERE length(search_name) >= 3) AS f
		CROSS JOIN LATERAL (
			SELECT DISTINCT substr(f.nm, i, k.l) AS g
			FROM generate_series(1, length(f.nm) - 2) AS i, (VALUES (3), (4)) AS k(l)
			WHERE i + k.l - 1 <= length(f.nm)
		) AS s
	GROUP BY 1, 2, 3
	ORDER BY 1, 2, 3;
END
$$;
--> statement-breakpoint
-- esync_search_recount (0003, 0004, 0005, 0008) recounts the suffix tables too.
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
	PERFORM esync_search_suffixes_recount();
END
$$;
--> statement-breakpoint
SELECT esync_search_grams_recount();
--> statement-breakpoint
SELECT esync_search_suffixes_recount();
--> statement-breakpoint
CREATE INDEX "search_suffixes_key" ON "search_suffixes" ("owner_id", "suffix", "file_id")
	INCLUDE ("next_lcp", "ext", "created_at");
