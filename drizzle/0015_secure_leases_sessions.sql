ALTER TABLE `batches` ADD `holder` text;--> statement-breakpoint
ALTER TABLE `batches` ADD `prior_lease_ids` text;--> statement-breakpoint
ALTER TABLE `proxy_sessions` ADD `owner` text;--> statement-breakpoint
ALTER TABLE `token_usage` ADD `proxy_tokens` integer DEFAULT 0 NOT NULL;