CREATE TABLE `group_payloads` (
	`group_id` integer PRIMARY KEY NOT NULL,
	`run` text NOT NULL,
	`body` text NOT NULL
);
--> statement-breakpoint
INSERT INTO `group_payloads` (`group_id`, `run`, `body`)
  SELECT `id`, `run`, `payload_inline` FROM `groups` WHERE `payload_inline` IS NOT NULL;
--> statement-breakpoint
ALTER TABLE `groups` DROP COLUMN `payload_inline`;