CREATE TABLE `proxy_sessions` (
	`run` text NOT NULL,
	`id` text NOT NULL,
	`status` text NOT NULL,
	`tracking` text NOT NULL,
	`version` integer NOT NULL,
	`created_at` integer NOT NULL,
	`last_used_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`group_id` integer,
	PRIMARY KEY(`run`, `id`)
);
--> statement-breakpoint
CREATE INDEX `proxy_sessions_expiry` ON `proxy_sessions` (`expires_at`);--> statement-breakpoint
CREATE TABLE `run_inference` (
	`run` text PRIMARY KEY NOT NULL,
	`servers` text NOT NULL,
	`api_keys` text NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `trajectories` (
	`run` text NOT NULL,
	`group_id` integer NOT NULL,
	`sequence` integer NOT NULL,
	`body` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`run`, `group_id`, `sequence`)
);
