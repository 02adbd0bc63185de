CREATE TABLE `api_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`secret_hash` text NOT NULL,
	`scopes` text NOT NULL,
	`bound_run` text,
	`rps_limit` real,
	`bytes_per_day` integer,
	`proxy_tokens_per_day` integer,
	`created_at` integer NOT NULL,
	`revoked_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_tokens_by_hash` ON `api_tokens` (`secret_hash`);--> statement-breakpoint
CREATE TABLE `token_usage` (
	`token_id` text NOT NULL,
	`day` text NOT NULL,
	`bytes` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`token_id`, `day`)
);
--> statement-breakpoint
ALTER TABLE `groups` ADD `token_id` text;--> statement-breakpoint
CREATE INDEX `groups_by_payload` ON `groups` (`payload_key`);