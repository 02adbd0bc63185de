CREATE TABLE `env_workers` (
	`run` text NOT NULL,
	`name` text NOT NULL,
	`env_name` text NOT NULL,
	`started_at` integer NOT NULL,
	PRIMARY KEY(`run`, `name`)
);
--> statement-breakpoint
DROP INDEX `groups_dedupe`;--> statement-breakpoint
ALTER TABLE `groups` ADD `dedupe_key` text;--> statement-breakpoint
CREATE INDEX `groups_dedupe` ON `groups` (`run`,`dedupe_key`);