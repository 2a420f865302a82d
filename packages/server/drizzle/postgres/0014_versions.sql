CREATE TABLE "file_versions" (
	"version_id" bigserial PRIMARY KEY NOT NULL,
	"owner" text COLLATE "C" NOT NULL,
	"folder_hash" text COLLATE "C" NOT NULL,
	"path_hash" "bytea" NOT NULL,
	"salted_hash" "bytea" NOT NULL,
	"size_bytes" bigint NOT NULL,
	"revision_seq" bigint NOT NULL,
	"revision_id" "bytea" NOT NULL,
	"encrypted_path" "bytea" NOT NULL,
	"file_name" text COLLATE "C",
	"relative_path" text COLLATE "C",
	"store_hash" text,
	"chunk_hashes" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"client_timestamp" bigint NOT NULL,
	"source" text,
	"attributes" "bytea",
	"ciphertext_hash" text NOT NULL,
	"ciphertext_size" bigint NOT NULL,
	"blob_id" text NOT NULL,
	"chunk_size" bigint NOT NULL,
	"chunk_count" bigint NOT NULL,
	"chunk_gens" text NOT NULL,
	"uploaded_by" text COLLATE "C",
	"reason" text NOT NULL,
	"kept_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL
);--> statement-breakpoint
CREATE INDEX "file_versions_by_file" ON "file_versions" USING btree ("owner","folder_hash","path_hash","version_id");--> statement-breakpoint
CREATE INDEX "file_versions_deleted" ON "file_versions" USING btree ("owner","folder_hash","version_id") WHERE "file_versions"."reason" = 'deleted';--> statement-breakpoint
CREATE INDEX "file_versions_expires" ON "file_versions" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "file_versions_by_blob" ON "file_versions" USING btree ("blob_id");--> statement-breakpoint
CREATE INDEX "files_by_blob" ON "files" USING btree ("blob_id");
