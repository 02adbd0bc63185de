-- An imported (offline) group joins the replay buffer once: a retried import within the dedupe
-- window finds its groups stored and adopts only those never adopted, instead of bringing back
-- groups the buffer has trimmed or replayed to the run's limit since. Groups the buffer holds now
-- count as adopted; ones it dropped before this migration cannot be told apart from new ones.
ALTER TABLE `groups` ADD `replay_adopted_at` integer;
--> statement-breakpoint
UPDATE `groups` SET `replay_adopted_at` = (
  SELECT r.`added_at` FROM `replay_groups` r WHERE r.`run` = `groups`.`run` AND r.`group_id` = `groups`.`id`
) WHERE `batch_id` IS NULL AND `status` = 'delivered' AND `id` IN (SELECT `group_id` FROM `replay_groups`);
