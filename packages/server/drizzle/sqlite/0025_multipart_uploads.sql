ALTER TABLE `upload_sessions` ADD `upload_id` text;--> statement-breakpoint
ALTER TABLE `session_chunks` ADD `etag` text;
