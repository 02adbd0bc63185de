ALTER TABLE `envs` ADD `weight_pinned` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `envs` ADD `min_batch_allocation_pinned` integer DEFAULT false NOT NULL;