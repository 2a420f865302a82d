ALTER TABLE "upload_sessions" ADD COLUMN "upload_id" text;--> statement-breakpoint
ALTER TABLE "session_chunks" ADD COLUMN "etag" text;
