-- pg_trgm (PostgreSQL contrib; a trusted extension) backs the GIN index of search on files.search_name.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
--> statement-breakpoint
CREATE TABLE "account_usage" (
	"owner" text COLLATE "C" PRIMARY KEY NOT NULL,
	"file_count" bigint DEFAULT 0 NOT NULL,
	"total_bytes" bigint DEFAULT 0 NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "api_tokens" (
	"id" text PRIMARY KEY NOT NULL,
	"token_sha256" text NOT NULL,
	"owner" text COLLATE "C" NOT NULL,
	"label" text,
	"created_at" bigint NOT NULL,
	"expires_at" bigint,
	"revoked_at" bigint
);
--> statement-breakpoint
CREATE TABLE "blob_deletions" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"target" text NOT NULL,
	"not_before" bigint NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"leased_until" bigint
);
--> statement-breakpoint
CREATE TABLE "files" (
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
	"search_name" text COLLATE "C",
	"ext" text COLLATE "C",
	"store_hash" text,
	"chunk_hashes" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"client_timestamp" bigint NOT NULL,
	"source" text,
	"attributes" "bytea",
	"upload_id" text NOT NULL,
	"ciphertext_hash" text NOT NULL,
	"ciphertext_size" bigint NOT NULL,
	"blob_id" text NOT NULL,
	"chunk_size" bigint NOT NULL,
	"chunk_count" bigint NOT NULL,
	"chunk_gens" text NOT NULL,
	"uploaded_by" text COLLATE "C",
	CONSTRAINT "files_owner_folder_hash_path_hash_pk" PRIMARY KEY("owner","folder_hash","path_hash")
);
--> statement-breakpoint
CREATE TABLE "folder_entries" (
	"owner" text COLLATE "C" NOT NULL,
	"folder_hash" text COLLATE "C" NOT NULL,
	"relative_path" text COLLATE "C" NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "folder_entries_owner_folder_hash_relative_path_pk" PRIMARY KEY("owner","folder_hash","relative_path")
);
--> statement-breakpoint
CREATE TABLE "folders" (
	"owner" text COLLATE "C" NOT NULL,
	"folder_hash" text COLLATE "C" NOT NULL,
	"label" text,
	"device_name" text,
	"created_at" bigint,
	"updated_at" bigint NOT NULL,
	"file_count" bigint DEFAULT 0 NOT NULL,
	"total_bytes" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "folders_owner_folder_hash_pk" PRIMARY KEY("owner","folder_hash")
);
--> statement-breakpoint
CREATE TABLE "quota_overrides" (
	"owner" text COLLATE "C" PRIMARY KEY NOT NULL,
	"quota_bytes" bigint,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "session_chunks" (
	"session_id" text NOT NULL,
	"chunk_index" integer NOT NULL,
	"gen" text NOT NULL,
	"size" bigint NOT NULL,
	"received_at" bigint NOT NULL,
	CONSTRAINT "session_chunks_session_id_chunk_index_pk" PRIMARY KEY("session_id","chunk_index")
);
--> statement-breakpoint
CREATE TABLE "upload_sessions" (
	"session_id" text PRIMARY KEY NOT NULL,
	"owner" text COLLATE "C" NOT NULL,
	"folder_hash" text COLLATE "C" NOT NULL,
	"path_hash" "bytea" NOT NULL,
	"manifest" text NOT NULL,
	"ciphertext_hash" text NOT NULL,
	"ciphertext_size" bigint NOT NULL,
	"chunk_size" bigint NOT NULL,
	"chunk_count" bigint NOT NULL,
	"blob_id" text NOT NULL,
	"state" text NOT NULL,
	"created_at" bigint NOT NULL,
	"expires_at" bigint NOT NULL,
	"finalizing_until" bigint,
	"result" text
);
--> statement-breakpoint
CREATE TABLE "usage_buckets" (
	"owner" text COLLATE "C" NOT NULL,
	"folder_hash" text COLLATE "C" NOT NULL,
	"kind" text NOT NULL,
	"bucket" text NOT NULL,
	"file_count" bigint NOT NULL,
	"total_bytes" bigint NOT NULL,
	CONSTRAINT "usage_buckets_owner_folder_hash_kind_bucket_pk" PRIMARY KEY("owner","folder_hash","kind","bucket")
);
--> statement-breakpoint
CREATE UNIQUE INDEX "api_tokens_sha" ON "api_tokens" USING btree ("token_sha256");--> statement-breakpoint
CREATE INDEX "api_tokens_owner" ON "api_tokens" USING btree ("owner");--> statement-breakpoint
CREATE INDEX "blob_deletions_due" ON "blob_deletions" USING btree ("not_before");--> statement-breakpoint
CREATE INDEX "files_search_name_trgm" ON "files" USING gin ("search_name" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "files_by_file_name" ON "files" USING btree ("owner","file_name","path_hash");--> statement-breakpoint
CREATE INDEX "files_by_size" ON "files" USING btree ("owner","size_bytes","path_hash");--> statement-breakpoint
CREATE INDEX "files_by_created" ON "files" USING btree ("owner","created_at","path_hash");--> statement-breakpoint
CREATE INDEX "files_by_updated" ON "files" USING btree ("owner","updated_at","path_hash");--> statement-breakpoint
CREATE INDEX "files_by_uploader" ON "files" USING btree ("owner","uploaded_by","path_hash");--> statement-breakpoint
CREATE INDEX "files_by_ext" ON "files" USING btree ("owner","ext","path_hash");--> statement-breakpoint
CREATE INDEX "sessions_owner" ON "upload_sessions" USING btree ("owner","state");--> statement-breakpoint
CREATE INDEX "sessions_expires" ON "upload_sessions" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "sessions_finalizing" ON "upload_sessions" USING btree ("finalizing_until") WHERE "upload_sessions"."finalizing_until" IS NOT NULL;