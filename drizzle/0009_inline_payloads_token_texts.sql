CREATE TABLE `group_token_texts` (
	`run` text NOT NULL,
	`group_id` integer NOT NULL,
	`body` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`run`, `group_id`)
);
--> statement-breakpoint
ALTER TABLE `groups` ADD `payload_inline` text;