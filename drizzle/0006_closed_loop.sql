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
ALTER TABLE `batches` ADD `replay_ids` text;--> statement-breakpoint
ALTER TABLE `batches` ADD `replay_seqs` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `envs` ADD `paused` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `runs` ADD `replay_enabled` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `runs` ADD `replay_threshold` real DEFAULT 0.7 NOT NULL;--> statement-breakpoint
ALTER TABLE `runs` ADD `replay_capacity` integer DEFAULT 1024 NOT NULL;--> statement-breakpoint
ALTER TABLE `runs` ADD `replay_max_replays` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `runs` ADD `replay_fraction` real DEFAULT 0.3 NOT NULL;