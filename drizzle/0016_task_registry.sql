CREATE TABLE `task_groups` (
	`run` text NOT NULL,
	`group_id` integer NOT NULL,
	`task` text NOT NULL,
	`token_id` text,
	`score_mean` real,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`run`, `group_id`)
);
--> statement-breakpoint
CREATE INDEX `task_groups_by_task` ON `task_groups` (`run`,`task`);--> statement-breakpoint
CREATE TABLE `tasks` (
	`run` text NOT NULL,
	`name` text NOT NULL,
	`difficulty` integer,
	`required_tools` text NOT NULL,
	`description` text NOT NULL,
	`token_id` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`run`, `name`)
);
--> statement-breakpoint
ALTER TABLE `proxy_sessions` ADD `task` text;