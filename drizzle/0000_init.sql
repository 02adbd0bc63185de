CREATE TABLE `batches` (
	`id` text PRIMARY KEY NOT NULL,
	`run` text NOT NULL,
	`step` integer NOT NULL,
	`status` text NOT NULL,
	`consumer` text NOT NULL,
	`lease_id` text NOT NULL,
	`lease_count` integer DEFAULT 1 NOT NULL,
	`lease_expires_at` integer NOT NULL,
	`max_staleness` integer,
	`policy_version` integer NOT NULL,
	`num_groups` integer NOT NULL,
	`num_seqs` integer NOT NULL,
	`group_ids` text NOT NULL,
	`formation_ms` real,
	`created_at` integer NOT NULL,
	`acked_at` integer
);
--> statement-breakpoint
CREATE INDEX `batches_by_status` ON `batches` (`run`,`status`,`lease_expires_at`);--> statement-breakpoint
CREATE INDEX `batches_by_time` ON `batches` (`run`,`created_at`);--> statement-breakpoint
CREATE TABLE `dead_letters` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`run` text NOT NULL,
	`env_name` text NOT NULL,
	`env_id` integer,
	`item` text NOT NULL,
	`error` text NOT NULL,
	`attempts` integer NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `dead_letters_by_run` ON `dead_letters` (`run`,`created_at`);--> statement-breakpoint
CREATE TABLE `envs` (
	`run` text NOT NULL,
	`env_id` integer NOT NULL,
	`desired_name` text NOT NULL,
	`real_name` text NOT NULL,
	`env_key` text,
	`max_token_length` integer NOT NULL,
	`weight` real NOT NULL,
	`group_size` integer NOT NULL,
	`min_batch_allocation` real,
	`connected` integer DEFAULT true NOT NULL,
	`registered_at` integer NOT NULL,
	`last_seen_at` integer NOT NULL,
	PRIMARY KEY(`run`, `env_id`)
);
--> statement-breakpoint
CREATE INDEX `envs_by_key` ON `envs` (`run`,`env_key`);--> statement-breakpoint
CREATE TABLE `evals` (
	`run` text NOT NULL,
	`env_id` integer NOT NULL,
	`step` integer NOT NULL,
	`metrics` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`run`, `env_id`, `step`)
);
--> statement-breakpoint
CREATE TABLE `groups` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`run` text NOT NULL,
	`env_id` integer,
	`status` text NOT NULL,
	`num_seqs` integer NOT NULL,
	`total_tokens` integer NOT NULL,
	`completion_tokens` integer NOT NULL,
	`score_mean` real,
	`score_min` real,
	`score_max` real,
	`scores_json` text NOT NULL,
	`policy_version` integer NOT NULL,
	`payload_key` text NOT NULL,
	`payload_encoding` text NOT NULL,
	`payload_bytes` integer NOT NULL,
	`content_hash` text NOT NULL,
	`batch_id` text,
	`created_at` integer NOT NULL,
	`queued_at` integer
);
--> statement-breakpoint
CREATE INDEX `groups_queue` ON `groups` (`run`,`status`,`id`);--> statement-breakpoint
CREATE INDEX `groups_queue_by_env` ON `groups` (`run`,`status`,`env_id`,`id`);--> statement-breakpoint
CREATE INDEX `groups_dedupe` ON `groups` (`run`,`content_hash`);--> statement-breakpoint
CREATE INDEX `groups_by_time` ON `groups` (`run`,`created_at`);--> statement-breakpoint
CREATE INDEX `groups_by_batch` ON `groups` (`batch_id`);--> statement-breakpoint
CREATE TABLE `idempotency_keys` (
	`run` text NOT NULL,
	`key` text NOT NULL,
	`route` text NOT NULL,
	`request_hash` text NOT NULL,
	`status_code` integer NOT NULL,
	`response` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`run`, `key`)
);
--> statement-breakpoint
CREATE TABLE `queue_counts` (
	`run` text NOT NULL,
	`env_id` integer NOT NULL,
	`size` integer NOT NULL,
	`status` text NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY(`run`, `env_id`, `size`, `status`)
);
--> statement-breakpoint
CREATE TABLE `runs` (
	`name` text PRIMARY KEY NOT NULL,
	`batch_size` integer DEFAULT -1 NOT NULL,
	`max_token_len` integer DEFAULT -1 NOT NULL,
	`wandb_group` text,
	`wandb_project` text,
	`checkpoint_dir` text,
	`save_checkpoint_interval` integer DEFAULT -1 NOT NULL,
	`num_steps` integer DEFAULT -1 NOT NULL,
	`step` integer DEFAULT 0 NOT NULL,
	`policy_version` integer DEFAULT 0 NOT NULL,
	`registered` integer DEFAULT false NOT NULL,
	`started` integer DEFAULT false NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `worker_stats` (
	`run` text NOT NULL,
	`env_id` integer NOT NULL,
	`env_name` text NOT NULL,
	`items_in_flight` integer DEFAULT 0 NOT NULL,
	`items_succeeded` integer DEFAULT 0 NOT NULL,
	`items_failed` integer DEFAULT 0 NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`run`, `env_id`)
);
