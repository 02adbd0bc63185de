CREATE TABLE `eval_baselines` (
	`run` text NOT NULL,
	`env_id` integer NOT NULL,
	`metric` text NOT NULL,
	`value` real NOT NULL,
	`source` text NOT NULL,
	`set_at` integer NOT NULL,
	PRIMARY KEY(`run`, `env_id`, `metric`)
);
--> statement-breakpoint
CREATE TABLE `regression_guards` (
	`run` text PRIMARY KEY NOT NULL,
	`enabled` integer DEFAULT true NOT NULL,
	`factor` real DEFAULT 0.95 NOT NULL,
	`action` text NOT NULL,
	`webhook_url` text,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `replay_groups` (
	`run` text NOT NULL,
	`group_id` integer NOT NULL,
	`priority` real NOT NULL,
	`replays` integer DEFAULT 0 NOT NULL,
	`added_at` integer NOT NULL,
	PRIMARY KEY(`run`, `group_id`)
);
--> statement-breakpoint
CREATE INDEX `replay_by_priority` ON `replay_groups` (`run`,`priority`);--> statement-breakpoint
CREATE TABLE `run_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`run` text NOT NULL,
	`kind` text NOT NULL,
	`message` text NOT NULL,
	`data` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `run_events_by_run` ON `run_events` (`run`,`id`);--> statement-breakpoint
ALTER TABLE `batches` ADD `replay_ids` text;--> statement-breakpoint
ALTER TABLE `batches` ADD `replay_seqs` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `envs` ADD `paused` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `runs` ADD `replay_enabled` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `runs` ADD `replay_threshold` real DEFAULT 0.7 NOT NULL;--> statement-breakpoint
ALTER TABLE `runs` ADD `replay_capacity` integer DEFAULT 1024 NOT NULL;--> statement-breakpoint
ALTER TABLE `runs` ADD `replay_max_replays` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `runs` ADD `replay_fraction` real DEFAULT 0.3 NOT NULL;