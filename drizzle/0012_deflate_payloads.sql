ALTER TABLE `groups` ADD `raw_bytes` integer;--> statement-breakpoint
ALTER TABLE `groups` ADD `raw_crc32` integer;