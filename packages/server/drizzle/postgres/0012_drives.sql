CREATE TABLE "account_freezes" (
	"account" text COLLATE "C" PRIMARY KEY NOT NULL,
	"frozen_until" bigint,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "account_invite_keys" (
	"account" text COLLATE "C" PRIMARY KEY NOT NULL,
	"pubkey" text NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "drive_folder_grants" (
	"owner" text COLLATE "C" NOT NULL,
	"folder_hash" text COLLATE "C" NOT NULL,
	"member" text COLLATE "C" NOT NULL,
	"path_prefix" text COLLATE "C" NOT NULL,
	"role" text NOT NULL,
	"grant_blob" text NOT NULL,
	"invite_id" text COLLATE "C",
	"created_at" bigint NOT NULL,
	CONSTRAINT "drive_folder_grants_owner_folder_hash_member_path_prefix_pk" PRIMARY KEY("owner","folder_hash","member","path_prefix")
);
--> statement-breakpoint
CREATE TABLE "drive_invites" (
	"invite_id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"owner" text COLLATE "C" NOT NULL,
	"folder_hash" text COLLATE "C" NOT NULL,
	"role" text NOT NULL,
	"path_prefix" text COLLATE "C",
	"minted_by" text COLLATE "C" NOT NULL,
	"expires_at" bigint NOT NULL,
	"max_uses" integer NOT NULL,
	"use_count" integer DEFAULT 0 NOT NULL,
	"revoked_at" bigint,
	"sealed_token" text,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "drive_members" (
	"owner" text COLLATE "C" NOT NULL,
	"folder_hash" text COLLATE "C" NOT NULL,
	"member" text COLLATE "C" NOT NULL,
	"role" text NOT NULL,
	"grant_blob" text NOT NULL,
	"invite_id" text COLLATE "C",
	"created_at" bigint NOT NULL,
	CONSTRAINT "drive_members_owner_folder_hash_member_pk" PRIMARY KEY("owner","folder_hash","member")
);
--> statement-breakpoint
CREATE INDEX "drive_folder_grants_by_member" ON "drive_folder_grants" USING btree ("member");--> statement-breakpoint
CREATE INDEX "drive_invites_by_drive" ON "drive_invites" USING btree ("owner","folder_hash","created_at");--> statement-breakpoint
CREATE INDEX "drive_members_by_member" ON "drive_members" USING btree ("member");