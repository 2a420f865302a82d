DROP INDEX `files_owner_created`;--> statement-breakpoint
DROP INDEX `files_owner_updated`;--> statement-breakpoint
DROP INDEX `files_owner_size`;--> statement-breakpoint
DROP INDEX `files_owner_name`;--> statement-breakpoint
DROP INDEX `files_owner_ext`;