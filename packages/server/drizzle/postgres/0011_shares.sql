CREATE TABLE "folder_shares" (
	"token_hash" text PRIMARY KEY NOT NULL,
	"owner" text COLLATE "C" NOT NULL,
	"folder_hash" text COLLATE "C" NOT NULL,
	"path_prefix" text COLLATE "C" NOT NULL,
	"display_name" text NOT NULL,
	"minted_by" text COLLATE "C" NOT NULL,
	"created_at" bigint NOT NULL,
	"expires_at" bigint,
	"revoked_at" bigint,
	"owner_wrap" text
);
--> statement-breakpoint
CREATE TABLE "share_chunks" (
	"share_id" text NOT NULL,
	"chunk_index" integer NOT NULL,
	"gen" text NOT NULL,
	"size" bigint NOT NULL,
	"received_at" bigint NOT NULL,
	CONSTRAINT "share_chunks_share_id_chunk_index_pk" PRIMARY KEY("share_id","chunk_index")
);
--> statement-breakpoint
CREATE TABLE "shares" (
	"share_id" text PRIMARY KEY NOT NULL,
	"token" text NOT NULL,
	"owner" text COLLATE "C" NOT NULL,
	"state" text NOT NULL,
	"filename" text NOT NULL,
	"filename_ct" text NOT NULL,
	"filename_nonce" text NOT NULL,
	"mime_type" text NOT NULL,
	"plaintext_size" bigint NOT NULL,
	"ciphertext_size" bigint NOT NULL,
	"total_chunks" integer NOT NULL,
	"blob_key" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"expires_at" bigint,
	"revoked_at" bigint,
	"owner_wrap" text
);
--> statement-breakpoint
CREATE INDEX "folder_shares_owner" ON "folder_shares" USING btree ("owner");--> statement-breakpoint
CREATE INDEX "folder_shares_minter" ON "folder_shares" USING btree ("minted_by");--> statement-breakpoint
CREATE UNIQUE INDEX "shares_token" ON "shares" USING btree ("token");--> statement-breakpoint
CREATE INDEX "shares_owner" ON "shares" USING btree ("owner","state");--> statement-breakpoint
CREATE INDEX "files_by_relative_path" ON "files" USING btree ("owner","folder_hash",md5("relative_path"));