-- Counters kept by triggers on files in the transaction of every write, replace, rename and
-- delete, as drizzle/0012 (account_usage) and drizzle/0013 (usage_buckets) keep them on SQLite.

-- The summary bucket of kind 'type' (docs/protocol.md#summaries): the file_type category (docs/protocol.md#search,
-- src/search/file-types.ts) of the extension; 'other' without a file name or a listed extension.
CREATE FUNCTION esync_type_bucket(file_name text, ext text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE
		WHEN file_name IS NULL THEN 'other'
		WHEN ext IN ('.png', '.jpg', '.jpeg', '.gif', '.webp', '.svg', '.bmp', '.ico', '.tiff') THEN 'image'
		WHEN ext IN ('.mp4', '.mov', '.avi', '.mkv', '.webm', '.flv', '.wmv') THEN 'video'
		WHEN ext IN ('.mp3', '.wav', '.ogg', '.flac', '.aac', '.m4a', '.wma') THEN 'audio'
		WHEN ext IN ('.doc', '.docx', '.xls', '.xlsx', '.ppt', '.pptx', '.txt', '.csv', '.rtf') THEN 'document'
		WHEN ext = '.pdf' THEN 'pdf'
		WHEN ext IN ('.zip', '.rar', '.7z', '.tar', '.gz', '.bz2') THEN 'archive'
		WHEN ext IN ('.js', '.ts', '.py', '.rs', '.go', '.java', '.c', '.cpp', '.html', '.css', '.json') THEN 'code'
		ELSE 'other'
	END
$$;
--> statement-breakpoint
-- The summary bucket of kind 'source': the manifest's client family.
CREATE FUNCTION esync_source_bucket(source text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE lower(source) WHEN 'desktop' THEN 'desktop' WHEN 'console' THEN 'console' WHEN 'mobile' THEN 'mobile' ELSE 'other' END
$$;
--> statement-breakpoint
-- account_usage: per-account totals. A delete has no clock value in the row: it stamps
-- updated_at with the database's clock. A row moved to another owner counts as a delete and an insert.
CREATE FUNCTION esync_account_usage() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'UPDATE' AND OLD.owner = NEW.owner THEN
		UPDATE account_usage SET total_bytes = total_bytes - OLD.size_bytes + NEW.size_bytes,
			updated_at = greatest(updated_at, NEW.updated_at) WHERE owner = NEW.owner;
		RETURN NULL;
	END IF;
	IF TG_OP IN ('DELETE', 'UPDATE') THEN
		UPDATE account_usage SET file_count = file_count - 1, total_bytes = total_bytes - OLD.size_bytes,
			updated_at = greatest(updated_at, extract(epoch FROM now())::bigint) WHERE owner = OLD.owner;
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		INSERT INTO account_usage AS u (owner, file_count, total_bytes, created_at, updated_at)
		VALUES (NEW.owner, 1, NEW.size_bytes, NEW.updated_at, NEW.updated_at)
		ON CONFLICT (owner) DO UPDATE SET file_count = u.file_count + 1, total_bytes = u.total_bytes + excluded.total_bytes,
			updated_at = greatest(u.updated_at, excluded.updated_at);
	END IF;
	RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER account_usage_files AFTER INSERT OR UPDATE OR DELETE ON files
FOR EACH ROW EXECUTE FUNCTION esync_account_usage();
--> statement-breakpoint
-- usage_buckets: per-folder counts and bytes by type and source bucket. The old row's buckets
-- lose it and the new row's gain it; deltas of one key are summed first (ON CONFLICT may touch a
-- row once per statement). Rows that drop to 0 stay, as on SQLite.
CREATE FUNCTION esync_usage_buckets() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'UPDATE' AND OLD.owner = NEW.owner AND OLD.folder_hash = NEW.folder_hash
		AND OLD.size_bytes = NEW.size_bytes AND OLD.ext IS NOT DISTINCT FROM NEW.ext
		AND (OLD.file_name IS NULL) = (NEW.file_name IS NULL) AND OLD.source IS NOT DISTINCT FROM NEW.source THEN
		RETURN NULL;
	END IF;
	INSERT INTO usage_buckets AS b (owner, folder_hash, kind, bucket, file_count, total_bytes)
	SELECT d.owner, d.folder_hash, d.kind, d.bucket, sum(d.n), sum(d.bytes)
	FROM (
		SELECT OLD.owner, OLD.folder_hash, 'type', esync_type_bucket(OLD.file_name, OLD.ext), -1, -OLD.size_bytes WHERE TG_OP <> 'INSERT'
		UNION ALL
		SELECT OLD.owner, OLD.folder_hash, 'source', esync_source_bucket(OLD.source), -1, -OLD.size_bytes WHERE TG_OP <> 'INSERT'
		UNION ALL
		SELECT NEW.owner, NEW.folder_hash, 'type', esync_type_bucket(NEW.file_name, NEW.ext), 1, NEW.size_bytes WHERE TG_OP <> 'DELETE'
		UNION ALL
		SELECT NEW.owner, NEW.folder_hash, 'source', esync_source_bucket(NEW.source), 1, NEW.size_bytes WHERE TG_OP <> 'DELETE'
	) AS d (owner, folder_hash, kind, bucket, n, bytes)
	GROUP BY d.owner, d.folder_hash, d.kind, d.bucket
	ORDER BY d.owner, d.folder_hash, d.kind, d.bucket
	ON CONFLICT (owner, folder_hash, kind, bucket) DO UPDATE SET file_count = b.file_count + excluded.file_count,
		total_bytes = b.total_bytes + excluded.total_bytes;
	RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER usage_buckets_files AFTER INSERT OR UPDATE OR DELETE ON files
FOR EACH ROW EXECUTE FUNCTION esync_usage_buckets();
