-- Browse in name order: the directory index carries file_name (nulls first, as files_by_file_name),
-- so a page of one directory sorted by name is a walk of that directory's entries.
DROP INDEX "files_by_dir";--> statement-breakpoint
CREATE INDEX "files_by_dir" ON "files" USING btree ("owner","folder_hash",btrim(regexp_replace("relative_path", '[^/]*$', ''), '/'),"file_name" NULLS FIRST,"path_hash");