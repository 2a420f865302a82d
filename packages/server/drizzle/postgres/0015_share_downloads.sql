ALTER TABLE "shares" ADD COLUMN "max_downloads" integer;--> statement-breakpoint
ALTER TABLE "shares" ADD COLUMN "download_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "shares" ADD COLUMN "access_log" boolean DEFAULT false NOT NULL;--> statement-breakpoint
CREATE TABLE "share_accesses" (
	"access_id" text PRIMARY KEY NOT NULL,
	"share_id" text NOT NULL,
	"at" bigint NOT NULL,
	"bytes_sent" bigint NOT NULL,
	"completed" boolean NOT NULL,
	"client_address" text
);
--> statement-breakpoint
CREATE INDEX "share_accesses_share" ON "share_accesses" USING btree ("share_id","at");
