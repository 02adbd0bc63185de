CREATE TABLE `metrics` (
	`run` text NOT NULL,
	`name` text NOT NULL,
	`env_id` integer NOT NULL,
	`step` integer NOT NULL,
	`policy_version` integer,
	`value` real NOT NULL,
	`kind` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`run`, `name`, `env_id`, `step`, `kind`)
);
--> statement-breakpoint
CREATE INDEX `metrics_by_step` ON `metrics` (`run`,`step`);