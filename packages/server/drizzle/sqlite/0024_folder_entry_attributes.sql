ALTER TABLE `folder_entries` ADD `attributes` blob;
