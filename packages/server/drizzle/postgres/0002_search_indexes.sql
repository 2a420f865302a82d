-- Search indexes of src/search/postgres-index.ts: the trigram index on the folded search name
-- (ς read as σ, as foldCase folds q); b-trees per sort key with nulls first for nullable keys
-- (SQLite's ascending order; read backwards for descending), then path_hash, folder_hash and the
-- filtered columns (index-only walks); one b-tree per directory for browse.
DROP INDEX "files_search_name_trgm";--> statement-breakpoint
DROP INDEX "files_by_file_name";--> statement-breakpoint
DROP INDEX "files_by_size";--> statement-breakpoint
DROP INDEX "files_by_created";--> statement-breakpoint
DROP INDEX "files_by_updated";--> statement-breakpoint
DROP INDEX "files_by_uploader";--> statement-breakpoint
DROP INDEX "files_by_ext";--> statement-breakpoint
CREATE INDEX "files_search_fold_trgm" ON "files" USING gin (replace("search_name", 'ς', 'σ') gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "files_by_dir" ON "files" USING btree ("owner","folder_hash",btrim(regexp_replace("relative_path", '[^/]*$', ''), '/'),"path_hash");--> statement-breakpoint
CREATE INDEX "files_by_file_name" ON "files" USING btree ("owner","file_name" NULLS FIRST,"path_hash","folder_hash","ext","size_bytes","created_at");--> statement-breakpoint
CREATE INDEX "files_by_size" ON "files" USING btree ("owner","size_bytes","path_hash","folder_hash","ext","created_at");--> statement-breakpoint
CREATE INDEX "files_by_created" ON "files" USING btree ("owner","created_at","path_hash","folder_hash","ext","size_bytes");--> statement-breakpoint
CREATE INDEX "files_by_updated" ON "files" USING btree ("owner","updated_at","path_hash","folder_hash","ext","size_bytes","created_at");--> statement-breakpoint
CREATE INDEX "files_by_uploader" ON "files" USING btree ("owner","uploaded_by" NULLS FIRST,"path_hash","folder_hash");--> statement-breakpoint
CREATE INDEX "files_by_ext" ON "files" USING btree ("owner","ext" NULLS FIRST,"path_hash","folder_hash","size_bytes","created_at");