ALTER TABLE "folder_entries" ADD COLUMN "attributes" bytea;
