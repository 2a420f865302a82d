-- Search indexes of src/search/postgres-index.ts: the trigram index on the folded search name
-- (ς read as σ, as foldCase folds q), nulls first in the b-trees of nullable sort keys (SQLite's
-- ascending order; read backwards for descending), and one b-tree per directory for browse.
DROP INDEX "files_search_name_trgm";--> statement-breakpoint
DROP INDEX "files_by_file_name";--> statement-breakpoint
DROP INDEX "files_by_uploader";--> statement-breakpoint
DROP INDEX "files_by_ext";--> statement-breakpoint
CREATE INDEX "files_search_fold_trgm" ON "files" USING gin (replace("search_name", 'ς', 'σ') gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "files_by_dir" ON "files" USING btree ("owner","folder_hash",btrim(regexp_replace("relative_path", '[^/]*$', ''), '/'),"path_hash");--> statement-breakpoint
CREATE INDEX "files_by_file_name" ON "files" USING btree ("owner","file_name" NULLS FIRST,"path_hash");--> statement-breakpoint
CREATE INDEX "files_by_uploader" ON "files" USING btree ("owner","uploaded_by" NULLS FIRST,"path_hash");--> statement-breakpoint
CREATE INDEX "files_by_ext" ON "files" USING btree ("owner","ext" NULLS FIRST,"path_hash");