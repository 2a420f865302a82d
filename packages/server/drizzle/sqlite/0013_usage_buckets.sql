CREATE TABLE `usage_buckets` (
	`owner` text NOT NULL,
	`folder_hash` text NOT NULL,
	`kind` text NOT NULL,
	`bucket` text NOT NULL,
	`file_count` integer NOT NULL,
	`total_bytes` integer NOT NULL,
	PRIMARY KEY(`owner`, `folder_hash`, `kind`, `bucket`)
);
--> statement-breakpoint
-- Summary counters (docs/protocol.md#summaries) kept by triggers on files in the transaction of every write,
-- replace, rename and delete; the type bucket comes from the file name's extension through
-- search_ext_classes (0008), the source bucket from the manifest source.
INSERT INTO usage_buckets (owner, folder_hash, kind, bucket, file_count, total_bytes)
SELECT owner, folder_hash, kind, bucket, count(*), sum(size_bytes) FROM (
	SELECT f.owner, f.folder_hash, 'type' AS kind, CASE WHEN f.file_name IS NULL THEN 'other' ELSE coalesce((SELECT CASE c.class WHEN 1 THEN 'image' WHEN 2 THEN 'video' WHEN 3 THEN 'audio' WHEN 4 THEN 'document' WHEN 5 THEN 'pdf' WHEN 6 THEN 'archive' WHEN 7 THEN 'code' END FROM search_ext_classes AS c WHERE c.ext = f.ext), 'other') END AS bucket, f.size_bytes FROM files AS f
	UNION ALL
	SELECT f.owner, f.folder_hash, 'source' AS kind, CASE lower(f.source) WHEN 'desktop' THEN 'desktop' WHEN 'console' THEN 'console' WHEN 'mobile' THEN 'mobile' ELSE 'other' END AS bucket, f.size_bytes FROM files AS f)
GROUP BY owner, folder_hash, kind, bucket;
--> statement-breakpoint
CREATE TRIGGER `usage_buckets_ai` AFTER INSERT ON files
BEGIN
	INSERT INTO usage_buckets (owner, folder_hash, kind, bucket, file_count, total_bytes) VALUES (new.owner, new.folder_hash, 'type', CASE WHEN new.file_name IS NULL THEN 'other' ELSE coalesce((SELECT CASE c.class WHEN 1 THEN 'image' WHEN 2 THEN 'video' WHEN 3 THEN 'audio' WHEN 4 THEN 'document' WHEN 5 THEN 'pdf' WHEN 6 THEN 'archive' WHEN 7 THEN 'code' END FROM search_ext_classes AS c WHERE c.ext = new.ext), 'other') END, 1, new.size_bytes), (new.owner, new.folder_hash, 'source', CASE lower(new.source) WHEN 'desktop' THEN 'desktop' WHEN 'console' THEN 'console' WHEN 'mobile' THEN 'mobile' ELSE 'other' END, 1, new.size_bytes)
	ON CONFLICT (owner, folder_hash, kind, bucket) DO UPDATE SET file_count = file_count + excluded.file_count, total_bytes = total_bytes + excluded.total_bytes;
END;
--> statement-breakpoint
CREATE TRIGGER `usage_buckets_ad` AFTER DELETE ON files
BEGIN
	INSERT INTO usage_buckets (owner, folder_hash, kind, bucket, file_count, total_bytes) VALUES (old.owner, old.folder_hash, 'type', CASE WHEN old.file_name IS NULL THEN 'other' ELSE coalesce((SELECT CASE c.class WHEN 1 THEN 'image' WHEN 2 THEN 'video' WHEN 3 THEN 'audio' WHEN 4 THEN 'document' WHEN 5 THEN 'pdf' WHEN 6 THEN 'archive' WHEN 7 THEN 'code' END FROM search_ext_classes AS c WHERE c.ext = old.ext), 'other') END, -1, -old.size_bytes), (old.owner, old.folder_hash, 'source', CASE lower(old.source) WHEN 'desktop' THEN 'desktop' WHEN 'console' THEN 'console' WHEN 'mobile' THEN 'mobile' ELSE 'other' END, -1, -old.size_bytes)
	ON CONFLICT (owner, folder_hash, kind, bucket) DO UPDATE SET file_count = file_count + excluded.file_count, total_bytes = total_bytes + excluded.total_bytes;
END;
--> statement-breakpoint
CREATE TRIGGER `usage_buckets_au` AFTER UPDATE ON files
WHEN old.size_bytes <> new.size_bytes OR old.folder_hash <> new.folder_hash OR old.ext IS NOT new.ext
	OR (old.file_name IS NULL) <> (new.file_name IS NULL) OR old.source IS NOT new.source
BEGIN
	INSERT INTO usage_buckets (owner, folder_hash, kind, bucket, file_count, total_bytes) VALUES (old.owner, old.folder_hash, 'type', CASE WHEN old.file_name IS NULL THEN 'other' ELSE coalesce((SELECT CASE c.class WHEN 1 THEN 'image' WHEN 2 THEN 'video' WHEN 3 THEN 'audio' WHEN 4 THEN 'document' WHEN 5 THEN 'pdf' WHEN 6 THEN 'archive' WHEN 7 THEN 'code' END FROM search_ext_classes AS c WHERE c.ext = old.ext), 'other') END, -1, -old.size_bytes), (old.owner, old.folder_hash, 'source', CASE lower(old.source) WHEN 'desktop' THEN 'desktop' WHEN 'console' THEN 'console' WHEN 'mobile' THEN 'mobile' ELSE 'other' END, -1, -old.size_bytes), (new.owner, new.folder_hash, 'type', CASE WHEN new.file_name IS NULL THEN 'other' ELSE coalesce((SELECT CASE c.class WHEN 1 THEN 'image' WHEN 2 THEN 'video' WHEN 3 THEN 'audio' WHEN 4 THEN 'document' WHEN 5 THEN 'pdf' WHEN 6 THEN 'archive' WHEN 7 THEN 'code' END FROM search_ext_classes AS c WHERE c.ext = new.ext), 'other') END, 1, new.size_bytes), (new.owner, new.folder_hash, 'source', CASE lower(new.source) WHEN 'desktop' THEN 'desktop' WHEN 'console' THEN 'console' WHEN 'mobile' THEN 'mobile' ELSE 'other' END, 1, new.size_bytes)
	ON CONFLICT (owner, folder_hash, kind, bucket) DO UPDATE SET file_count = file_count + excluded.file_count, total_bytes = total_bytes + excluded.total_bytes;
END;
